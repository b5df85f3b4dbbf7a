"""ConsumerGroupMember and ConsumerGroup: JSON round trips, record-shaped updates, derived state,
offset validation (Kafka's ConsumerGroupTest / ConsumerGroupMemberTest equivalents)."""

from __future__ import annotations

import json

import pytest

from coordinator.errors import ApiError, Errors
from coordinator.group.consumer.group import ConsumerGroup
from coordinator.group.consumer.group_state import ConsumerGroupState, IllegalStateError
from coordinator.group.consumer.member import ConsumerGroupMember, MemberState, ResolvedRegularExpression

from .helpers import mk_assignment
from .helpers import mk_topic_assignment as tp

FOO, BAR = "foo", "bar"


def full_member():
    return ConsumerGroupMember(
        "member-id",
        member_epoch=10,
        previous_member_epoch=9,
        state=MemberState.UNREVOKED_PARTITIONS,
        instance_id="instance-id",
        rack_id="rack-id",
        rebalance_timeout_ms=5000,
        client_id="client-id",
        client_host="hostname",
        subscribed_topic_names=frozenset({FOO, BAR}),
        subscribed_topic_regex="regex",
        server_assignor_name="range",
        assigned_partitions=mk_assignment(tp(FOO, 1, 2, 3)),
        partitions_pending_revocation=mk_assignment(tp(BAR, 4, 5, 6)),
    )


def test_member_json_round_trip():
    m = full_member()
    data = json.loads(json.dumps(m.to_json()))
    assert data["state"] == "UNREVOKED_PARTITIONS"
    assert data["assignedPartitions"] == {FOO: [1, 2, 3]}
    assert data["subscribedTopicNames"] == [BAR, FOO]
    assert ConsumerGroupMember.from_json(data) == m
    assert all(isinstance(k, str) for k in data)


def test_member_state_from_unknown_value():
    assert MemberState.from_value(5) == MemberState.UNKNOWN
    assert MemberState.from_json("FUTURE_STATE") == MemberState.UNKNOWN
    assert MemberState.from_json(2) == MemberState.UNRELEASED_PARTITIONS


def test_update_with_record_values():
    """Kafka's testUpdateWithConsumerGroupMemberMetadataValue / ...CurrentMemberAssignmentValue."""
    m = full_member()
    fresh = (
        ConsumerGroupMember("member-id")
        .with_metadata_value(m.metadata_value())
        .with_assignment_value(m.assignment_value())
    )
    assert fresh == m


def test_update_member_epoch_keeps_the_previous_one():
    m = full_member().update_member_epoch(11)
    assert (m.member_epoch, m.previous_member_epoch) == (11, 10)


def test_with_heartbeat_keeps_absent_fields():
    m = full_member()
    assert m.with_heartbeat() == m
    u = m.with_heartbeat(rack_id="r2", subscribed_topic_names=[FOO], rebalance_timeout_ms=6000)
    assert (u.rack_id, u.subscribed_topic_names, u.rebalance_timeout_ms, u.instance_id) == (
        "r2",
        frozenset({FOO}),
        6000,
        "instance-id",
    )


def test_is_reconciled_to():
    m = ConsumerGroupMember("m", member_epoch=5)
    assert m.is_reconciled_to(5) and not m.is_reconciled_to(6)
    assert not m.replace(state=MemberState.UNRELEASED_PARTITIONS).is_reconciled_to(5)


def _group():
    group = ConsumerGroup("g")
    group.group_epoch = 11
    group.target_assignment_epoch = 11
    group.update_member(
        ConsumerGroupMember(
            "m1",
            member_epoch=11,
            instance_id="i1",
            subscribed_topic_names=frozenset({FOO}),
            assigned_partitions=mk_assignment(tp(FOO, 0, 1)),
        )
    )
    group.update_member(
        ConsumerGroupMember(
            "m2",
            member_epoch=10,
            state=MemberState.UNREVOKED_PARTITIONS,
            subscribed_topic_names=frozenset({FOO}),
            assigned_partitions=mk_assignment(tp(FOO, 2)),
            partitions_pending_revocation=mk_assignment(tp(FOO, 3)),
        )
    )
    group.update_target_assignment("m1", mk_assignment(tp(FOO, 0, 1, 3)))
    group.update_target_assignment("m2", mk_assignment(tp(FOO, 2)))
    group.resolved_regular_expressions["f.*"] = ResolvedRegularExpression(frozenset({FOO}), 3, 99)
    return group


def test_group_derived_state():
    group = _group()
    assert group.state == ConsumerGroupState.RECONCILING
    assert group.static_member_id("i1") == "m1" and group.static_member("i1").member_id == "m1"
    assert group.current_partition_epoch(FOO, 0) == 11
    assert group.current_partition_epoch(FOO, 3) == 10  # pending revocation, still owned
    assert group.current_partition_epoch(FOO, 4) == -1
    assert group.target_assignment_of("m2") == {FOO: frozenset({2})}
    assert group.target_assignment_of("new", "i1") == {FOO: frozenset({0, 1, 3})}
    assert group.target_assignment_of("new", "unknown-instance") == {}
    assert group.inverted_target_assignment() == {FOO: {0: "m1", 1: "m1", 3: "m1", 2: "m2"}}
    # m2 revokes foo-3: STABLE at 11; the group is stable.
    group.update_member(
        group.members["m2"].update_member_epoch(11, state=MemberState.STABLE, partitions_pending_revocation={})
    )
    assert group.current_partition_epoch(FOO, 3) == -1
    assert group.state == ConsumerGroupState.STABLE
    group.remove_member("m1")
    assert group.static_member_id("i1") is None and group.current_partition_epoch(FOO, 0) == -1
    group.remove_member("m2")
    assert group.state == ConsumerGroupState.EMPTY


def test_giving_a_partition_still_owned_by_another_member_fails():
    group = _group()
    with pytest.raises(IllegalStateError):
        group.update_member(group.members["m1"].replace(assigned_partitions=mk_assignment(tp(FOO, 0, 1, 3))))


def test_group_json_round_trip():
    group = _group()
    data = json.loads(json.dumps(group.to_json()))
    again = ConsumerGroup.from_json(data)
    assert again.to_json() == data
    assert again.partition_epochs == group.partition_epochs
    assert again.static_members == group.static_members
    assert again.state == group.state


def test_get_or_create_member():
    group = _group()
    assert group.get_or_create_member("m1", False) is group.members["m1"]
    assert group.get_or_create_member("x", True) == ConsumerGroupMember("x")
    with pytest.raises(ApiError) as e:
        group.get_or_create_member("x", False)
    assert (e.value.error, e.value.message) == (Errors.UNKNOWN_MEMBER_ID, "Member x is not a member of group g.")


def test_validate_offset_commit():
    """Kafka's testValidateOffsetCommit."""
    group = ConsumerGroup("group-foo")
    # Simulate a call from the admin client without member id and member epoch: empty group.
    group.validate_offset_commit("", None, -1, False, 9)
    group.update_member(ConsumerGroupMember("member-id", member_epoch=10))
    with pytest.raises(ApiError) as e:
        group.validate_offset_commit("", None, -1, False, 9)
    assert e.value.error == Errors.UNKNOWN_MEMBER_ID
    with pytest.raises(ApiError) as e:
        group.validate_offset_commit("member-id", None, 11, False, 9)
    assert (e.value.error, e.value.message) == (
        Errors.STALE_MEMBER_EPOCH,
        "Received member epoch 11 is newer than current member epoch 10.",
    )
    with pytest.raises(ApiError) as e:
        group.validate_offset_commit("member-id", None, 10, False, 8)
    assert e.value.error == Errors.UNSUPPORTED_VERSION
    group.validate_offset_commit("member-id", None, 10, False, 9)
    # Transactional commits may omit member id, generation and instance id.
    group.validate_offset_commit("", None, -1, True, 3)
    group.validate_offset_commit("member-id", None, 10, True, 3)
    # A classic-protocol member gets ILLEGAL_GENERATION.
    group.update_member(
        ConsumerGroupMember(
            "classic", member_epoch=10, classic_member_metadata={"sessionTimeoutMs": 5000, "supportedProtocols": []}
        )
    )
    with pytest.raises(ApiError) as e:
        group.validate_offset_commit("classic", None, 11, False, 8)
    assert e.value.error == Errors.ILLEGAL_GENERATION
    # An older generation is checked per partition (Kafka 4.3+): it has none assigned.
    with pytest.raises(ApiError) as e:
        group.validate_offset_commit("classic", None, 9, False, 8)("foo", 0)
    assert e.value.error == Errors.ILLEGAL_GENERATION
    group.validate_offset_commit("classic", None, 10, False, 8)


# Kafka 4.3's OffsetCommit versions 0-10 and TxnOffsetCommit versions 0-6.
COMMIT_VERSIONS = [(False, v) for v in range(11)] + [(True, v) for v in range(7)]


def _epoch_member(member_id="member-id", assigned=None, pending=None, **kw) -> ConsumerGroupMember:
    """A member at epoch 10 whose partitions were assigned at epoch 7."""
    assigned, pending = assigned or {}, pending or {}
    epochs = {t: dict.fromkeys(ps, 7) for t, ps in {**pending, **assigned}.items()}
    for t, ps in pending.items():
        epochs[t].update(dict.fromkeys(ps, 7))
    return ConsumerGroupMember(
        member_id,
        member_epoch=10,
        assigned_partitions=assigned,
        partitions_pending_revocation=pending,
        partition_epochs=epochs,
        **kw,
    )


@pytest.mark.parametrize("pending", [False, True], ids=["assigned", "pending_revocation"])
@pytest.mark.parametrize("is_transactional,version", COMMIT_VERSIONS)
def test_validate_offset_commit_with_epoch_validation(is_transactional, version, pending):
    """Kafka's testValidateOffsetCommitWithEpochValidation (KIP-1251)."""
    group = ConsumerGroup("group-foo")
    part = {"foo": frozenset({0})}
    group.update_member(_epoch_member(**({"pending": part} if pending else {"assigned": part})))
    if not is_transactional and version < 9:
        for epoch in (11, 10, 7, 6):
            with pytest.raises(ApiError) as e:
                group.validate_offset_commit("member-id", "", epoch, is_transactional, version)
            assert e.value.error == Errors.UNSUPPORTED_VERSION
        return
    # Client epoch (11) > broker epoch (10).
    with pytest.raises(ApiError) as e:
        group.validate_offset_commit("member-id", "", 11, is_transactional, version)
    assert e.value.error == Errors.STALE_MEMBER_EPOCH
    # Client epoch == broker epoch: no per-partition check.
    assert group.validate_offset_commit("member-id", "", 10, is_transactional, version) is None
    # Assignment epoch (7) <= client epoch (7) <= broker epoch (10).
    group.validate_offset_commit("member-id", "", 7, is_transactional, version)("foo", 0)
    # Client epoch (6) < assignment epoch (7): the validator raises.
    validator = group.validate_offset_commit("member-id", "", 6, is_transactional, version)
    with pytest.raises(ApiError) as e:
        validator("foo", 0)
    assert (e.value.error, e.value.message) == (
        Errors.STALE_MEMBER_EPOCH,
        "Received member epoch 6 is older than assignment epoch 7 for partition foo-0.",
    )


@pytest.mark.parametrize("is_transactional,version", COMMIT_VERSIONS)
def test_validate_offset_commit_with_classic_protocol_member(is_transactional, version):
    """Kafka's testValidateOffsetCommitWithClassicProtocolMember: ILLEGAL_GENERATION throughout."""
    group = ConsumerGroup("group-foo")
    group.update_member(
        _epoch_member(assigned={"foo": frozenset({0})}, classic_member_metadata={"sessionTimeoutMs": 45000})
    )
    with pytest.raises(ApiError) as e:
        group.validate_offset_commit("member-id", "", 11, is_transactional, version)
    assert e.value.error == Errors.ILLEGAL_GENERATION
    assert group.validate_offset_commit("member-id", "", 10, is_transactional, version) is None
    group.validate_offset_commit("member-id", "", 7, is_transactional, version)("foo", 0)
    stale = group.validate_offset_commit("member-id", "", 6, is_transactional, version)
    with pytest.raises(ApiError) as e:
        stale("foo", 0)
    assert (e.value.error, e.value.message) == (
        Errors.ILLEGAL_GENERATION,
        "Received generation id 6 is older than assignment epoch 7 for partition foo-0.",
    )


@pytest.mark.parametrize("is_transactional,version", COMMIT_VERSIONS)
def test_validate_offset_commit_with_unassigned_topic_or_partition(is_transactional, version):
    """Kafka's testValidateOffsetCommitWithUnassignedTopicOrPartition."""
    group = ConsumerGroup("group-foo")
    group.update_member(_epoch_member(assigned={"foo": frozenset({0})}, pending={"foo": frozenset({1})}))
    if not is_transactional and version < 9:
        with pytest.raises(ApiError) as e:
            group.validate_offset_commit("member-id", "", 7, is_transactional, version)
        assert e.value.error == Errors.UNSUPPORTED_VERSION
        return
    validator = group.validate_offset_commit("member-id", "", 7, is_transactional, version)
    validator("foo", 1)  # pending revocation, assigned at 7
    for topic, partition in (("bar", 0), ("foo", 2)):
        with pytest.raises(ApiError) as e:
            validator(topic, partition)
        assert (e.value.error, e.value.message) == (
            Errors.STALE_MEMBER_EPOCH,
            f"Partition {topic}-{partition} is not assigned or pending revocation for member.",
        )


def test_validate_offset_fetch():
    group = ConsumerGroup("group-foo")
    group.validate_offset_fetch(None, -1)
    with pytest.raises(ApiError) as e:
        group.validate_offset_fetch("m", 0)
    assert e.value.error == Errors.UNKNOWN_MEMBER_ID
    group.update_member(ConsumerGroupMember("m", member_epoch=3))
    with pytest.raises(ApiError) as e:
        group.validate_offset_fetch("m", 2)
    assert e.value.error == Errors.STALE_MEMBER_EPOCH
    group.validate_offset_fetch("m", 3)


def test_validate_delete_group():
    group = ConsumerGroup("g")
    group.validate_delete_group()
    group.update_member(ConsumerGroupMember("m"))
    with pytest.raises(ApiError) as e:
        group.validate_delete_group()
    assert e.value.error == Errors.NON_EMPTY_GROUP
