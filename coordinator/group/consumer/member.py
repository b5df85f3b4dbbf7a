"""A KIP-848 consumer group member (Kafka's ConsumerGroupMember and MemberState), immutable.

A member is backed by two of Kafka's records: the subscription part (ConsumerGroupMemberMetadata:
client, instance and rack ids, rebalance timeout, subscribed topic names / regex, server assignor)
and the current-assignment part (ConsumerGroupCurrentMemberAssignment: member epoch, previous
member epoch, state, assigned partitions, partitions pending revocation). `metadata_value()` /
`assignment_value()` give those two parts as JSON objects and `with_metadata_value()` /
`with_assignment_value()` apply them, as Kafka's `Builder.updateWith` does on replay.

Assignments are `{topic: frozenset(partitions)}` in memory and `{topic: [sorted]}` in JSON.

Each assigned or pending-revocation partition also has its assignment epoch (Kafka 4.3+, KIP-1251:
the epoch at which the member got it; `partition_epochs`, `{topic: {partition: epoch}}`, one map
for both sets since a partition is in at most one and keeps its epoch when it moves to pending
revocation). A commit at an older member epoch is accepted for a partition assigned at or before
that epoch (`ConsumerGroup.validate_offset_commit`). In the record it is Kafka's tagged
`AssignmentEpochs` of each topic entry: `assignedPartitionsAssignmentEpochs` /
`partitionsPendingRevocationAssignmentEpochs`, `{topic: [epochs]}` aligned with the sorted
partitions of the same topic. A partition without one (a record or snapshot written before,
a member built without them) gets the member epoch, at least 0, as Kafka's
`Utils.assignmentFromTopicPartitions` gives on replay.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..modern.member import ModernGroupMember
from .topic_partitions import freeze
from .topic_partitions import to_json as assignment_to_json


class MemberState(enum.Enum):
    """Kafka's MemberState; the value is the byte stored in the current-assignment record."""

    STABLE = 0  # reconciled with the target assignment
    UNREVOKED_PARTITIONS = 1  # must revoke partitions before moving to the next epoch
    UNRELEASED_PARTITIONS = 2  # at the target epoch, waiting for partitions others still own
    UNKNOWN = 127  # a state written by a newer version

    @staticmethod
    def from_value(value: int) -> MemberState:
        try:
            return MemberState(value)
        except ValueError:
            return MemberState.UNKNOWN

    @staticmethod
    def from_json(value: Any) -> MemberState:
        if isinstance(value, int) and not isinstance(value, bool):
            return MemberState.from_value(value)
        return MemberState.__members__.get(value, MemberState.UNKNOWN)


@dataclass(frozen=True)
class ResolvedRegularExpression:
    """Kafka's ResolvedRegularExpression: the topics a subscribed regex matched, the metadata
    version it was resolved against and when."""

    topics: frozenset = frozenset()
    version: int = 0
    timestamp: int = 0

    def to_json(self) -> dict:
        return {"topics": sorted(self.topics), "version": self.version, "timestamp": self.timestamp}

    @staticmethod
    def from_json(d: Mapping) -> ResolvedRegularExpression:
        return ResolvedRegularExpression(
            frozenset(d.get("topics") or ()), int(d.get("version", 0)), int(d.get("timestamp", 0))
        )


# regex -> its resolution: ResolvedRegularExpression objects or plain topic collections.
ResolvedRegexes = Mapping[str, ResolvedRegularExpression | Iterable[str]]


def _frozen_assignment(value) -> dict:
    return (
        value if isinstance(value, dict) and all(type(v) is frozenset and v for v in value.values()) else freeze(value)
    )


@dataclass(frozen=True)
class ConsumerGroupMember(ModernGroupMember):
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset = frozenset()
    subscribed_topic_regex: str | None = ""
    server_assignor_name: str | None = None
    assigned_partitions: Mapping[str, frozenset] = field(default_factory=dict)
    partitions_pending_revocation: Mapping[str, frozenset] = field(default_factory=dict)
    # Set when the member uses the classic protocol inside a consumer group (online migration);
    # kept opaque here: {"sessionTimeoutMs": int, "supportedProtocols": [{"name", "metadata"}]}.
    classic_member_metadata: Mapping | None = None
    # {topic: {partition: assignment epoch}} of the assigned and pending-revocation partitions
    # (normalised in __post_init__: exactly those partitions, missing ones at the member epoch).
    partition_epochs: Mapping[str, Mapping[int, int]] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "subscribed_topic_names", frozenset(self.subscribed_topic_names))
        object.__setattr__(self, "assigned_partitions", _frozen_assignment(self.assigned_partitions))
        object.__setattr__(
            self, "partitions_pending_revocation", _frozen_assignment(self.partitions_pending_revocation)
        )
        if not isinstance(self.state, MemberState):
            object.__setattr__(self, "state", MemberState.from_json(self.state))
        object.__setattr__(
            self,
            "partition_epochs",
            _normalised_epochs(
                self.partition_epochs,
                (self.assigned_partitions, self.partitions_pending_revocation),
                max(self.member_epoch, 0),
            ),
        )

    # ------------------------------------------------------------------ builder-style updates
    def update_member_epoch(self, member_epoch: int, **changes) -> ConsumerGroupMember:
        """Kafka's `Builder.updateMemberEpoch`: the current epoch becomes the previous one."""
        return dataclasses.replace(self, member_epoch=member_epoch, previous_member_epoch=self.member_epoch, **changes)

    def with_heartbeat(
        self,
        *,
        instance_id: str | None = None,
        rack_id: str | None = None,
        rebalance_timeout_ms: int = -1,
        server_assignor: str | None = None,
        subscribed_topic_names: Iterable[str] | None = None,
        subscribed_topic_regex: str | None = None,
        client_id: str | None = None,
        client_host: str | None = None,
    ) -> ConsumerGroupMember:
        """The member updated from a ConsumerGroupHeartbeat request, as Kafka's heartbeat does:
        fields absent from the request (None, or -1 for the rebalance timeout) are kept; the
        classic-protocol metadata is cleared."""
        changes: dict = {"classic_member_metadata": None}
        if instance_id is not None:
            changes["instance_id"] = instance_id
        if rack_id is not None:
            changes["rack_id"] = rack_id
        if rebalance_timeout_ms != -1:
            changes["rebalance_timeout_ms"] = rebalance_timeout_ms
        if server_assignor is not None:
            changes["server_assignor_name"] = server_assignor
        if subscribed_topic_names is not None:
            changes["subscribed_topic_names"] = frozenset(subscribed_topic_names)
        if subscribed_topic_regex is not None:
            changes["subscribed_topic_regex"] = subscribed_topic_regex
        if client_id is not None:
            changes["client_id"] = client_id
        if client_host is not None:
            changes["client_host"] = client_host
        return dataclasses.replace(self, **changes)

    def with_classic_join(
        self,
        *,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        subscribed_topic_names: Iterable[str],
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        protocols: list[tuple[str, str]],
    ) -> ConsumerGroupMember:
        """The member updated from a classic JoinGroup (classicGroupJoinToConsumerGroup's builder):
        the subscription comes from the embedded ConsumerProtocolSubscription, the server assignor
        is kept, and the ClassicMemberMetadata records the session timeout and the protocols."""
        changes: dict = {
            "subscribed_topic_names": frozenset(subscribed_topic_names),
            "client_id": client_id,
            "client_host": client_host,
            "classic_member_metadata": {
                "sessionTimeoutMs": session_timeout_ms,
                "supportedProtocols": [{"name": n, "metadata": m} for n, m in protocols],
            },
        }
        if instance_id is not None:
            changes["instance_id"] = instance_id
        if rack_id is not None:
            changes["rack_id"] = rack_id
        if rebalance_timeout_ms != -1:
            changes["rebalance_timeout_ms"] = rebalance_timeout_ms
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ queries
    def is_reconciled_to(self, target_assignment_epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == target_assignment_epoch

    @property
    def use_classic_protocol(self) -> bool:
        return self.classic_member_metadata is not None

    @property
    def classic_session_timeout_ms(self) -> int | None:
        """ClassicMemberMetadata.sessionTimeoutMs (classicProtocolSessionTimeout)."""
        meta = self.classic_member_metadata
        return None if meta is None else int(meta["sessionTimeoutMs"])

    @property
    def supported_classic_protocols(self) -> list[tuple[str, str]]:
        """The classic member's JoinGroup protocols [(name, metadata base64)], in its order."""
        meta = self.classic_member_metadata or {}
        return [(p["name"], p["metadata"]) for p in meta.get("supportedProtocols") or ()]

    @property
    def subscribed_topic_regex_or_none(self) -> str | None:
        return self.subscribed_topic_regex or None

    def has_assigned_partitions_changed(self, other: ConsumerGroupMember) -> bool:
        return self.assigned_partitions != other.assigned_partitions

    def assignment_epoch(self, topic: str, partition: int) -> int | None:
        """Kafka's `assignmentEpoch`: the epoch at which the assigned partition was assigned, or
        None when it is not assigned."""
        parts = self.assigned_partitions.get(topic)
        return self.partition_epochs[topic][partition] if parts and partition in parts else None

    def pending_revocation_epoch(self, topic: str, partition: int) -> int | None:
        """Kafka's `pendingRevocationEpoch`: the assignment epoch of a partition pending
        revocation, or None."""
        parts = self.partitions_pending_revocation.get(topic)
        return self.partition_epochs[topic][partition] if parts and partition in parts else None

    def with_assignment_epochs_reset_to_zero(self) -> ConsumerGroupMember:
        """Kafka's `resetAssignedPartitionsEpochsToZero` (a static member leaving): the member that
        takes its place gets the partitions as from epoch 0; commits with the old member id are
        fenced."""
        zero = {t: dict.fromkeys(parts, 0) for t, parts in self.assigned_partitions.items()}
        return dataclasses.replace(self, partition_epochs=zero)

    # ------------------------------------------------------------------ record-shaped parts
    def metadata_value(self) -> dict:
        """The subscription part (ConsumerGroupMemberMetadataValue fields)."""
        return {
            "rackId": self.rack_id,
            "instanceId": self.instance_id,
            "clientId": self.client_id,
            "clientHost": self.client_host,
            "subscribedTopicNames": sorted(self.subscribed_topic_names),
            "subscribedTopicRegex": self.subscribed_topic_regex,
            "serverAssignor": self.server_assignor_name,
            "rebalanceTimeoutMs": self.rebalance_timeout_ms,
            "classicMemberMetadata": self.classic_member_metadata,
        }

    def assignment_value(self) -> dict:
        """The current-assignment part (ConsumerGroupCurrentMemberAssignmentValue fields)."""
        return {
            "memberEpoch": self.member_epoch,
            "previousMemberEpoch": self.previous_member_epoch,
            "state": self.state.name,
            "assignedPartitions": assignment_to_json(self.assigned_partitions),
            "partitionsPendingRevocation": assignment_to_json(self.partitions_pending_revocation),
            "assignedPartitionsAssignmentEpochs": _epochs_to_json(self.assigned_partitions, self.partition_epochs),
            "partitionsPendingRevocationAssignmentEpochs": _epochs_to_json(
                self.partitions_pending_revocation, self.partition_epochs
            ),
        }

    @staticmethod
    def metadata_fields(v: Mapping) -> dict:
        return {
            "rack_id": v.get("rackId"),
            "instance_id": v.get("instanceId"),
            "client_id": v.get("clientId", ""),
            "client_host": v.get("clientHost", ""),
            "subscribed_topic_names": frozenset(v.get("subscribedTopicNames") or ()),
            "subscribed_topic_regex": v.get("subscribedTopicRegex"),
            "server_assignor_name": v.get("serverAssignor"),
            "rebalance_timeout_ms": v.get("rebalanceTimeoutMs", -1),
            "classic_member_metadata": v.get("classicMemberMetadata"),
        }

    @staticmethod
    def assignment_fields(v: Mapping) -> dict:
        epochs: dict = {}
        _epochs_from_json(epochs, v.get("assignedPartitions"), v.get("assignedPartitionsAssignmentEpochs"))
        _epochs_from_json(
            epochs, v.get("partitionsPendingRevocation"), v.get("partitionsPendingRevocationAssignmentEpochs")
        )
        return {
            "member_epoch": v.get("memberEpoch", 0),
            "previous_member_epoch": v.get("previousMemberEpoch", -1),
            "state": MemberState.from_json(v.get("state", 0)),
            "assigned_partitions": freeze(v.get("assignedPartitions")),
            "partitions_pending_revocation": freeze(v.get("partitionsPendingRevocation")),
            "partition_epochs": epochs,
        }


def _normalised_epochs(epochs: Mapping, assignments: tuple, default: int) -> Mapping:
    """`epochs` narrowed to the partitions of `assignments`, a missing one at `default`; the same
    object when it already is exactly that (the common case: a member replaced without moving
    partitions)."""
    size = 0
    exact = True
    for assignment in assignments:
        for topic, parts in assignment.items():
            size += len(parts)
            known = epochs.get(topic)
            if exact and (known is None or any(p not in known for p in parts)):
                exact = False
    if exact and sum(len(e) for e in epochs.values()) == size:
        return epochs
    out: dict = {}
    for assignment in assignments:
        for topic, parts in assignment.items():
            known = epochs.get(topic) or {}
            mine = out.setdefault(topic, {})
            for p in parts:
                mine[p] = known.get(p, default)
    return out


def _epochs_to_json(assignment: Mapping[str, frozenset], epochs: Mapping) -> dict[str, list[int]]:
    """`{topic: [epochs]}` aligned with `to_json(assignment)`'s sorted partitions."""
    return {t: [epochs[t][p] for p in parts] for t, parts in assignment_to_json(assignment).items()}


def _epochs_from_json(out: dict, assignment: Mapping | None, epochs: Mapping | None) -> None:
    """Kafka's `assignmentFromTopicPartitions`: a topic's epochs are taken when there is one per
    partition; otherwise (none: an older record) the partitions get the default (the member
    epoch, in `_normalised_epochs`)."""
    for topic, parts in (assignment or {}).items():
        topic_epochs = (epochs or {}).get(topic)
        if topic_epochs is not None and len(topic_epochs) == len(parts):
            out.setdefault(topic, {}).update(zip(parts, topic_epochs, strict=True))
