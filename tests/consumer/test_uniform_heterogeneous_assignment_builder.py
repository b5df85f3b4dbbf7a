"""Mirrors Kafka's UniformHeterogeneousAssignmentBuilderTest.

Kafka's test iterates members in sorted order (its TestGroupSpecImpl) and breaks topic ties by
topic id; its fixed Uuids compare in the same order as the names topic1 < topic2 < topic3 < topic4,
so its expected assignments apply unchanged.
"""

from __future__ import annotations

import pytest

from coordinator.group.consumer.assignors import PartitionAssignorException, SubscriptionType, UniformAssignor

from . import common_assignor_tests as common
from .helpers import assert_assignment, check_complete, check_validity_and_balance, member, mk_assignment, run
from .helpers import mk_topic_assignment as tp

HETEROGENEOUS = SubscriptionType.HETEROGENEOUS
assignor = UniformAssignor()
TOPIC1, TOPIC2, TOPIC3, TOPIC4 = "topic1", "topic2", "topic3", "topic4"
A, B, C = "A", "B", "C"


@pytest.mark.parametrize("rack_aware", [False, True])
def test_assignment_reuse(rack_aware):
    common.test_assignment_reuse(assignor, HETEROGENEOUS, rack_aware)


@pytest.mark.parametrize("rack_aware", [False, True])
def test_iteration_order_stickiness(rack_aware):
    common.test_reassignment_stickiness(assignor, HETEROGENEOUS, rack_aware)


@pytest.mark.parametrize("rack_aware", [False, True])
def test_static_member_replacement_stickiness(rack_aware):
    common.test_static_member_replacement_stickiness(assignor, HETEROGENEOUS, rack_aware)


@pytest.mark.parametrize("rack_aware", [False, True])
def test_member_replacement_stickiness(rack_aware):
    common.test_member_replacement_stickiness(assignor, HETEROGENEOUS, rack_aware, newcomer_takes_freed=False)


def test_two_members_no_topic_subscription():
    assert run(assignor, {A: member([]), B: member([])}, {TOPIC1: 3}, HETEROGENEOUS) == {}


def test_two_members_subscribed_to_nonexistent_topics():
    with pytest.raises(PartitionAssignorException):
        run(assignor, {A: member([TOPIC3]), B: member([TOPIC2])}, {TOPIC1: 3}, HETEROGENEOUS)


def test_first_assignment_two_members_two_topics():
    members = {A: member([TOPIC1, TOPIC3]), B: member([TOPIC3])}
    computed = run(assignor, members, {TOPIC1: 3, TOPIC3: 6}, HETEROGENEOUS)
    assert_assignment(
        {A: mk_assignment(tp(TOPIC1, 0, 1, 2), tp(TOPIC3, 4)), B: mk_assignment(tp(TOPIC3, 0, 1, 2, 3, 5))}, computed
    )


def test_first_assignment_num_members_greater_than_total_num_partitions():
    members = {A: member([TOPIC3]), B: member([TOPIC3]), C: member([TOPIC1])}
    computed = run(assignor, members, {TOPIC3: 1, TOPIC1: 2}, HETEROGENEOUS)
    assert_assignment({A: mk_assignment(tp(TOPIC3, 0)), B: {}, C: mk_assignment(tp(TOPIC1, 0, 1))}, computed)


def test_reassignment_for_two_members_three_topics_given_unbalanced_prev_assignment():
    members = {
        A: member([TOPIC1], mk_assignment(tp(TOPIC1, 0, 1, 2))),
        B: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 3), tp(TOPIC2, 0))),
        C: member(
            [TOPIC1, TOPIC2, TOPIC3], mk_assignment(tp(TOPIC1, 4, 5), tp(TOPIC2, 1, 2, 3), tp(TOPIC3, 0, 1, 2, 3))
        ),
    }
    computed = run(assignor, members, {TOPIC1: 6, TOPIC2: 4, TOPIC3: 4}, HETEROGENEOUS)
    assert_assignment(
        {
            A: mk_assignment(tp(TOPIC1, 0, 1, 2, 5)),
            B: mk_assignment(tp(TOPIC1, 3), tp(TOPIC2, 0, 1, 2, 3)),
            C: mk_assignment(tp(TOPIC1, 4), tp(TOPIC3, 0, 1, 2, 3)),
        },
        computed,
    )


def test_reassignment_when_partitions_are_added_for_two_members():
    # Originally T1 -> 4, T2 -> 3, T3 -> 2, T4 -> 3 partitions.
    members = {
        A: member([TOPIC1, TOPIC3], mk_assignment(tp(TOPIC1, 0, 1, 2, 3), tp(TOPIC3, 0, 1))),
        B: member([TOPIC1, TOPIC2, TOPIC3, TOPIC4], mk_assignment(tp(TOPIC2, 0, 1, 2), tp(TOPIC4, 0, 1, 2))),
    }
    computed = run(assignor, members, {TOPIC1: 6, TOPIC2: 5, TOPIC3: 3, TOPIC4: 3}, HETEROGENEOUS)
    assert_assignment(
        {
            A: mk_assignment(tp(TOPIC1, 0, 1, 2, 3, 4, 5), tp(TOPIC3, 0, 1, 2)),
            B: mk_assignment(tp(TOPIC2, 0, 1, 2, 3, 4), tp(TOPIC4, 0, 1, 2)),
        },
        computed,
    )


def test_reassignment_when_one_member_added_and_partitions_added_two_members_two_topics():
    # Initially T1 -> 3, T2 -> 3 partitions.
    members = {
        A: member([TOPIC1], mk_assignment(tp(TOPIC1, 0, 2), tp(TOPIC2, 0))),
        B: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 1), tp(TOPIC2, 1, 2))),
        C: member([TOPIC1, TOPIC2]),  # a new member triggers a re-assignment
    }
    computed = run(assignor, members, {TOPIC1: 6, TOPIC2: 7}, HETEROGENEOUS)
    assert_assignment(
        {
            A: mk_assignment(tp(TOPIC1, 0, 2, 3, 4, 5)),
            B: mk_assignment(tp(TOPIC1, 1), tp(TOPIC2, 1, 2, 6)),
            C: mk_assignment(tp(TOPIC2, 0, 3, 4, 5)),
        },
        computed,
    )


def test_reassignment_when_one_member_removed_after_initial_assignment_with_three_members_three_topics():
    members = {  # member C was removed
        A: member([TOPIC1, TOPIC3], mk_assignment(tp(TOPIC1, 0, 1, 2), tp(TOPIC3, 0, 1))),
        B: member([TOPIC2], mk_assignment(tp(TOPIC2, 3, 4, 5, 6))),
    }
    computed = run(assignor, members, {TOPIC1: 3, TOPIC2: 8, TOPIC3: 3}, HETEROGENEOUS)
    assert_assignment(
        {
            A: mk_assignment(tp(TOPIC1, 0, 1, 2), tp(TOPIC3, 0, 1, 2)),
            B: mk_assignment(tp(TOPIC2, 0, 1, 2, 3, 4, 5, 6, 7)),
        },
        computed,
    )


def test_reassignment_when_one_subscription_removed_after_initial_assignment_with_two_members_two_topics():
    # Initial subscriptions were [T1, T2].
    members = {
        A: member([TOPIC1], mk_assignment(tp(TOPIC1, 0, 2), tp(TOPIC2, 1, 3))),
        B: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 1), tp(TOPIC2, 0, 2, 4))),
    }
    computed = run(assignor, members, {TOPIC1: 3, TOPIC2: 5}, HETEROGENEOUS)
    assert_assignment({A: mk_assignment(tp(TOPIC1, 0, 1, 2)), B: mk_assignment(tp(TOPIC2, 0, 1, 2, 3, 4))}, computed)


def test_reassignment_when_topic_partitions_run_out_and_members_have_no_partitions():
    """The per-topic loop stops when it cannot find a partition to move."""
    members = {
        A: member([TOPIC1, TOPIC2, TOPIC3], mk_assignment(tp(TOPIC1, 0, 1), tp(TOPIC2, 0, 1), tp(TOPIC3, 0, 1))),
        B: member([TOPIC1, TOPIC2, TOPIC3]),
    }
    computed = run(assignor, members, {TOPIC1: 2, TOPIC2: 2, TOPIC3: 2}, HETEROGENEOUS)
    assert_assignment(
        {A: mk_assignment(tp(TOPIC2, 0), tp(TOPIC3, 0, 1)), B: mk_assignment(tp(TOPIC1, 0, 1), tp(TOPIC2, 1))}, computed
    )


def test_first_assignment_with_two_members_including_one_without_subscriptions():
    members = {A: member([TOPIC1]), B: member([])}
    computed = run(assignor, members, {TOPIC1: 3}, HETEROGENEOUS)
    assert_assignment({A: mk_assignment(tp(TOPIC1, 0, 1, 2)), B: {}}, computed)


# ----------------------------------------------------------------- beyond Kafka's test class


def test_overlapping_subscriptions_are_complete_and_valid():
    topics = {f"t{i}": 3 + i for i in range(8)}
    members = {f"m{i}": member([f"t{(i + k) % 8}" for k in range(1 + i % 3)]) for i in range(12)}
    computed = run(assignor, members, topics, HETEROGENEOUS)
    check_complete(members, computed, topics)


def test_identical_subscribers_per_topic_are_balanced():
    """When all subscribers of every topic share one subscription, the result is balanced within
    each subscriber set."""
    topics = {"x1": 7, "x2": 4, "y1": 10}
    members = {**{f"x{i}": member(["x1", "x2"]) for i in range(3)}, **{f"y{i}": member(["y1"]) for i in range(4)}}
    computed = run(assignor, members, topics, HETEROGENEOUS)
    check_complete(members, computed, topics)
    check_validity_and_balance(
        {m: members[m] for m in members if m.startswith("x")}, {m: a for m, a in computed.items() if m.startswith("x")}
    )
    check_validity_and_balance(
        {m: members[m] for m in members if m.startswith("y")}, {m: a for m, a in computed.items() if m.startswith("y")}
    )
