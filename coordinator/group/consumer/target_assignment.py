"""Kafka's TargetAssignmentBuilder: a new target assignment for a group epoch.

Inputs: the group's members, the members updated or removed by the current request (not yet
applied to the group), the existing target assignment, the static members, the topic metadata,
the resolved regexes and the assignor. Each member's spec for the assignor is its effective
subscription (topic names plus resolved regex topics, narrowed to existing topics) and its current
*target* assignment (for stickiness); a new static member replacing a departed one (same instance
id, different member id) starts from the departed member's target.

Output: the new target assignment of every member, the members whose target changed (Kafka writes
one ConsumerGroupTargetAssignmentMember record for each), and the new assignment epoch (one
ConsumerGroupTargetAssignmentMetadata record). No record is produced for removed members: their
target assignment is deleted with the member.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ... import perf
from ._java import order_key
from .assignors import ASSIGNORS
from .assignors.api import (
    ConsumerGroupPartitionAssignor,
    GroupSpec,
    MemberSubscriptionAndAssignment,
    SubscribedTopicDescriber,
    SubscriptionType,
    TopicMetadata,
)
from .group_state import subscription_type as kafka_subscription_type
from .member import ConsumerGroupMember, ResolvedRegexes
from .reconciliation import subscribed_topics
from .topic_partitions import freeze, restrict_to_topics, to_json

TARGET_ASSIGNMENT_MEMBER = "ConsumerGroupTargetAssignmentMember"
TARGET_ASSIGNMENT_METADATA = "ConsumerGroupTargetAssignmentMetadata"


@dataclass
class TargetAssignmentResult:
    group_id: str
    assignment_epoch: int
    # memberId -> {topic: frozenset(partitions)} for every member of the group
    target_assignment: dict
    # memberId -> new target, only for members whose target changed (sorted by member id)
    changed: dict = field(default_factory=dict)

    def records(self) -> list[dict]:
        """The records Kafka appends, as JSON values: one per changed member, then the epoch."""
        out = [
            {"type": TARGET_ASSIGNMENT_MEMBER, "groupId": self.group_id, "memberId": m, "topicPartitions": to_json(a)}
            for m, a in self.changed.items()
        ]
        out.append(
            {"type": TARGET_ASSIGNMENT_METADATA, "groupId": self.group_id, "assignmentEpoch": self.assignment_epoch}
        )
        return out

    def target_assignment_json(self) -> dict:
        return {m: to_json(self.target_assignment[m]) for m in sorted(self.target_assignment, key=order_key)}


class TargetAssignmentBuilder:
    def __init__(self, group_id: str, group_epoch: int, assignor: str | ConsumerGroupPartitionAssignor):
        self.group_id = group_id
        self.group_epoch = group_epoch
        self.assignor = ASSIGNORS[assignor] if isinstance(assignor, str) else assignor
        self.members: Mapping[str, ConsumerGroupMember] = {}
        self.static_members: Mapping[str, str] = {}
        self.topics: Mapping[str, int | TopicMetadata] = {}
        self.subscription_type: SubscriptionType | None = None
        self.target_assignment: Mapping[str, Mapping[str, Iterable[int]]] = {}
        self.resolved_regular_expressions: ResolvedRegexes = {}
        self.updated_members: dict[str, ConsumerGroupMember | None] = {}

    def with_members(self, members: Mapping[str, ConsumerGroupMember]):
        self.members = members
        return self

    def with_static_members(self, static_members: Mapping[str, str]):
        """instance id -> member id, as the group currently has them."""
        self.static_members = static_members
        return self

    def with_topic_metadata(self, topics: Mapping[str, int | TopicMetadata]):
        """{topic: numPartitions | TopicMetadata} of the existing topics (at least the
        subscribed ones). Subscriptions to other topics are ignored."""
        self.topics = topics
        return self

    def with_subscription_type(self, subscription_type: SubscriptionType | str | None):
        """The group's subscription type; by default derived as Kafka does from the members'
        raw subscriptions after the updates (`group_state.subscription_type`)."""
        self.subscription_type = None if subscription_type is None else SubscriptionType(subscription_type)
        return self

    def with_target_assignment(self, target: Mapping[str, Mapping[str, Iterable[int]]]):
        self.target_assignment = target
        return self

    def with_resolved_regular_expressions(self, resolved: ResolvedRegexes):
        self.resolved_regular_expressions = resolved
        return self

    def add_or_update_member(self, member_id: str, member: ConsumerGroupMember):
        self.updated_members[member_id] = member
        return self

    def remove_member(self, member_id: str):
        self.updated_members[member_id] = None
        return self

    def effective_members(self) -> dict[str, ConsumerGroupMember]:
        members = dict(self.members)
        for member_id, member in self.updated_members.items():
            if member is None:
                members.pop(member_id, None)
            else:
                members[member_id] = member
        return members

    def _current_target(self, member_id: str) -> Mapping:
        return self.target_assignment.get(member_id) or {}

    def build(self) -> TargetAssignmentResult:
        describer = SubscribedTopicDescriber(self.topics)
        members = self.effective_members()
        specs: dict[str, MemberSubscriptionAndAssignment] = {}
        subscriptions: dict = {}  # members mostly share subscriptions: resolve each once
        for member_id, member in members.items():
            current = self._current_target(member_id)
            if member_id in self.updated_members and member.instance_id is not None:
                # A new static member replacing a departed one starts from its target.
                previous = self.static_members.get(member.instance_id)
                if previous is not None and previous != member_id:
                    current = self._current_target(previous)
            assignment = restrict_to_topics(_frozen(current), describer.num_partitions)
            key = (member.subscribed_topic_names, member.subscribed_topic_regex)
            subscribed = subscriptions.get(key)
            if subscribed is None:
                subscribed = subscriptions[key] = subscribed_topics(
                    member, self.resolved_regular_expressions, self.topics
                )
            specs[member_id] = MemberSubscriptionAndAssignment(
                subscribed, assignment, member.instance_id, member.rack_id
            )

        subscription_type = self.subscription_type
        if subscription_type is None:
            subscription_type = kafka_subscription_type(members.values(), self.resolved_regular_expressions)
        with perf.measure("assignment"):  # wall-clock cost for metrics, outside the state
            new_assignment = self.assignor.assign(GroupSpec(specs, subscription_type), describer)

        target: dict = {}
        changed: dict = {}
        for member_id in sorted(specs, key=order_key):
            new = _frozen(new_assignment.get(member_id))
            target[member_id] = new
            old = self.target_assignment.get(member_id)
            if old is None or (new is not old and _frozen(old) != new):
                changed[member_id] = new
        return TargetAssignmentResult(self.group_id, self.group_epoch, target, changed)


def _frozen(assignment) -> dict:
    """`assignment` itself when already normalised ({topic: non-empty frozenset}), else a copy."""
    if assignment is None:
        return {}
    if type(assignment) is dict and all(type(p) is frozenset and p for p in assignment.values()):
        return assignment
    return freeze(assignment)
