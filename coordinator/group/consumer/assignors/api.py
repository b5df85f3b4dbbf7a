"""The server-side assignor interface: Kafka's `ConsumerGroupPartitionAssignor.assign(GroupSpec,
SubscribedTopicDescriber) -> GroupAssignment`, in Python.

- `GroupSpec`: the members (subscribed topics, current target assignment, instance id, rack id),
  the subscription type, and which member currently holds each partition in the target.
- `SubscribedTopicDescriber`: partition counts (and optional replica racks) of existing topics.
- `GroupAssignment`: `{memberId: {topic: frozenset(partitions)}}`.

Determinism: Kafka iterates members in `HashMap` order (effectively random member ids) and topics
in `HashSet` order of random topic ids. Here both are iterated in Java string order (members by
member id, topics by name), independent of how the input dicts were built, so the same input gives
the same assignment after any JSON round trip or replay.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from .._java import order_key
from ..topic_partitions import freeze, invert

GroupAssignment = dict  # dict[str, dict[str, frozenset[int]]]


class PartitionAssignorException(Exception):
    """Kafka's PartitionAssignorException: the assignor cannot compute an assignment (e.g. a
    subscription to a topic that does not exist). The coordinator turns it into
    UNKNOWN_SERVER_ERROR for the heartbeat that triggered the computation."""


class SubscriptionType(str, enum.Enum):
    HOMOGENEOUS = "HOMOGENEOUS"
    HETEROGENEOUS = "HETEROGENEOUS"


@dataclass(frozen=True)
class MemberSubscriptionAndAssignment:
    """Kafka's MemberSubscriptionAndAssignmentImpl."""

    subscribed_topics: frozenset = frozenset()
    assignment: Mapping[str, frozenset] = field(default_factory=dict)  # current target assignment
    instance_id: str | None = None
    rack_id: str | None = None

    @staticmethod
    def of(
        subscribed_topics: Iterable[str] = (),
        assignment: Mapping[str, Iterable[int]] | None = None,
        instance_id: str | None = None,
        rack_id: str | None = None,
    ) -> MemberSubscriptionAndAssignment:
        return MemberSubscriptionAndAssignment(frozenset(subscribed_topics), freeze(assignment), instance_id, rack_id)


class GroupSpec:
    """Kafka's GroupSpecImpl. `member_ids` is sorted in Java string order."""

    __slots__ = ("members", "subscription_type", "member_ids", "_inverted")

    def __init__(
        self,
        members: Mapping[str, MemberSubscriptionAndAssignment],
        subscription_type: SubscriptionType | str | None = None,
        inverted_assignment: Mapping[str, Mapping[int, str]] | None = None,
    ):
        self.members = members
        self.member_ids: list[str] = sorted(members, key=order_key)
        if subscription_type is None:
            subscription_type = subscription_type_of(members.values())
        self.subscription_type = SubscriptionType(subscription_type)
        self._inverted = inverted_assignment

    @property
    def inverted_assignment(self) -> Mapping[str, Mapping[int, str]]:
        if self._inverted is None:
            self._inverted = invert({m: s.assignment for m, s in self.members.items()})
        return self._inverted

    def is_partition_assigned(self, topic: str, partition: int) -> bool:
        owners = self.inverted_assignment.get(topic)
        return owners is not None and partition in owners

    def member_subscription(self, member_id: str) -> MemberSubscriptionAndAssignment:
        try:
            return self.members[member_id]
        except KeyError:
            raise ValueError(f"Member Id {member_id} not found.") from None

    def member_assignment(self, member_id: str) -> Mapping[str, frozenset]:
        m = self.members.get(member_id)
        return m.assignment if m is not None else {}


def subscription_type_of(members: Iterable[MemberSubscriptionAndAssignment]) -> SubscriptionType:
    """HOMOGENEOUS when every member has the same effective subscription. (The coordinator
    derives the type its own way, from the raw subscriptions: see `group_state.subscription_type`.)"""
    first = None
    for m in members:
        if first is None:
            first = m.subscribed_topics
        elif m.subscribed_topics != first:
            return SubscriptionType.HETEROGENEOUS
    return SubscriptionType.HOMOGENEOUS


@dataclass(frozen=True)
class TopicMetadata:
    num_partitions: int
    # partition -> racks of its replicas (optional; only rack-aware assignors would use it)
    partition_racks: Mapping[int, frozenset] = field(default_factory=dict)


class SubscribedTopicDescriber:
    """Kafka's SubscribedTopicDescriber over `{topic: numPartitions | TopicMetadata}`."""

    __slots__ = ("_topics",)

    def __init__(self, topics: Mapping[str, int | TopicMetadata]):
        self._topics = topics

    def num_partitions(self, topic: str) -> int:
        """The partition count, or -1 if the topic does not exist."""
        t = self._topics.get(topic)
        if t is None:
            return -1
        return t if isinstance(t, int) else t.num_partitions

    def racks_for_partition(self, topic: str, partition: int) -> frozenset:
        t = self._topics.get(topic)
        if t is None or isinstance(t, int):
            return frozenset()
        return frozenset(t.partition_racks.get(partition, ()))

    def topics(self) -> Iterable[str]:
        return self._topics.keys()


class ConsumerGroupPartitionAssignor(Protocol):
    name: str

    def assign(self, group_spec: GroupSpec, describer: SubscribedTopicDescriber) -> GroupAssignment: ...
