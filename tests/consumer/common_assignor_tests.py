"""Kafka's CommonAssignorTests: properties every server-side assignor should have.

`rack_aware` adds member racks and partition replica racks to the input; the 4.x assignors are not
rack-aware, so the outcome must not change (and these properties must hold either way).
"""

from __future__ import annotations

import itertools

from coordinator.group.consumer.assignors import (
    GroupSpec,
    MemberSubscriptionAndAssignment,
    SubscribedTopicDescriber,
    TopicMetadata,
)

from .helpers import assert_assignment, member

T1, T2, T3 = "topic1", "topic2", "topic3"
A, B, C = "A", "B", "C"


def _topics(rack_aware):
    counts = {T1: 2, T2: 5, T3: 7}
    if not rack_aware:
        return counts
    racks = ["rack0", "rack1", "rack2", "rack3"]
    return {
        t: TopicMetadata(n, {p: frozenset({racks[p % 4], racks[(p + 1) % 4]}) for p in range(n)})
        for t, n in counts.items()
    }


def _with_assignment(members, assignment, order):
    """The members again, with `assignment` (the very objects) as their current assignment."""
    return {
        m: MemberSubscriptionAndAssignment(
            members[m].subscribed_topics, assignment[m], members[m].instance_id, members[m].rack_id
        )
        for m in order
    }


def test_assignment_reuse(assignor, subscription_type, rack_aware):
    """An unchanged member assignment is handed back as the very same object (uniform only)."""
    describer = SubscribedTopicDescriber(_topics(rack_aware))
    members = {m: member([T1, T2, T3], rack_id=f"rack{i + 1}" if rack_aware else None) for i, m in enumerate((A, B, C))}
    first = assignor.assign(GroupSpec(members, subscription_type), describer)
    second = assignor.assign(GroupSpec(_with_assignment(members, first, members), subscription_type), describer)
    for m in members:
        assert second[m] is first[m]


def test_reassignment_stickiness(assignor, subscription_type, rack_aware):
    """Re-running the assignor on its own output in any member order changes nothing (Kafka's
    testReassignmentStickiness / testIterationOrderStickiness)."""
    describer = SubscribedTopicDescriber(_topics(rack_aware))
    members = {
        A: member([T1, T2, T3]),
        B: member([T1, T2, T3], rack_id="rack1" if rack_aware else None),
        C: member([T1, T2, T3]),
    }
    first = assignor.assign(GroupSpec(members, subscription_type), describer)
    for order in itertools.permutations((A, B, C)):
        again = assignor.assign(GroupSpec(_with_assignment(members, first, order), subscription_type), describer)
        assert_assignment(first, again)


def test_static_member_replacement_stickiness(assignor, subscription_type, rack_aware):
    """A static member that rejoins under a new member id (the coordinator hands it the departed
    member's target assignment) gets the same partitions; nobody else moves."""
    describer = SubscribedTopicDescriber(_topics(rack_aware))
    rack = (lambda i: f"rack{i}") if rack_aware else (lambda i: None)
    members = {
        A: member([T1, T2, T3], instance_id="iA", rack_id=rack(1)),
        B: member([T1, T2, T3], instance_id="iB", rack_id=rack(2)),
        C: member([T1, T2, T3], instance_id="iC", rack_id=rack(3)),
    }
    first = assignor.assign(GroupSpec(members, subscription_type), describer)
    replaced = _with_assignment(members, first, members)
    replaced["B2"] = replaced.pop(B)
    second = assignor.assign(GroupSpec(replaced, subscription_type), describer)
    assert set(second) == {A, "B2", C}
    assert_assignment({A: first[A], "B2": first[B], C: first[C]}, second)


def test_member_replacement_stickiness(assignor, subscription_type, rack_aware, newcomer_takes_freed=True):
    """A member removed and another (dynamic) one added: the members that stay keep all their
    partitions, and only the freed partitions move. With `newcomer_takes_freed` (the homogeneous
    builder) the newcomer takes exactly the freed ones; the heterogeneous builder may instead
    give one of them to a remaining member that was one below."""
    describer = SubscribedTopicDescriber(_topics(rack_aware))
    rack = (lambda i: f"rack{i}") if rack_aware else (lambda i: None)
    members = {
        A: member([T1, T2, T3], rack_id=rack(1)),
        B: member([T1, T2, T3], rack_id=rack(2)),
        C: member([T1, T2, T3], rack_id=rack(3)),
    }
    first = assignor.assign(GroupSpec(members, subscription_type), describer)
    replaced = _with_assignment(members, first, (A, C))
    replaced["D"] = member([T1, T2, T3], rack_id=rack(2))
    second = assignor.assign(GroupSpec(replaced, subscription_type), describer)
    if newcomer_takes_freed:
        assert_assignment({A: first[A], C: first[C], "D": first[B]}, second)
    for m in (A, C):
        for topic, parts in first[m].items():
            assert parts <= second[m].get(topic, frozenset()), (m, topic)
    sizes = [sum(map(len, a.values())) for a in second.values()]
    assert max(sizes) - min(sizes) <= 1
