"""Kafka's StreamsGroupMember (immutable) and its MemberState.

Record-shaped: `metadata_value()` is a StreamsGroupMemberMetadata value, `assignment_value()` a
StreamsGroupCurrentMemberAssignment value (field names of the record JSON files), and the
`with_*_value` methods are the replay of those records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from ..modern.member import ModernGroupMember
from .tasks import EMPTY, TasksTuple


class MemberState(Enum):
    """streams.MemberState with its record values."""

    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = 127

    @classmethod
    def from_value(cls, value: int) -> MemberState:
        for s in cls:
            if s.value == value:
                return s
        return cls.UNKNOWN


@dataclass(frozen=True)
class StreamsGroupMember(ModernGroupMember):
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: tuple | None = None  # (host, port)
    client_tags: tuple = ()  # sorted (key, value) pairs
    assigned_tasks: TasksTuple = EMPTY
    tasks_pending_revocation: TasksTuple = EMPTY
    # Kafka 4.3+'s TasksTupleWithEpochs: (subtopology, partition) -> the epoch at which the member
    # was given that active task (assigned or pending revocation), read to fence a zombie's offset
    # commit (StreamsGroup.createAssignmentEpochValidator). Entries of tasks the member no longer
    # has are ignored; a task without one is at the member's epoch. Not part of equality: they
    # change only with the tasks, and a missing entry means the member's epoch.
    active_task_epochs: Mapping = field(default_factory=dict, compare=False)

    @classmethod
    def default(cls, member_id: str) -> StreamsGroupMember:
        """StreamsGroup.getOrCreateDefaultMember: a new member before its first heartbeat."""
        return cls(
            member_id=member_id,
            member_epoch=0,
            previous_member_epoch=0,
            rebalance_timeout_ms=-1,
            topology_epoch=-1,
            process_id="",
            client_id="",
            client_host="",
        )

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == target_epoch

    def active_task_epoch(self, subtopology: str, partition: int) -> int | None:
        """The assignment epoch of an active task the member has (assigned or pending
        revocation), None if it has not."""
        if partition in self.assigned_tasks.active.get(subtopology, ()) or partition in (
            self.tasks_pending_revocation.active.get(subtopology, ())
        ):
            return self.active_task_epochs.get((subtopology, partition), self.member_epoch)
        return None

    def with_assigned_task_epochs_reset(self) -> StreamsGroupMember:
        """Builder.resetAssignedTasksEpochsToZero (a static member leaving temporarily)."""
        return self.replace(
            active_task_epochs={(s, p): 0 for s, parts in self.assigned_tasks.active.items() for p in parts}
        )

    # ---------------------------------------------------------------- records
    def metadata_value(self) -> dict:
        return {
            "instanceId": self.instance_id,
            "rackId": self.rack_id,
            "clientId": self.client_id,
            "clientHost": self.client_host,
            "rebalanceTimeoutMs": self.rebalance_timeout_ms,
            "topologyEpoch": self.topology_epoch,
            "processId": self.process_id,
            "userEndpoint": self.user_endpoint_value(),
            "clientTags": self.client_tags_value(),
        }

    def user_endpoint_value(self) -> dict | None:
        """The user endpoint as the records and StreamsGroupDescribe carry it."""
        return None if self.user_endpoint is None else {"host": self.user_endpoint[0], "port": self.user_endpoint[1]}

    def client_tags_value(self) -> list[dict]:
        return [{"key": k, "value": v} for k, v in self.client_tags]

    @staticmethod
    def metadata_fields(v: Mapping) -> dict:
        endpoint = v.get("userEndpoint")
        return {
            "instance_id": v.get("instanceId"),
            "rack_id": v.get("rackId"),
            "client_id": v.get("clientId", ""),
            "client_host": v.get("clientHost", ""),
            "rebalance_timeout_ms": int(v.get("rebalanceTimeoutMs", -1)),
            "topology_epoch": int(v.get("topologyEpoch", -1)),
            "process_id": v.get("processId", ""),
            "user_endpoint": None if endpoint is None else (endpoint["host"], int(endpoint["port"])),
            "client_tags": tuple(sorted((t["key"], t["value"]) for t in v.get("clientTags") or [])),
        }

    def assignment_value(self) -> dict:
        """StreamsGroupCurrentMemberAssignmentValue; active tasks with their `assignmentEpochs`
        (4.3+, a tagged field: in partition order)."""
        value = {
            "memberEpoch": self.member_epoch,
            "previousMemberEpoch": self.previous_member_epoch,
            "state": self.state.value,
            **self.assigned_tasks.to_wire(),
            **self.tasks_pending_revocation.to_wire("PendingRevocation"),
        }
        for name in ("activeTasks", "activeTasksPendingRevocation"):
            for t in value[name]:
                t["assignmentEpochs"] = [
                    self.active_task_epochs.get((t["subtopologyId"], p), self.member_epoch) for p in t["partitions"]
                ]
        return value

    @staticmethod
    def assignment_fields(v: Mapping) -> dict:
        member_epoch = int(v["memberEpoch"])
        return {
            "member_epoch": member_epoch,
            "previous_member_epoch": int(v["previousMemberEpoch"]),
            "state": MemberState.from_value(int(v["state"])),
            "assigned_tasks": TasksTuple.from_wire(v),
            "tasks_pending_revocation": TasksTuple.from_wire(v, "PendingRevocation"),
            "active_task_epochs": _active_task_epochs(v, member_epoch),
        }


def _active_task_epochs(v: Mapping, member_epoch: int) -> dict:
    """TasksTupleWithEpochs.parseActiveTasksWithEpochs: `assignmentEpochs` when it has one epoch per
    partition, else (a record written before 4.3, or a mismatch) the record's member epoch."""
    epochs: dict[tuple[str, int], int] = {}
    for name in ("activeTasks", "activeTasksPendingRevocation"):
        for t in v.get(name) or []:
            partitions, assigned = t["partitions"], t.get("assignmentEpochs")
            if assigned is None or len(assigned) != len(partitions):
                assigned = [member_epoch] * len(partitions)
            for p, e in zip(partitions, assigned, strict=True):
                epochs[(t["subtopologyId"], int(p))] = int(e)
    return epochs
