#!/usr/bin/env python3
"""How far the Redis read model trails the state log under a steady offset-commit load.

    .venv/bin/python bench/projector_lag.py [--rate 1000] [--seconds 60] [--groups 20] [--trigger "500 milliseconds"]

A broker, a redis-server and one job with its projector (all on free ports). `--rate` OffsetCommit
requests a second (simple groups, one partition each: one state-log record per commit) are sent
for `--seconds`. Meanwhile the bench tails the state log (each record's timestamp is when the
job's sink sent it) and samples the read model's positions (`ReadModel.freshness()`) every 50 ms.
Printed, over the records of the load (from its start until the job and the projector have
applied everything sent: on a small machine the job itself may trail the offered rate):
- the rate the state log actually received them;
- lag in records: state-log records already written but not yet in Redis, per sample;
- lag in ms: from a record's state-log timestamp to the first sample whose position covers it
  (includes up to 50 ms of sampling);
- the micro-batch durations of both queries in that time (from their checkpoints: offsets/N is
  written when batch N starts, commits/N when it is done), and the machine's load average: the
  projector's lag is about one coordinator batch (the records appear when it ends) plus one or two
  projector batches.
"""

from __future__ import annotations

import argparse
import bisect
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka import KafkaConsumer, TopicPartition  # noqa: E402

from client.read_model import ReadModel  # noqa: E402
from deploy.kafka_local import LocalKafka, free_port  # noqa: E402
from deploy.redis_local import LocalRedis  # noqa: E402
from tests.integration.harness import StreamJob, create_data_topics  # noqa: E402

TOPIC = "lag-orders"
PARTITIONS = 8


def percentile(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))] if s else float("nan")


class StateLogTail(threading.Thread):
    """Every state-log record from the start: partition -> [(offset, timestamp s)]."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
        self.consumer.assign([TopicPartition(topic, p) for p in self.consumer.partitions_for_topic(topic)])
        self.consumer.seek_to_beginning()
        self.records: dict[int, list[tuple[int, float]]] = {}
        self.halt = threading.Event()
        self.start()

    def run(self) -> None:
        while not self.halt.is_set():
            for tp, recs in self.consumer.poll(timeout_ms=100).items():
                self.records.setdefault(tp.partition, []).extend((r.offset, r.timestamp / 1000) for r in recs)

    def stop(self) -> None:
        self.halt.set()
        self.join(5)
        self.consumer.close()


class Sampler(threading.Thread):
    """The read model's positions every `every_s`: [(time s, {partition: next offset})]."""

    def __init__(self, rm: ReadModel, every_s: float = 0.05):
        super().__init__(daemon=True)
        self.rm, self.every_s = rm, every_s
        self.samples: list[tuple[float, dict[int, int]]] = []
        self.halt = threading.Event()
        self.start()

    def run(self) -> None:
        while not self.halt.wait(self.every_s):
            self.samples.append((time.time(), self.rm.freshness()["offsets"]))


def batch_durations(checkpoint: Path, start: float, end: float) -> list[float]:
    """Seconds of each micro-batch of a checkpoint that started within [start, end]."""
    out = []
    for f in (checkpoint / "offsets").glob("[0-9]*"):
        done = checkpoint / "commits" / f.name
        began = f.stat().st_mtime
        if done.exists() and start <= began <= end:
            out.append(done.stat().st_mtime - began)
    return out


def load(job: StreamJob, rate: int, seconds: float, groups: int) -> tuple[float, float, int]:
    """`rate` OffsetCommit requests a second for `seconds`, in 10 ms ticks; returns (start, end, sent)."""
    client = job.client("lag-load")
    sent, tick = 0, 0.01
    start = time.time()
    try:
        while time.time() - start < seconds:
            due = int((time.time() - start) * rate)
            while sent < due:
                g = f"lag-group-{sent % groups}"
                client.send(
                    "OffsetCommit",
                    9,
                    {
                        "groupId": g,
                        "generationIdOrMemberEpoch": -1,
                        "memberId": "",
                        "groupInstanceId": None,
                        "topics": [
                            {
                                "name": TOPIC,
                                "partitions": [
                                    {
                                        "partitionIndex": sent % PARTITIONS,
                                        "committedOffset": sent,
                                        "committedMetadata": None,
                                    }
                                ],
                            }
                        ],
                    },
                    key=g,
                    flush=False,
                )
                sent += 1
            client.flush()
            time.sleep(tick)
        return start, time.time(), sent
    finally:
        client.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=int, default=1000, help="OffsetCommit requests a second")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--groups", type=int, default=20)
    ap.add_argument("--trigger", default="1 second", help="the projector's trigger ([redis] trigger_interval)")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="projector-lag-"))
    broker = LocalKafka(work / "kafka", free_port(), free_port()).start()
    redis_server = LocalRedis(work / "redis", free_port()).start()
    job = None
    try:
        create_data_topics(broker.bootstrap, {TOPIC: PARTITIONS})
        job = StreamJob(
            broker.bootstrap,
            work / "job",
            "lag",
            redis={"enabled": True, "url": redis_server.url, "prefix": "lag", "trigger_interval": args.trigger},
        )
        mark = job.launch()
        job.wait_for_line(mark, b"COORDINATOR-READY", timeout=300)
        rm = ReadModel(redis_server.url, "lag")
        # Warm-up: a few commits through the whole path, until the read model has them.
        warm = job.client("lag-warm-up")
        warm.request(
            "OffsetCommit",
            9,
            {
                "groupId": "lag-warm-up",
                "generationIdOrMemberEpoch": -1,
                "memberId": "",
                "groupInstanceId": None,
                "topics": [{"name": TOPIC, "partitions": [{"partitionIndex": 0, "committedOffset": 1}]}],
            },
            timeout=120,
        )
        warm.close()
        deadline = time.time() + 120
        while not rm.offsets("lag-warm-up") and time.time() < deadline:
            time.sleep(0.1)
        tail = StateLogTail(broker.bootstrap, job.topics["state_log"])
        sampler = Sampler(rm)
        print(
            f"load: {args.rate} OffsetCommit/s for {args.seconds:.0f} s over {args.groups} groups; "
            f"projector trigger {args.trigger}",
            flush=True,
        )
        start, end, sent = load(job, args.rate, args.seconds, args.groups)
        # Let the job and the projector finish what was sent (bounded), then stop sampling.
        drain_until = time.time() + 300
        while time.time() < drain_until:
            ends = {p: recs[-1][0] + 1 for p, recs in tail.records.items() if recs}
            pos = rm.freshness()["offsets"]
            total = sum(len(r) for r in tail.records.values())
            if total >= sent and all(pos.get(p, 0) >= o for p, o in ends.items()):
                break
            time.sleep(0.2)
        drained_at = time.time()
        load_average = os.getloadavg()
        coordinator_batches = batch_durations(job.cfg.checkpoint, start, drained_at)
        projector_batches = batch_durations(job.cfg.projector_checkpoint, start, drained_at)
        sampler.halt.set()
        sampler.join(5)
        tail.stop()
    finally:
        if job is not None:
            job.stop()
            progress = [line for line in job.tail(400).splitlines() if "projector progress" in line]
            print("\n".join(["the job's projector progress lines:", *progress]) if progress else "")
        redis_server.stop()
        broker.stop(timeout=5)
        shutil.rmtree(work, ignore_errors=True)

    # Lag per record (ms) and per sample (records), for records written during the load window.
    samples = sampler.samples
    by_partition = {p: sorted(recs) for p, recs in tail.records.items()}
    lag_ms, lag_records = [], []
    sample_times = [t for t, _ in samples]
    for p, recs in by_partition.items():
        positions = [s.get(p, 0) for _, s in samples]
        for offset, ts in recs:
            if not start <= ts <= drained_at:
                continue
            i = bisect.bisect_right(positions, offset, lo=bisect.bisect_left(sample_times, ts))
            if i < len(samples):
                lag_ms.append((sample_times[i] - ts) * 1000)
    columns = {p: ([o for o, _ in recs], sorted(ts for _, ts in recs)) for p, recs in by_partition.items()}
    for t, pos in samples:
        if not start <= t <= drained_at:
            continue
        behind = 0
        for p, (offsets, stamps) in columns.items():
            written = bisect.bisect_right(stamps, t)  # records with a timestamp <= t
            applied = bisect.bisect_left(offsets, pos.get(p, 0))
            behind += max(0, written - applied)
        lag_records.append(behind)
    stamps = sorted(ts for recs in by_partition.values() for _, ts in recs if start <= ts <= drained_at)
    written_s = (stamps[-1] - stamps[0]) if len(stamps) > 1 else float("nan")
    changes = sum(1 for a, b in zip(samples, samples[1:], strict=False) if a[1] != b[1])
    print(
        f"sent {sent} OffsetCommit requests in {end - start:.1f} s ({sent / (end - start):.0f}/s); the job wrote "
        f"{len(stamps)} state-log records in {written_s:.1f} s ({len(stamps) / written_s:.0f}/s); "
        f"everything was in Redis {drained_at - end:.1f} s after the load ended"
    )
    print(
        f"projector lag, records behind the state log ({len(lag_records)} samples): "
        f"p50 {percentile(lag_records, 50):.0f}  p90 {percentile(lag_records, 90):.0f}  "
        f"p99 {percentile(lag_records, 99):.0f}  max {max(lag_records, default=0):.0f}"
    )
    print(
        f"projector lag, ms from state-log append to Redis ({len(lag_ms)} records): "
        f"p50 {percentile(lag_ms, 50):.0f}  p90 {percentile(lag_ms, 90):.0f}  p99 {percentile(lag_ms, 99):.0f}  "
        f"max {max(lag_ms, default=0):.0f}"
    )
    for name, durations in (("coordinator", coordinator_batches), ("projector", projector_batches)):
        print(
            f"{name} micro-batches during the load: {len(durations)}, s p50 {percentile(durations, 50):.1f} "
            f"max {max(durations, default=0):.1f}"
        )
    print(
        f"load average (1, 5, 15 min) at the end: {load_average[0]:.1f} {load_average[1]:.1f} {load_average[2]:.1f} "
        f"on {os.cpu_count()} CPUs"
    )
    print(
        f"read-model updates seen by the sampler: {changes} in {samples[-1][0] - samples[0][0]:.0f} s"
        if samples
        else "no samples"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
