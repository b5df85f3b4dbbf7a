"""Test helpers mirroring Kafka's AssignmentTestUtil."""

from __future__ import annotations

from coordinator.group.consumer.assignors import GroupSpec, MemberSubscriptionAndAssignment, SubscribedTopicDescriber
from coordinator.group.consumer.topic_partitions import freeze


def mk_topic_assignment(topic, *partitions):
    return topic, frozenset(partitions)


def mk_assignment(*topic_assignments):
    return {t: ps for t, ps in topic_assignments if ps}


def member(subscribed=(), assignment=None, instance_id=None, rack_id=None):
    return MemberSubscriptionAndAssignment.of(subscribed, assignment, instance_id, rack_id)


def run(assignor, members, topics, subscription_type):
    return assignor.assign(GroupSpec(members, subscription_type), SubscribedTopicDescriber(topics))


def assert_assignment(expected, computed):
    assert {m: freeze(a) for m, a in computed.items()} == {m: freeze(a) for m, a in expected.items()}


def check_validity_and_balance(members, computed, balanced=True):
    """Kafka's checkValidityAndBalance: every assigned topic is subscribed by its member, no
    partition is assigned twice, and (homogeneous) sizes differ by at most one."""
    seen = {}
    for member_id, assignment in computed.items():
        for topic, parts in assignment.items():
            assert topic in members[member_id].subscribed_topics, (member_id, topic)
            for p in parts:
                assert (topic, p) not in seen, f"{topic}-{p} assigned to {seen[(topic, p)]} and {member_id}"
                seen[(topic, p)] = member_id
    if balanced:
        sizes = [sum(len(p) for p in a.values()) for a in computed.values()]
        if sizes:
            assert max(sizes) - min(sizes) <= 1, sizes
    return seen


def check_complete(members, computed, topics):
    """Every partition of every subscribed topic is assigned exactly once."""
    seen = check_validity_and_balance(members, computed, balanced=False)
    subscribed = set().union(*(m.subscribed_topics for m in members.values())) if members else set()
    expected = {(t, p) for t in subscribed for p in range(topics[t])}
    assert set(seen) == expected
