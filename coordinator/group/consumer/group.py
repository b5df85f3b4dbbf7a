"""The KIP-848 consumer group (Kafka's `modern/consumer/ConsumerGroup` behind the `Group` interface).

One class: the group's state and its record-shaped updates, and what the coordinator needs around it.

Persistent part, one field per record type Kafka writes for a consumer group:
    group epoch                      ConsumerGroupMetadata (with the metadata hash, Kafka 4.1+)
    members (subscription part)      ConsumerGroupMemberMetadata
    members (current assignment)     ConsumerGroupCurrentMemberAssignment
    target assignment per member     ConsumerGroupTargetAssignmentMember
    target assignment epoch          ConsumerGroupTargetAssignmentMetadata
    resolved regexes                 ConsumerGroupRegularExpression
Derived on every change (Kafka keeps them in memory and rebuilds them on replay): static members
(instance id -> member id), partition epochs, and the group state; the subscribed-topic bookkeeping
(`subscribed_topic_names`, regex subscriber counts) is computed on demand. The metadata refresh
deadline is soft state (not in the log, reset when the partition is loaded).

Around it: the `Group` interface (state, ListGroups entry, offset validation, deletion, offset
expiry), its tombstones (`createGroupTombstoneRecords`) and timers, and the classic protocol's
requests sent to a consumer group (classic-protocol members inside the group, see migration.py).

Topics are identified by name in memory, in records and in snapshots (see docs/kip848-core.md);
topic ids appear only on the wire (ConsumerGroupHeartbeat / ConsumerGroupDescribe).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...errors import ApiError, Errors
from ...records import record_key
from ...result import CoordinatorResult
from ..group import CONSUMER, CommitPartitionValidator, register_group_type
from ..modern.group import ModernGroup
from ..modern.records import RecordValues, partitions_target
from .assignors.api import SubscriptionType
from .group_state import (
    ConsumerGroupState,
    PartitionEpochs,
    SubscriptionCount,
    derive_group_state,
    preferred_server_assignor,
    subscribed_topic_counts,
    subscription_type,
)
from .heartbeat import unknown_member
from .member import ConsumerGroupMember, MemberState, ResolvedRegularExpression
from .topic_partitions import freeze, invert
from .topic_partitions import to_json as assignment_to_json

# JoinGroupRequest.UNKNOWN_GENERATION_ID / UNKNOWN_MEMBER_ID, used by TxnOffsetCommit.
UNKNOWN_GENERATION_ID = -1
UNKNOWN_MEMBER_ID = ""

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


# ====================================================================== record values
_VALUES = RecordValues(R_GROUP, R_MEMBER, R_TARGET, R_TARGET_EPOCH, R_CURRENT, partitions_target)
group_epoch_value = _VALUES.group_epoch
member_value = _VALUES.member
target_value = _VALUES.target
target_epoch_value = _VALUES.target_epoch
current_value = _VALUES.current


def regex_value(resolved: ResolvedRegularExpression) -> dict:
    return {"type": R_REGEX, **resolved.to_json()}


@register_group_type
class ConsumerGroup(ModernGroup):
    type = CONSUMER
    records = _VALUES

    def __init__(self, group_id: str):
        super().__init__(group_id)
        self.members: dict[str, ConsumerGroupMember] = {}
        self.resolved_regular_expressions: dict[str, ResolvedRegularExpression] = {}
        # derived
        self.static_members: dict[str, str] = {}
        self.partition_epochs = PartitionEpochs()

    # ------------------------------------------------------------------ record-shaped updates
    def update_member(self, member: ConsumerGroupMember) -> None:
        old = self.members.get(member.member_id)
        self.partition_epochs.update_member(old, member)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self.partition_epochs.remove_member(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]

    def update_target_assignment(self, member_id: str, assignment: Mapping) -> None:
        self.target_assignment[member_id] = freeze(assignment)

    def remove_target_assignment(self, member_id: str) -> None:
        self.target_assignment.pop(member_id, None)

    def update_resolved_regular_expression(self, regex: str, resolved: ResolvedRegularExpression | None) -> None:
        if resolved is None:
            self.resolved_regular_expressions.pop(regex, None)
        else:
            self.resolved_regular_expressions[regex] = resolved

    # ------------------------------------------------------------------ queries
    @property
    def state(self) -> ConsumerGroupState:
        return derive_group_state(self.members.values(), self.group_epoch, self.target_assignment_epoch)

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_member_id(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def get_member(self, member_id: str) -> ConsumerGroupMember:
        member = self.members.get(member_id)
        if member is None:
            raise unknown_member(member_id, self.group_id)
        return member

    def get_or_create_member(self, member_id: str, create_if_not_exists: bool) -> ConsumerGroupMember:
        """Kafka's getOrMaybeCreateMember: the member, or a new one (not yet added)."""
        member = self.members.get(member_id)
        if member is not None:
            return member
        if not create_if_not_exists:
            raise unknown_member(member_id, self.group_id)
        return ConsumerGroupMember(member_id)

    def target_assignment_of(self, member_id: str, instance_id: str | None = None) -> dict:
        """The member's target; for a static member, the target of the member currently holding
        its instance id (what a replacing static member inherits)."""
        if instance_id is not None:
            previous = self.static_member_id(instance_id)
            return self.target_assignment.get(previous, {}) if previous is not None else {}
        return self.target_assignment.get(member_id, {})

    def current_partition_epoch(self, topic: str, partition: int) -> int:
        return self.partition_epochs.get(topic, partition)

    def inverted_target_assignment(self) -> dict:
        return invert(self.target_assignment)

    def subscription_type(self) -> SubscriptionType:
        return subscription_type(self.members.values(), self.resolved_regular_expressions)

    def preferred_server_assignor(self, default: str | None = None) -> str | None:
        return preferred_server_assignor(self.members.values(), default)

    # ------------------------------------------------------------------ classic-protocol members
    def num_classic_protocol_members(self) -> int:
        return sum(1 for m in self.members.values() if m.use_classic_protocol)

    def supports_classic_protocols(self, protocol_type: str | None, protocol_names: set[str]) -> bool:
        """ConsumerGroup.supportsClassicProtocols: a classic member may join if it speaks the
        "consumer" protocol type and one of its protocols is supported by every classic member."""
        if protocol_type != "consumer":
            return False
        if self.is_empty():
            return bool(protocol_names)
        counts: dict[str, int] = {}
        for m in self.members.values():
            for name in {n for n, _ in m.supported_classic_protocols}:
                counts[name] = counts.get(name, 0) + 1
        n = self.num_classic_protocol_members()
        return any(counts.get(name, 0) == n for name in protocol_names)

    def all_members_use_classic_protocol_except(self, leaving: list[ConsumerGroupMember]) -> bool:
        """allMembersUseClassicProtocolExcept: the leaving members all use the consumer protocol
        and every other member uses the classic one."""
        return self.num_classic_protocol_members() == len(self.members) - len(leaving) and not any(
            m.use_classic_protocol for m in leaving
        )

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Whether some partition of the member's target is still owned by another member."""
        if member.state != MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic, partitions in self.target_assignment.get(member.member_id, {}).items():
            assigned = member.assigned_partitions.get(topic, frozenset())
            for p in partitions:
                if p not in assigned and self.current_partition_epoch(topic, p) != -1:
                    return True
        return False

    # ------------------------------------------------------------------ offset validation
    def validate_offset_commit(
        self, member_id: str, group_instance_id: str | None, member_epoch: int, is_transactional: bool, api_version: int
    ) -> CommitPartitionValidator | None:
        """Kafka's ConsumerGroup.validateOffsetCommit: raises for the whole request, or returns the
        per-partition check (None: every partition passes)."""
        # Epoch -1 with no members: the admin client, or a consumer without group management.
        if member_epoch < 0 and not self.members:
            return None
        # TxnOffsetCommit may omit member id, generation and instance id.
        if (
            is_transactional
            and member_epoch == UNKNOWN_GENERATION_ID
            and member_id == UNKNOWN_MEMBER_ID
            and group_instance_id is None
        ):
            return None
        member = self.get_member(member_id)
        if not is_transactional and not member.use_classic_protocol and api_version < 9:
            raise ApiError(
                Errors.UNSUPPORTED_VERSION,
                "OffsetCommit version 9 or above must be used by members using the modern group protocol",
            )
        # The epoch of the last heartbeat, or (Kafka 4.3+, KIP-1251) an older one for partitions
        # assigned to the member at or before it.
        if member_epoch == member.member_epoch:
            return None
        if member_epoch > member.member_epoch:
            if member.use_classic_protocol:
                raise ApiError(
                    Errors.ILLEGAL_GENERATION,
                    f"Received generation id {member_epoch} is newer than current member epoch {member.member_epoch}.",
                )
            raise ApiError(
                Errors.STALE_MEMBER_EPOCH,
                f"Received member epoch {member_epoch} is newer than current member epoch {member.member_epoch}.",
            )
        return _assignment_epoch_validator(member, member_epoch)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        """Kafka's ConsumerGroup.validateOffsetFetch (at the latest committed state)."""
        if member_id is None and member_epoch < 0:
            return
        member = self.members.get(member_id) if member_id is not None else None
        if member is None:
            raise unknown_member(member_id, self.group_id)
        self._validate_member_epoch(member_epoch, member)

    def validate_delete_group(self) -> None:
        if self.state != ConsumerGroupState.EMPTY:
            raise ApiError(Errors.NON_EMPTY_GROUP)

    @staticmethod
    def _validate_member_epoch(received: int, member: ConsumerGroupMember) -> None:
        if received != member.member_epoch:
            if member.use_classic_protocol:
                raise ApiError(
                    Errors.ILLEGAL_GENERATION,
                    f"The received generation id {received} does not match the "
                    f"expected member epoch {member.member_epoch}.",
                )
            raise ApiError(
                Errors.STALE_MEMBER_EPOCH,
                f"The received member epoch {received} does not match the expected member epoch {member.member_epoch}.",
            )

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

    def with_members_replaced(
        self, removed: Iterable[str] = (), updated: ConsumerGroupMember | None = None
    ) -> dict[str, ConsumerGroupMember]:
        """The members as they would be after removing some and adding/updating one (for the
        computations Kafka does on copies before any record is replayed)."""
        members = dict(self.members)
        for m in removed:
            members.pop(m, None)
        if updated is not None:
            members[updated.member_id] = updated
        return members

    # ================================================================ Group interface: state
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
        gid = self.group_id
        keys = self.member_tombstone_keys(self.members)
        keys += [record_key(R_REGEX, gid, r) for r in sorted(self.resolved_regular_expressions)]
        keys.append(record_key(R_PARTITION_METADATA, gid))
        keys.append(record_key(R_GROUP, gid))
        return keys

    def timer_keys(self) -> list[str]:
        keys = []
        for m in self.members:
            keys += [
                session_timer_key(self.group_id, m),
                rebalance_timer_key(self.group_id, m),
                join_timer_key(self.group_id, m),
                sync_timer_key(self.group_id, m),
            ]
        return keys

    # ================================================================ classic protocol requests
    # Members using the classic protocol inside the group: migration.py.
    def classic_join(self, coordinator, request) -> dict | CoordinatorResult:
        return coordinator.consumer.classic_members.join(self, request)

    def classic_heartbeat(self, coordinator, request) -> CoordinatorResult:
        return coordinator.consumer.classic_members.heartbeat(self, request)

    def classic_sync(self, coordinator, request) -> CoordinatorResult:
        return coordinator.consumer.classic_members.sync(self, request)

    def classic_leave(self, coordinator, request, identities: list[dict]) -> CoordinatorResult:
        """classicGroupLeaveToConsumerGroup: LeaveGroup removes members of a consumer group (the
        admin client's removeMembersFromConsumerGroup), each one as if its session had expired."""
        return coordinator.consumer.classic_leave(self, request, identities)

    def _validate_consumer_group_member(self, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        """GroupMetadataManager.validateConsumerGroupMember."""
        if instance_id is None:
            member = self.members.get(member_id)
            if member is None:
                raise unknown_member(member_id, self.group_id)
            return member
        member = self.static_member(instance_id)
        if member is None:
            raise ApiError(
                Errors.UNKNOWN_MEMBER_ID,
                f"Member with instance id {instance_id} is not a member of group {self.group_id}.",
            )
        if member.member_id != member_id:
            raise ApiError(
                Errors.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by member {member.member_id}.",
            )
        return member

    # ------------------------------------------------------------------ snapshot
    def to_json(self) -> dict:
        return {
            "type": self.type,
            "groupId": self.group_id,
            "groupEpoch": self.group_epoch,
            "assignmentEpoch": self.target_assignment_epoch,
            "assignmentTimestamp": self.assignment_timestamp,
            "members": {m: self.members[m].to_json() for m in sorted(self.members)},
            "targetAssignment": {m: assignment_to_json(a) for m, a in sorted(self.target_assignment.items())},
            "resolvedRegularExpressions": {
                r: v.to_json() for r, v in sorted(self.resolved_regular_expressions.items())
            },
            "metadataHash": self.metadata_hash,
            "metadataRefreshDeadline": list(self.metadata_refresh_deadline),
        }

    @classmethod
    def from_json(cls, data: Mapping) -> ConsumerGroup:
        group = cls(data["groupId"])
        group.group_epoch = int(data.get("groupEpoch", 0))
        group.target_assignment_epoch = int(data.get("assignmentEpoch", 0))
        group.assignment_timestamp = int(data.get("assignmentTimestamp", 0))
        for m in (data.get("members") or {}).values():
            group.update_member(ConsumerGroupMember.from_json(m))
        for member_id, a in (data.get("targetAssignment") or {}).items():
            group.update_target_assignment(member_id, a)
        for regex, v in (data.get("resolvedRegularExpressions") or {}).items():
            group.resolved_regular_expressions[regex] = ResolvedRegularExpression.from_json(v)
        group.metadata_hash = int(data.get("metadataHash", 0))
        group.metadata_refresh_deadline = list(data.get("metadataRefreshDeadline", [0, 0]))
        return group

    def __repr__(self) -> str:
        return (
            f"ConsumerGroup({self.group_id!r}, epoch={self.group_epoch}, "
            f"assignmentEpoch={self.target_assignment_epoch}, members={sorted(self.members)})"
        )


def _assignment_epoch_validator(member: ConsumerGroupMember, received_epoch: int) -> CommitPartitionValidator:
    """Kafka's ConsumerGroup.createAssignmentEpochValidator: a commit at an older member epoch is
    accepted for a partition assigned (or pending revocation) to the member at or before that
    epoch."""
    error = Errors.ILLEGAL_GENERATION if member.use_classic_protocol else Errors.STALE_MEMBER_EPOCH
    kind = "generation id" if member.use_classic_protocol else "member epoch"

    def validate(topic: str, partition: int) -> None:
        epoch = member.assignment_epoch(topic, partition)
        if epoch is None:
            epoch = member.pending_revocation_epoch(topic, partition)
        if epoch is None:
            raise ApiError(error, f"Partition {topic}-{partition} is not assigned or pending revocation for member.")
        if received_epoch < epoch:
            raise ApiError(
                error,
                f"Received {kind} {received_epoch} is older than assignment epoch {epoch} "
                f"for partition {topic}-{partition}.",
            )

    return validate
