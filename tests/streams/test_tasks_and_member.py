"""Ports of Kafka 4.1's TasksTupleTest and StreamsGroupMemberTest (record round trips)."""

from __future__ import annotations

from coordinator.group.streams.member import MemberState, StreamsGroupMember
from coordinator.group.streams.tasks import EMPTY, TasksTuple

S1, S2, S3 = "subtopology1", "subtopology2", "subtopology3"


def test_testMerge():
    t1 = TasksTuple.of({S1: {1, 2, 3}}, {S2: {4, 5, 6}}, {S3: {7, 8, 9}})
    t2 = TasksTuple.of({S1: {10, 11}}, {S2: {12, 13}}, {S3: {14, 15}})
    m = t1.merge(t2)
    assert m.active == {S1: {1, 2, 3, 10, 11}} and m.standby == {S2: {4, 5, 6, 12, 13}}
    assert m.warmup == {S3: {7, 8, 9, 14, 15}}


def test_testContainsAny():
    t1 = TasksTuple.of({S1: {1, 2, 3}}, {S2: {4, 5, 6}}, {S3: {7, 8, 9}})
    assert t1.contains_any(TasksTuple.of({S1: {3, 10, 11}}, {S2: {12, 13}}, {S3: {14, 15}}))
    assert not t1.contains_any(TasksTuple.of({S1: {10, 11}}, {S2: {12, 13}}, {S3: {14, 15}}))


def test_testIsEmpty():
    assert EMPTY.is_empty() and TasksTuple.of({S1: set()}).is_empty()
    assert not TasksTuple.of(standby={S1: {1}}).is_empty()


def test_testFromTargetAssignmentRecord():
    value = {
        "activeTasks": [{"subtopologyId": S1, "partitions": [1, 2]}],
        "standbyTasks": [{"subtopologyId": S2, "partitions": [3]}],
        "warmupTasks": [],
    }
    t = TasksTuple.from_wire(value)
    assert t == TasksTuple.of({S1: {1, 2}}, {S2: {3}}) and t.to_wire() == value


def test_testBuilderWithDefaults():
    m = StreamsGroupMember.default("member-id")
    assert (
        m.member_epoch,
        m.previous_member_epoch,
        m.state,
        m.rebalance_timeout_ms,
        m.topology_epoch,
        m.process_id,
        m.instance_id,
        m.rack_id,
        m.user_endpoint,
        m.client_tags,
        m.assigned_tasks,
        m.tasks_pending_revocation,
    ) == (0, 0, MemberState.STABLE, -1, -1, "", None, None, None, (), EMPTY, EMPTY)


def test_testBuilderUpdateWithStreamsGroupMemberMetadataValue_and_CurrentMemberAssignmentValue():
    meta = {
        "instanceId": None,
        "rackId": "rack",
        "clientId": "client",
        "clientHost": "host",
        "rebalanceTimeoutMs": 1000,
        "topologyEpoch": 3,
        "processId": "process",
        "userEndpoint": {"host": "h", "port": 9090},
        "clientTags": [{"key": "k", "value": "v"}],
    }
    assignment = {
        "memberEpoch": 7,
        "previousMemberEpoch": 6,
        "state": 2,
        "activeTasks": [{"subtopologyId": S1, "partitions": [1]}],
        "standbyTasks": [],
        "warmupTasks": [],
        "activeTasksPendingRevocation": [{"subtopologyId": S1, "partitions": [2]}],
        "standbyTasksPendingRevocation": [],
        "warmupTasksPendingRevocation": [],
    }
    m = StreamsGroupMember("m").with_metadata_value(meta).with_assignment_value(assignment)
    assert m.rack_id == "rack" and m.user_endpoint == ("h", 9090) and m.client_tags == (("k", "v"),)
    assert m.state == MemberState.UNREVOKED_TASKS and m.tasks_pending_revocation.active == {S1: {2}}
    assert m.metadata_value() == meta and m.assignment_value() == assignment
    assert StreamsGroupMember.from_json(m.to_json()) == m


def test_unknown_state_value_is_UNKNOWN():
    assert MemberState.from_value(99) == MemberState.UNKNOWN
