"""ClassicGroup on its own (Kafka's ClassicGroupTest), plus the small Java-compatibility helpers."""

from __future__ import annotations

import itertools

import pytest

from coordinator.group.classic.consumer_protocol import SchemaError, encode_subscription, parse_subscription_topics
from coordinator.group.classic.group import (
    ALL_STATES,
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    VALID_PREVIOUS_STATES,
    ClassicGroup,
    ClassicGroupMember,
    IllegalStateError,
)
from coordinator.group.javautil import java_hashmap_order, java_utf16_length
from coordinator.messages import ReplyTo


def member(
    member_id: str, *protos: str, instance_id: str | None = None, rebalance: int = 10000, metadata: str = ""
) -> ClassicGroupMember:
    return ClassicGroupMember(
        member_id,
        instance_id,
        "client",
        "host",
        rebalance,
        5000,
        "consumer",
        [(p, metadata) for p in (protos or ("range",))],
    )


def group_in(state: str) -> ClassicGroup:
    g = ClassicGroup("g")
    path = {
        EMPTY: [],
        PREPARING_REBALANCE: [PREPARING_REBALANCE],
        COMPLETING_REBALANCE: [PREPARING_REBALANCE, COMPLETING_REBALANCE],
        STABLE: [PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE],
        DEAD: [DEAD],
    }[state]
    for s in path:
        g.transition_to(s, 1)
    return g


# ---------------------------------------------------------------- transitions (ClassicGroupTest)
LEGAL = [(f, t) for t in ALL_STATES for f in VALID_PREVIOUS_STATES[t]]
ILLEGAL = [(f, t) for f, t in itertools.product(ALL_STATES, ALL_STATES) if (f, t) not in LEGAL]


def test_valid_previous_states_are_kafkas():
    assert VALID_PREVIOUS_STATES == {
        EMPTY: {PREPARING_REBALANCE},
        PREPARING_REBALANCE: {STABLE, COMPLETING_REBALANCE, EMPTY},
        COMPLETING_REBALANCE: {PREPARING_REBALANCE},
        STABLE: {COMPLETING_REBALANCE},
        DEAD: {STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD},
    }
    assert len(LEGAL) == 11 and len(ILLEGAL) == 14


@pytest.mark.parametrize("source,target", LEGAL)
def test_legal_transition(source, target):
    g = group_in(source)
    g.transition_to(target, 42)
    assert g.state == target and g.previous_state == source and g.state_timestamp == 42


@pytest.mark.parametrize("source,target", ILLEGAL)
def test_illegal_transition_raises(source, target):
    # testEmptyToStableIllegalTransition, testPreparingRebalanceToPreparingRebalanceIllegalTransition, ...
    g = group_in(source)
    with pytest.raises(IllegalStateError):
        g.transition_to(target, 42)
    assert g.state == source


def test_can_rebalance_only_from_valid_previous_states():
    assert [s for s in ALL_STATES if group_in(s).can_rebalance()] == [EMPTY, COMPLETING_REBALANCE, STABLE]


# ---------------------------------------------------------------- protocol selection
def test_select_protocol():
    g = ClassicGroup("g")
    g.add(member("m1", "range", "roundrobin"))
    assert g.select_protocol() == "range"
    g.add(member("m2", "roundrobin", "range"))
    g.add(member("m3", "roundrobin", "range"))
    # The majority votes roundrobin.
    assert g.select_protocol() == "roundrobin"


def test_select_protocol_raises_if_no_members():
    with pytest.raises(IllegalStateError):
        ClassicGroup("g").select_protocol()


def test_select_protocol_chooses_compatible_protocol():
    g = ClassicGroup("g")
    g.add(member("m1", "range", "roundrobin"))
    g.add(member("m2", "roundrobin", "blah"))
    # Only roundrobin is supported by both members.
    assert g.select_protocol() == "roundrobin"


def test_select_protocol_tie_goes_to_first_in_java_hashmap_order():
    g = ClassicGroup("g")
    g.add(member("m1", "roundrobin", "range"))
    g.add(member("m2", "range", "roundrobin"))
    # One vote each; Java's HashMap iterates "range" before "roundrobin" and Stream.max keeps it.
    assert g.select_protocol() == "range"


def test_supports_protocols():
    g = ClassicGroup("g")
    # An empty group accepts any non-empty protocol type with at least one protocol.
    assert not g.supports_protocols("", {"range"})
    assert not g.supports_protocols("consumer", set())
    assert g.supports_protocols("consumer", {"range", "roundrobin"})
    g.add(member("m1", "range", "roundrobin"))
    g.transition_to(PREPARING_REBALANCE, 1)
    assert g.supports_protocols("consumer", {"roundrobin", "foo"})
    assert not g.supports_protocols("consumer", {"foo"})
    assert not g.supports_protocols("connect", {"range"})


def test_init_next_generation_empty_group():
    g = ClassicGroup("g")
    g.transition_to(PREPARING_REBALANCE, 1)
    g.init_next_generation(2)
    assert (g.state, g.generation_id, g.protocol_name, g.subscribed_topics) == (EMPTY, 1, None, None)


def test_init_next_generation():
    g = ClassicGroup("g")
    g.add(member("m1", "roundrobin", metadata=encode_subscription(["t2", "t1"])))
    g.transition_to(PREPARING_REBALANCE, 1)
    g.init_next_generation(2)
    assert (g.state, g.generation_id, g.protocol_name) == (COMPLETING_REBALANCE, 1, "roundrobin")
    assert g.subscribed_topics == ["t1", "t2"]


def test_replace_group_instance():
    g = ClassicGroup("g")
    old = member("old", instance_id="instance")
    g.add(old, ReplyTo("JoinGroup", 9, 1))
    old.awaiting_sync = ReplyTo("SyncGroup", 5, 2)
    fenced = []
    new = g.replace_static_member("instance", "old", "new", fenced.append)
    assert fenced == [old]
    assert g.is_leader("new") and g.static_member_id("instance") == "new"
    assert not g.has_member("old") and new.group_instance_id == "instance"


def test_leader_moves_to_next_member_when_leader_removed():
    g = ClassicGroup("g")
    for m in ("a", "b", "c"):
        g.add(member(m))
    assert g.is_leader("a")
    g.remove("a")
    assert g.is_leader("b")
    g.remove("b")
    g.remove("c")
    assert g.leader_id is None


def test_validate_member():
    g = ClassicGroup("g")
    g.add(member("m1", instance_id="i1"))
    g.add(member("m2"))
    g.validate_member("m1", "i1")
    g.validate_member("m2", None)
    for member_id, instance_id, code in [("m1", "i2", 25), ("m2", "i1", 82), ("nope", None, 25)]:
        with pytest.raises(Exception) as e:
            g.validate_member(member_id, instance_id)
        assert e.value.error.code == code


def test_snapshot_round_trip():
    g = ClassicGroup("g")
    m = member("m1", "range", instance_id="i1")
    g.add(m, ReplyTo("JoinGroup", 9, 7, "c", None))
    g.add_pending_member("p1")
    g.transition_to(PREPARING_REBALANCE, 5)
    again = ClassicGroup.from_json(g.to_json())
    assert again.to_json() == g.to_json()


# ---------------------------------------------------------------- consumer protocol
def test_parse_subscription_topics():
    assert parse_subscription_topics(encode_subscription(["a", "b"])) == ["a", "b"]
    assert parse_subscription_topics(encode_subscription(["a"], b"user", version=3)) == ["a"]
    for bad in ["", "AAA=", "AAAAAAAB"]:
        with pytest.raises(SchemaError):
            parse_subscription_topics(bad)


def test_unparsable_metadata_leaves_subscriptions_unknown():
    g = ClassicGroup("g")
    g.add(member("m1", "range", metadata="AAE="))
    g.transition_to(PREPARING_REBALANCE, 1)
    g.init_next_generation(2)
    assert g.subscribed_topics is None
    assert g.is_subscribed_to_topic("anything")  # unknown: treated as subscribed for consumer groups


# ---------------------------------------------------------------- Java behaviour
def test_java_hashmap_order_matches_java():
    # Vectors printed by a HashMap<String, Integer> on OpenJDK 17.
    assert java_hashmap_order(["roundrobin", "range"]) == ["range", "roundrobin"]
    assert java_hashmap_order(["range", "roundrobin", "sticky", "cooperative-sticky"]) == [
        "sticky",
        "range",
        "roundrobin",
        "cooperative-sticky",
    ]
    assert java_hashmap_order(["uniform", "range", "foo", "bar", "baz", "qux"]) == [
        "uniform",
        "bar",
        "qux",
        "foo",
        "range",
        "baz",
    ]


def test_java_utf16_length():
    assert java_utf16_length("abc") == 3
    assert java_utf16_length("é") == 1
    assert java_utf16_length("😀") == 2
