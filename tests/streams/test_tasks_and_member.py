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
        "activeTasks": [{"subtopologyId": S1, "partitions": [1], "assignmentEpochs": [5]}],
        "standbyTasks": [],
        "warmupTasks": [],
        "activeTasksPendingRevocation": [{"subtopologyId": S1, "partitions": [2], "assignmentEpochs": [4]}],
        "standbyTasksPendingRevocation": [],
        "warmupTasksPendingRevocation": [],
    }
    m = StreamsGroupMember("m").with_metadata_value(meta).with_assignment_value(assignment)
    assert m.rack_id == "rack" and m.user_endpoint == ("h", 9090) and m.client_tags == (("k", "v"),)
    assert m.state == MemberState.UNREVOKED_TASKS and m.tasks_pending_revocation.active == {S1: {2}}
    assert m.metadata_value() == meta and m.assignment_value() == assignment
    assert StreamsGroupMember.from_json(m.to_json()) == m
    assert (m.active_task_epoch(S1, 1), m.active_task_epoch(S1, 2), m.active_task_epoch(S1, 3)) == (5, 4, None)
    assert StreamsGroupMember.from_json(m.to_json()).active_task_epochs == m.active_task_epochs


def _record(active: dict) -> dict:
    return {
        "memberEpoch": 7,
        "previousMemberEpoch": 6,
        "state": 1,
        "activeTasks": [active],
        "standbyTasks": [],
        "warmupTasks": [],
        "activeTasksPendingRevocation": [],
        "standbyTasksPendingRevocation": [],
        "warmupTasksPendingRevocation": [],
    }


def test_TasksTupleWithEpochsTest_testFromCurrentAssignmentRecordWithoutEpochs():
    """A record written before 4.3 (no assignmentEpochs): every active task is at the record's
    member epoch, and the record written back carries them."""
    m = StreamsGroupMember("m").with_assignment_value(_record({"subtopologyId": S1, "partitions": [0, 1]}))
    assert (m.active_task_epoch(S1, 0), m.active_task_epoch(S1, 1)) == (7, 7)
    assert m.assignment_value()["activeTasks"] == [
        {"subtopologyId": S1, "partitions": [0, 1], "assignmentEpochs": [7, 7]}
    ]


def test_TasksTupleWithEpochsTest_testFromCurrentAssignmentRecordWithMismatchedEpochs():
    """Not one epoch per partition: Kafka logs an error and uses the member epoch for all."""
    value = _record({"subtopologyId": S1, "partitions": [0, 1], "assignmentEpochs": [3]})
    m = StreamsGroupMember("m").with_assignment_value(value)
    assert (m.active_task_epoch(S1, 0), m.active_task_epoch(S1, 1)) == (7, 7)


def test_unknown_state_value_is_UNKNOWN():
    assert MemberState.from_value(99) == MemberState.UNKNOWN
