"""Benchmark of the share groups' simple assignor (coordinator/share/simple_assignor.py) and of a
share group heartbeat that recomputes the target (plain Python; run from the repository root):

    python bench/share_assignor.py [--repeat N]

Prints, for homogeneous and heterogeneous subscriptions and groups of 1,000 members over 100 /
1,000 / 10,000 partitions:
  first   the first assignment (no current assignment);
  join    the reassignment after one member joins a group holding the first assignment;
then the core's cost of one ShareGroupHeartbeat that joins a group of 1,000 members (the epoch
bump, the simple assignor, the records and their replay, state encoded as the stream does).
Times are the best of N runs, in milliseconds.

Heterogeneous groups: each member subscribes to a random (seeded) subset of up to half the topics.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from coordinator.share.simple_assignor import SimpleAssignor  # noqa: E402

MEMBERS = 1000


def make_topics(partitions: int) -> dict:
    per_topic = 10 if partitions <= 100 else 100
    return {f"topic-{i:04d}": per_topic for i in range(partitions // per_topic)}


def make_members(n: int, topics: dict, heterogeneous: bool) -> dict:
    rng = random.Random(42)
    names = sorted(topics)
    out = {}
    for i in range(n):
        subs = names if not heterogeneous else rng.sample(names, rng.randint(1, max(1, len(names) // 2)))
        out[f"member-{i:05d}"] = (frozenset(subs), {})
    return out


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return min(times)


def bench_assignor(repeat: int) -> None:
    assignor = SimpleAssignor()
    print(f"simple assignor, {MEMBERS:,} members (best of {repeat}, ms)")
    print(f"{'subscriptions':<14}{'partitions':>11}{'first':>10}{'join':>10}")
    for heterogeneous in (False, True):
        for partitions in (100, 1000, 10000):
            topics = make_topics(partitions)
            members = make_members(MEMBERS, topics, heterogeneous)
            first = assignor.assign(members, topics, not heterogeneous)
            t_first = best(lambda: assignor.assign(members, topics, not heterogeneous), repeat)
            joined = {m: (subs, first[m]) for m, (subs, _) in members.items()}
            joined["member-new"] = (frozenset(sorted(topics)), {})
            t_join = best(lambda: assignor.assign(joined, topics, not heterogeneous), repeat)
            kind = "heterogeneous" if heterogeneous else "homogeneous"
            print(f"{kind:<14}{partitions:>11,}{t_first:>10.1f}{t_join:>10.1f}")


def bench_heartbeat(repeat: int) -> None:
    """One ShareGroupHeartbeat joining a group of 1,000 members, through run_batch with the state
    encoded between batches (tests/core_driver.py)."""
    from coordinator.metadata import BROADCAST_KEY
    from tests.consumer.consumer_group_helpers import topic_id
    from tests.core_driver import CoreDriver

    print(f"\nShareGroupHeartbeat joining a group of {MEMBERS:,} members (core, state encoded; best of {repeat}, ms)")
    for partitions in (100, 1000):
        topics = make_topics(partitions)
        d = CoreDriver("share-bench", coordinator_partitions=1, group_share_max_size=1000)
        d.send(
            "UpdateMetadata",
            0,
            {"topicStates": [{"topicName": t, "topicId": topic_id(t), "numPartitions": n} for t, n in topics.items()]},
            key=BROADCAST_KEY,
        )

        def join(i: int) -> dict:
            return d.send(
                "ShareGroupHeartbeat",
                1,
                {
                    "groupId": "share-bench",
                    "memberId": f"member-{i:05d}-xxxxxxxx",
                    "memberEpoch": 0,
                    "rackId": None,
                    "subscribedTopicNames": sorted(topics),
                },
                key="share-bench",
            )

        for i in range(MEMBERS - 1):
            join(i)
        times = []
        for r in range(repeat):
            t = time.perf_counter()
            resp = join(MEMBERS - 1 + r)
            times.append((time.perf_counter() - t) * 1000)
            assert resp["errorCode"] == 0, resp
            d.send(
                "ShareGroupHeartbeat",
                1,
                {
                    "groupId": "share-bench",
                    "memberId": f"member-{MEMBERS - 1 + r:05d}-xxxxxxxx",
                    "memberEpoch": -1,
                    "rackId": None,
                    "subscribedTopicNames": None,
                },
                key="share-bench",
            )
        print(f"  {partitions:>6,} partitions: {min(times):8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bench_assignor(args.repeat)
    bench_heartbeat(args.repeat)


if __name__ == "__main__":
    main()
