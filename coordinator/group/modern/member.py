"""Kafka's ModernGroupMember: what consumer, share and streams group members hold and do the same way.

A member is immutable (`replace` is Kafka's Builder) and backed by two records: its metadata
({Consumer,Share,Streams}GroupMemberMetadata) and its current assignment
({Consumer,Share,Streams}GroupCurrentMemberAssignment). Each member type gives both records' values
(`metadata_value()` / `assignment_value()`) and the fields a value sets (`metadata_fields(v)` /
`assignment_fields(v)`, as Kafka's `Builder.updateWith`); the replay of a record
(`with_metadata_value` / `with_assignment_value`) and the snapshot form are the same for every type.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

# ConsumerGroupHeartbeatRequest's (and the share and streams requests') member epochs of a leaving
# member.
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


@dataclass(frozen=True)
class ModernGroupMember:
    """The fields every member type starts with, in this order (the types add their own after
    them and set their own defaults and state type)."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: Any = None

    def replace(self, **changes) -> Self:
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ records
    def metadata_value(self) -> dict:
        raise NotImplementedError

    def assignment_value(self) -> dict:
        raise NotImplementedError

    @staticmethod
    def metadata_fields(v: Mapping) -> dict:
        """The fields a metadata record's value `v` sets."""
        raise NotImplementedError

    @staticmethod
    def assignment_fields(v: Mapping) -> dict:
        """The fields a current-assignment record's value `v` sets."""
        raise NotImplementedError

    def with_metadata_value(self, v: Mapping) -> Self:
        return dataclasses.replace(self, **self.metadata_fields(v))

    def with_assignment_value(self, v: Mapping) -> Self:
        return dataclasses.replace(self, **self.assignment_fields(v))

    # ------------------------------------------------------------------ snapshot
    def to_json(self) -> dict:
        return {"memberId": self.member_id, **self.metadata_value(), **self.assignment_value()}

    @classmethod
    def from_json(cls, d: Mapping) -> Self:
        # Built once from both records' fields (each record sets its own fields of the member).
        return cls(d["memberId"], **cls.metadata_fields(d), **cls.assignment_fields(d))
