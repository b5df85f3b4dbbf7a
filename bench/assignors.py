"""Benchmark of the KIP-848 server-side assignors (plain Python; run from the repository root):

    python bench/assignors.py [--repeat N] [--quick]

Prints, for `uniform` and `range`, homogeneous and heterogeneous subscriptions, and groups of
10 / 100 / 1,000 / 5,000 members over 100 / 1,000 / 10,000 / 100,000 partitions:
  first   the first assignment (no current assignment);
  join    the reassignment after one member joins a group holding the first assignment.
Times are the best of N runs, in milliseconds. Then the same for TargetAssignmentBuilder.build
(members -> target + records, what a heartbeat that bumps the group epoch pays).

Heterogeneous groups: each member subscribes to a random (seeded) subset of up to half the topics.
Topics have 100 partitions each (10 for the 100-partition case).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from coordinator.group.consumer.assignors import (  # noqa: E402
    GroupSpec,
    RangeAssignor,
    SubscribedTopicDescriber,
    SubscriptionType,
    UniformAssignor,
)
from coordinator.group.consumer.assignors import MemberSubscriptionAndAssignment as Spec
from coordinator.group.consumer.member import ConsumerGroupMember  # noqa: E402
from coordinator.group.consumer.target_assignment import TargetAssignmentBuilder  # noqa: E402

ASSIGNORS = {"uniform": UniformAssignor(), "range": RangeAssignor()}
HOMO, HETERO = SubscriptionType.HOMOGENEOUS, SubscriptionType.HETEROGENEOUS


def make_topics(partitions: int) -> dict:
    per_topic = 10 if partitions <= 100 else 100
    return {f"topic-{i:04d}": per_topic for i in range(partitions // per_topic)}


def make_subscriptions(members: int, topics: dict, heterogeneous: bool) -> dict:
    names = sorted(topics)
    if not heterogeneous:
        return {f"member-{i:05d}": frozenset(names) for i in range(members)}
    rnd = random.Random(members * 31 + len(names))
    return {
        f"member-{i:05d}": frozenset(rnd.sample(names, rnd.randint(1, max(1, len(names) // 2)))) for i in range(members)
    }


def best(fn, repeat: int) -> tuple[float, object]:
    result, times = None, []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1000, result


def bench_assignor(assignor, subs, topics, subscription_type, repeat):
    describer = SubscribedTopicDescriber(topics)
    members = {m: Spec(s, {}) for m, s in subs.items()}
    t_first, first = best(lambda: assignor.assign(GroupSpec(members, subscription_type), describer), repeat)
    joined = {m: Spec(subs[m], first.get(m, {})) for m in subs}
    joined["member-new"] = Spec(next(iter(subs.values())), {})
    t_join, _ = best(lambda: assignor.assign(GroupSpec(joined, subscription_type), describer), repeat)
    return t_first, t_join


def bench_target_builder(subs, topics, repeat):
    members = {m: ConsumerGroupMember(m, subscribed_topic_names=s) for m, s in subs.items()}

    def build(target=None):
        b = (
            TargetAssignmentBuilder("g", 2, "uniform")
            .with_members(members)
            .with_topic_metadata(topics)
            .with_target_assignment(target or {})
        )
        return b.build()

    t_first, first = best(build, repeat)
    target = first.target_assignment
    newcomer = ConsumerGroupMember("member-new", subscribed_topic_names=next(iter(subs.values())))

    def join():
        return (
            TargetAssignmentBuilder("g", 3, "uniform")
            .with_members(members)
            .with_topic_metadata(topics)
            .with_target_assignment(target)
            .add_or_update_member("member-new", newcomer)
            .build()
        )

    t_join, joined = best(join, repeat)
    return t_first, t_join, len(joined.changed)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="skip the largest cases")
    args = parser.parse_args()
    sizes = [(10, 100), (100, 1_000), (1_000, 10_000), (5_000, 100_000)]
    if args.quick:
        sizes = sizes[:3]

    print(f"Python {sys.version.split()[0]}, best of {args.repeat} runs, milliseconds")
    print()
    header = f"{'assignor':<8} {'subscriptions':<13} {'members':>7} {'partitions':>10} {'first':>9} {'join':>9}"
    print(header)
    print("-" * len(header))
    for name, assignor in ASSIGNORS.items():
        for heterogeneous in (False, True):
            for members, partitions in sizes:
                topics = make_topics(partitions)
                subs = make_subscriptions(members, topics, heterogeneous)
                st = HETERO if heterogeneous else HOMO
                t_first, t_join = bench_assignor(assignor, subs, topics, st, args.repeat)
                print(
                    f"{name:<8} {'heterogeneous' if heterogeneous else 'homogeneous':<13} "
                    f"{members:>7} {partitions:>10} {t_first:>9.2f} {t_join:>9.2f}"
                )
    print()
    header = (
        f"{'TargetAssignmentBuilder (uniform)':<34} {'members':>7} {'partitions':>10} "
        f"{'first':>9} {'join':>9} {'records':>7}"
    )
    print(header)
    print("-" * len(header))
    for heterogeneous in (False, True):
        for members, partitions in sizes:
            topics = make_topics(partitions)
            subs = make_subscriptions(members, topics, heterogeneous)
            t_first, t_join, changed = bench_target_builder(subs, topics, args.repeat)
            print(
                f"{'heterogeneous' if heterogeneous else 'homogeneous':<34} {members:>7} {partitions:>10} "
                f"{t_first:>9.2f} {t_join:>9.2f} {changed + 1:>7}"
            )


if __name__ == "__main__":
    main()
