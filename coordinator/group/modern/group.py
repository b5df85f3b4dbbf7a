"""Kafka's ModernGroup: what consumer, share and streams groups hold and do the same way."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from ...records import record_key
from ..group import Group
from .records import RecordValues


class ModernGroup(Group):
    """A group whose members are assigned by the coordinator: a group epoch and the metadata hash it
    follows, members, a target assignment at an assignment epoch, and the soft metadata-refresh
    deadline. The group types set their own members' and assignments' types and state."""

    state: Any
    records: ClassVar[RecordValues]  # the type's record kinds and values

    def __init__(self, group_id: str):
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.target_assignment_epoch = 0
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
