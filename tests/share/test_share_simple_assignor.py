"""The share groups' simple assignor of Kafka 4.3+, ported from Kafka 4.3.1's SimpleAssignorTest
(its topic ids are random, so most of its checks are that every partition is assigned; topics are
named topic1..topic4 here), and checked answer for answer against Kafka 4.4.0's own SimpleAssignor:
tests/share/simple_assignor_vectors.jsonl holds groups of seeded random topic ids, member ids,
subscriptions and partition counts, each assigned a few rounds with members joining and leaving,
and the answers of Kafka's class (`SimpleVectors.java` in the file's first line says how it was
made)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coordinator.group.consumer.assignors.api import PartitionAssignorException
from coordinator.share.simple_assignor import SimpleAssignor

T1, T2, T3, T4 = "topic1", "topic2", "topic3", "topic4"
A, B, C = "A", "B", "C"
VECTORS = Path(__file__).with_name("simple_assignor_vectors.jsonl")


def assign(members: dict, topics: dict, homogeneous: bool, current: dict | None = None, assignable=None) -> dict:
    current = current or {}
    specs = {
        m: (frozenset(subs), {t: frozenset(p) for t, p in current.get(m, {}).items()}) for m, subs in members.items()
    }
    out = SimpleAssignor().assign(specs, topics, homogeneous, assignable)
    return {m: {t: sorted(p) for t, p in a.items()} for m, a in out.items()}


def every_partition_assigned(result: dict, expected: int) -> None:
    """assertEveryPartitionGetsAssignment."""
    assert len({(t, p) for a in result.values() for t, ps in a.items() for p in ps}) == expected


def test_name():  # testName
    assert SimpleAssignor().name == "simple"


def test_assign_with_empty_members():  # testAssignWithEmptyMembers
    assert assign({}, {T1: 3}, True) == {}
    assert assign({}, {T1: 3}, False) == {}


def test_assign_with_no_subscribed_topic():  # testAssignWithNoSubscribedTopic
    assert assign({A: []}, {T1: 3}, True) == {}


def test_assign_with_subscribed_to_non_existent_topic():  # testAssignWithSubscribedToNonExistentTopic
    with pytest.raises(PartitionAssignorException):
        assign({A: [T2]}, {T1: 3}, True)


def test_assign_with_two_members_and_two_topics_homogeneous():  # testAssignWithTwoMembersAndTwoTopicsHomogeneous
    every_partition_assigned(assign({A: [T1, T3], B: [T1, T3]}, {T1: 3, T3: 2}, True), 5)


def test_assign_with_two_members_and_two_topics_homogeneous_with_allowed_map():
    # testAssignWithTwoMembersAndTwoTopicsHomogeneousWithAllowedMap
    allowed = {T1: {0, 1, 2}, T3: {0, 1}}
    result = assign({A: [T1, T3], B: [T1, T3]}, {T1: 3, T3: 3}, True, assignable=lambda t, p: p in allowed[t])
    every_partition_assigned(result, 5)


def test_assign_with_two_members_and_two_topics_homogeneous_with_non_assignable_topic():
    # testAssignWithTwoMembersAndTwoTopicsHomogeneousWithNonAssignableTopic
    result = assign({A: [T1, T3], B: [T1, T3]}, {T1: 3, T3: 2}, True, assignable=lambda t, p: t == T1)
    every_partition_assigned(result, 3)


def test_assign_with_three_members_three_topics_heterogeneous():  # testAssignWithThreeMembersThreeTopicsHeterogeneous
    every_partition_assigned(assign({A: [T1, T2], B: [T3], C: [T2, T3]}, {T1: 3, T2: 3, T3: 2}, False), 8)


def test_assign_with_three_members_three_topics_heterogeneous_with_allowed_map():
    # testAssignWithThreeMembersThreeTopicsHeterogeneousWithAllowedMap
    allowed = {T1: {0, 1}, T2: {0, 2}, T3: {1}}
    result = assign(
        {A: [T1, T2], B: [T3], C: [T2, T3]}, {T1: 3, T2: 3, T3: 2}, False, assignable=lambda t, p: p in allowed[t]
    )
    every_partition_assigned(result, 5)


def test_assign_with_three_members_three_topics_heterogeneous_with_non_assignable_topic():
    # testAssignWithThreeMembersThreeTopicsHeterogeneousWithNonAssignableTopic
    result = assign({A: [T1, T2], B: [T3], C: [T2, T3]}, {T1: 3, T2: 3, T3: 2}, False, assignable=lambda t, p: t != T3)
    every_partition_assigned(result, 6)
    assert result == {A: {T1: [0, 1, 2], T2: [0, 2]}, B: {}, C: {T2: [1]}}


def test_assign_with_one_member_no_assigned_topic_heterogeneous():  # testAssignWithOneMemberNoAssignedTopicHeterogeneous
    result = assign({A: [T1, T2], B: []}, {T1: 3, T2: 2}, False)
    every_partition_assigned(result, 5)
    assert result == {A: {T1: [0, 1, 2], T2: [0, 1]}, B: {}}


def test_assign_with_current_assignment_heterogeneous():  # testAssignWithCurrentAssignmentHeterogeneous
    first = assign({A: [T1, T2], B: [T3], C: [T2, T3]}, {T1: 3, T2: 3, T3: 2}, False)
    every_partition_assigned(first, 8)
    second = assign(
        {A: [T1, T2, T3], B: [T3, T4]},
        {T1: 3, T2: 3, T3: 2, T4: 1},
        False,
        current={A: {T1: [0, 1, 2], T2: [0, 2]}, B: {T3: [0, 1]}},
    )
    every_partition_assigned(second, 9)


SUBSCRIPTIONS = [[T1, T2, T3], [T2], [T3], [T1, T2]]


@pytest.mark.parametrize("homogeneous", [True, False])
def test_incremental_assignment_increasing_members(homogeneous):
    # testIncrementalAssignmentIncreasingMembersHomogeneous / ...Heterogeneous: 24 partitions, one
    # member more at a time up to 101, each round from the last round's answer
    topics = {T1: 24} if homogeneous else {T1: 12, T2: 8, T3: 4}
    subs: dict[str, list] = {}
    current: dict = {}
    for i in range(101):
        subs[f"M{i}"] = [T1] if homogeneous else SUBSCRIPTIONS[i % 4]
        current = assign(subs, topics, homogeneous, current)
        every_partition_assigned(current, 24)


@pytest.mark.parametrize("homogeneous", [True, False])
def test_incremental_assignment_decreasing_members(homogeneous):
    # testIncrementalAssignmentDecreasingMembersHomogeneous / ...Heterogeneous
    topics = {T1: 24} if homogeneous else {T1: 12, T2: 8, T3: 4}
    subs = {f"M{i}": [T1] if homogeneous else SUBSCRIPTIONS[i % 4] for i in range(101)}
    current = assign(subs, topics, homogeneous)
    every_partition_assigned(current, 24)
    for i in range(100, 0, -1):
        del subs[f"M{i}"]
        current = assign(subs, topics, homogeneous, {m: current[m] for m in subs})
        every_partition_assigned(current, 24)


def test_a_partition_may_go_to_several_members():
    """More members than partitions: every member gets one, partitions are shared (KIP-932)."""
    result = assign({f"m{i}": [T1] for i in range(5)}, {T1: 2}, True)
    assert all(result[m] for m in result)
    # each partition shared by ceil(5 / 2) = 3 members: one member holds both
    assert sorted(len(result[m][T1]) for m in result) == [1, 1, 1, 1, 2]
    every_partition_assigned(result, 2)


def _vectors() -> list[dict]:
    return [json.loads(line) for line in VECTORS.read_text().splitlines()[1:] if line.strip()]


def test_answers_as_kafka_4_4_0s_simple_assignor():
    """Every answer of Kafka's own class, partitions and all: which partition a member gives up or
    gets follows the topic ids' and member ids' hash order, as Kafka's HashMaps iterate."""
    vectors = _vectors()
    assert len(vectors) > 100
    for v in vectors:
        topics = {name: count for name, (_, count) in v["topics"].items()}
        ids = {name: topic_id for name, (topic_id, _) in v["topics"].items()}
        specs = {
            m: (frozenset(subs), {t: frozenset(p) for t, p in current.items()})
            for m, (subs, current) in v["members"].items()
        }
        out = SimpleAssignor().assign(specs, topics, v["homogeneous"], topic_ids=ids)
        assert {m: {t: sorted(p) for t, p in a.items()} for m, a in out.items()} == v["result"], v
