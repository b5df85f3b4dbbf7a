"""Kafka's ModernGroup: what consumer, share and streams groups hold and do the same way."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from ...records import record_key
from ..group import Group
from .records import RecordValues

INITIAL_GROUP_EPOCH = 1


class ModernGroup(Group):
    """A group whose members are assigned by the coordinator: a group epoch and the metadata hash it
    follows, members, a target assignment at an assignment epoch, and the soft metadata-refresh
    deadline. The group types set their own members' and assignments' types and state."""

    state: Any
    records: ClassVar[RecordValues]  # the type's record kinds and values

    def __init__(self, group_id: str):
        self.group_id = group_id
        # Kafka 4.3+: a new group starts at group epoch 1 and assignment epoch 1
        # (TargetAssignmentMetadata.INITIAL), so the heartbeat that creates it bumps to 2 and its
        # first member's epoch is 2 (4.1: 0, then 1). A group made by the replay of its records
        # takes theirs.
        self.group_epoch = INITIAL_GROUP_EPOCH
        self.metadata_hash = 0
        self.target_assignment_epoch = INITIAL_GROUP_EPOCH
        # When the target assignment was computed (Kafka 4.3+'s TargetAssignmentMetadata record;
        # 0: unknown, or none yet): the next one waits for the group type's assignment interval.
        self.assignment_timestamp = 0
        self.members: dict[str, Any] = {}
        self.target_assignment: dict[str, Any] = {}
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

    def can_compute_next_target_assignment(self, interval_ms: int, now_ms: int) -> bool:
        """GroupMetadataManager.canComputeNextTargetAssignment: at once when there is no previous
        assignment or its time is unknown, or the interval is 0; else once the interval elapsed."""
        if self.assignment_timestamp == 0 or interval_ms == 0:
            return True
        return now_ms >= self.assignment_timestamp + interval_ms

    # ================================================================ Group interface
    def member_tombstone_keys(self, members: Iterable[str]) -> list[str]:
        """The start of {Consumer,Share,Streams}Group.createGroupTombstoneRecords, the same for every
        type: each member's current assignment, each member's target assignment, the target
        assignment epoch, each member's metadata (the type adds its own records and the group's)."""
        group_id, members = self.group_id, list(members)
        _, member, target, target_epoch, current = self.records.kinds
        keys = [record_key(current, group_id, m) for m in members]
        keys += [record_key(target, group_id, m) for m in members]
        keys.append(record_key(target_epoch, group_id))
        keys += [record_key(member, group_id, m) for m in members]
        return keys

    def state_as_string(self) -> str:
        return str(self.state)
