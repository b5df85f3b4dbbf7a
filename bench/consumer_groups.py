#!/usr/bin/env python3
"""KIP-848 consumer groups: how long a group takes to converge after a member joins, end to end, and
what a heartbeat costs in the coordinator core.

    .venv/bin/python bench/consumer_groups.py e2e  [--members 10] [--rounds 3] [--interval-ms 5000]
    .venv/bin/python bench/consumer_groups.py core [--quick]

e2e: one broker and the real Spark job (local[2], trigger 200 ms). `--members - 1` ConsumerGroupMember
clients join a topic of `--partitions` partitions and settle; then, `--rounds` times, one more member
joins (a group of `--members`) and the time until the group has converged is measured: from the
joining member's first heartbeat to the last partition handed over, i.e. every member owns exactly
its target assignment, the group is Stable (checked with ConsumerGroupDescribe). The new member then
leaves and the group settles again. The heartbeat interval is Kafka's default (5 s) unless set.

core: the coordinator core alone (no Spark, no Kafka): the cost of one ConsumerGroupHeartbeat (steady
heartbeat, a join that recomputes the target assignment) for groups of 10 / 100 / 1,000 members,
and the size of the encoded partition state.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


# ====================================================================== end to end
def e2e(args) -> int:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    from client import ConsumerGroupMember, TopicNames
    from deploy.kafka_local import LocalKafka, free_port
    from tests.integration.harness import StreamJob

    interval = args.interval_ms
    coordinator = {"group.consumer.heartbeat.interval.ms": interval}
    if interval < 5000:
        coordinator["group.consumer.min.heartbeat.interval.ms"] = interval
    topic, group = "bench-cg-topic", "bench-cg-group"
    work = Path(tempfile.mkdtemp(prefix="bench-cg-"))
    broker = LocalKafka(work / "kafka", free_port(), free_port()).start()
    results = []
    try:
        job = StreamJob(
            broker.bootstrap, work / "job", "bench-cg", coordinator=coordinator, stream={"metadata_refresh_ms": 1000}
        ).start()
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic(topic, args.partitions, 1)])
        names = TopicNames(broker.bootstrap)
        cc = job.client("bench-cg-client")
        last_change = [0.0]
        lock = threading.Lock()
        latencies: list[float] = []

        def responded(resp, seconds):
            latencies.append(seconds)

        def touched(_):
            with lock:
                last_change[0] = time.monotonic()

        def member(i):
            return ConsumerGroupMember(
                cc,
                group,
                [topic],
                member_id=None,
                response_timeout_s=10,
                on_assign=touched,
                on_revoke=touched,
                on_response=responded,
            ).start()

        def converged(members) -> bool:
            owned = [names.by_name(m.owned()).get(topic, []) for m in members]
            flat = sorted(p for o in owned for p in o)
            if flat != list(range(args.partitions)) or max(map(len, owned)) - min(map(len, owned)) > 1:
                return False
            g = cc.request(
                "ConsumerGroupDescribe",
                1,
                {"groupIds": [group], "includeAuthorizedOperations": False},
                key=group,
                timeout=60,
            )["groups"][0]
            server = {
                m["memberId"]: sorted(p for tp in m["assignment"]["topicPartitions"] for p in tp["partitions"])
                for m in g["members"]
            }
            return g["groupState"] == "Stable" and server == {
                m.member_id: o for m, o in zip(members, owned, strict=True)
            }

        def wait(members, timeout=300.0) -> None:
            deadline = time.monotonic() + timeout
            while not converged(members):
                if time.monotonic() > deadline:
                    raise RuntimeError("no convergence")
                time.sleep(0.05)

        members = [member(i) for i in range(args.members - 1)]
        wait(members)
        latencies.clear()
        loads = []
        for r in range(args.rounds):
            time.sleep(interval / 1000)  # a quiet group
            loads.append(os.getloadavg()[0])
            start = time.monotonic()
            joining = member(args.members + r)
            wait(members + [joining])
            with lock:
                took = last_change[0] - start
            results.append(took)
            print(f"round {r + 1}: a group of {args.members} converged {took:.2f} s after the join", flush=True)
            joining.stop()
            wait(members)
        for m in members:
            m.stop()
        names.close()
        cc.close()
        admin.close()
        job.stop()
    finally:
        broker.stop(timeout=3)
    print(
        f"\n{args.members}-member group, {args.partitions} partitions, heartbeat interval {interval} ms: "
        f"convergence after a join: median {statistics.median(results):.2f} s, "
        f"min {min(results):.2f} s, max {max(results):.2f} s over {len(results)} rounds"
    )
    lat = sorted(latencies)
    print(
        f"heartbeat round trip through the job: median {statistics.median(lat) * 1000:.0f} ms, "
        f"p90 {lat[int(0.9 * (len(lat) - 1))] * 1000:.0f} ms ({len(lat)} heartbeats); "
        f"1-minute load average during the rounds {statistics.mean(loads):.1f} on {os.cpu_count()} cores"
    )
    return 0


# ====================================================================== core
def core(args) -> int:
    import state
    from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient

    sizes = [(10, 100), (100, 1000)] if args.quick else [(10, 100), (100, 1000), (1000, 10000)]
    print(
        f"{'members':>8}{'partitions':>11}{'steady hb (ms)':>16}{'join hb (ms)':>14}{'state (KiB)':>13}"
        f"{'encode+decode (ms)':>20}"
    )
    for members, partitions in sizes:
        c = ConsumerGroupTestClient(topics={"t": partitions}, roundtrip=False)
        for i in range(members):
            c.join(f"m{i:05d}", ["t"])
        # settle: everyone acknowledges until Stable
        for _ in range(5):
            for i in range(members):
                m = c.member(f"m{i:05d}")
                c.heartbeat(m.member_id, m.member_epoch, owned={t: sorted(p) for t, p in m.assigned_partitions.items()})
            if str(c.group().state) == "Stable":
                break
        steady = []
        for i in range(min(members, 200)):
            m = c.member(f"m{i:05d}")
            t = time.perf_counter()
            c.heartbeat(m.member_id, m.member_epoch)
            steady.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        c.join("joiner", ["t"])
        join_ms = (time.perf_counter() - t) * 1000
        snap = c.d._state.to_json()
        t = time.perf_counter()
        blob = state.encode(snap)
        state.decode(*blob)
        codec_ms = (time.perf_counter() - t) * 1000
        print(
            f"{members:>8}{partitions:>11}{statistics.median(steady):>16.2f}{join_ms:>14.1f}"
            f"{len(blob[1]) / 1024:>13.1f}{codec_ms:>20.1f}"
        )
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    e = sub.add_parser("e2e")
    e.add_argument("--members", type=int, default=10)
    e.add_argument("--partitions", type=int, default=30)
    e.add_argument("--rounds", type=int, default=3)
    e.add_argument("--interval-ms", type=int, default=5000)
    c = sub.add_parser("core")
    c.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    return e2e(args) if args.mode == "e2e" else core(args)


if __name__ == "__main__":
    sys.exit(main())
