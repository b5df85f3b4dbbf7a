"""Server-side assignors for KIP-848 consumer groups: `uniform` (default) and `range`.

`assign()` is the JSON-friendly entry point:

    assign("uniform",
           members={"m1": {"subscribedTopicNames": ["orders"], "assignment": {"orders": [0, 1]}},
                    "m2": {"subscribedTopicNames": ["orders"], "instanceId": "i2"}},
           topics={"orders": 4})
    -> {"m1": {"orders": [0, 1]}, "m2": {"orders": [2, 3]}}

The Kafka-shaped interface is `ASSIGNORS[name].assign(GroupSpec, SubscribedTopicDescriber)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..topic_partitions import freeze, group_to_json, restrict_to_topics
from .api import (
    ConsumerGroupPartitionAssignor,
    GroupAssignment,
    GroupSpec,
    MemberSubscriptionAndAssignment,
    PartitionAssignorException,
    SubscribedTopicDescriber,
    SubscriptionType,
    TopicMetadata,
    subscription_type_of,
)
from .range import RANGE_ASSIGNOR_NAME, RangeAssignor
from .uniform import UNIFORM_ASSIGNOR_NAME, UniformAssignor

# Kafka's default `group.consumer.assignors` = uniform, range; the first is the default assignor.
DEFAULT_ASSIGNORS: tuple = (UNIFORM_ASSIGNOR_NAME, RANGE_ASSIGNOR_NAME)
ASSIGNORS: dict[str, ConsumerGroupPartitionAssignor] = {
    UNIFORM_ASSIGNOR_NAME: UniformAssignor(),
    RANGE_ASSIGNOR_NAME: RangeAssignor(),
}


def get_assignor(name: str) -> ConsumerGroupPartitionAssignor:
    return ASSIGNORS[name]


def member_spec(member: Mapping[str, Any], topics: Mapping[str, Any]) -> MemberSubscriptionAndAssignment:
    """A JSON member (`subscribedTopicNames`, `assignment`, `instanceId`, `rackId`) as the assignor
    sees it: subscriptions narrowed to existing topics, nonexistent partitions dropped."""
    describer = SubscribedTopicDescriber(topics)
    subscribed = frozenset(t for t in member.get("subscribedTopicNames") or () if t in topics)
    assignment = restrict_to_topics(freeze(member.get("assignment")), describer.num_partitions)
    return MemberSubscriptionAndAssignment(subscribed, assignment, member.get("instanceId"), member.get("rackId"))


def assign(
    assignor: str | ConsumerGroupPartitionAssignor,
    members: Mapping[str, Mapping[str, Any]],
    topics: Mapping[str, int | TopicMetadata],
    subscription_type: SubscriptionType | str | None = None,
) -> dict:
    """Runs an assignor on JSON input; returns `{memberId: {topic: [sorted partitions]}}`.

    `members`: `{memberId: {"subscribedTopicNames": [...], "assignment": {topic: [partitions]},
    "instanceId": str|None, "rackId": str|None}}` (only subscriptions are required).
    `topics`: `{topic: numPartitions}`. Subscriptions to topics not in `topics` are dropped, as the
    coordinator drops them before calling Kafka's assignors; `subscription_type` defaults to
    HOMOGENEOUS iff all (narrowed) subscriptions are equal.
    """
    impl = ASSIGNORS[assignor] if isinstance(assignor, str) else assignor
    specs = {m: member_spec(spec, topics) for m, spec in members.items()}
    result = impl.assign(GroupSpec(specs, subscription_type), SubscribedTopicDescriber(topics))
    return group_to_json(result)


__all__ = [
    "ASSIGNORS",
    "DEFAULT_ASSIGNORS",
    "ConsumerGroupPartitionAssignor",
    "GroupAssignment",
    "GroupSpec",
    "MemberSubscriptionAndAssignment",
    "PartitionAssignorException",
    "RANGE_ASSIGNOR_NAME",
    "RangeAssignor",
    "SubscribedTopicDescriber",
    "SubscriptionType",
    "TopicMetadata",
    "UNIFORM_ASSIGNOR_NAME",
    "UniformAssignor",
    "assign",
    "get_assignor",
    "member_spec",
    "subscription_type_of",
]
