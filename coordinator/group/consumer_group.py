"""The KIP-848 consumer group as a group type of the groups component (Kafka's
`modern/consumer/ConsumerGroup` behind the `Group` interface).

The data model and its record-shaped updates are phase 1's `coordinator.consumer.group.ConsumerGroup`;
this class adds what the coordinator needs around it:
- the `Group` interface (state, ListGroups entry, offset validation, deletion, offset expiry);
- the group's metadata hash (kept in the ConsumerGroupMetadata record, Kafka 4.1+) and the metadata
  refresh deadline (soft state: not in the log, reset when the partition is loaded);
- the subscribed-topic bookkeeping Kafka derives from the members (`subscribed_topic_names`,
  regex subscriber counts), computed on demand;
- its tombstones (`createGroupTombstoneRecords`) and timers;
- the classic protocol's requests sent to a consumer group (JoinGroup, SyncGroup, Heartbeat,
  LeaveGroup): classic-protocol members inside the group, see consumer_migration.py.

Topics are identified by name in memory, in records and in snapshots (see docs/kip848-core.md);
topic ids appear only on the wire (ConsumerGroupHeartbeat / ConsumerGroupDescribe).
"""
from __future__ import annotations

from typing import Iterable, Mapping

from ..consumer.group import ConsumerGroup as ConsumerGroupModel
from ..consumer.group_state import (ConsumerGroupState, SubscriptionCount, subscribed_topic_counts)
from ..consumer.member import ConsumerGroupMember
from ..errors import ApiError, Errors
from ..records import record_key
from .group import CONSUMER, Group, register_group_type

CONSUMER_PROTOCOL_TYPE = "consumer"
INT32_MAX = 2**31 - 1
# GroupMetadataManager.METADATA_REFRESH_INTERVAL_MS: a refresh happens only when requested.
METADATA_REFRESH_INTERVAL_MS = INT32_MAX

# State-log record types (Kafka's __consumer_offsets record names, without "Key"/"Value").
R_GROUP = "ConsumerGroupMetadata"
R_MEMBER = "ConsumerGroupMemberMetadata"
R_TARGET = "ConsumerGroupTargetAssignmentMember"
R_TARGET_EPOCH = "ConsumerGroupTargetAssignmentMetadata"
R_CURRENT = "ConsumerGroupCurrentMemberAssignment"
R_PARTITION_METADATA = "ConsumerGroupPartitionMetadata"  # pre-4.1 subscription metadata: tombstones only
R_REGEX = "ConsumerGroupRegularExpression"
RECORD_TYPES = (R_GROUP, R_MEMBER, R_TARGET, R_TARGET_EPOCH, R_CURRENT, R_PARTITION_METADATA, R_REGEX)


def session_timer_key(group_id: str, member_id: str) -> str:
    return record_key("consumer-session", group_id, member_id)


def rebalance_timer_key(group_id: str, member_id: str) -> str:
    return record_key("consumer-rebalance", group_id, member_id)


def join_timer_key(group_id: str, member_id: str) -> str:
    return record_key("consumer-join", group_id, member_id)


def sync_timer_key(group_id: str, member_id: str) -> str:
    return record_key("consumer-sync", group_id, member_id)


def regex_task_key(group_id: str) -> str:
    return record_key("consumer-regex", group_id)


def unknown_member(member_id: str, group_id: str) -> ApiError:
    return ApiError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")


@register_group_type
class ConsumerGroup(ConsumerGroupModel, Group):
    type = CONSUMER

    def __init__(self, group_id: str):
        ConsumerGroupModel.__init__(self, group_id)
        self.metadata_hash = 0
        # Soft state (Kafka's DeadlineAndEpoch): [deadline ms, group epoch]; [0, 0] = refresh now.
        self.metadata_refresh_deadline = [0, 0]

    # ================================================================ metadata refresh
    def set_metadata_refresh_deadline(self, deadline_ms: int, group_epoch: int) -> None:
        self.metadata_refresh_deadline = [deadline_ms, group_epoch]

    def request_metadata_refresh(self) -> None:
        self.metadata_refresh_deadline = [0, 0]

    def has_metadata_expired(self, now_ms: int) -> bool:
        deadline, epoch = self.metadata_refresh_deadline
        return now_ms >= deadline or self.group_epoch < epoch

    # ================================================================ subscriptions
    def subscribed_topic_names(self) -> dict[str, SubscriptionCount]:
        """Kafka's `subscribedTopicNames`: topic -> members naming it / resolved regexes matching it."""
        return subscribed_topic_counts(self.members.values(), self.resolved_regular_expressions)

    def subscribed_regular_expressions(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.subscribed_topic_regex:
                counts[m.subscribed_topic_regex] = counts.get(m.subscribed_topic_regex, 0) + 1
        return counts

    def num_subscribed_members(self, regex: str) -> int:
        return self.subscribed_regular_expressions().get(regex, 0)

    def has_static_member(self, instance_id: str | None) -> bool:
        return instance_id is not None and instance_id in self.static_members

    def with_members_replaced(self, removed: Iterable[str] = (),
                              updated: ConsumerGroupMember | None = None) -> dict[str, ConsumerGroupMember]:
        """The members as they would be after removing some and adding/updating one (for the
        computations Kafka does on copies before any record is replayed)."""
        members = dict(self.members)
        for m in removed:
            members.pop(m, None)
        if updated is not None:
            members[updated.member_id] = updated
        return members

    # ================================================================ Group interface: state
    def state_as_string(self) -> str:
        return str(self.state)

    def is_empty(self) -> bool:
        return self.state == ConsumerGroupState.EMPTY

    def protocol_type_or_empty(self) -> str:
        return CONSUMER_PROTOCOL_TYPE

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    def offset_expiration_base(self):
        return lambda o: o.commit_timestamp_ms

    def validate_offset_delete(self) -> None:
        pass

    # validate_offset_commit / validate_offset_fetch / validate_delete_group: phase 1's, Kafka's.

    # ================================================================ Group interface: lifecycle
    def tombstone_record_keys(self) -> list[str]:
        """ConsumerGroup.createGroupTombstoneRecords, in Kafka's order."""
        gid, members = self.group_id, list(self.members)
        keys = [record_key(R_CURRENT, gid, m) for m in members]
        keys += [record_key(R_TARGET, gid, m) for m in members]
        keys.append(record_key(R_TARGET_EPOCH, gid))
        keys += [record_key(R_MEMBER, gid, m) for m in members]
        keys += [record_key(R_REGEX, gid, r) for r in sorted(self.resolved_regular_expressions)]
        keys.append(record_key(R_PARTITION_METADATA, gid))
        keys.append(record_key(R_GROUP, gid))
        return keys

    def timer_keys(self) -> list[str]:
        keys = []
        for m in self.members:
            keys += [session_timer_key(self.group_id, m), rebalance_timer_key(self.group_id, m),
                     join_timer_key(self.group_id, m), sync_timer_key(self.group_id, m)]
        return keys

    # ================================================================ classic protocol requests
    # Members using the classic protocol inside the group: consumer_migration.py.
    def classic_join(self, coordinator, request) -> dict | None:
        from .consumer_migration import classic_members
        return classic_members(coordinator).join(self, request)

    def classic_heartbeat(self, coordinator, request) -> dict:
        from .consumer_migration import classic_members
        return classic_members(coordinator).heartbeat(self, request)

    def classic_sync(self, coordinator, request) -> dict | None:
        from .consumer_migration import classic_members
        return classic_members(coordinator).sync(self, request)

    def classic_leave(self, coordinator, request, identities: list[dict]) -> dict:
        """classicGroupLeaveToConsumerGroup: LeaveGroup removes members of a consumer group (the
        admin client's removeMembersFromConsumerGroup), each one as if its session had expired."""
        from .consumer_manager import manager
        return manager(coordinator).classic_leave(self, request, identities)

    def _validate_consumer_group_member(self, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        """GroupMetadataManager.validateConsumerGroupMember."""
        if instance_id is None:
            member = self.members.get(member_id)
            if member is None:
                raise unknown_member(member_id, self.group_id)
            return member
        member = self.static_member(instance_id)
        if member is None:
            raise ApiError(Errors.UNKNOWN_MEMBER_ID,
                           f"Member with instance id {instance_id} is not a member of group {self.group_id}.")
        if member.member_id != member_id:
            raise ApiError(Errors.FENCED_INSTANCE_ID,
                           f"Static member {member_id} with instance id {instance_id} was fenced by member "
                           f"{member.member_id}.")
        return member

    # ================================================================ snapshot
    def to_json(self) -> dict:
        data = ConsumerGroupModel.to_json(self)
        data["type"] = self.type
        data["metadataHash"] = self.metadata_hash
        data["metadataRefreshDeadline"] = list(self.metadata_refresh_deadline)
        return data

    @classmethod
    def from_json(cls, data: Mapping) -> "ConsumerGroup":
        group = super().from_json(data)  # builds a `cls` and replays members and targets into it
        group.metadata_hash = int(data.get("metadataHash", 0))
        group.metadata_refresh_deadline = list(data.get("metadataRefreshDeadline", [0, 0]))
        return group
