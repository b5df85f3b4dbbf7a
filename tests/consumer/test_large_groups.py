"""Large inputs: 1,000 members x 10,000 partitions (100 topics x 100 partitions).

Validity and balance only; no timing assertions (see bench/assignors.py for timings: each case
here takes a few tens of milliseconds)."""

from __future__ import annotations

import random

from coordinator.group.consumer.assignors import (
    GroupSpec,
    RangeAssignor,
    SubscribedTopicDescriber,
    SubscriptionType,
    UniformAssignor,
)
from coordinator.group.consumer.assignors import MemberSubscriptionAndAssignment as Spec
from coordinator.group.consumer.group import ConsumerGroup
from coordinator.group.consumer.group_state import ConsumerGroupState
from coordinator.group.consumer.member import ConsumerGroupMember
from coordinator.group.consumer.reconciliation import reconcile
from coordinator.group.consumer.target_assignment import TargetAssignmentBuilder

from .helpers import check_complete, check_validity_and_balance

HOMOGENEOUS, HETEROGENEOUS = SubscriptionType.HOMOGENEOUS, SubscriptionType.HETEROGENEOUS
TOPICS = {f"topic-{i:03d}": 100 for i in range(100)}
ALL = frozenset(TOPICS)
MEMBERS = [f"member-{i:04d}" for i in range(1000)]
DESCRIBER = SubscribedTopicDescriber(TOPICS)


def assign(assignor, members, subscription_type):
    return assignor.assign(GroupSpec(members, subscription_type), DESCRIBER)


def kept(old, new):
    return sum(len(ps & new.get(t, frozenset())) for t, ps in old.items())


def test_uniform_homogeneous_1000_members_10000_partitions():
    members = {m: Spec(ALL, {}) for m in MEMBERS}
    first = assign(UniformAssignor(), members, HOMOGENEOUS)
    check_complete(members, first, TOPICS)
    check_validity_and_balance(members, first)
    assert {sum(map(len, a.values())) for a in first.values()} == {10}

    # One member joins: 10,000 / 1,001 -> 9 or 10 each; members keep up to their quota.
    grown = {m: Spec(ALL, first[m]) for m in MEMBERS}
    grown["member-new"] = Spec(ALL, {})
    second = assign(UniformAssignor(), grown, HOMOGENEOUS)
    check_complete(grown, second, TOPICS)
    check_validity_and_balance(grown, second)
    moved = sum(10 - kept(first[m], second[m]) for m in MEMBERS)
    assert moved == sum(map(len, second["member-new"].values())) == 9

    # One member leaves: everybody else keeps everything.
    shrunk = {m: Spec(ALL, first[m]) for m in MEMBERS[1:]}
    third = assign(UniformAssignor(), shrunk, HOMOGENEOUS)
    check_complete(shrunk, third, TOPICS)
    check_validity_and_balance(shrunk, third)
    assert all(kept(first[m], third[m]) == 10 for m in MEMBERS[1:])


def test_uniform_heterogeneous_1000_members_10000_partitions():
    rnd = random.Random(42)
    names = sorted(TOPICS)
    members = {m: Spec(frozenset(rnd.sample(names, rnd.randint(1, 40))), {}) for m in MEMBERS}
    first = assign(UniformAssignor(), members, HETEROGENEOUS)
    check_complete(members, first, TOPICS)
    sizes = [sum(map(len, a.values())) for a in first.values()]
    # Overlapping, non-identical subscriptions: nearly balanced (Kafka guarantees no more).
    assert max(sizes) - min(sizes) <= 2

    grown = {m: Spec(members[m].subscribed_topics, first[m]) for m in MEMBERS}
    grown["member-new"] = Spec(frozenset(names[:20]), {})
    second = assign(UniformAssignor(), grown, HETEROGENEOUS)
    check_complete(grown, second, TOPICS)
    # Little more than the newcomer's share moves (here 14 partitions for its 10).
    moved = 10_000 - sum(kept(first[m], second[m]) for m in MEMBERS)
    assert moved <= 2 * sum(map(len, second["member-new"].values()))


def test_range_1000_members_10000_partitions():
    members = {m: Spec(ALL, {}) for m in MEMBERS}
    result = assign(RangeAssignor(), members, HOMOGENEOUS)
    check_complete(members, result, TOPICS)
    # 100 partitions per topic over 1,000 members: the first 100 members get one of each topic.
    assert all(result[m] == {t: frozenset({i}) for t in TOPICS} for i, m in enumerate(MEMBERS[:100]))
    assert all(result[m] == {} for m in MEMBERS[100:])

    rnd = random.Random(7)
    names = sorted(TOPICS)
    het = {m: Spec(frozenset(rnd.sample(names, rnd.randint(1, 40))), {}) for m in MEMBERS}
    result = assign(RangeAssignor(), het, HETEROGENEOUS)
    check_complete(het, result, TOPICS)


def test_target_assignment_and_reconciliation_of_a_1000_member_group():
    """The whole path at scale: a target for 1,000 members, then each member reconciles against
    the partition epochs (a fresh group: everything is free, so all are STABLE at once)."""
    group = ConsumerGroup("big")
    group.group_epoch = 1
    members = {m: ConsumerGroupMember(m, subscribed_topic_names=ALL) for m in MEMBERS}
    result = TargetAssignmentBuilder("big", 1, "uniform").with_members(members).with_topic_metadata(TOPICS).build()
    assert len(result.changed) == 1000 and len(result.records()) == 1001
    group.target_assignment_epoch = 1
    for m, a in result.target_assignment.items():
        group.update_target_assignment(m, a)
    for m, member in members.items():
        group.update_member(
            reconcile(member, 1, group.target_assignment[m], group.current_partition_epoch, {}, topics=TOPICS)
        )
    assert group.state == ConsumerGroupState.STABLE
    assert len(group.partition_epochs) == 10_000
