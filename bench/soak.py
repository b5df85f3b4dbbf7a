#!/usr/bin/env python3
"""A long run under a steady mixed load: does anything grow?

    .venv/bin/python bench/soak.py [--duration-min 60] [--interval-min 5] [--commits-per-s 20]

Starts the service as a new user does (`deploy/run-local.sh`, with its own broker, Redis and gateway
ports, topics and checkpoint), waits for READY, then keeps up, for `--duration-min`:

- simple-group OffsetCommits (`--commits-per-s`, over 20 groups), each timed from send to answer;
- 3 classic members of one group heartbeating (JoinGroup/SyncGroup, Heartbeat every second);
- 3 KIP-848 members of another group heartbeating (ConsumerGroupHeartbeat);
- one transactional producer: a transaction every 2 s (5 records, AddOffsetsToTxn and
  TxnOffsetCommit for a group, EndTxn with its markers).

Every `--interval-min` it prints a row: the driver's RSS (run_stream.py), the Spark JVM's RSS, the
Python workers' memory (PSS of the daemon and its forked workers, so shared pages count once), the
checkpoint directory's and the state log's blocks on disk, and the commits' round trip p50/p99 over
the interval.

At the end each column is judged **flat** or **grows**: a least-squares line through the rows after
the first (the first includes the warm-up), extended to one hour, must change the value by at most
10 % of its median, or by less than an absolute floor (20 MB for memory and disk, 100 ms for round
trips) that noise alone exceeds on this machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402
from latency import percentile, stop_job, stop_local, wait_line, write_config  # noqa: E402

from client import CoordinatorClient  # noqa: E402
from client.classic_group import ClassicGroupMember  # noqa: E402
from client.consumer_group import ConsumerGroupMember  # noqa: E402
from client.transactional_producer import TransactionalProducer  # noqa: E402
from deploy.kafka_local import free_port  # noqa: E402
from streaming.config import StreamConfig  # noqa: E402

DATA_TOPIC = "soak-data"
COLUMNS = (
    ("driver RSS MB", 20.0),
    ("JVM RSS MB", 20.0),
    ("workers PSS MB", 20.0),
    ("checkpoint MB", 20.0),
    ("state log MB", 20.0),
    ("commit p50 ms", 100.0),
    ("commit p99 ms", 100.0),
)


def rss_mb(pid: int, field: str = "Rss") -> float:
    """A process's resident memory; field "Pss" shares the pages it shares with other processes
    among them (the forked Python workers share most of the daemon's), so that a sum counts them once."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def session_processes(sid: int) -> list[tuple[int, str]]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(fields[3]) == sid:
            out.append((int(d.name), cmd))
    return out


def dir_mb(path: Path, prefix: str = "") -> float:
    total = 0
    for root, _dirs, files in os.walk(path):
        if prefix and not Path(root).name.startswith(prefix):
            continue
        for f in files:
            try:  # blocks on disk: the broker's index files are preallocated sparse files
                total += os.stat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return total / 2**20


class Commits(threading.Thread):
    """Simple-group OffsetCommits at a steady rate; keeps each round trip (ms), timed when the
    client's consumer thread receives the answer."""

    def __init__(self, cfg: StreamConfig, rate: float, stop: threading.Event):
        super().__init__(daemon=True, name="commits")
        self.cfg, self.rate, self.stop = cfg, rate, stop
        self.samples: list[tuple[float, float]] = []
        self.lock = threading.Lock()

    def take(self) -> list[float]:
        with self.lock:
            done, self.samples = self.samples, []
        return [r for _, r in done]

    def run(self) -> None:
        t = self.cfg.topics
        client = CoordinatorClient(self.cfg.bootstrap, requests_topic=t["requests"], responses_topic=t["responses"])
        sent: dict[int, float] = {}
        accept = client._accept

        def timed_accept(key, value):
            before = len(client._responses)
            accept(key, value)
            if len(client._responses) > before:
                now = time.monotonic()
                with client._lock:
                    new = [c for c in client._responses if c in sent]
                for cid in new:
                    with self.lock:
                        self.samples.append((now, (now - sent.pop(cid)) * 1000))
                    with client._lock:
                        client._responses.pop(cid, None)

        client._accept = timed_accept  # type: ignore[method-assign]
        i, next_at = 0, time.monotonic()
        try:
            while not self.stop.is_set():
                group = f"soak-commits-{i % 20}"
                body = {
                    "groupId": group,
                    "generationIdOrMemberEpoch": -1,
                    "memberId": "",
                    "groupInstanceId": None,
                    "topics": [
                        {
                            "name": DATA_TOPIC,
                            "partitions": [
                                {
                                    "partitionIndex": p,
                                    "committedOffset": i,
                                    "committedLeaderEpoch": -1,
                                    "committedMetadata": "",
                                }
                                for p in range(2)
                            ],
                        }
                    ],
                }
                cid = client.next_correlation_id()
                sent[cid] = time.monotonic()
                client.send("OffsetCommit", 9, body, key=group, correlation_id=cid)
                i += 1
                next_at += 1 / self.rate
                self.stop.wait(max(0.0, next_at - time.monotonic()))
        finally:
            client.close()


def transactions(cfg: StreamConfig, stop: threading.Event, counts: dict) -> None:
    t = cfg.topics
    producer = TransactionalProducer(
        cfg.bootstrap, "soak-txn", requests_topic=t["requests"], responses_topic=t["responses"]
    )
    try:
        producer.init_transactions()
        n = 0
        while not stop.wait(2.0):
            producer.begin_transaction()
            for k in range(5):
                producer.send(DATA_TOPIC, f"record-{n}-{k}", key=f"k{k}")
            producer.send_offsets_to_transaction({(DATA_TOPIC, 0): n}, "soak-txn-group")
            producer.commit_transaction()
            n += 1
            counts["transactions"] = n
    except Exception as e:  # noqa: BLE001 - reported at the end
        counts["transaction error"] = repr(e)
    finally:
        producer.close()


def flatness(rows: list[dict], column: str, floor: float, interval_s: float) -> str:
    """'flat', 'grows' or 'falls' (see the module's docstring), with the fitted line's hourly change."""
    values = [r[column] for r in rows[1:]]
    if len(values) < 2:
        return "too few rows"
    xs = [i * interval_s / 3600 for i in range(len(values))]
    mx, my = statistics.mean(xs), statistics.mean(values)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, values, strict=True)) / sum((x - mx) ** 2 for x in xs)
    median = statistics.median(values)
    limit = max(0.10 * abs(median), floor)
    verdict = "flat" if abs(slope) <= limit else ("grows" if slope > 0 else "falls")
    return f"{verdict} ({slope:+.1f} per hour, median {median:.1f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration-min", type=float, default=60)
    ap.add_argument("--interval-min", type=float, default=5)
    ap.add_argument("--commits-per-s", type=float, default=20)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    port = free_port()
    cfg = write_config(work / "soak.toml", port, "soak", "coordinator", "200 milliseconds")
    log_file = work / "soak.log"
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(
            [str(ROOT / "deploy" / "run-local.sh"), "--config", str(work / "soak.toml")],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
    stop = threading.Event()
    members: list = []
    counts: dict = {}
    rows: list[dict] = []
    try:
        wait_line(log_file, b"COORDINATOR-READY", proc, timeout=300)
        admin = KafkaAdminClient(bootstrap_servers=cfg.bootstrap)
        admin.create_topics([NewTopic(DATA_TOPIC, 2, 1)])
        admin.close()
        t = cfg.topics
        commits = Commits(cfg, args.commits_per_s, stop)
        commits.start()
        for i in range(3):
            members.append(
                ClassicGroupMember(
                    cfg.bootstrap,
                    "soak-classic",
                    [DATA_TOPIC],
                    heartbeat_interval_ms=1000,
                    client_id=f"soak-classic-{i}",
                    requests_topic=t["requests"],
                    responses_topic=t["responses"],
                ).start()
            )
        for i in range(3):
            client = CoordinatorClient(
                cfg.bootstrap, f"soak-consumer-{i}", requests_topic=t["requests"], responses_topic=t["responses"]
            )
            members.append(ConsumerGroupMember(client, "soak-consumer", [DATA_TOPIC]).start())
        txn = threading.Thread(target=transactions, args=(cfg, stop, counts), daemon=True)
        txn.start()
        interval_s = args.interval_min * 60
        started = time.monotonic()
        print(
            f"soak: {args.duration_min:g} min, a row every {args.interval_min:g} min; load average at start "
            f"{os.getloadavg()[0]:.1f}",
            flush=True,
        )
        header = f"{'min':>5}" + "".join(f"{c:>16}" for c, _ in COLUMNS) + f"{'commits':>9}{'load':>6}"
        print(header, flush=True)
        while time.monotonic() - started < args.duration_min * 60 - 1:
            if stop.wait(min(interval_s, args.duration_min * 60 - (time.monotonic() - started))):
                break
            if proc.poll() is not None:
                raise RuntimeError(f"the service exited {proc.returncode}")
            procs = session_processes(proc.pid)
            rtts = commits.take()
            broker_data = ROOT / ".run" / f"kafka-{port}" / "data"
            row = {
                "driver RSS MB": rss_mb(proc.pid),
                "JVM RSS MB": sum(rss_mb(p) for p, c in procs if "SparkSubmit" in c),
                "workers PSS MB": sum(rss_mb(p, "Pss") for p, c in procs if "worker_daemon" in c),
                "checkpoint MB": dir_mb(cfg.checkpoint),
                "state log MB": dir_mb(broker_data, prefix=t["state_log"] + "-"),
                "commit p50 ms": statistics.median(rtts) if rtts else float("nan"),
                "commit p99 ms": percentile(rtts, 99) if rtts else float("nan"),
                "commits": len(rtts),
            }
            rows.append(row)
            print(
                f"{(time.monotonic() - started) / 60:5.1f}"
                + "".join(f"{row[c]:16.1f}" for c, _ in COLUMNS)
                + f"{row['commits']:9d}{os.getloadavg()[0]:6.1f}",
                flush=True,
            )
        print(
            "\nFlat? (a line through the rows after the first, per hour; flat: within 10 % of the median or the floor)"
        )
        for column, floor in COLUMNS:
            print(f"  {column:16} {flatness(rows, column, floor, interval_s)}")
        print(f"transactions committed: {counts.get('transactions', 0)} {counts.get('transaction error', '')}")
        return 0
    finally:
        stop.set()
        for m in members:
            try:
                m.close() if isinstance(m, ClassicGroupMember) else m.stop()
            except Exception:  # noqa: BLE001 - shutting down
                pass
        stop_job(proc)
        stop_local(cfg, port)


if __name__ == "__main__":
    sys.exit(main())
