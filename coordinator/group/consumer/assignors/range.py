"""The `range` server-side assignor (Kafka's RangeAssignor, 3.9+ / 4.x, KAFKA-16944).

For each topic, its subscribers get contiguous ranges of partitions in member order: each gets
`partitions // subscribers`, and the first `partitions % subscribers` one more. Members are ordered
static members first (by instance id), then the others by member id, so a static member that
rejoins with a new member id keeps its range. With equal subscriptions and equal partition counts
the topics are co-partitioned (member i gets the same partition numbers of every topic).

Not sticky: the current assignment is ignored, so adding or removing a member shifts the ranges.
(Kafka 3.5-3.8's server-side range was a sticky variant; 4.x is this one.) Not rack-aware: the
rack-aware range of Kafka's trunk postdates 4.2.

Every member appears in the result, with `{}` when it gets nothing.
"""

from __future__ import annotations

from .._java import order_key
from .api import GroupAssignment, GroupSpec, PartitionAssignorException, SubscribedTopicDescriber, SubscriptionType

RANGE_ASSIGNOR_NAME = "range"


class _Topic:
    __slots__ = ("topic", "num_partitions", "num_members", "min_quota", "extra", "next_range")

    def __init__(self, topic: str, num_partitions: int, num_members: int):
        self.topic = topic
        self.num_partitions = num_partitions
        self.num_members = num_members
        self.min_quota = -1
        self.extra = -1
        self.next_range = 0

    def take(self, assignment: dict) -> None:
        if self.min_quota == -1:
            self.min_quota, self.extra = divmod(self.num_partitions, self.num_members)
        start = self.next_range
        quota = self.min_quota
        if self.extra > 0:
            quota += 1
            self.extra -= 1
        end = min(start + quota, self.num_partitions)
        self.next_range = end
        if start < end:
            assignment[self.topic] = frozenset(range(start, end))


def _check(describer: SubscribedTopicDescriber, topic: str) -> int:
    n = describer.num_partitions(topic)
    if n == -1:
        raise PartitionAssignorException("Member is subscribed to a non-existent topic")
    return n


class RangeAssignor:
    name = RANGE_ASSIGNOR_NAME

    @staticmethod
    def sort_member_ids(spec: GroupSpec) -> list:
        """Static members first, by instance id; then dynamic members by member id."""

        def key(member_id):
            instance_id = spec.members[member_id].instance_id
            if instance_id is not None:
                return (0, order_key(instance_id), order_key(member_id))
            return (1, order_key(member_id), b"")

        return sorted(spec.member_ids, key=key)

    def assign(self, group_spec: GroupSpec, describer: SubscribedTopicDescriber) -> GroupAssignment:
        if not group_spec.member_ids:
            return {}
        member_ids = self.sort_member_ids(group_spec)
        result: dict = {}
        if group_spec.subscription_type == SubscriptionType.HOMOGENEOUS:
            subscribed = group_spec.members[member_ids[0]].subscribed_topics
            topics = [_Topic(t, _check(describer, t), len(member_ids)) for t in sorted(subscribed, key=order_key)]
            for member_id in member_ids:
                assignment: dict = {}
                exhausted = False
                for topic in topics:
                    topic.take(assignment)
                    exhausted = exhausted or topic.next_range >= topic.num_partitions
                result[member_id] = assignment
                if exhausted:  # the remaining members get nothing more from these topics
                    topics = [t for t in topics if t.next_range < t.num_partitions]
        else:
            topics_by_name: dict[str, _Topic] = {}
            for member_id in member_ids:
                for t in group_spec.members[member_id].subscribed_topics:
                    entry = topics_by_name.get(t)
                    if entry is None:
                        entry = topics_by_name[t] = _Topic(t, _check(describer, t), 0)
                    entry.num_members += 1
            for member_id in member_ids:
                assignment = {}
                for t in group_spec.members[member_id].subscribed_topics:
                    topics_by_name[t].take(assignment)
                result[member_id] = assignment
        return result
