"""Mirrors Kafka's TargetAssignmentBuilderTest: a mock assignor checks the GroupSpec it receives
and returns a prepared assignment; the builder must produce the right targets and records.

Kafka's test declares its topics with 6 partitions but assigns partitions 1..6. This builder drops
partitions that do not exist from current assignments (with topic names instead of ids, a topic
re-created with fewer partitions could leave stale ones), so the topics here get 7 partitions.
Records are compared in order: they come sorted by member id.
"""

from __future__ import annotations

import pytest

from coordinator.group.consumer.assignors import MemberSubscriptionAndAssignment, SubscriptionType
from coordinator.group.consumer.assignors.api import PartitionAssignorException
from coordinator.group.consumer.member import ConsumerGroupMember, ResolvedRegularExpression
from coordinator.group.consumer.target_assignment import TargetAssignmentBuilder
from coordinator.group.consumer.topic_partitions import freeze, invert

from .helpers import mk_assignment
from .helpers import mk_topic_assignment as tp

HOMOGENEOUS = SubscriptionType.HOMOGENEOUS
FOO, BAR = "foo", "bar"


class MockAssignor:
    name = "mock"

    def __init__(self):
        self.prepared = {}
        self.calls = []

    def assign(self, group_spec, describer):
        self.calls.append((group_spec, describer))
        return self.prepared


class Context:
    """Kafka's TargetAssignmentBuilderTestContext."""

    def __init__(self, group_id="my-group", group_epoch=20):
        self.group_id, self.group_epoch = group_id, group_epoch
        self.assignor = MockAssignor()
        self.members, self.target, self.static = {}, {}, {}
        self.topics, self.updated, self.resolved = {}, {}, {}

    def add_group_member(self, member_id, subscriptions, target, instance_id=None, regex=""):
        self.members[member_id] = ConsumerGroupMember(
            member_id,
            subscribed_topic_names=frozenset(subscriptions),
            subscribed_topic_regex=regex,
            instance_id=instance_id,
        )
        if instance_id is not None:
            self.static[instance_id] = member_id
        self.target[member_id] = target

    def add_topic_metadata(self, topic, n):
        self.topics[topic] = n
        return topic

    def update_member_subscription(self, member_id, subscriptions, instance_id=None, rack_id=None):
        base = self.members.get(member_id) or ConsumerGroupMember(member_id)
        changes = {"subscribed_topic_names": frozenset(subscriptions)}
        if instance_id is not None:
            changes["instance_id"] = instance_id
        if rack_id is not None:
            changes["rack_id"] = rack_id
        self.updated[member_id] = base.replace(**changes)

    def remove_member_subscription(self, member_id):
        self.updated[member_id] = None

    def prepare_member_assignment(self, member_id, assignment):
        self.assignor.prepared[member_id] = assignment

    def build(self):
        builder = (
            TargetAssignmentBuilder(self.group_id, self.group_epoch, self.assignor)
            .with_members(self.members)
            .with_static_members(self.static)
            .with_topic_metadata(self.topics)
            .with_subscription_type(HOMOGENEOUS)
            .with_target_assignment(self.target)
            .with_resolved_regular_expressions(self.resolved)
        )
        for member_id, member in self.updated.items():
            if member is None:
                builder.remove_member(member_id)
            else:
                builder.add_or_update_member(member_id, member)
        result = builder.build()

        # The assignor was called once, with the expected spec.
        assert len(self.assignor.calls) == 1
        spec, describer = self.assignor.calls[0]
        expected = {}
        members = {**self.members, **{m: u for m, u in self.updated.items() if u is not None}}
        for member_id, member in members.items():
            if member_id in self.updated and self.updated[member_id] is None:
                continue
            current = self.target.get(member_id, {})
            if member_id in self.updated and member.instance_id is not None:
                previous = self.static.get(member.instance_id)
                if previous is not None and previous != member_id:
                    current = self.target.get(previous, {})
            subscribed = set(member.subscribed_topic_names)
            if member.subscribed_topic_regex and member.subscribed_topic_regex in self.resolved:
                subscribed |= self.resolved[member.subscribed_topic_regex].topics
            expected[member_id] = MemberSubscriptionAndAssignment(
                frozenset(t for t in subscribed if t in self.topics),
                freeze(current),
                member.instance_id,
                member.rack_id,
            )
        assert spec.members == expected
        assert spec.subscription_type == HOMOGENEOUS
        assert spec.inverted_assignment == invert({m: s.assignment for m, s in expected.items()})
        assert {t: describer.num_partitions(t) for t in self.topics} == self.topics
        return result


def record(member_id, assignment):
    return {
        "type": "ConsumerGroupTargetAssignmentMember",
        "groupId": "my-group",
        "memberId": member_id,
        "topicPartitions": {t: sorted(p) for t, p in sorted(assignment.items())},
    }


EPOCH_RECORD = {"type": "ConsumerGroupTargetAssignmentMetadata", "groupId": "my-group", "assignmentEpoch": 20}


def test_empty():
    result = Context().build()
    assert result.records() == [EPOCH_RECORD]
    assert result.target_assignment == {}


def test_assignment_has_not_changed():
    c = Context()
    c.add_topic_metadata(FOO, 7)  # Kafka's test says 6 but uses partition 6 (see module doc)
    c.add_topic_metadata(BAR, 7)
    c.add_group_member("member-1", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 1, 2, 3)))
    c.add_group_member("member-2", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 4, 5, 6), tp(BAR, 4, 5, 6)))
    c.prepare_member_assignment("member-1", mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 1, 2, 3)))
    c.prepare_member_assignment("member-2", mk_assignment(tp(FOO, 4, 5, 6), tp(BAR, 4, 5, 6)))
    result = c.build()
    assert result.records() == [EPOCH_RECORD]
    assert result.target_assignment == {
        "member-1": mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 1, 2, 3)),
        "member-2": mk_assignment(tp(FOO, 4, 5, 6), tp(BAR, 4, 5, 6)),
    }


def test_assignment_swapped():
    c = Context()
    c.add_topic_metadata(FOO, 7)  # Kafka's test says 6 but uses partition 6 (see module doc)
    c.add_topic_metadata(BAR, 7)
    c.add_group_member("member-1", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 1, 2, 3)))
    c.add_group_member("member-2", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 4, 5, 6), tp(BAR, 4, 5, 6)))
    c.prepare_member_assignment("member-2", mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 1, 2, 3)))
    c.prepare_member_assignment("member-1", mk_assignment(tp(FOO, 4, 5, 6), tp(BAR, 4, 5, 6)))
    result = c.build()
    assert result.records() == [
        record("member-1", mk_assignment(tp(FOO, 4, 5, 6), tp(BAR, 4, 5, 6))),
        record("member-2", mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 1, 2, 3))),
        EPOCH_RECORD,
    ]
    assert result.target_assignment == {
        "member-2": mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 1, 2, 3)),
        "member-1": mk_assignment(tp(FOO, 4, 5, 6), tp(BAR, 4, 5, 6)),
    }


def test_new_member():
    c = Context()
    c.add_topic_metadata(FOO, 7)  # Kafka's test says 6 but uses partition 6 (see module doc)
    c.add_topic_metadata(BAR, 7)
    c.add_group_member("member-1", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 1, 2, 3)))
    c.add_group_member("member-2", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 4, 5, 6), tp(BAR, 4, 5, 6)))
    c.update_member_subscription("member-3", [FOO, BAR, "zar"])
    c.prepare_member_assignment("member-1", mk_assignment(tp(FOO, 1, 2), tp(BAR, 1, 2)))
    c.prepare_member_assignment("member-2", mk_assignment(tp(FOO, 3, 4), tp(BAR, 3, 4)))
    c.prepare_member_assignment("member-3", mk_assignment(tp(FOO, 5, 6), tp(BAR, 5, 6)))
    result = c.build()
    assert result.records() == [
        record("member-1", mk_assignment(tp(FOO, 1, 2), tp(BAR, 1, 2))),
        record("member-2", mk_assignment(tp(FOO, 3, 4), tp(BAR, 3, 4))),
        record("member-3", mk_assignment(tp(FOO, 5, 6), tp(BAR, 5, 6))),
        EPOCH_RECORD,
    ]
    assert set(result.changed) == {"member-1", "member-2", "member-3"}


def test_update_member():
    c = Context()
    c.add_topic_metadata(FOO, 7)  # Kafka's test says 6 but uses partition 6 (see module doc)
    c.add_topic_metadata(BAR, 7)
    c.add_group_member("member-1", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 1, 2)))
    c.add_group_member("member-2", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 4, 5, 6), tp(BAR, 3, 4)))
    c.add_group_member("member-3", [BAR, "zar"], mk_assignment(tp(BAR, 5, 6)))
    c.update_member_subscription("member-3", [FOO, BAR, "zar"], "instance-id-3", "rack-0")
    c.prepare_member_assignment("member-1", mk_assignment(tp(FOO, 1, 2), tp(BAR, 1, 2)))
    c.prepare_member_assignment("member-2", mk_assignment(tp(FOO, 3, 4), tp(BAR, 3, 4)))
    c.prepare_member_assignment("member-3", mk_assignment(tp(FOO, 5, 6), tp(BAR, 5, 6)))
    result = c.build()
    assert result.records() == [
        record("member-1", mk_assignment(tp(FOO, 1, 2), tp(BAR, 1, 2))),
        record("member-2", mk_assignment(tp(FOO, 3, 4), tp(BAR, 3, 4))),
        record("member-3", mk_assignment(tp(FOO, 5, 6), tp(BAR, 5, 6))),
        EPOCH_RECORD,
    ]


def test_partial_assignment_update():
    c = Context()
    c.add_topic_metadata(FOO, 7)  # Kafka's test says 6 but uses partition 6 (see module doc)
    c.add_topic_metadata(BAR, 7)
    c.add_group_member("member-1", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 1, 2), tp(BAR, 1, 2)))
    c.add_group_member("member-2", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 3, 4), tp(BAR, 3, 4)))
    c.add_group_member("member-3", [BAR, "zar"], mk_assignment(tp(FOO, 5, 6), tp(BAR, 5, 6)))
    c.prepare_member_assignment("member-1", mk_assignment(tp(FOO, 1, 2), tp(BAR, 1, 2)))
    c.prepare_member_assignment("member-2", mk_assignment(tp(FOO, 3, 4, 5), tp(BAR, 3, 4, 5)))
    c.prepare_member_assignment("member-3", mk_assignment(tp(FOO, 6), tp(BAR, 6)))
    result = c.build()
    # Member 1 has no record because its assignment did not change.
    assert result.records() == [
        record("member-2", mk_assignment(tp(FOO, 3, 4, 5), tp(BAR, 3, 4, 5))),
        record("member-3", mk_assignment(tp(FOO, 6), tp(BAR, 6))),
        EPOCH_RECORD,
    ]
    assert result.target_assignment["member-1"] == mk_assignment(tp(FOO, 1, 2), tp(BAR, 1, 2))


def test_delete_member():
    c = Context()
    c.add_topic_metadata(FOO, 7)  # Kafka's test says 6 but uses partition 6 (see module doc)
    c.add_topic_metadata(BAR, 7)
    c.add_group_member("member-1", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 1, 2), tp(BAR, 1, 2)))
    c.add_group_member("member-2", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 3, 4), tp(BAR, 3, 4)))
    c.add_group_member("member-3", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 5, 6), tp(BAR, 5, 6)))
    c.remove_member_subscription("member-3")
    c.prepare_member_assignment("member-1", mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 1, 2, 3)))
    c.prepare_member_assignment("member-2", mk_assignment(tp(FOO, 4, 5, 6), tp(BAR, 4, 5, 6)))
    result = c.build()
    assert result.records() == [
        record("member-1", mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 1, 2, 3))),
        record("member-2", mk_assignment(tp(FOO, 4, 5, 6), tp(BAR, 4, 5, 6))),
        EPOCH_RECORD,
    ]
    assert set(result.target_assignment) == {"member-1", "member-2"}


def test_replace_static_member():
    c = Context()
    c.add_topic_metadata(FOO, 7)  # Kafka's test says 6 but uses partition 6 (see module doc)
    c.add_topic_metadata(BAR, 7)
    c.add_group_member("member-1", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 1, 2), tp(BAR, 1, 2)), "instance-member-1")
    c.add_group_member("member-2", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 3, 4), tp(BAR, 3, 4)), "instance-member-2")
    c.add_group_member("member-3", [FOO, BAR, "zar"], mk_assignment(tp(FOO, 5, 6), tp(BAR, 5, 6)), "instance-member-3")
    # Static member 3 leaves; another member joins with the departed one's instance id.
    c.remove_member_subscription("member-3")
    c.update_member_subscription("member-3-a", [FOO, BAR, "zar"], "instance-member-3")
    c.prepare_member_assignment("member-1", mk_assignment(tp(FOO, 1, 2), tp(BAR, 1, 2)))
    c.prepare_member_assignment("member-2", mk_assignment(tp(FOO, 3, 4), tp(BAR, 3, 4)))
    c.prepare_member_assignment("member-3-a", mk_assignment(tp(FOO, 5, 6), tp(BAR, 5, 6)))
    result = c.build()
    assert result.records() == [record("member-3-a", mk_assignment(tp(FOO, 5, 6), tp(BAR, 5, 6))), EPOCH_RECORD]
    assert result.target_assignment == {
        "member-1": mk_assignment(tp(FOO, 1, 2), tp(BAR, 1, 2)),
        "member-2": mk_assignment(tp(FOO, 3, 4), tp(BAR, 3, 4)),
        "member-3-a": mk_assignment(tp(FOO, 5, 6), tp(BAR, 5, 6)),
    }


def test_regular_expressions():
    c = Context()
    c.add_topic_metadata(FOO, 7)  # Kafka's test says 6 but uses partition 6 (see module doc)
    c.add_topic_metadata(BAR, 7)
    c.add_group_member("member-1", [BAR, "zar"], {}, regex="foo*")
    c.add_group_member("member-2", [FOO, BAR, "zar"], {})
    c.add_group_member("member-3", [], {}, regex="foo*")
    c.resolved["foo*"] = ResolvedRegularExpression(frozenset({FOO}), 10, 12345)
    c.prepare_member_assignment("member-1", mk_assignment(tp(FOO, 1, 2), tp(BAR, 1, 2, 3)))
    c.prepare_member_assignment("member-2", mk_assignment(tp(FOO, 3, 4), tp(BAR, 4, 5, 6)))
    c.prepare_member_assignment("member-3", mk_assignment(tp(FOO, 5, 6)))
    result = c.build()
    assert result.records() == [
        record("member-1", mk_assignment(tp(FOO, 1, 2), tp(BAR, 1, 2, 3))),
        record("member-2", mk_assignment(tp(FOO, 3, 4), tp(BAR, 4, 5, 6))),
        record("member-3", mk_assignment(tp(FOO, 5, 6))),
        EPOCH_RECORD,
    ]


# ----------------------------------------------------------------- with the real assignors


def _group(n, topics=(FOO,)):
    return {f"m{i}": ConsumerGroupMember(f"m{i}", subscribed_topic_names=frozenset(topics)) for i in range(n)}


def test_real_uniform_assignor_subscription_type_is_derived_kafka_style():
    members = _group(2)
    members["m1"] = members["m1"].replace(subscribed_topic_names=frozenset({FOO, "zar"}))
    result = TargetAssignmentBuilder("g", 1, "uniform").with_members(members).with_topic_metadata({FOO: 4}).build()
    # "zar" does not exist, so both members effectively subscribe to foo only; but Kafka derives
    # the subscription type from the names, so the group is heterogeneous and the heterogeneous
    # builder deals partitions to the least loaded member in turn ([0, 1], [2, 3] if homogeneous).
    assert result.target_assignment_json() == {"m0": {FOO: [0, 2]}, "m1": {FOO: [1, 3]}}
    assert list(result.changed) == ["m0", "m1"]


def test_stale_partitions_of_a_shrunk_topic_are_dropped_from_current_assignments():
    members = _group(2)
    target = {"m0": {FOO: [0, 1, 7]}, "m1": {FOO: [2, 3]}}  # foo now has 4 partitions
    result = (
        TargetAssignmentBuilder("g", 2, "uniform")
        .with_members(members)
        .with_target_assignment(target)
        .with_topic_metadata({FOO: 4})
        .build()
    )
    assert result.target_assignment_json() == {"m0": {FOO: [0, 1]}, "m1": {FOO: [2, 3]}}
    assert list(result.changed) == ["m0"]


def test_assignor_failure_propagates():
    members = _group(1, topics=(FOO,))

    class Failing:
        name = "failing"

        def assign(self, spec, describer):
            raise PartitionAssignorException("Assignment failed.")

    with pytest.raises(PartitionAssignorException):
        TargetAssignmentBuilder("g", 1, Failing()).with_members(members).with_topic_metadata({FOO: 1}).build()
