"""Kafka's ConsumerProtocol encodings and the client-side range assignor, checked against
kafka-python's independent implementations (its schema-generated ConsumerProtocol classes and its
RangePartitionAssignor) and against the examples of Kafka's and kafka-python's assignor tests."""

from __future__ import annotations

import base64
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from client.range_assignor import MemberSubscription, assign
from coordinator.group.classic.consumer_protocol import (
    Assignment,
    SchemaError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    parse_subscription_topics,
)

# ====================================================================== ConsumerProtocol


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_bytes_equal_kafka_pythons(version):
    fields = dict(topics=["orders", "payments"], user_data=b"\x00ud")
    if version >= 1:
        fields["owned_partitions"] = [("orders", [0, 2])]
    if version >= 2:
        fields["generation_id"] = 7
    if version >= 3:
        fields["rack_id"] = "rack-a"
    theirs = bytes(ConsumerProtocolSubscription(version=version, **fields).encode(version=version))
    ours = encode_subscription(
        fields["topics"],
        fields["user_data"],
        version,
        owned_partitions=fields.get("owned_partitions", []),
        generation_id=fields.get("generation_id", -1),
        rack_id=fields.get("rack_id"),
    )
    assert base64.b64decode(ours) == theirs
    decoded = decode_subscription(ours)
    assert decoded == Subscription(
        fields["topics"],
        b"\x00ud",
        fields.get("owned_partitions", []),
        fields.get("generation_id", -1),
        fields.get("rack_id"),
        version,
    )
    assert parse_subscription_topics(ours) == ["orders", "payments"]


def test_assignment_bytes_equal_kafka_pythons_and_round_trip():
    ours = encode_assignment({"t2": [3], "t1": [0, 1]})
    theirs = ConsumerProtocolAssignment(
        version=3, assigned_partitions=[("t1", [0, 1]), ("t2", [3])], user_data=None
    ).encode(version=3)
    assert base64.b64decode(ours) == bytes(theirs)
    assert decode_assignment(ours) == Assignment([("t1", [0, 1]), ("t2", [3])], None, 3)
    assert decode_assignment(ours).as_dict() == {"t1": [0, 1], "t2": [3]}
    # kafka-python reads ours, we read theirs.
    back = ConsumerProtocolAssignment.decode(base64.b64decode(encode_assignment({"x": [5]}, b"u", version=0)))
    assert [(tp.topic, tp.partitions) for tp in back.assigned_partitions] == [("x", [5])]
    assert back.user_data == b"u"


def test_newer_versions_are_read_with_the_newest_known_layout_and_bad_input_is_a_schema_error():
    v3 = base64.b64decode(encode_subscription(["a"], None, 3, generation_id=4, rack_id="r"))
    v9 = base64.b64encode(b"\x00\x09" + v3[2:] + b"trailing fields of a future version").decode()
    assert decode_subscription(v9) == Subscription(["a"], None, [], 4, "r", 9)
    assert decode_assignment("") == Assignment([], None, 0)  # the coordinator's "no assignment"
    for bad in ["AAA=", "AAAAAAAB", "not base64!", base64.b64encode(b"\xff\xff").decode()]:
        with pytest.raises(SchemaError):
            decode_subscription(bad)
        with pytest.raises(SchemaError):
            decode_assignment(bad)


# ====================================================================== range assignor
def counts(**topics):
    return lambda t: topics.get(t)


def test_kafka_python_example_two_consumers_two_topics():
    # test_assignor_range: C0 {t0:[0,1], t1:[0,1]}, C1 {t0:[2], t1:[2]}
    members = [MemberSubscription("C0", None, ("t0", "t1")), MemberSubscription("C1", None, ("t0", "t1"))]
    assert assign(members, counts(t0=3, t1=3)) == {"C0": {"t0": [0, 1], "t1": [0, 1]}, "C1": {"t0": [2], "t1": [2]}}


def test_java_range_assignor_examples():
    # RangeAssignorTest.testOneConsumerNoTopic / testOneConsumerNonexistentTopic
    assert assign([MemberSubscription("c", None, ())], counts(t=3)) == {"c": {}}
    assert assign([MemberSubscription("c", None, ("missing",))], counts(t=3)) == {"c": {}}
    # testOnlyAssignsPartitionsFromSubscribedTopics
    assert assign([MemberSubscription("c", None, ("t",))], counts(t=3, other=3)) == {"c": {"t": [0, 1, 2]}}
    # testTwoConsumersOneTopicOnePartition: the second consumer gets nothing
    assert assign([MemberSubscription("c1", None, ("t",)), MemberSubscription("c2", None, ("t",))], counts(t=1)) == {
        "c1": {"t": [0]},
        "c2": {},
    }
    # testMultipleConsumersMixedTopics: t1 (3 partitions) to c1, c2, c3; t2 (2) to c2 only
    members = [
        MemberSubscription("c1", None, ("t1",)),
        MemberSubscription("c2", None, ("t1", "t2")),
        MemberSubscription("c3", None, ("t1",)),
    ]
    assert assign(members, counts(t1=3, t2=2)) == {
        "c1": {"t1": [0]},
        "c2": {"t1": [1], "t2": [0, 1]},
        "c3": {"t1": [2]},
    }


def test_static_members_first_by_instance_id_then_dynamic_by_member_id():
    # Java's MemberInfo order: static members by group instance id (whatever their member ids),
    # then dynamic members by member id; strings compare as Java's String.compareTo (UTF-16 units:
    # U+FF5E sorts after U+1F600, whose first surrogate is 0xD83D).
    members = [
        MemberSubscription("a-dynamic", None, ("t",)),
        MemberSubscription("z-1", "instance-b", ("t",)),
        MemberSubscription("y-2", "instance-a", ("t",)),
        MemberSubscription("\uff5e", None, ("t",)),
        MemberSubscription("\U0001f600", None, ("t",)),
    ]
    got = assign(members, counts(t=7))
    assert got == {
        "y-2": {"t": [0, 1]},
        "z-1": {"t": [2, 3]},
        "a-dynamic": {"t": [4]},
        "\U0001f600": {"t": [5]},
        "\uff5e": {"t": [6]},
    }


member_ids = st.text(alphabet="abcdefgh-0123", min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_same_assignment_as_kafka_pythons_range_assignor(data):
    topics = data.draw(st.dictionaries(st.sampled_from(["t0", "t1", "t2", "t3"]), st.integers(1, 12), min_size=1))
    ids = data.draw(st.lists(member_ids, min_size=1, max_size=7, unique=True))
    n_static = data.draw(st.integers(0, len(ids)))
    members = []
    for i, mid in enumerate(ids):
        subscribed = data.draw(st.lists(st.sampled_from(sorted(topics) + ["absent"]), max_size=4, unique=True))
        members.append(MemberSubscription(mid, f"instance-{mid}" if i < n_static else None, tuple(subscribed)))
    ours = assign(members, lambda t: topics.get(t))
    # kafka-python groups static/dynamic with itertools.groupby over the input order, so it is
    # only right when the static members come first in the input, as they do here.
    cluster = SimpleNamespace(partitions_for_topic=lambda t: set(range(topics[t])) if t in topics else None)
    theirs = RangePartitionAssignor.assign(
        cluster,
        [
            SimpleNamespace(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=SimpleNamespace(topics=list(m.topics)),
            )
            for m in members
        ],
    )
    as_dicts = {mid: {t: list(ps) for t, ps in a.assigned_partitions if ps} for mid, a in theirs.items()}
    assert ours == as_dicts
    # Every partition of every subscribed topic exactly once.
    for t, n in topics.items():
        if any(t in m.topics for m in members):
            owned = sorted(p for a in ours.values() for p in a.get(t, []))
            assert owned == list(range(n))
