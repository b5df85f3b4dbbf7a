"""ConsumerGroupHeartbeat checks (Kafka 4.x GroupMetadataManager), as pure functions that raise
`ApiError` with Kafka's error codes and messages.

The request is a dict with the ConsumerGroupHeartbeat field names; absent fields take the schema
defaults (memberId "", memberEpoch 0, rebalanceTimeoutMs -1, the rest null). `topicPartitions`
(owned partitions) may be a list of `{topic…, partitions}` entries or a `{topic: partitions}` map:
only its emptiness matters here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...errors import ApiError, Errors
from ..modern.member import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, ModernGroupMember
from ._java import hashmap_order
from .member import ConsumerGroupMember

# From this version the client generates its member id (KIP-1082).
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1


def _is_blank(value: str | None) -> bool:
    """Java `value != null && value.trim().isEmpty()`: trim() strips chars <= U+0020."""
    return value is not None and all(ord(c) <= 0x20 for c in value)


def _invalid(message: str) -> ApiError:
    return ApiError(Errors.INVALID_REQUEST, message)


def throw_if_request_is_invalid(request: Mapping, api_version: int, assignors: Iterable[str]) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid. `assignors` are the configured
    server assignor names, in configuration order."""
    member_id = request.get("memberId", "")
    member_epoch = request.get("memberEpoch", 0)
    if (
        api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
        or member_epoch > 0
        or member_epoch == LEAVE_GROUP_MEMBER_EPOCH
    ):
        if _is_blank(member_id):
            raise _invalid("MemberId can't be empty.")
    if _is_blank(request.get("groupId", "")):
        raise _invalid("GroupId can't be empty.")
    if _is_blank(request.get("instanceId")):
        raise _invalid("InstanceId can't be empty.")
    if _is_blank(request.get("rackId")):
        raise _invalid("RackId can't be empty.")

    if member_epoch == 0:
        if request.get("rebalanceTimeoutMs", -1) == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        owned = request.get("topicPartitions")
        if owned is None or len(owned) > 0:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        # Joining with an empty list of names or an empty regex is accepted: the member is in
        # the group but subscribed to nothing.
        if request.get("subscribedTopicNames") is None and request.get("subscribedTopicRegex") is None:
            raise _invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.get("instanceId") is None:
            raise _invalid("InstanceId can't be null.")
    elif member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise _invalid("MemberEpoch is invalid.")

    server_assignor = request.get("serverAssignor")
    assignors = list(assignors)
    if server_assignor is not None and server_assignor not in assignors:
        # Kafka lists the keys of a HashMap built from the configured assignors.
        raise ApiError(
            Errors.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {server_assignor} is not supported. Supported assignors: "
            f"{', '.join(hashmap_order(assignors))}.",
        )


def is_subset(owned: Mapping[str, Iterable[int]] | None, assigned: Mapping[str, Iterable[int]]) -> bool:
    """Kafka's isSubset: the owned partitions (None: not provided -> False) are all assigned."""
    if owned is None:
        return False
    for topic, partitions in owned.items():
        target = assigned.get(topic)
        if target is None:
            return False
        if any(p not in target for p in partitions):
            return False
    return True


def throw_if_member_epoch_is_invalid(
    member: ConsumerGroupMember, received_member_epoch: int, owned: Mapping[str, Iterable[int]] | None
) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid (for epochs other than 0, -1 and -2). A
    member one epoch behind is accepted when its owned partitions are a subset of its assigned
    ones: the response that bumped its epoch may have been lost."""
    if received_member_epoch > member.member_epoch:
        raise ApiError(
            Errors.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received_member_epoch}) "
            f"than the one known by the group coordinator ({member.member_epoch}). "
            "The member must abandon all its partitions and rejoin.",
        )
    if received_member_epoch < member.member_epoch:
        if received_member_epoch != member.previous_member_epoch or not is_subset(owned, member.assigned_partitions):
            raise ApiError(
                Errors.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a smaller member epoch ({received_member_epoch}) "
                f"than the one known by the group coordinator ({member.member_epoch}). "
                "The member must abandon all its partitions and rejoin.",
            )


def throw_if_instance_id_is_unreleased(
    member: ModernGroupMember, group_id: str, received_member_id: str, received_instance_id: str
) -> None:
    """A new member may take an instance id only once its holder left with epoch -2."""
    if member.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise ApiError(
            Errors.UNRELEASED_INSTANCE_ID,
            f"Static member {received_member_id} with instance id {received_instance_id} "
            f"cannot join the group because the instance id is owned by {member.member_id} member.",
        )


def throw_if_instance_id_is_fenced(
    member: ModernGroupMember, group_id: str, received_member_id: str, received_instance_id: str
) -> None:
    if member.member_id != received_member_id:
        raise ApiError(
            Errors.FENCED_INSTANCE_ID,
            f"Static member {received_member_id} with instance id {received_instance_id} "
            f"was fenced by member {member.member_id}.",
        )


def throw_if_static_member_is_unknown(static_member: ModernGroupMember | None, received_instance_id: str) -> None:
    if static_member is None:
        raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {received_instance_id} is unknown.")


def throw_if_group_is_full(num_members: int, has_member: bool, member_id: str, max_size: int) -> None:
    """GROUP_MAX_SIZE_REACHED for a member not already in a group at `group.consumer.max.size`."""
    if num_members >= max_size and (member_id == "" or not has_member):
        raise ApiError(
            Errors.GROUP_MAX_SIZE_REACHED, f"The consumer group has reached its maximum capacity of {max_size} members."
        )


def unknown_member(member_id: str | None, group_id: str) -> ApiError:
    return ApiError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")


def should_send_assignment(
    member_epoch: int,
    rebalance_timeout_ms: int,
    subscribed_topic_names: object,
    owned: object,
    old: ConsumerGroupMember,
    new: ConsumerGroupMember,
) -> bool:
    """Whether the heartbeat response carries the assignment: on a full request (epoch 0, or
    rebalance timeout, topic names and owned partitions all set) or when it changed."""
    full = member_epoch == 0 or (
        rebalance_timeout_ms != -1 and subscribed_topic_names is not None and owned is not None
    )
    return full or old.has_assigned_partitions_changed(new)


# Kafka's name, for readers coming from GroupMetadataManager.
throw_if_consumer_group_heartbeat_request_is_invalid = throw_if_request_is_invalid
