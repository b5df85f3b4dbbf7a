"""The records every modern group type writes the same way, and their replay."""

from __future__ import annotations

from collections.abc import MutableMapping

from ..classic.group import ClassicGroup
from ..consumer.topic_partitions import to_json as assignment_to_json
from ..group import IllegalStateError
from .member import LEAVE_GROUP_MEMBER_EPOCH

# Events carry assignments only up to this many partitions (an event must stay well below Kafka's
# 1 MB record limit); larger ones carry counts.
EVENT_MAX_PARTITIONS = 10_000


def event_assignment(assignment) -> dict | int:
    """{topic: [partitions]} for an event, or the number of partitions if that would be too big."""
    n = sum(len(p) for p in assignment.values())
    return assignment_to_json(assignment) if n <= EVENT_MAX_PARTITIONS else n


def is_simple_classic_group(group) -> bool:
    """ClassicGroup.isSimpleGroup: created by an offset commit, never joined by anyone."""
    return (
        isinstance(group, ClassicGroup)
        and group.protocol_type is None
        and not group.members
        and not group.pending_join_members
    )


def replay_group_metadata(
    groups, group, value: dict | None, epoch_unfinished: str, *, check_targets: bool = True
) -> None:
    """A {Consumer,Share,Streams}GroupMetadata record: the group epoch and metadata hash, or (a
    tombstone) the group's removal, which Kafka allows only once its members, target assignment
    and assignment epoch are gone (`epoch_unfinished`: the end of the message when the epoch is not)."""
    gid = group.group_id
    if value is not None:
        group.group_epoch = int(value["epoch"])
        group.metadata_hash = int(value.get("metadataHash", 0))
        return
    if group.members:
        raise IllegalStateError(
            f"Received a tombstone record to delete group {gid} but the group still has {len(group.members)} members."
        )
    if check_targets and group.target_assignment:
        raise IllegalStateError(
            f"Received a tombstone record to delete group {gid} but the target "
            f"assignment still has {len(group.target_assignment)} members."
        )
    if group.target_assignment_epoch != -1:
        raise IllegalStateError(f"Received a tombstone record to delete group {gid} but {epoch_unfinished}")
    del groups[gid]


def persisted_group(groups: MutableMapping, group_id: str, create: bool, group_type: type, wrong_type: str):
    """Kafka's getOrMaybeCreatePersisted{Consumer,Share,Streams}Group: the group of `group_type` a
    replayed record is about, created by a record (`create`); None for a tombstone of a group that is
    gone or of another type (where Kafka throws GroupIdNotFound). A simple classic group (offsets
    replayed before the group's records) is backed by no record and is replaced."""
    group = groups.get(group_id)
    if isinstance(group, group_type):
        return group
    if not create:
        return None
    if group is None or is_simple_classic_group(group):
        group = groups[group_id] = group_type(group_id)
        return group
    raise IllegalStateError(wrong_type)


class RecordValues:
    """The values of a modern group type's records, given its record kinds: the group epoch and
    metadata hash, a member's metadata, the assignment epoch, a member's current assignment and
    (`target`) a member's target assignment, whose shape is the type's own."""

    def __init__(self, group: str, member: str, target: str, target_epoch: str, current: str, target_fields):
        self.kinds = (group, member, target, target_epoch, current)
        self._target_fields = target_fields  # the target assignment's record fields

    def group_epoch(self, epoch: int, metadata_hash: int) -> dict:
        return {"type": self.kinds[0], "epoch": epoch, "metadataHash": metadata_hash}

    def member(self, member) -> dict:
        return {"type": self.kinds[1], **member.metadata_value()}

    def target(self, assignment) -> dict:
        return {"type": self.kinds[2], **self._target_fields(assignment)}

    def target_epoch(self, epoch: int, timestamp_ms: int = 0) -> dict:
        """The assignment epoch and (Kafka 4.3+, a tagged field: written when not 0) when the
        assignment was computed."""
        value = {"type": self.kinds[3], "assignmentEpoch": epoch}
        if timestamp_ms:
            value["assignmentTimestamp"] = timestamp_ms
        return value

    def current(self, member) -> dict:
        return {"type": self.kinds[4], **member.assignment_value()}


def partitions_target(assignment) -> dict:
    """A consumer or share member's target assignment record fields."""
    return {"topicPartitions": assignment_to_json(assignment)}


def replay_member_metadata(group, member_id: str, value: dict | None, new_member, tombstone_errors: tuple[str, str]):
    """A {Consumer,Share,Streams}GroupMemberMetadata record: the member's metadata (a new member
    from `new_member(member_id)`), or, a tombstone, its removal, which Kafka allows only once its
    current assignment (epoch LEAVE_GROUP_MEMBER_EPOCH) and its target assignment are gone
    (`tombstone_errors`: the type's messages when they are not, as Kafka words them)."""
    old = group.members.get(member_id)
    if value is not None:
        group.update_member((old or new_member(member_id)).with_metadata_value(value))
        return
    if old is None:
        return
    if old.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
        raise IllegalStateError(f"Received a tombstone record to delete member {member_id} {tombstone_errors[0]}")
    if member_id in group.target_assignment:
        raise IllegalStateError(f"Received a tombstone record to delete member {member_id} {tombstone_errors[1]}")
    group.remove_member(member_id)


def replay_target_assignment_epoch(group, value: dict | None) -> None:
    """A {Consumer,Streams}GroupTargetAssignmentMetadata record: the assignment epoch, or (a
    tombstone) -1, which Kafka allows only once every member's target assignment is gone."""
    if value is not None:
        group.target_assignment_epoch = int(value["assignmentEpoch"])
        group.assignment_timestamp = int(value.get("assignmentTimestamp", 0))
        return
    if group.target_assignment:
        raise IllegalStateError(
            f"Received a tombstone record to delete target assignment of {group.group_id} but "
            f"the assignment still has {len(group.target_assignment)} members."
        )
    group.target_assignment_epoch = -1
    group.assignment_timestamp = 0
