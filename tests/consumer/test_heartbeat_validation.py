"""Kafka's testConsumerHeartbeatRequestValidation and the epoch / static member checks of
GroupMetadataManager (testConsumerGroupMemberEpochValidation, ...)."""

from __future__ import annotations

import pytest

from coordinator.errors import ApiError, Errors
from coordinator.group.consumer.heartbeat import (
    is_subset,
    should_send_assignment,
    throw_if_group_is_full,
    throw_if_instance_id_is_fenced,
    throw_if_instance_id_is_unreleased,
    throw_if_member_epoch_is_invalid,
    throw_if_request_is_invalid,
    throw_if_static_member_is_unknown,
)
from coordinator.group.consumer.member import ConsumerGroupMember, MemberState

MEMBER_ID = "2f0c3a4e-4b1d-4f5e-9b0a-6b3c2d1e0f9a"


def fails(request, version=1, assignors=("range",)):
    with pytest.raises(ApiError) as e:
        throw_if_request_is_invalid(request, version, assignors)
    return e.value.error, e.value.message


def test_consumer_heartbeat_request_validation():
    invalid = Errors.INVALID_REQUEST
    # MemberId must be present in all requests.
    assert fails({}) == (invalid, "MemberId can't be empty.")
    # GroupId must be present in all requests, and not all whitespaces.
    assert fails({"memberId": MEMBER_ID}) == (invalid, "GroupId can't be empty.")
    assert fails({"memberId": MEMBER_ID, "groupId": "   "}) == (invalid, "GroupId can't be empty.")
    # RebalanceTimeoutMs must be present in the first request (epoch == 0).
    assert fails({"memberId": MEMBER_ID, "groupId": "foo", "memberEpoch": 0}) == (
        invalid,
        "RebalanceTimeoutMs must be provided in first request.",
    )
    # TopicPartitions must be present and empty in the first request.
    assert fails({"memberId": MEMBER_ID, "groupId": "foo", "memberEpoch": 0, "rebalanceTimeoutMs": 5000}) == (
        invalid,
        "TopicPartitions must be empty when (re-)joining.",
    )
    # SubscribedTopicNames or SubscribedTopicRegex must be present in the first request.
    assert fails(
        {"memberId": MEMBER_ID, "groupId": "foo", "memberEpoch": 0, "rebalanceTimeoutMs": 5000, "topicPartitions": []}
    ) == (invalid, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    # InstanceId and RackId must be non-empty if provided.
    assert fails({"groupId": "foo", "memberId": MEMBER_ID, "memberEpoch": 1, "instanceId": ""}) == (
        invalid,
        "InstanceId can't be empty.",
    )
    assert fails({"groupId": "foo", "memberId": MEMBER_ID, "memberEpoch": 1, "rackId": ""}) == (
        invalid,
        "RackId can't be empty.",
    )
    # ServerAssignor must exist if provided.
    assert fails({"groupId": "foo", "memberId": MEMBER_ID, "memberEpoch": 1, "serverAssignor": "bar"}) == (
        Errors.UNSUPPORTED_ASSIGNOR,
        "ServerAssignor bar is not supported. Supported assignors: range.",
    )
    # A static member leaving temporarily needs its instance id.
    assert fails(
        {
            "groupId": "foo",
            "memberId": MEMBER_ID,
            "memberEpoch": -2,
            "rebalanceTimeoutMs": 5000,
            "subscribedTopicNames": ["foo", "bar"],
            "topicPartitions": [],
        }
    ) == (invalid, "InstanceId can't be null.")


def test_member_epoch_below_minus_two_is_invalid():
    assert fails({"groupId": "foo", "memberId": MEMBER_ID, "memberEpoch": -3}) == (
        Errors.INVALID_REQUEST,
        "MemberEpoch is invalid.",
    )


def test_unsupported_assignor_lists_assignors_in_kafka_hashmap_order():
    request = {"groupId": "foo", "memberId": MEMBER_ID, "memberEpoch": 1, "serverAssignor": "sticky"}
    assert fails(request, assignors=("uniform", "range"))[1] == (
        "ServerAssignor sticky is not supported. Supported assignors: uniform, range."
    )
    assert fails(request, assignors=("range", "uniform"))[1].endswith("uniform, range.")


def test_version_zero_may_omit_the_member_id_when_joining():
    ok = {
        "groupId": "foo",
        "memberId": "",
        "memberEpoch": 0,
        "rebalanceTimeoutMs": 5000,
        "topicPartitions": [],
        "subscribedTopicNames": ["foo"],
    }
    throw_if_request_is_invalid(ok, 0, ["uniform"])
    assert fails(ok, version=1)[1] == "MemberId can't be empty."
    assert fails({**ok, "memberEpoch": 3}, version=0)[1] == "MemberId can't be empty."
    assert fails({**ok, "memberEpoch": -1}, version=0)[1] == "MemberId can't be empty."


def test_valid_requests():
    throw_if_request_is_invalid(
        {
            "groupId": "g",
            "memberId": MEMBER_ID,
            "memberEpoch": 0,
            "rebalanceTimeoutMs": 5000,
            "topicPartitions": [],
            "subscribedTopicRegex": "",
        },
        1,
        ["uniform", "range"],
    )
    throw_if_request_is_invalid(
        {"groupId": "g", "memberId": MEMBER_ID, "memberEpoch": 7, "serverAssignor": "range"}, 1, ["uniform", "range"]
    )
    throw_if_request_is_invalid(
        {"groupId": "g", "memberId": MEMBER_ID, "memberEpoch": -2, "instanceId": "i"}, 1, ["uniform"]
    )


def test_consumer_group_member_epoch_validation():
    member = ConsumerGroupMember(
        MEMBER_ID,
        member_epoch=100,
        previous_member_epoch=99,
        state=MemberState.STABLE,
        assigned_partitions={"foo": [1, 2, 3]},
    )
    for epoch, owned in ((200, None), (50, None), (99, None), (99, {"foo": [1, 4]}), (99, {"bar": [1]})):
        with pytest.raises(ApiError) as e:
            throw_if_member_epoch_is_invalid(member, epoch, owned)
        assert e.value.error == Errors.FENCED_MEMBER_EPOCH
    with pytest.raises(
        ApiError,
        match=r"greater member epoch \(200\) than the one known by the "
        r"group coordinator \(100\)",
    ):
        throw_if_member_epoch_is_invalid(member, 200, None)
    # Previous epoch with owned partitions a subset of the assignment: accepted.
    throw_if_member_epoch_is_invalid(member, 99, {"foo": [1, 2]})
    throw_if_member_epoch_is_invalid(member, 99, {})
    throw_if_member_epoch_is_invalid(member, 100, None)


def test_is_subset():
    assert not is_subset(None, {"foo": {1}})
    assert is_subset({}, {})
    assert is_subset({"foo": []}, {"foo": {1}})
    assert not is_subset({"foo": []}, {})


def test_static_member_checks():
    holder = ConsumerGroupMember("old", member_epoch=5, instance_id="i")
    with pytest.raises(ApiError) as e:
        throw_if_instance_id_is_unreleased(holder, "g", "new", "i")
    assert e.value.error == Errors.UNRELEASED_INSTANCE_ID
    assert e.value.message == (
        "Static member new with instance id i cannot join the group because the instance id is owned by old member."
    )
    throw_if_instance_id_is_unreleased(holder.replace(member_epoch=-2), "g", "new", "i")
    with pytest.raises(ApiError) as e:
        throw_if_instance_id_is_fenced(holder, "g", "other", "i")
    assert (e.value.error, e.value.message) == (
        Errors.FENCED_INSTANCE_ID,
        "Static member other with instance id i was fenced by member old.",
    )
    throw_if_instance_id_is_fenced(holder, "g", "old", "i")
    with pytest.raises(ApiError) as e:
        throw_if_static_member_is_unknown(None, "i")
    assert (e.value.error, e.value.message) == (Errors.UNKNOWN_MEMBER_ID, "Instance id i is unknown.")


def test_group_max_size():
    with pytest.raises(ApiError) as e:
        throw_if_group_is_full(2, False, "m3", 2)
    assert e.value.error == Errors.GROUP_MAX_SIZE_REACHED
    assert e.value.message == "The consumer group has reached its maximum capacity of 2 members."
    throw_if_group_is_full(2, True, "m1", 2)
    throw_if_group_is_full(1, False, "m2", 2)


def test_should_send_assignment():
    a = ConsumerGroupMember("m", assigned_partitions={"foo": [1]})
    b = a.replace(member_epoch=3)
    assert should_send_assignment(0, -1, None, None, a, b)
    assert should_send_assignment(3, 5000, ["foo"], {}, a, b)
    assert not should_send_assignment(3, -1, ["foo"], {}, a, b)
    assert should_send_assignment(3, -1, None, None, a, b.replace(assigned_partitions={"foo": [2]}))
