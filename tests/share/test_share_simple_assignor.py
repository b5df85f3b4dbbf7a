"""The share groups' simple assignor, ported from Kafka's SimpleAssignorTest (topic ids become the
topic names topic1..topic4; members iterate in Java string order, which is Kafka's HashMap order for
these one-letter ids)."""

from __future__ import annotations

import pytest

from coordinator.group.consumer.assignors.api import PartitionAssignorException
from coordinator.share.simple_assignor import (
    SimpleAssignor,
    member_hash_assignment,
    round_robin_assignment,
    round_robin_assignment_with_count,
)

T1, T2, T3, T4 = "topic1", "topic2", "topic3", "topic4"
A, B, C = "A", "B", "C"


def assign(members: dict, topics: dict, homogeneous: bool, current: dict | None = None) -> dict:
    current = current or {}
    specs = {
        m: (frozenset(subs), {t: frozenset(p) for t, p in current.get(m, {}).items()}) for m, subs in members.items()
    }
    out = SimpleAssignor().assign(specs, topics, homogeneous)
    return {m: {t: sorted(p) for t, p in a.items()} for m, a in out.items()}


def every_partition_assigned(result: dict, expected: int) -> None:
    assert len({(t, p) for a in result.values() for t, ps in a.items() for p in ps}) == expected


def test_name():
    assert SimpleAssignor().name == "simple"  # SimpleAssignorTest.testName


def test_assign_with_empty_members():  # testAssignWithEmptyMembers
    assert assign({}, {T1: 3}, True) == {}
    assert assign({}, {T1: 3}, False) == {}


def test_assign_with_no_subscribed_topic():  # testAssignWithNoSubscribedTopic
    assert assign({A: []}, {T1: 3}, True) == {}


def test_assign_with_subscribed_to_non_existent_topic():  # testAssignWithSubscribedToNonExistentTopic
    with pytest.raises(PartitionAssignorException):
        assign({A: [T2]}, {T1: 3}, True)


def test_assign_with_two_members_and_two_topics_homogeneous():  # testAssignWithTwoMembersAndTwoTopicsHomogeneous
    result = assign({A: [T1, T3], B: [T1, T3]}, {T1: 3, T3: 2}, True)
    every_partition_assigned(result, 5)
    assert result == {A: {T1: [0, 2], T3: [1]}, B: {T1: [1], T3: [0]}}


def test_assign_with_three_members_three_topics_heterogeneous():  # testAssignWithThreeMembersThreeTopicsHeterogeneous
    result = assign({A: [T1, T2], B: [T3], C: [T2, T3]}, {T1: 3, T2: 3, T3: 2}, False)
    every_partition_assigned(result, 8)
    assert result == {A: {T1: [0, 1, 2], T2: [0, 2]}, B: {T3: [0, 1]}, C: {T2: [1, 2]}}


def test_assign_with_one_member_no_assigned_topic_heterogeneous():  # testAssignWithOneMemberNoAssignedTopicHeterogeneous
    result = assign({A: [T1, T2], B: []}, {T1: 3, T2: 2}, False)
    every_partition_assigned(result, 5)
    assert result == {A: {T1: [0, 1, 2], T2: [0, 1]}, B: {}}


def test_member_hash_assignment():  # testMemberHashAssignment (incl. a negative hash code)
    members = ["member1", "member2", "member3", "member4", "AaAaAaAa"]
    p1, p2, p3 = (T1, 0), (T2, 0), (T3, 0)
    out: dict = {}
    member_hash_assignment(members, [p1, p2, p3], out)
    assert {tp: sorted(ms) for tp, ms in out.items()} == {
        p1: ["member3"],
        p2: ["member1", "member4"],
        p3: ["AaAaAaAa", "member2"],
    }


def test_round_robin_assignment():  # testRoundRobinAssignment
    p1, p2, p3, p4 = (T1, 0), (T2, 0), (T3, 0), (T4, 0)
    out = {p1: ["member1"]}
    round_robin_assignment(["member1", "member2"], [p2, p3, p4], out)
    assert out == {p1: ["member1"], p2: ["member1"], p3: ["member2"], p4: ["member1"]}


def test_round_robin_assignment_with_count():  # testRoundRobinAssignmentWithCount
    p1, p2, p3, p4 = (T1, 0), (T2, 0), (T3, 0), (T4, 0)
    out = {"member1": {p1}, "member2": {p1}}
    round_robin_assignment_with_count(["member1", "member2"], [p2, p3, p4], out, 2)
    assert out == {"member1": {p1, p2, p4}, "member2": {p1, p3}}


def test_round_robin_assignment_with_count_too_many_partitions():  # testRoundRobinAssignmentWithCountTooManyPartitions
    p1 = (T1, 0)
    parts = [(T2, 0), (T3, 0), (T4, 0), (T4, 1), (T4, 2)]
    with pytest.raises(PartitionAssignorException):
        round_robin_assignment_with_count(["member1", "member2"], parts, {"member1": {p1}, "member2": {p1}}, 2)


def test_assign_with_current_assignment_homogeneous():  # testAssignWithCurrentAssignmentHomogeneous
    first = assign({A: [T1, T2], B: [T1, T2]}, {T1: 3, T2: 2}, True)
    every_partition_assigned(first, 5)
    assert first == {A: {T1: [0, 2], T2: [1]}, B: {T1: [1], T2: [0]}}
    # Three members on T2 and T3; A and B come with their previous assignment.
    second = assign({A: [T2, T3], B: [T2, T3], C: [T2, T3]}, {T2: 2, T3: 3}, True, current=first)
    every_partition_assigned(second, 5)
    assert second == {A: {T2: [0], T3: [1]}, B: {T2: [1], T3: [2]}, C: {T3: [0]}}


def test_assign_with_current_assignment_heterogeneous():  # testAssignWithCurrentAssignmentHeterogeneous
    first = assign({A: [T1, T2], B: [T3], C: [T2, T3]}, {T1: 3, T2: 3, T3: 2}, False)
    every_partition_assigned(first, 8)
    assert first == {A: {T1: [0, 1, 2], T2: [0, 2]}, B: {T3: [0, 1]}, C: {T2: [1, 2]}}
    second = assign(
        {A: [T1, T2, T3], B: [T3, T4]}, {T1: 3, T2: 3, T3: 2, T4: 1}, False, current={A: first[A], B: first[B]}
    )
    every_partition_assigned(second, 9)
    assert second == {A: {T1: [0, 1, 2], T2: [0, 1, 2]}, B: {T3: [0, 1], T4: [0]}}


def test_a_partition_may_go_to_several_members():
    """More members than partitions: every member gets one, partitions are shared (KIP-932)."""
    result = assign({f"m{i}": [T1] for i in range(5)}, {T1: 2}, True)
    assert all(result[m] for m in result)
    every_partition_assigned(result, 2)
