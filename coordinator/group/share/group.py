"""The KIP-932 share group as a group type of the groups component (Kafka's
`modern/share/ShareGroup` and `ShareGroupMember` behind the `Group` interface).

Persistent part, one field per record type Kafka writes for a share group:
    group epoch, metadata hash       ShareGroupMetadata
    members (subscription part)      ShareGroupMemberMetadata
    members (current assignment)     ShareGroupCurrentMemberAssignment
    target assignment per member     ShareGroupTargetAssignmentMember
    target assignment epoch          ShareGroupTargetAssignmentMetadata
    share-partitions initializing,   ShareGroupStatePartitionMetadata (Kafka keeps it in the
    initialized and being deleted    manager's shareGroupStatePartitionMetadata map)
The state (Empty / Stable) derives from the members, as ShareGroup.maybeUpdateGroupState does: a
share group never rebalances in Kafka's sense (no revocation: a member moves to its new target at
once), so it has no Assigning / Reconciling state.

Share groups have no committed offsets (their progress is the share-partition state, kept by the
share coordinator), so the offset APIs answer GROUP_ID_NOT_FOUND for them, as Kafka does, and they
never expire. Topics are names in memory and records; ids only on the wire.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ...errors import ApiError, Errors
from ...records import record_key
from ..consumer.topic_partitions import freeze
from ..consumer.topic_partitions import to_json as assignment_to_json
from ..group import SHARE, register_group_type
from ..modern.group import ModernGroup
from ..modern.member import ModernGroupMember
from ..modern.records import RecordValues, partitions_target

SHARE_PROTOCOL_TYPE = "share"
EMPTY, STABLE = "Empty", "Stable"
INT32_MAX = 2**31 - 1
METADATA_REFRESH_INTERVAL_MS = INT32_MAX

# State-log record types (Kafka's __consumer_offsets share group records, without "Key"/"Value").
R_GROUP = "ShareGroupMetadata"
R_MEMBER = "ShareGroupMemberMetadata"
R_TARGET = "ShareGroupTargetAssignmentMember"
R_TARGET_EPOCH = "ShareGroupTargetAssignmentMetadata"
R_CURRENT = "ShareGroupCurrentMemberAssignment"
R_STATE_PARTITION_METADATA = "ShareGroupStatePartitionMetadata"
RECORD_TYPES = (R_GROUP, R_MEMBER, R_TARGET, R_TARGET_EPOCH, R_CURRENT, R_STATE_PARTITION_METADATA)


def session_timer_key(group_id: str, member_id: str) -> str:
    return record_key("share-session", group_id, member_id)


@dataclass(frozen=True)
class ShareGroupMember(ModernGroupMember):
    """Kafka's ShareGroupMember (immutable; `replace` is its Builder)."""

    previous_member_epoch: int = 0
    state: str = "STABLE"  # MemberState: a share member is always STABLE
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset = frozenset()
    assigned_partitions: Mapping[str, frozenset] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "subscribed_topic_names", frozenset(self.subscribed_topic_names))
        object.__setattr__(self, "assigned_partitions", freeze(self.assigned_partitions))

    def metadata_value(self) -> dict:
        """ShareGroupMemberMetadataValue fields."""
        return {
            "rackId": self.rack_id,
            "clientId": self.client_id,
            "clientHost": self.client_host,
            "subscribedTopicNames": sorted(self.subscribed_topic_names),
        }

    def assignment_value(self) -> dict:
        """ShareGroupCurrentMemberAssignmentValue fields."""
        return {
            "memberEpoch": self.member_epoch,
            "previousMemberEpoch": self.previous_member_epoch,
            "state": self.state,
            "assignedPartitions": assignment_to_json(self.assigned_partitions),
        }

    @staticmethod
    def metadata_fields(v: Mapping) -> dict:
        return {
            "rack_id": v.get("rackId"),
            "client_id": v.get("clientId", ""),
            "client_host": v.get("clientHost", ""),
            "subscribed_topic_names": frozenset(v.get("subscribedTopicNames") or ()),
        }

    @staticmethod
    def assignment_fields(v: Mapping) -> dict:
        return {
            "member_epoch": int(v.get("memberEpoch", 0)),
            "previous_member_epoch": int(v.get("previousMemberEpoch", 0)),
            "state": v.get("state", "STABLE"),
            "assigned_partitions": freeze(v.get("assignedPartitions")),
        }


# ====================================================================== record values
_VALUES = RecordValues(R_GROUP, R_MEMBER, R_TARGET, R_TARGET_EPOCH, R_CURRENT, partitions_target)
group_epoch_value = _VALUES.group_epoch
member_value = _VALUES.member
target_value = _VALUES.target
target_epoch_value = _VALUES.target_epoch
current_value = _VALUES.current


@register_group_type
class ShareGroup(ModernGroup):
    type = SHARE
    records = _VALUES

    def __init__(self, group_id: str):
        super().__init__(group_id)
        self.members: dict[str, ShareGroupMember] = {}
        # ShareGroupStatePartitionMetadataInfo: None until the record exists; else
        # {"initializing": {tid: InitMapValue}, "initialized": {tid: InitMapValue}, "deleting": {tid: name}}
        # with InitMapValue = {"name", "partitions": sorted list, "timestamp"} (timestamp: when replayed).
        self.state_partition_metadata: dict | None = None

    # ================================================================ record-shaped updates
    def update_member(self, member: ShareGroupMember) -> None:
        self.members[member.member_id] = member

    def remove_member(self, member_id: str) -> None:
        self.members.pop(member_id, None)

    def update_target_assignment(self, member_id: str, assignment) -> None:
        self.target_assignment[member_id] = freeze(assignment)

    def remove_target_assignment(self, member_id: str) -> None:
        self.target_assignment.pop(member_id, None)

    # ================================================================ queries
    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def get_or_create_member(self, member_id: str, create: bool) -> ShareGroupMember:
        """ShareGroup.getOrMaybeCreateMember (a new member is not added here)."""
        member = self.members.get(member_id)
        if member is not None:
            return member
        if not create:
            raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {self.group_id}.")
        return ShareGroupMember(member_id)

    def subscribed_topic_names(self, members=None) -> dict[str, int]:
        """topic -> number of members subscribing to it."""
        counts: dict[str, int] = {}
        for m in (self.members if members is None else members).values():
            for t in m.subscribed_topic_names:
                counts[t] = counts.get(t, 0) + 1
        return counts

    # ================================================================ Group interface
    def is_empty(self) -> bool:
        return self.state == EMPTY

    def protocol_type_or_empty(self) -> str:
        return SHARE_PROTOCOL_TYPE

    def validate_offset_commit(self, member_id, instance_id, generation_id, is_transactional, api_version) -> None:
        raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Group {self.group_id} is not a consumer group.")

    def validate_offset_fetch(self, member_id, member_epoch) -> None:
        raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Group {self.group_id} is not a consumer group.")

    def validate_offset_delete(self) -> None:
        raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Group {self.group_id} is not a consumer group.")

    def validate_delete_group(self) -> None:
        self.validate_empty_group()

    def validate_empty_group(self) -> None:
        """ShareGroup.validateEmptyGroup (also validateOffsetsAlterable)."""
        if self.state != EMPTY:
            raise ApiError(Errors.NON_EMPTY_GROUP)

    def should_expire(self) -> bool:
        return False

    def tombstone_record_keys(self) -> list[str]:
        """ShareGroup.createGroupTombstoneRecords, in Kafka's order."""
        gid = self.group_id
        keys = self.member_tombstone_keys(self.members)
        keys.append(record_key(R_STATE_PARTITION_METADATA, gid))
        keys.append(record_key(R_GROUP, gid))
        return keys

    def timer_keys(self) -> list[str]:
        return [session_timer_key(self.group_id, m) for m in self.members]

    # ================================================================ snapshot
    def to_json(self) -> dict:
        return {
            "type": self.type,
            "groupId": self.group_id,
            "groupEpoch": self.group_epoch,
            "metadataHash": self.metadata_hash,
            "assignmentEpoch": self.target_assignment_epoch,
            "assignmentTimestamp": self.assignment_timestamp,
            "members": {m: self.members[m].to_json() for m in sorted(self.members)},
            "targetAssignment": {m: assignment_to_json(a) for m, a in sorted(self.target_assignment.items())},
            "metadataRefreshDeadline": list(self.metadata_refresh_deadline),
            "statePartitionMetadata": self.state_partition_metadata,
        }

    @classmethod
    def from_json(cls, data: Mapping) -> ShareGroup:
        group = cls(data["groupId"])
        group.group_epoch = int(data.get("groupEpoch", 0))
        group.metadata_hash = int(data.get("metadataHash", 0))
        group.target_assignment_epoch = int(data.get("assignmentEpoch", 0))
        group.assignment_timestamp = int(data.get("assignmentTimestamp", 0))
        for m in (data.get("members") or {}).values():
            group.update_member(ShareGroupMember.from_json(m))
        for member_id, a in (data.get("targetAssignment") or {}).items():
            group.update_target_assignment(member_id, a)
        group.metadata_refresh_deadline = list(data.get("metadataRefreshDeadline", [0, 0]))
        group.state_partition_metadata = data.get("statePartitionMetadata")  # absent in older snapshots
        return group

    def __repr__(self) -> str:
        return (
            f"ShareGroup({self.group_id!r}, epoch={self.group_epoch}, "
            f"assignmentEpoch={self.target_assignment_epoch}, members={sorted(self.members)})"
        )
