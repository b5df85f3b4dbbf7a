"""Mirrors Kafka's UniformHomogeneousAssignmentBuilderTest (4.1+, KAFKA-18688 semantics).

Topic iteration order: Kafka visits the group's topics in Java HashSet order of the test's fixed
topic Uuids, which is topic2, topic3, topic1 (buckets 1, 9, 10); this port visits topics by name.
The module's topic names are chosen to sort in that same order so that Kafka's expected
assignments apply unchanged. The two tests whose outcome depends instead on the insertion order
of a member's current assignment (`mkOrderedAssignment`: topic1 then topic2) use names sorting
that way.
"""

from __future__ import annotations

import pytest

from coordinator.group.consumer.assignors import (
    GroupSpec,
    PartitionAssignorException,
    SubscribedTopicDescriber,
    SubscriptionType,
    UniformAssignor,
)

from . import common_assignor_tests as common
from .helpers import assert_assignment, check_validity_and_balance, member, mk_assignment, run
from .helpers import mk_topic_assignment as tp

HOMOGENEOUS = SubscriptionType.HOMOGENEOUS
assignor = UniformAssignor()
TOPIC1, TOPIC2, TOPIC3 = "c-topic1", "a-topic2", "b-topic3"  # sorted: topic2, topic3, topic1
A, B, C = "A", "B", "C"


@pytest.mark.parametrize("rack_aware", [False, True])
def test_assignment_reuse(rack_aware):
    common.test_assignment_reuse(assignor, HOMOGENEOUS, rack_aware)


@pytest.mark.parametrize("rack_aware", [False, True])
def test_iteration_order_stickiness(rack_aware):
    common.test_reassignment_stickiness(assignor, HOMOGENEOUS, rack_aware)


@pytest.mark.parametrize("rack_aware", [False, True])
def test_static_member_replacement_stickiness(rack_aware):
    common.test_static_member_replacement_stickiness(assignor, HOMOGENEOUS, rack_aware)


@pytest.mark.parametrize("rack_aware", [False, True])
def test_member_replacement_stickiness(rack_aware):
    common.test_member_replacement_stickiness(assignor, HOMOGENEOUS, rack_aware)


def test_one_member_no_topic_subscription():
    assert run(assignor, {A: member([])}, {TOPIC1: 3}, HOMOGENEOUS) == {}


def test_one_member_subscribed_to_nonexistent_topic():
    with pytest.raises(PartitionAssignorException):
        run(assignor, {A: member([TOPIC2])}, {TOPIC1: 3}, HOMOGENEOUS)


def test_first_assignment_two_members_two_topics_no_member_racks():
    members = {A: member([TOPIC1, TOPIC3]), B: member([TOPIC1, TOPIC3])}
    computed = run(assignor, members, {TOPIC1: 3, TOPIC3: 2}, HOMOGENEOUS)
    assert_assignment({A: mk_assignment(tp(TOPIC3, 0, 1)), B: mk_assignment(tp(TOPIC1, 0, 1, 2))}, computed)
    check_validity_and_balance(members, computed)


def test_first_assignment_num_members_greater_than_total_num_partitions():
    members = {A: member([TOPIC3]), B: member([TOPIC3]), C: member([TOPIC3])}
    computed = run(assignor, members, {TOPIC3: 2}, HOMOGENEOUS)
    # Topic 3 has 2 partitions but three members subscribed to it - one of them gets nothing.
    assert_assignment({A: {}, B: mk_assignment(tp(TOPIC3, 0)), C: mk_assignment(tp(TOPIC3, 1))}, computed)
    check_validity_and_balance(members, computed)


def test_validity_and_balance_for_large_sample_set():
    topics = {f"topic-{i}": 3 for i in range(1, 101)}
    members = {f"member{i}": member(topics) for i in range(1, 50)}
    computed = run(assignor, members, topics, HOMOGENEOUS)
    check_validity_and_balance(members, computed)


def test_reassignment_for_two_members_two_topics_given_unbalanced_prev_assignment():
    t1, t2 = "topic1", "topic2"  # Kafka: mkOrderedAssignment(topic1, topic2)
    members = {
        A: member([t1, t2], mk_assignment(tp(t1, 0, 1), tp(t2, 0, 1))),
        B: member([t1, t2], mk_assignment(tp(t1, 2), tp(t2, 2))),
    }
    computed = run(assignor, members, {t1: 3, t2: 3}, HOMOGENEOUS)
    assert_assignment({A: mk_assignment(tp(t1, 0, 1), tp(t2, 0)), B: mk_assignment(tp(t1, 2), tp(t2, 1, 2))}, computed)
    check_validity_and_balance(members, computed)


def test_reassignment_when_partitions_are_added_for_two_members_two_topics():
    # Originally T1 -> 3 partitions and T2 -> 3 partitions.
    members = {
        A: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 0, 2), tp(TOPIC2, 0))),
        B: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 1), tp(TOPIC2, 1, 2))),
    }
    computed = run(assignor, members, {TOPIC1: 6, TOPIC2: 5}, HOMOGENEOUS)
    assert_assignment(
        {
            A: mk_assignment(tp(TOPIC1, 0, 2), tp(TOPIC2, 0, 3, 4)),
            B: mk_assignment(tp(TOPIC1, 1, 3, 4, 5), tp(TOPIC2, 1, 2)),
        },
        computed,
    )
    check_validity_and_balance(members, computed)


def test_reassignment_when_one_member_added_after_initial_assignment_with_two_members_two_topics():
    t1, t2 = "topic1", "topic2"  # Kafka: mkOrderedAssignment(topic1, topic2)
    members = {
        A: member([t1, t2], mk_assignment(tp(t1, 0, 2), tp(t2, 0))),
        B: member([t1, t2], mk_assignment(tp(t1, 1), tp(t2, 1, 2))),
        C: member([t1, t2]),  # a new member triggers a re-assignment
    }
    computed = run(assignor, members, {t1: 3, t2: 3}, HOMOGENEOUS)
    assert_assignment(
        {A: mk_assignment(tp(t1, 0, 2)), B: mk_assignment(tp(t1, 1), tp(t2, 1)), C: mk_assignment(tp(t2, 0, 2))},
        computed,
    )
    check_validity_and_balance(members, computed)


def test_reassignment_when_one_member_removed_after_initial_assignment_with_three_members_two_topics():
    members = {  # member C was removed
        A: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 0), tp(TOPIC2, 0))),
        B: member([TOPIC1, TOPIC2], mk_assignment(tp(TOPIC1, 1), tp(TOPIC2, 1))),
    }
    computed = run(assignor, members, {TOPIC1: 3, TOPIC2: 3}, HOMOGENEOUS)
    assert_assignment(
        {A: mk_assignment(tp(TOPIC1, 0), tp(TOPIC2, 0, 2)), B: mk_assignment(tp(TOPIC1, 1, 2), tp(TOPIC2, 1))}, computed
    )
    check_validity_and_balance(members, computed)


def test_reassignment_when_one_subscription_removed_after_initial_assignment_with_two_members_two_topics():
    # Initial subscriptions were [T1, T2].
    members = {
        A: member([TOPIC2], mk_assignment(tp(TOPIC1, 0), tp(TOPIC2, 0))),
        B: member([TOPIC2], mk_assignment(tp(TOPIC1, 1), tp(TOPIC2, 1))),
    }
    computed = run(assignor, members, {TOPIC1: 2, TOPIC2: 2}, HOMOGENEOUS)
    assert_assignment({A: mk_assignment(tp(TOPIC2, 0)), B: mk_assignment(tp(TOPIC2, 1))}, computed)
    check_validity_and_balance(members, computed)


# ----------------------------------------------------------------- beyond Kafka's test class


def test_balanced_assignment_never_moves_whatever_member_holds_the_extra_partition():
    """KAFKA-18688: before 4.1 the extra partitions had to go to the first members in iteration
    order, so a balanced assignment could still move. Now any member may keep its extra one."""
    members = {
        A: member([TOPIC1], mk_assignment(tp(TOPIC1, 0, 1))),
        B: member([TOPIC1], mk_assignment(tp(TOPIC1, 2, 3))),
        C: member([TOPIC1], mk_assignment(tp(TOPIC1, 4, 5, 6))),
    }
    computed = run(assignor, members, {TOPIC1: 7}, HOMOGENEOUS)
    for m in members:
        assert computed[m] is members[m].assignment


def test_partitions_of_unsubscribed_topics_are_dropped_and_freed_partitions_reassigned():
    members = {A: member([TOPIC1], mk_assignment(tp(TOPIC1, 0, 1, 2, 3), tp(TOPIC2, 0))), B: member([TOPIC1])}
    computed = run(assignor, members, {TOPIC1: 4, TOPIC2: 1}, HOMOGENEOUS)
    assert_assignment({A: mk_assignment(tp(TOPIC1, 0, 1)), B: mk_assignment(tp(TOPIC1, 2, 3))}, computed)


def test_no_members():
    assert assignor.assign(GroupSpec({}, HOMOGENEOUS), SubscribedTopicDescriber({TOPIC1: 1})) == {}
