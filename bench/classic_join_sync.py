#!/usr/bin/env python3
"""End-to-end join→sync latency of classic consumer groups through the real broker and Spark job.

    .venv/bin/python bench/classic_join_sync.py [--rounds 5] [--delays 3000,0]

For each `group.initial.rebalance.delay.ms` in --delays it starts a job (one after the other; the
machine has 2 cores), then, --rounds times each, forms a new group of 1 and of 3 members
(client/classic_group.py, started together) and takes, per member, the time from its first
JoinGroup sent to its SyncGroup answer received. A new dynamic member's path is: JoinGroup →
MEMBER_ID_REQUIRED, JoinGroup with the id (parked for the initial delay, extended once more when
members keep arriving within it, as Kafka does) → SyncGroup. Also measured: the sequential
FindCoordinator round trip of the same job (one request → one response), the unit the rest is made of.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka import KafkaAdminClient  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402

from client.classic_group import ClassicGroupMember  # noqa: E402
from deploy.kafka_local import LocalKafka, free_port  # noqa: E402
from tests.integration.harness import StreamJob  # noqa: E402

TOPICS = {"bench-orders": 12, "bench-payments": 4}


def form_group(job: StreamJob, group_id: str, n: int) -> tuple[list[float], int]:
    """Start n members together; when all are Stable in one generation, each member's time from
    its first JoinGroup to the SyncGroup answer of that generation, and the generation."""
    members = [
        ClassicGroupMember(
            job.bootstrap,
            group_id,
            list(TOPICS),
            requests_topic=job.topics["requests"],
            responses_topic=job.topics["responses"],
            session_timeout_ms=30000,
            heartbeat_interval_ms=3000,
            rebalance_timeout_ms=60000,
        )
        for _ in range(n)
    ]
    threads = [threading.Thread(target=m.start) for m in members]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        deadline = time.monotonic() + 180
        while True:
            for m in members:
                m.wait_stable(1, timeout=max(1.0, deadline - time.monotonic()))
            generations = {m.generation.generation_id for m in members}
            if len(generations) == 1 and all(m.state == "STABLE" for m in members):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{group_id}: the members did not converge")
            time.sleep(0.05)
        g = generations.pop()
        return [(m.synced_at[g] - m.first_join_sent) * 1000 for m in members], g
    finally:
        for m in members:
            m.close()


def round_trips(job: StreamJob, n: int = 10) -> list[float]:
    client = job.client(f"bench-rt-{job.prefix}")
    try:
        out = []
        for i in range(n):
            t = time.perf_counter()
            client.request("FindCoordinator", 3, {"key": f"rt-{i}", "keyType": 0}, timeout=120)
            out.append((time.perf_counter() - t) * 1000)
        return out
    finally:
        client.close()


def summary(values: list[float]) -> str:
    return f"p50 {statistics.median(values):7.0f}   min {min(values):7.0f}   max {max(values):7.0f}   (n={len(values)})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--delays", default="3000,0", help="group.initial.rebalance.delay.ms values, one job each")
    ap.add_argument("--trigger", default="200 milliseconds")
    args = ap.parse_args()
    delays = [int(d) for d in args.delays.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench-join-sync-"))
    broker = LocalKafka(work / "kafka", free_port(), free_port()).start()
    results: dict[int, dict[str, list[float]]] = {}
    generations: dict[int, list[int]] = {}
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()])
        admin.close()
        for delay in delays:
            job = StreamJob(
                broker.bootstrap,
                work / f"delay-{delay}",
                f"bench-delay-{delay}",
                stream={"trigger_interval": args.trigger},
                coordinator={"group.initial.rebalance.delay.ms": delay},
            ).start()
            try:
                round_trips(job, 3)  # warm up: Python workers, state stores, connections
                form_group(job, f"warm-up-{delay}", 1)
                r = results[delay] = {
                    "round trip": round_trips(job),
                    "1 member": [],
                    "3 members": [],
                    "3 members, last": [],
                }
                generations[delay] = []
                for i in range(args.rounds):
                    r["1 member"] += form_group(job, f"single-{delay}-{i}", 1)[0]
                    times, g = form_group(job, f"three-{delay}-{i}", 3)
                    r["3 members"] += times
                    r["3 members, last"].append(max(times))
                    generations[delay].append(g)
            finally:
                job.stop()
    finally:
        broker.stop(timeout=3)
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"\nClassic group join→sync (first JoinGroup sent → SyncGroup answer), local[2], trigger "
        f"{args.trigger}, timer grace 1000 ms, {args.rounds} new groups each; milliseconds"
    )
    for delay, r in results.items():
        print(
            f'\ngroup.initial.rebalance.delay.ms = {delay}  ("3 members, last": the group\'s '
            f"formation, the slowest member of each group)"
        )
        for name, values in r.items():
            print(f"  {name:17} {summary(values)}")
        print(f"  generation the 3 members settled in: {generations[delay]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
