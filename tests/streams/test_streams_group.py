"""Ports of Kafka 4.1's StreamsGroupTest (streams/StreamsGroupTest.java) on the group type."""

from __future__ import annotations

import pytest

from coordinator.errors import ApiError, Errors
from coordinator.group.streams.group import StreamsGroup
from coordinator.group.streams.member import MemberState, StreamsGroupMember
from coordinator.group.streams.tasks import EMPTY, TasksTuple
from coordinator.group.streams.topology import configure_topics, topology_record_value
from coordinator.records import record_key

SUB = "foo-sub"


def member(mid="member", process="process", assigned=EMPTY, pending=EMPTY, **kw) -> StreamsGroupMember:
    return StreamsGroupMember(mid, process_id=process, assigned_tasks=assigned, tasks_pending_revocation=pending, **kw)


def test_testUpdatingMemberUpdatesProcessId():
    g = StreamsGroup("foo")
    g.update_member(
        member(
            assigned=TasksTuple.of({SUB: {1}}, {SUB: {2}}, {SUB: {3}}),
            pending=TasksTuple.of({SUB: {4}}, {SUB: {5}}, {SUB: {6}}),
        )
    )
    assert (
        g.current_active_task_process_id(SUB, 1) == "process" and g.current_active_task_process_id(SUB, 4) == "process"
    )
    assert g.current_standby_task_process_ids(SUB, 2) == {"process"} == g.current_standby_task_process_ids(SUB, 5)
    assert g.current_warmup_task_process_ids(SUB, 3) == {"process"} == g.current_warmup_task_process_ids(SUB, 6)
    assert g.current_active_task_process_id(SUB, 7) is None
    g.update_member(
        member(
            process="process1",
            assigned=TasksTuple.of({SUB: {1}}, {SUB: {2}}, {SUB: {3}}),
            pending=TasksTuple.of({SUB: {4}}, {SUB: {5}}, {SUB: {6}}),
        )
    )
    assert g.current_active_task_process_id(SUB, 1) == "process1"
    assert g.current_standby_task_process_ids(SUB, 5) == {"process1"}


def test_testUpdatingMemberUpdatesTaskProcessIdWhenPartitionIsReassignedBeforeBeingRevoked():
    g = StreamsGroup("foo")
    g.update_member(member(pending=TasksTuple.of({SUB: {1}}, {SUB: {2}}, {SUB: {3}})))
    assert g.current_active_task_process_id(SUB, 1) == "process"
    g.update_member(member(process="process1", assigned=TasksTuple.of({SUB: {1}}, {SUB: {2}}, {SUB: {3}})))
    assert g.current_active_task_process_id(SUB, 1) == "process1"


def test_testDeletingMemberRemovesProcessId():
    g = StreamsGroup("foo")
    g.update_member(
        member(
            assigned=TasksTuple.of({SUB: {1}}, {SUB: {2}}, {SUB: {3}}),
            pending=TasksTuple.of({SUB: {4}}, {SUB: {5}}, {SUB: {6}}),
        )
    )
    g.remove_member("member")
    assert all(g.current_active_task_process_id(SUB, p) is None for p in range(1, 7))
    assert all(not g.current_standby_task_process_ids(SUB, p) for p in range(1, 7))


def _configured(g: StreamsGroup, topics: dict) -> None:
    g.configured_topology = configure_topics(g.topology, 0, topics)


def test_testGroupState_and_testIsInStatesCaseInsensitiveAndUnderscored():
    g = StreamsGroup("group-foo")
    assert g.state == "Empty" and g.is_in_states({"empty"})
    g.update_member(member("member1", member_epoch=1, state=MemberState.STABLE))
    assert g.state == "NotReady" and g.is_in_states({"not_ready"}) and not g.is_in_states({"notready", "empty"})
    g.topology = topology_record_value({"epoch": 0, "subtopologies": [{"subtopologyId": SUB, "sourceTopics": ["foo"]}]})
    _configured(g, {"foo": 1})
    g.group_epoch = 1
    g.target_assignment_epoch = 0
    assert g.state == "Assigning"
    g.target_assignment_epoch = 1
    g.update_member(member("member2", member_epoch=0, state=MemberState.STABLE))
    assert g.state == "Reconciling"
    g.update_member(member("member2", member_epoch=1, state=MemberState.STABLE))
    assert g.state == "Stable"
    g.remove_member("member1")
    g.remove_member("member2")
    assert g.state == "Empty"


def test_testMetadataRefreshDeadline():
    g = StreamsGroup("foo")
    assert g.has_metadata_expired(0)  # no deadline: refresh now
    g.group_epoch = 1
    g.set_metadata_refresh_deadline(1000, 1)
    assert not g.has_metadata_expired(999) and g.has_metadata_expired(1000)
    g.group_epoch = 0
    assert g.has_metadata_expired(999)  # the epoch went back: refresh
    g.request_metadata_refresh()
    assert g.has_metadata_expired(0)


@pytest.mark.parametrize("version", [9, 10])
def test_testValidateOffsetCommit(version):
    g = StreamsGroup("foo")
    g.validate_offset_commit("", None, -1, False, version)  # empty group: the admin client may commit
    g.update_member(member("new-protocol-member-id", member_epoch=0))
    with pytest.raises(ApiError) as e:
        g.validate_offset_commit("", None, -1, False, version)
    assert e.value.error is Errors.UNKNOWN_MEMBER_ID
    with pytest.raises(ApiError) as e:
        g.validate_offset_commit("new-protocol-member-id", None, 1, False, version)
    assert e.value.error is Errors.STALE_MEMBER_EPOCH
    g.validate_offset_commit("new-protocol-member-id", None, 0, False, version)
    with pytest.raises(ApiError) as e:
        g.validate_offset_commit("new-protocol-member-id", None, 0, False, 8)
    assert e.value.error is Errors.UNSUPPORTED_VERSION
    g.validate_offset_commit("", None, -1, True, 3)  # TxnOffsetCommit without member information


def test_testValidateOffsetFetch():
    g = StreamsGroup("foo")
    g.validate_offset_fetch(None, -1)
    with pytest.raises(ApiError) as e:
        g.validate_offset_fetch("member", 0)
    assert e.value.error is Errors.UNKNOWN_MEMBER_ID
    g.update_member(member("member", member_epoch=3))
    with pytest.raises(ApiError) as e:
        g.validate_offset_fetch("member", 2)
    assert e.value.error is Errors.STALE_MEMBER_EPOCH
    g.validate_offset_fetch("member", 3)


def test_testValidateDeleteGroup():
    g = StreamsGroup("foo")
    g.validate_delete_group()
    g.update_member(member("m"))
    with pytest.raises(ApiError) as e:
        g.validate_delete_group()
    assert e.value.error is Errors.NON_EMPTY_GROUP


def test_testCreateGroupTombstoneRecords():
    g = StreamsGroup("foo")
    g.update_member(member("member1"))
    g.target_assignment["member1"] = EMPTY
    assert g.tombstone_record_keys() == [
        record_key("StreamsGroupCurrentMemberAssignment", "foo", "member1"),
        record_key("StreamsGroupTargetAssignmentMember", "foo", "member1"),
        record_key("StreamsGroupTargetAssignmentMetadata", "foo"),
        record_key("StreamsGroupMemberMetadata", "foo", "member1"),
        record_key("StreamsGroupMetadata", "foo"),
        record_key("StreamsGroupTopology", "foo"),
    ]


def test_testIsSubscribedToTopic():
    g = StreamsGroup("test-group")
    assert not g.is_subscribed_to_topic("test-topic1")
    g.topology = topology_record_value(
        {
            "epoch": 1,
            "subtopologies": [
                {
                    "subtopologyId": "test-subtopology",
                    "sourceTopics": ["test-topic1"],
                    "repartitionSourceTopics": [{"name": "test-topic2"}],
                    "repartitionSinkTopics": ["test-topic2"],
                }
            ],
        }
    )
    g.update_member(StreamsGroupMember.default("member-id"))
    assert not g.is_subscribed_to_topic("test-topic1")
    _configured(g, {"test-topic1": 1, "test-topic2": 1})
    assert g.is_subscribed_to_topic("test-topic1") and g.is_subscribed_to_topic("test-topic2")
    assert not g.is_subscribed_to_topic("non-existent-topic")
    g.remove_member("member-id")
    assert not g.is_subscribed_to_topic("test-topic1")


def test_testAsListedGroup():
    g = StreamsGroup("group-foo")
    assert g.as_listed_group() == {
        "groupId": "group-foo",
        "protocolType": "streams",
        "groupState": "Empty",
        "groupType": "streams",
    }
