#!/usr/bin/env python3
"""One group of many members joining, in the coordinator core (no Spark, no Kafka): batch time,
state size and memory, for a classic group (JoinGroup) and a KIP-848 consumer group
(ConsumerGroupHeartbeat), members joining in micro-batches of --batch requests.

    .venv/bin/python bench/large_group.py [--members 10000] [--batch 500] [--partitions 100]

Kafka's group.max.size / group.consumer.max.size (default: unbounded, as in Kafka) bound what a
group may grow to; this shows what an unbounded one costs. Prints, per kind: median and largest batch
time, the time of the batch that completes the join phase (classic), the encoded state's bytes and
the process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import state  # noqa: E402
from coordinator import CoordinatorConfig, CoordinatorPartition, coordinator_partition  # noqa: E402
from coordinator.batch import InputRecord, run_batch  # noqa: E402
from tests.group.group_helpers import protocols  # noqa: E402

GROUP = "large-group"


def envelope(api: str, version: int, cid: int, body: dict, client: str) -> bytes:
    return json.dumps(
        {"apiKey": api, "apiVersion": version, "correlationId": cid, "clientId": client, "request": body}
    ).encode()


def drive(
    pid: int, config: CoordinatorConfig, batches: list[list[bytes]], start_ms: int, step_ms: int = 200, tail_ms: int = 0
) -> tuple[list[float], CoordinatorPartition, int]:
    """Each batch through run_batch with the state encoded between batches, as the stream does."""
    blob = state.encode(CoordinatorPartition(pid, config).to_json())
    now, offset, times = start_ms, 0, []
    part = None
    for values in batches + [[]] * (tail_ms // step_ms):
        records = []
        for v in values:
            records.append(InputRecord(GROUP, v, now, 0, offset, internal=b'"UpdateMetadata"' in v))
            offset += 1
        started = time.perf_counter()
        part, out = run_batch(lambda b=blob: CoordinatorPartition(pid, config, state.decode(*b)), records, now)
        blob = state.encode(part.to_json())
        times.append(time.perf_counter() - started)
        now += step_ms
    return times, part, len(blob[1])


def service_config(max_size: int | None) -> CoordinatorConfig:
    """The service's configuration (conf/defaults.toml), optionally with another group size limit."""
    from streaming.config import StreamConfig

    config = CoordinatorConfig(StreamConfig.load(environ={}).coordinator_config().to_json())
    if max_size is not None:
        config = config.with_overrides(group_max_size=max_size, group_consumer_max_size=max_size)
    return config.with_overrides(coordinator_timer_grace_ms=0)


def classic(members: int, batch: int, config: CoordinatorConfig) -> dict:
    pid = coordinator_partition(GROUP)
    joins = [
        envelope(
            "JoinGroup",
            3,
            i,
            {
                "groupId": GROUP,
                "sessionTimeoutMs": 45000,
                "rebalanceTimeoutMs": 60000,
                "memberId": "",
                "protocolType": "consumer",
                "protocols": protocols("range", topics=["orders"]),
            },
            f"member-{i}",
        )
        for i in range(members)
    ]
    batches = [joins[i : i + batch] for i in range(0, members, batch)]
    times, part, size = drive(
        pid, config, batches, 1_000_000, tail_ms=config["group.initial.rebalance.delay.ms"] + 2_000
    )
    group = part.component("groups").groups[GROUP]
    return {
        "kind": "classic",
        "members": len(group.members),
        "state": group.state,
        "batches": times,
        "stateBytes": size,
    }


def consumer(members: int, batch: int, partitions: int, config: CoordinatorConfig) -> dict:
    pid = coordinator_partition(GROUP)
    metadata = json.dumps(
        {
            "apiKey": "UpdateMetadata",
            "apiVersion": 0,
            "correlationId": 0,
            "clientId": "md",
            "request": {
                "topicStates": [
                    {"topicName": "orders", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "numPartitions": partitions}
                ]
            },
        }
    ).encode()
    hbs = [
        envelope(
            "ConsumerGroupHeartbeat",
            1,
            i,
            {
                "groupId": GROUP,
                "memberId": f"member-{i:05d}-aaaaaaaaaaaa",
                "memberEpoch": 0,
                "instanceId": None,
                "rackId": None,
                "rebalanceTimeoutMs": 60000,
                "subscribedTopicNames": ["orders"],
                "serverAssignor": "uniform",
                "topicPartitions": [],
            },
            f"member-{i}",
        )
        for i in range(members)
    ]
    batches = [[metadata]] + [hbs[i : i + batch] for i in range(0, members, batch)]
    times, part, size = drive(pid, config, batches, 1_000_000)
    group = part.component("groups").groups[GROUP]
    return {"kind": "consumer", "members": len(group.members), "batches": times[1:], "stateBytes": size}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--kinds", nargs="+", default=["classic", "consumer"])
    ap.add_argument(
        "--max-size", type=int, help="group.max.size and group.consumer.max.size (default: conf/defaults.toml's)"
    )
    args = ap.parse_args()
    config = service_config(args.max_size)
    print(
        f"group.max.size {config['group.max.size']}, group.consumer.max.size {config['group.consumer.max.size']}; "
        f"{args.members} members try to join, {args.batch} per batch"
    )
    print(
        f"{'kind':>8} {'members':>8} {'batch p50 s':>11} {'batch max s':>11} {'total s':>8} "
        f"{'state KB':>9} {'peak RSS MB':>11}"
    )
    for kind in args.kinds:
        r = (
            classic(args.members, args.batch, config)
            if kind == "classic"
            else consumer(args.members, args.batch, args.partitions, config)
        )
        t = r["batches"]
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{kind:>8} {r['members']:>8} {statistics.median(t):>11.3f} {max(t):>11.3f} {sum(t):>8.1f} "
            f"{r['stateBytes'] / 1024:>9.0f} {rss:>11.0f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
