#!/usr/bin/env python3
"""What a micro-batch costs: its fixed part and its part per request, coordinator next to identity.

    .venv/bin/python bench/batch_cost.py [--sizes 500,2000,5000,10000,15000] [--rounds 3]

One broker, both jobs up at once (an idle job runs no micro-batch: `timer_wakeups`), each warmed
up with two bursts. Then, for each size N and round, alternating the jobs (ABBA): N OffsetCommit
requests (simple groups, one offset each, as `bench/throughput.py` sends) are produced at once by
confluent-kafka, so that one micro-batch reads them (or a few, when the job was planning one as they
arrived); each batch is found in the job's checkpoint (offsets/N, commits/N) and timed by its
progress report (`triggerExecution`, and `addBatch`: the tasks).

Printed per size: the median duration of the batch that read the most of them, and the least-squares
line through every (requests, milliseconds) pair of each job: `fixed + per_request * n`. A job keeps
up with a paced rate r while its batches stay short: a batch of duration T reads the r*T requests
that arrived during the previous one, so T = fixed / (1 - per_request * r): the per-request part
decides the highest rate, the fixed part the round trip at low rates.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.throughput import (  # noqa: E402
    TOPIC,
    TOPIC_PARTITIONS,
    CpuMeter,
    TimedClient,
    burst,
    start_jobs,
    stop_jobs,
    warm_up,
)
from deploy.kafka_local import LocalKafka, free_port  # noqa: E402
from streaming.status import read_status, status_path  # noqa: E402
from tests.integration.harness import StreamJob, create_data_topics, simple_commit  # noqa: E402

STEPS = ("identity", "coordinator")


def request_ends(ckpt: Path, batch: int) -> dict[tuple[str, int], int]:
    """The end offsets of a batch's request-topic partitions (its offset-log entry)."""
    ends = {}
    for line in (ckpt / "offsets" / str(batch)).read_text().splitlines()[2:]:
        for topic, parts in json.loads(line).items():
            if topic.endswith("-requests"):
                ends.update({(topic, int(p)): o for p, o in parts.items()})
    return ends


def committed(ckpt: Path) -> list[int]:
    return sorted(int(p.name) for p in (ckpt / "commits").iterdir() if p.name.isdigit())


def topic_ends(bootstrap: str, topic: str) -> dict[tuple[str, int], int]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
        return {(topic, tp.partition): o for tp, o in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def produce(producer, topic: str, groups: list[str], n: int, first: int) -> None:
    for i in range(first, first + n):
        group = groups[i % len(groups)]
        body = simple_commit(group, {TOPIC: {i % TOPIC_PARTITIONS: i}})
        value = json.dumps(
            {"apiKey": "OffsetCommit", "apiVersion": 9, "correlationId": i, "clientId": "batch-cost", "request": body}
        ).encode()
        while True:
            try:
                producer.produce(topic, key=group.encode(), value=value)
                break
            except BufferError:  # the local queue is full: let it drain
                producer.poll(0.01)
    producer.flush()


def batches_for(job: StreamJob, target: dict, since: int, timeout_s: float = 120) -> list[tuple[int, int, int]]:
    """(requests, triggerExecution ms, addBatch ms) of each batch after `since` up to the one that
    read `target`, once the status file has their progress reports."""
    ckpt = job.cfg.checkpoint
    deadline = time.monotonic() + timeout_s
    while True:
        done = committed(ckpt)
        if done and all(request_ends(ckpt, done[-1]).get(tp, 0) >= o for tp, o in target.items()):
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"{job.prefix}: no batch read {target} in {timeout_s:.0f} s")
        time.sleep(0.2)
    ids = [b for b in done if b > since]
    while True:  # the driver writes its progress reports every few seconds
        reports = {b["batchId"]: b for b in (read_status(status_path(ckpt)) or {}).get("batches") or []}
        # (an idle trigger's report, filed under the next batch's id, stands until that batch's own)
        if all("addBatch" in reports.get(b, {}).get("durationMs", {}) for b in ids) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    out = []
    previous = request_ends(ckpt, since) if since >= 0 else {}
    for b in ids:
        ends = request_ends(ckpt, b)
        rows = sum(o - previous.get(tp, 0) for tp, o in ends.items())
        previous = ends
        d = reports.get(b, {}).get("durationMs", {})
        out.append((rows, d.get("triggerExecution", -1), d.get("addBatch", -1)))
    return out


def fit(points: list[tuple[int, int]]) -> tuple[float, float]:
    """Least squares: ms = fixed + per_request * n; returns (fixed ms, per-request us)."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    return my - slope * mx, slope * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="500,2000,5000,10000,15000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--groups", type=int, default=1000)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    from confluent_kafka import Producer

    work = Path(tempfile.mkdtemp(prefix="bench-batch-cost-"))
    broker = LocalKafka(work / "kafka", free_port(), free_port()).start()
    groups = [f"throughput-group-{i}" for i in range(args.groups)]
    jobs: dict[str, StreamJob] = {}
    clients: dict[str, TimedClient] = {}
    # mode -> size -> [(requests, triggerExecution, addBatch) of each batch of each round]
    seen: dict[str, dict[int, list[list[tuple[int, int, int]]]]] = {m: {n: [] for n in sizes} for m in STEPS}
    try:
        create_data_topics(broker.bootstrap, {TOPIC: TOPIC_PARTITIONS})
        jobs, clients = start_jobs(broker, work, STEPS, "bc", "bench-batch-cost")
        for mode in STEPS:  # the JIT and the Python workers warm, every group's state created
            warm_up(clients[mode], groups)
            for _ in range(2):
                burst(clients[mode], groups, 20000, CpuMeter(jobs[mode], broker))
        producer = Producer(
            {"bootstrap.servers": broker.bootstrap, "linger.ms": 20, "queue.buffering.max.messages": 500000}
        )
        first = 1 << 24
        for r in range(args.rounds):
            for i, n in enumerate(sizes):
                for mode in STEPS if (r + i) % 2 == 0 else STEPS[::-1]:
                    job = jobs[mode]
                    since = committed(job.cfg.checkpoint)[-1]
                    produce(producer, job.topics["requests"], groups, n, first)
                    first += n
                    batches = batches_for(job, topic_ends(broker.bootstrap, job.topics["requests"]), since)
                    seen[mode][n].append(batches)
                    print(f"round {r + 1} {mode} {n}: batches (requests, ms, addBatch ms) {batches}", file=sys.stderr)
    finally:
        stop_jobs(jobs, clients)
        broker.stop(timeout=3)

    print(f"\nN OffsetCommits produced at once ({args.groups} simple groups), {args.rounds} rounds, ABBA; local[2]")
    print(f"{'':10}" + "".join(f"{m + ': requests, ms':>32}" for m in STEPS))
    for n in sizes:
        cells = []
        for mode in STEPS:
            biggest = [max(batches) for batches in seen[mode][n]]
            cells.append(
                f"{statistics.median(b[0] for b in biggest):>12.0f} in {statistics.median(b[1] for b in biggest):>6.0f} ms"
                f" (addBatch {statistics.median(b[2] for b in biggest):>5.0f})"
            )
        print(f"N={n:<8}" + "".join(f"{c:>32}" for c in cells))
    print("least squares over every batch (ms = fixed + per_request * n):")
    lines = {}
    for mode in STEPS:
        points = [(b[0], b[1]) for n in sizes for batches in seen[mode][n] for b in batches if b[1] >= 0]
        lines[mode] = fit(points)
        print(
            f"  {mode:12} fixed {lines[mode][0]:6.0f} ms, per request {lines[mode][1]:6.1f} us ({len(points)} batches)"
        )
    i_fixed, i_per = lines["identity"]
    c_fixed, c_per = lines["coordinator"]
    print(f"  coordinator / identity: fixed {c_fixed / i_fixed:.2f}x, per request {c_per / i_per:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
