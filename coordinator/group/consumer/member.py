"""A KIP-848 consumer group member (Kafka's ConsumerGroupMember and MemberState), immutable.

A member is backed by two of Kafka's records: the subscription part (ConsumerGroupMemberMetadata:
client, instance and rack ids, rebalance timeout, subscribed topic names / regex, server assignor)
and the current-assignment part (ConsumerGroupCurrentMemberAssignment: member epoch, previous
member epoch, state, assigned partitions, partitions pending revocation). `metadata_value()` /
`assignment_value()` give those two parts as JSON objects and `with_metadata_value()` /
`with_assignment_value()` apply them, as Kafka's `Builder.updateWith` does on replay.

Assignments are `{topic: frozenset(partitions)}` in memory and `{topic: [sorted]}` in JSON.
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

    def __post_init__(self):
        object.__setattr__(self, "subscribed_topic_names", frozenset(self.subscribed_topic_names))
        object.__setattr__(self, "assigned_partitions", _frozen_assignment(self.assigned_partitions))
        object.__setattr__(
            self, "partitions_pending_revocation", _frozen_assignment(self.partitions_pending_revocation)
        )
        if not isinstance(self.state, MemberState):
            object.__setattr__(self, "state", MemberState.from_json(self.state))

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
        return {
            "member_epoch": v.get("memberEpoch", 0),
            "previous_member_epoch": v.get("previousMemberEpoch", -1),
            "state": MemberState.from_json(v.get("state", 0)),
            "assigned_partitions": freeze(v.get("assignedPartitions")),
            "partitions_pending_revocation": freeze(v.get("partitionsPendingRevocation")),
        }
