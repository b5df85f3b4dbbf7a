"""Mirrors Kafka's RangeAssignorTest for the 4.x (non-sticky, KAFKA-16944) RangeAssignor.

Kafka's trunk adds rack-aware range tests; the 4.x range assignor is not rack-aware, so those are
not mirrored. `test_reassignment_stickiness` (Kafka's CommonAssignorTests.testReassignmentStickiness
for range) runs with and without racks, both subscription types.
"""

from __future__ import annotations

import pytest

from coordinator.group.consumer.assignors import PartitionAssignorException, RangeAssignor, SubscriptionType

from . import common_assignor_tests as common
from .helpers import assert_assignment, check_complete, member, mk_assignment, run
from .helpers import mk_topic_assignment as tp

HOMOGENEOUS, HETEROGENEOUS = SubscriptionType.HOMOGENEOUS, SubscriptionType.HETEROGENEOUS
assignor = RangeAssignor()
TOPIC1, TOPIC2, TOPIC3 = "topic1", "topic2", "topic3"
A, B, C = "A", "B", "C"


@pytest.mark.parametrize(
    "subscription_type,rack_aware",
    [(HOMOGENEOUS, False), (HOMOGENEOUS, True), (HETEROGENEOUS, False), (HETEROGENEOUS, True)],
)
def test_reassignment_stickiness(subscription_type, rack_aware):
    common.test_reassignment_stickiness(assignor, subscription_type, rack_aware)


@pytest.mark.parametrize(
    "subscription_type,rack_aware",
    [(HOMOGENEOUS, False), (HOMOGENEOUS, True), (HETEROGENEOUS, False), (HETEROGENEOUS, True)],
)
def test_static_member_replacement_stickiness(subscription_type, rack_aware):
    common.test_static_member_replacement_stickiness(assignor, subscription_type, rack_aware)


def test_member_replacement_is_not_sticky():
    """Kafka disables testMemberReplacementStickiness for range: a replaced dynamic member changes
    the member order, and ranges shift."""
    with pytest.raises(AssertionError):
        common.test_member_replacement_stickiness(assignor, HOMOGENEOUS, False)


def test_one_member_no_topic():
    assert run(assignor, {A: member([])}, {}, HOMOGENEOUS) == {A: {}}


def test_one_member_subscribed_to_non_existent_topic():
    with pytest.raises(PartitionAssignorException, match="Member is subscribed to a non-existent topic"):
        run(assignor, {A: member([TOPIC2])}, {TOPIC1: 3}, HOMOGENEOUS)


def test_first_assignment_two_members_two_topics_same_subscriptions():
    members = {A: member([TOPIC1, TOPIC3]), B: member([TOPIC1, TOPIC3])}
    computed = run(assignor, members, {TOPIC1: 3, TOPIC3: 2}, HOMOGENEOUS)
    assert_assignment(
        {A: mk_assignment(tp(TOPIC1, 0, 1), tp(TOPIC3, 0)), B: mk_assignment(tp(TOPIC1, 2), tp(TOPIC3, 1))}, computed
    )


def test_first_assignment_three_members_three_topics_different_subscriptions():
    members = {A: member([TOPIC1, TOPIC2]), B: member([TOPIC3]), C: member([TOPIC2, TOPIC3])}
    computed = run(assignor, members, {TOPIC1: 3, TOPIC2: 3, TOPIC3: 2}, HETEROGENEOUS)
    assert_assignment(
        {
            A: mk_assignment(tp(TOPIC1, 0, 1, 2), tp(TOPIC2, 0, 1)),
            B: mk_assignment(tp(TOPIC3, 0)),
            C: mk_assignment(tp(TOPIC2, 2), tp(TOPIC3, 1)),
        },
        computed,
    )


def test_first_assignment_num_members_greater_than_num_partitions():
    members = {A: member([TOPIC1, TOPIC3]), B: member([TOPIC1, TOPIC3]), C: member([TOPIC1, TOPIC3])}
    computed = run(assignor, members, {TOPIC1: 3, TOPIC3: 2}, HOMOGENEOUS)
    # Topic 3 has 2 partitions but three members subscribed to it - one of them gets none.
    assert_assignment(
        {
            A: mk_assignment(tp(TOPIC1, 0), tp(TOPIC3, 0)),
            B: mk_assignment(tp(TOPIC1, 1), tp(TOPIC3, 1)),
            C: mk_assignment(tp(TOPIC1, 2)),
        },
        computed,
    )


def test_static_membership():
    members = {A: member([TOPIC1], instance_id="instanceA"), B: member([TOPIC1], instance_id="instanceB")}
    initial = run(assignor, members, {TOPIC1: 3}, HOMOGENEOUS)
    # Member A leaves and comes back with a different member id but the same instance id.
    del members[A]
    members["memberA1"] = member([TOPIC1], instance_id="instanceA")
    reassigned = run(assignor, members, {TOPIC1: 3}, HOMOGENEOUS)
    assert reassigned["memberA1"] == initial[A]
    assert reassigned[B] == initial[B]


def test_mixed_static_membership():
    members = {
        A: member([TOPIC1], instance_id="instanceA"),
        C: member([TOPIC1], instance_id="instanceC"),
        B: member([TOPIC1]),
    }
    initial = run(assignor, members, {TOPIC1: 5}, HOMOGENEOUS)
    del members[A]
    members["memberA1"] = member([TOPIC1], instance_id="instanceA")
    reassigned = run(assignor, members, {TOPIC1: 5}, HOMOGENEOUS)
    assert reassigned["memberA1"] == initial[A]
    assert reassigned[B] == initial[B]
    assert reassigned[C] == initial[C]
    # Static members come first: A(instanceA) 0-1, C(instanceC) 2-3, then dynamic B 4.
    assert_assignment(
        {A: mk_assignment(tp(TOPIC1, 0, 1)), C: mk_assignment(tp(TOPIC1, 2, 3)), B: mk_assignment(tp(TOPIC1, 4))},
        initial,
    )


def test_reassignment_num_members_greater_than_num_partitions_when_one_member_added():
    members = {
        A: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 0), tp(TOPIC2, 0))),
        B: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 1), tp(TOPIC2, 1))),
        C: member([TOPIC1, TOPIC2]),
    }  # a new member triggers a re-assignment
    computed = run(assignor, members, {TOPIC1: 2, TOPIC2: 2}, HOMOGENEOUS)
    assert_assignment(
        {A: mk_assignment(tp(TOPIC1, 0), tp(TOPIC2, 0)), B: mk_assignment(tp(TOPIC1, 1), tp(TOPIC2, 1)), C: {}},
        computed,
    )  # member C gets nothing


def test_reassignment_when_one_partition_added_for_two_members_two_topics():
    # Originally T1 -> 3 partitions and T2 -> 3 partitions.
    members = {
        A: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 0, 1), tp(TOPIC2, 0, 1))),
        B: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 2), tp(TOPIC2, 2))),
    }
    computed = run(assignor, members, {TOPIC1: 4, TOPIC2: 4}, HOMOGENEOUS)
    assert_assignment(
        {A: mk_assignment(tp(TOPIC1, 0, 1), tp(TOPIC2, 0, 1)), B: mk_assignment(tp(TOPIC1, 2, 3), tp(TOPIC2, 2, 3))},
        computed,
    )


def test_reassignment_when_one_member_added_after_initial_assignment_with_two_members_two_topics():
    members = {
        A: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 0, 1), tp(TOPIC2, 0, 1))),
        B: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 2), tp(TOPIC2, 2))),
        C: member([TOPIC1, TOPIC2]),
    }
    computed = run(assignor, members, {TOPIC1: 3, TOPIC2: 3}, HOMOGENEOUS)
    assert_assignment(
        {
            A: mk_assignment(tp(TOPIC1, 0), tp(TOPIC2, 0)),
            B: mk_assignment(tp(TOPIC1, 1), tp(TOPIC2, 1)),
            C: mk_assignment(tp(TOPIC1, 2), tp(TOPIC2, 2)),
        },
        computed,
    )


def test_reassignment_when_one_member_added_and_one_partition_after_initial_assignment_with_two_members_two_topics():
    # Add a new partition to topic 1, initially T1 -> 3 partitions.
    members = {
        A: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 0, 1), tp(TOPIC2, 0, 1))),
        B: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 2), tp(TOPIC2, 2))),
        C: member([TOPIC1]),
    }
    computed = run(assignor, members, {TOPIC1: 4, TOPIC2: 3}, HETEROGENEOUS)
    assert_assignment(
        {
            A: mk_assignment(tp(TOPIC1, 0, 1), tp(TOPIC2, 0, 1)),
            B: mk_assignment(tp(TOPIC1, 2), tp(TOPIC2, 2)),
            C: mk_assignment(tp(TOPIC1, 3)),
        },
        computed,
    )


def test_reassignment_when_one_member_removed_after_initial_assignment_with_two_members_two_topics():
    members = {B: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 2), tp(TOPIC2, 2)))}  # A removed
    computed = run(assignor, members, {TOPIC1: 3, TOPIC2: 3}, HOMOGENEOUS)
    assert_assignment({B: mk_assignment(tp(TOPIC1, 0, 1, 2), tp(TOPIC2, 0, 1, 2))}, computed)


def test_reassignment_when_multiple_subscriptions_removed_after_initial_assignment_with_three_members_two_topics():
    # Initial subscriptions A -> T1, T2 // B -> T2 // C -> T2, T3;
    # now A -> T1 // B -> T1, T2, T3 // C -> T2.
    members = {
        A: member([TOPIC1], mk_assignment(tp(TOPIC1, 0, 1, 2), tp(TOPIC2, 0))),
        B: member([TOPIC1, TOPIC2, TOPIC3], mk_assignment(tp(TOPIC2, 1))),
        C: member([TOPIC2], mk_assignment(tp(TOPIC2, 2), tp(TOPIC3, 0, 1))),
    }
    computed = run(assignor, members, {TOPIC1: 3, TOPIC2: 3, TOPIC3: 2}, HETEROGENEOUS)
    assert_assignment(
        {
            A: mk_assignment(tp(TOPIC1, 0, 1)),
            B: mk_assignment(tp(TOPIC1, 2), tp(TOPIC2, 0, 1), tp(TOPIC3, 0, 1)),
            C: mk_assignment(tp(TOPIC2, 2)),
        },
        computed,
    )


def test_co_partitioned_topics_give_each_member_the_same_partition_numbers():
    topics = {TOPIC1: 5, TOPIC2: 5}
    members = {m: member([TOPIC1, TOPIC2]) for m in "ABC"}
    computed = run(assignor, members, topics, HOMOGENEOUS)
    for a in computed.values():
        assert a[TOPIC1] == a[TOPIC2]
    check_complete(members, computed, topics)
