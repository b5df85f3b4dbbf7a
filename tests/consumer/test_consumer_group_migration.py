"""Classic-protocol members in consumer groups and the online migration between the classic and
consumer protocols (Kafka 4.x GroupMetadataManager classicGroup*ToConsumerGroup,
convertToConsumerGroup, convertToClassicGroup). Test names follow GroupMetadataManagerTest."""

from __future__ import annotations

import base64

import pytest

from coordinator.errors import Errors
from coordinator.group.classic.consumer_protocol import decode_assignment, encode_assignment, encode_subscription
from coordinator.group.consumer.member import MemberState
from coordinator.metrics import series
from coordinator.records import record_key
from tests.consumer.consumer_group_helpers import GROUP, ConsumerGroupTestClient, assignment_of
from tests.group.group_helpers import GroupTestClient
from tests.runtime.test_metrics import live_gauges, scanned_gauges

SESSION, REBALANCE = 10_000, 5_000


def client(**kw) -> ConsumerGroupTestClient:
    kw.setdefault("topics", {"foo": 6, "bar": 3})
    return ConsumerGroupTestClient(**kw)


def classic_view(c: ConsumerGroupTestClient) -> GroupTestClient:
    g = GroupTestClient.__new__(GroupTestClient)
    g.group_id, g.d = c.group_id, c.d
    return g


def protos(topics=("foo",), owned: dict | None = None, version: int = 3, names=("range",)) -> list[dict]:
    """The Java consumer's JoinGroup protocols: a ConsumerProtocolSubscription (version 3 by default)."""
    meta = encode_subscription(list(topics), version=version, owned_partitions=sorted((owned or {}).items()))
    return [{"name": n, "metadata": meta} for n in names]


def classic_join(c, member_id: str, topics=("foo",), **kw) -> dict:
    kw.setdefault("protos", protos(topics, kw.pop("owned", None)))
    kw.setdefault("session_timeout", SESSION)
    kw.setdefault("rebalance_timeout", REBALANCE)
    _, resp = classic_view(c).join(member_id, **kw)
    return resp


def classic_join_new(c, topics=("foo",), **kw) -> dict:
    first = classic_join(c, "", topics, **kw)
    assert first["errorCode"] == Errors.MEMBER_ID_REQUIRED.code, first
    return classic_join(c, first["memberId"], topics, **kw)


def sync(c, member_id: str, generation: int, **kw) -> dict:
    kw.setdefault("protocol_type", "consumer")
    kw.setdefault("protocol_name", "range")
    return classic_view(c).sync(member_id, generation, **kw)[1]


def assigned(sync_resp: dict) -> dict:
    return decode_assignment(sync_resp["assignment"]).as_dict()


def consumer_group_with_one_member(c) -> None:
    c.join("m1", ["foo"], assignor="range")
    assert str(c.group().state) == "Stable"


def release(c, member_id: str = "m1") -> None:
    """The consumer-protocol member revokes what its new target no longer has."""
    c.heartbeat(member_id, c.member(member_id).member_epoch)
    target = c.group().target_assignment[member_id]
    c.heartbeat(member_id, c.member(member_id).member_epoch, owned={t: sorted(p) for t, p in target.items()})
    assert c.member(member_id).state == MemberState.STABLE


def target_of(c, member_id: str) -> dict:
    return {t: sorted(p) for t, p in c.group().target_assignment[member_id].items()}


def timer_deadline(c, kind: str, member_id: str) -> int | None:
    timer = c.d.partition.timers.get(record_key(kind, GROUP, member_id))
    return None if timer is None else timer.deadline_ms


# ====================================================================== JoinGroup
def test_joining_consumer_group_with_new_dynamic_member():
    c = client()
    consumer_group_with_one_member(c)
    first = classic_join(c, "")
    assert first["errorCode"] == Errors.MEMBER_ID_REQUIRED.code and first["memberId"]
    assert "m1" in c.group().members and len(c.group().members) == 1  # nothing written
    mark = len(c.records())
    resp = classic_join(c, first["memberId"])
    mid = first["memberId"]
    assert resp == {
        "throttleTimeMs": 0,
        "errorCode": 0,
        "generationId": 3,
        "protocolType": "consumer",
        "protocolName": "range",
        "leader": "",
        "skipAssignment": False,
        "memberId": mid,
        "members": [],
    }
    member = c.member(mid)
    assert member.use_classic_protocol and member.classic_session_timeout_ms == SESSION
    assert member.supported_classic_protocols == [(p["name"], p["metadata"]) for p in protos()]
    assert member.member_epoch == 3 and member.rebalance_timeout_ms == REBALANCE
    assert [k for k, _ in c.records(mark)] == [
        record_key("ConsumerGroupMemberMetadata", GROUP, mid),
        record_key("ConsumerGroupMetadata", GROUP),
        record_key("ConsumerGroupTargetAssignmentMember", GROUP, mid),
        record_key("ConsumerGroupTargetAssignmentMember", GROUP, "m1"),
        record_key("ConsumerGroupTargetAssignmentMetadata", GROUP),
        record_key("ConsumerGroupCurrentMemberAssignment", GROUP, mid),
    ]
    assert c.records(mark)[0][1]["classicMemberMetadata"] == {
        "sessionTimeoutMs": SESSION,
        "supportedProtocols": protos(),
    }
    # Its session is its own session timeout; the sync timeout is its rebalance timeout.
    assert timer_deadline(c, "consumer-session", mid) == c.now + SESSION
    assert timer_deadline(c, "consumer-sync", mid) == c.now + REBALANCE
    # Describe shows a classic member (memberType 0).
    [g] = c.describe()
    assert {m["memberId"]: m["memberType"] for m in g["members"]} == {"m1": 1, mid: 0}
    # The records rebuild the same group.
    rebuilt = c.rebuilt().component("groups").groups[GROUP]
    assert rebuilt.members == c.group().members


def test_joining_consumer_group_with_new_static_member():
    c = client()
    consumer_group_with_one_member(c)
    resp = classic_join(c, "", instance_id="i1")  # a static member gets no MEMBER_ID_REQUIRED
    assert resp["errorCode"] == 0 and resp["generationId"] == 3
    assert c.member(resp["memberId"]).instance_id == "i1"
    # Rejoining with a new member id replaces it (records of the old id tombstoned).
    again = classic_join(c, "", instance_id="i1")
    assert again["errorCode"] == 0 and again["memberId"] != resp["memberId"]
    assert set(c.group().members) == {"m1", again["memberId"]}


def test_static_member_joining_consumer_group_with_unknown_instance_id_and_unmatched_member_id():
    c = client()
    consumer_group_with_one_member(c)
    static = classic_join(c, "", instance_id="i1")
    assert classic_join(c, "some-id", instance_id="other")["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    assert classic_join(c, "some-id", instance_id="i1")["errorCode"] == Errors.FENCED_INSTANCE_ID.code
    assert classic_join(c, static["memberId"], instance_id="i1")["errorCode"] == 0


def test_joining_consumer_group_throws_exception_if_protocol_is_not_supported():
    c = client()
    consumer_group_with_one_member(c)
    resp = classic_join(c, "", protocol_type="connect")
    assert (resp["errorCode"], resp["memberId"]) == (Errors.INCONSISTENT_GROUP_PROTOCOL.code, "")
    classic_join_new(c, protos=protos(names=("range",)))
    # A protocol every classic member supports is required.
    assert (
        classic_join(c, "", protos=protos(names=("roundrobin",)))["errorCode"]
        == Errors.INCONSISTENT_GROUP_PROTOCOL.code
    )
    assert (
        classic_join(c, "", protos=protos(names=("roundrobin", "range")))["errorCode"] == Errors.MEMBER_ID_REQUIRED.code
    )


def test_joining_consumer_group_throws_exception_if_group_over_max_size():
    c = client(group_consumer_max_size=1)
    consumer_group_with_one_member(c)
    assert classic_join(c, "")["errorCode"] == Errors.GROUP_MAX_SIZE_REACHED.code


def test_reconciliation_in_joining_consumer_group_with_cooperative_protocol():
    # A classic member is assigned through the group's server-side assignor; it keeps reconciling
    # like a consumer-protocol member: partitions owned by another member are given once released.
    c = client()
    c.join("m1", ["foo"], assignor="range")
    c.heartbeat("m1", 1, owned={"foo": [0, 1, 2, 3, 4, 5]})
    joined = classic_join_new(c)
    mid = joined["memberId"]
    member = c.member(mid)
    assert member.state == MemberState.UNRELEASED_PARTITIONS and member.assigned_partitions == {}
    # m1 revokes; the classic member is told to rejoin by its heartbeat, then gets its partitions.
    release(c)
    assert classic_view(c).heartbeat(mid, joined["generationId"])["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code
    rejoined = classic_join(c, mid)
    assert rejoined["errorCode"] == 0
    resp = sync(c, mid, rejoined["generationId"])
    assert resp["errorCode"] == 0 and assigned(resp) == target_of(c, mid) and len(assigned(resp)["foo"]) == 3
    assert set(assigned(resp)["foo"]).isdisjoint(assignment_of(c.member("m1"))["foo"])


# ====================================================================== SyncGroup
def test_classic_group_sync_to_consumer_group_with_all_consumer_protocol_versions():
    for version in range(4):
        c = client()
        consumer_group_with_one_member(c)
        c.heartbeat("m1", 1, owned={"foo": [0, 1, 2, 3, 4, 5]})
        kw = {"protos": protos(version=version)}
        joined = classic_join_new(c, **kw)
        release(c)
        rejoined = classic_join(c, joined["memberId"], **kw)
        resp = sync(c, joined["memberId"], rejoined["generationId"])
        assert resp["errorCode"] == 0 and (resp["protocolType"], resp["protocolName"]) == ("consumer", "range")
        target = target_of(c, joined["memberId"])
        assert len(target["foo"]) == 3
        assert resp["assignment"] == encode_assignment(target, version=version)
        assert decode_assignment(resp["assignment"]).version == version
        # A successful sync ends the sync timeout.
        assert timer_deadline(c, "consumer-sync", joined["memberId"]) is None


def test_classic_group_sync_to_consumer_group_errors():
    # testClassicGroupSyncToConsumerGroupWithUnknownMemberId / WithFencedInstanceId /
    # WithInconsistentGroupProtocol / WithIllegalGeneration.
    c = client()
    consumer_group_with_one_member(c)
    joined = classic_join(c, "", instance_id="i1")
    mid, gen = joined["memberId"], joined["generationId"]
    assert sync(c, "unknown", gen)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    assert sync(c, "unknown", gen, instance_id="i1")["errorCode"] == Errors.FENCED_INSTANCE_ID.code
    assert sync(c, mid, gen, instance_id="i2")["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    assert (
        sync(c, mid, gen, instance_id="i1", protocol_type="connect")["errorCode"]
        == Errors.INCONSISTENT_GROUP_PROTOCOL.code
    )
    assert (
        sync(c, mid, gen, instance_id="i1", protocol_name="roundrobin")["errorCode"]
        == Errors.INCONSISTENT_GROUP_PROTOCOL.code
    )
    assert sync(c, mid, gen + 1, instance_id="i1")["errorCode"] == Errors.ILLEGAL_GENERATION.code
    assert sync(c, "m1", 1)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code  # a consumer-protocol member
    ok = sync(c, mid, gen, instance_id="i1", protocol_type=None, protocol_name=None, version=3)
    assert ok == {"throttleTimeMs": 0, "errorCode": 0, "assignment": ok["assignment"]}


def test_classic_group_sync_to_consumer_group_rebalance_in_progress():
    c = client()
    consumer_group_with_one_member(c)
    joined = classic_join_new(c)
    mid = joined["memberId"]
    c.join("m3", ["foo"])  # bumps the group epoch
    resp = sync(c, mid, joined["generationId"])
    assert resp["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code
    assert timer_deadline(c, "consumer-join", mid) == c.now + REBALANCE


# ====================================================================== Heartbeat
def test_classic_group_heartbeat_to_consumer_group_maintains_session():
    c = client()
    consumer_group_with_one_member(c)
    joined = classic_join_new(c)
    mid = joined["memberId"]
    sync(c, mid, joined["generationId"])
    c.sleep(SESSION // 2)
    assert classic_view(c).heartbeat(mid, joined["generationId"])["errorCode"] == 0
    assert timer_deadline(c, "consumer-session", mid) == c.now + SESSION
    c.sleep(SESSION // 2 + 1)
    assert mid in c.group().members
    c.sleep(SESSION)
    assert mid not in c.group().members  # testConsumerGroupMemberUsingClassicProtocolFencedWhenSessionTimeout
    assert c.events("MemberFenced")[-1]["reason"] == "the member session expired"


def test_classic_group_heartbeat_to_consumer_group_rebalance_in_progress():
    c = client()
    consumer_group_with_one_member(c)
    joined = classic_join_new(c)
    mid, gen = joined["memberId"], joined["generationId"]
    sync(c, mid, gen)
    assert classic_view(c).heartbeat(mid, gen)["errorCode"] == 0
    c.join("m3", ["foo"])
    assert classic_view(c).heartbeat(mid, gen)["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code
    assert timer_deadline(c, "consumer-join", mid) == c.now + REBALANCE


def test_classic_group_heartbeat_to_consumer_errors():
    # testClassicGroupHeartbeatToConsumerWithUnknownMember / WithFencedInstanceId /
    # WithIllegalGenerationId / WithMemberNotUsingClassicProtocol.
    c = client()
    consumer_group_with_one_member(c)
    joined = classic_join(c, "", instance_id="i1")
    mid, gen = joined["memberId"], joined["generationId"]
    view = classic_view(c)
    assert view.heartbeat("unknown", gen)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    assert view.heartbeat("unknown", gen, instance_id="i1")["errorCode"] == Errors.FENCED_INSTANCE_ID.code
    assert view.heartbeat(mid, gen + 1, instance_id="i1")["errorCode"] == Errors.ILLEGAL_GENERATION.code
    assert view.heartbeat("m1", 1)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    assert view.heartbeat(mid, gen, instance_id="i1")["errorCode"] == 0


def test_consumer_group_member_using_classic_protocol_fenced_when_join_timeout():
    c = client()
    consumer_group_with_one_member(c)
    joined = classic_join_new(c)
    mid, gen = joined["memberId"], joined["generationId"]
    sync(c, mid, gen)
    c.join("m3", ["foo"])
    assert classic_view(c).heartbeat(mid, gen)["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code
    c.sleep(REBALANCE - 1)
    assert classic_view(c).heartbeat(mid, gen)["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code  # the timer stays
    c.sleep(1)
    assert mid not in c.group().members
    assert c.events("MemberFenced")[-1]["reason"] == ("the classic member failed to join within the rebalance timeout")


def test_consumer_group_member_using_classic_protocol_fenced_when_sync_timeout():
    c = client()
    consumer_group_with_one_member(c)
    mid = classic_join_new(c)["memberId"]
    c.sleep(REBALANCE)
    assert mid not in c.group().members
    assert c.events("MemberFenced")[-1]["reason"] == "the member failed to sync within timeout"


# ====================================================================== LeaveGroup
def test_consumer_group_member_using_classic_protocol_batch_leave_group():
    c = client()
    consumer_group_with_one_member(c)
    a = classic_join_new(c)["memberId"]
    b = classic_join(c, "", instance_id="i2")["memberId"]
    epoch = c.group().group_epoch
    resp = classic_view(c).leave({"memberId": a}, {"memberId": "", "groupInstanceId": "i2"}, {"memberId": "zz"})
    assert [m["errorCode"] for m in resp["members"]] == [0, 0, Errors.UNKNOWN_MEMBER_ID.code]
    assert set(c.group().members) == {"m1"} and c.group().group_epoch == epoch + 1
    for mid in (a, b):
        for kind in ("consumer-session", "consumer-sync", "consumer-join"):
            assert timer_deadline(c, kind, mid) is None


# ====================================================================== online upgrade
def stable_classic_group(c, n: int = 1, user_data: bytes | None = None) -> list[dict]:
    """n classic members joined and synced with ConsumerProtocol assignments (generation 1)."""
    view = classic_view(c)
    kw = dict(protos=protos(("foo",)), session_timeout=SESSION, rebalance_timeout=REBALANCE)
    firsts = [view.join("", **kw)[1] for _ in range(n)]
    cids = [view.join(f["memberId"], **kw)[0] for f in firsts]
    c.sleep(max(c.d.config["group.initial.rebalance.delay.ms"], REBALANCE))
    joins = [c.d.response(cid) for cid in cids]
    assert all(j["errorCode"] == 0 for j in joins), joins
    leader = next(j for j in joins if j["leader"] == j["memberId"])
    ids = [j["memberId"] for j in joins]
    parts = {mid: [p for p in range(6) if p % n == i] for i, mid in enumerate(ids)}
    for j in joins:
        if j is not leader:
            view.sync(j["memberId"], j["generationId"])
    _, resp = view.sync(
        leader["memberId"],
        leader["generationId"],
        {mid: encode_assignment({"foo": parts[mid]}, user_data) for mid in ids},
    )
    assert resp["errorCode"] == 0 and c.group().state == "Stable"
    return [{"memberId": mid, "generationId": leader["generationId"], "partitions": parts[mid]} for mid in ids]


def test_consumer_group_heartbeat_with_stable_classic_group():
    c = client()
    [old] = stable_classic_group(c)
    mark = len(c.records())
    resp = c.join("m2", ["foo"], assignor="range")
    assert resp["errorCode"] == 0 and c.group().type == "consumer"
    gid, oid = GROUP, old["memberId"]
    assert [k for k, _ in c.records(mark)] == [
        record_key("GroupMetadata", gid),
        # The converted group.
        record_key("ConsumerGroupMemberMetadata", gid, oid),
        record_key("ConsumerGroupMetadata", gid),
        record_key("ConsumerGroupTargetAssignmentMember", gid, oid),
        record_key("ConsumerGroupTargetAssignmentMetadata", gid),
        record_key("ConsumerGroupCurrentMemberAssignment", gid, oid),
        # The joining member.
        record_key("ConsumerGroupMemberMetadata", gid, "m2"),
        record_key("ConsumerGroupMetadata", gid),
        record_key("ConsumerGroupTargetAssignmentMember", gid, min(oid, "m2")),
        record_key("ConsumerGroupTargetAssignmentMember", gid, max(oid, "m2")),
        record_key("ConsumerGroupTargetAssignmentMetadata", gid),
        record_key("ConsumerGroupCurrentMemberAssignment", gid, "m2"),
    ]
    assert c.records(mark)[0][1] is None
    # Kafka 4.1's fromClassicGroup computes the metadata hash of the converted group.
    assert c.records(mark)[2][1]["metadataHash"] == c.consumer_manager().compute_metadata_hash({"foo"}) != 0
    converted = c.records(mark)[5][1]
    assert (converted["memberEpoch"], converted["state"], converted["assignedPartitions"]) == (
        1,
        "STABLE",
        {"foo": [0, 1, 2, 3, 4, 5]},
    )
    member = c.member(oid)
    assert member.use_classic_protocol and member.classic_session_timeout_ms == SESSION
    assert timer_deadline(c, "consumer-session", oid) == c.now + SESSION
    assert timer_deadline(c, "consumer-session", "m2") == c.now + c.d.config["group.consumer.session.timeout.ms"]
    assert timer_deadline(c, "classic-session", oid) is None
    assert c.member("m2").state == MemberState.UNRELEASED_PARTITIONS
    # The classic member is told to rejoin, revokes, and the two end with disjoint partitions.
    view = classic_view(c)
    assert view.heartbeat(oid, 1)["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code
    rejoin = classic_join(c, oid, owned={"foo": [0, 1, 2, 3, 4, 5]})
    assert rejoin["errorCode"] == 0
    s = sync(c, oid, rejoin["generationId"])
    assert assigned(s) == target_of(c, oid) and len(assigned(s)["foo"]) == 3
    # Still revoking: the cooperative client rejoins once it revoked, and reaches the new epoch.
    assert view.heartbeat(oid, rejoin["generationId"])["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code
    rejoin = classic_join(c, oid, owned=assigned(s))
    assert rejoin["generationId"] == c.group().group_epoch and c.member(oid).state == MemberState.STABLE
    assert assigned(sync(c, oid, rejoin["generationId"])) == assigned(s)
    assert view.heartbeat(oid, rejoin["generationId"])["errorCode"] == 0
    c.heartbeat("m2", c.member("m2").member_epoch)
    assert assignment_of(c.member("m2")) == target_of(c, "m2")
    assert set(assigned(s)["foo"]) | set(target_of(c, "m2")["foo"]) == set(range(6))
    assert str(c.group().state) == "Stable"
    # Replaying the log gives the same group.
    assert c.rebuilt().component("groups").groups[GROUP].members == c.group().members
    # The metrics' gauges followed the conversion: one consumer group, Stable, no classic group.
    assert live_gauges(c.d) == scanned_gauges(c.d)
    assert live_gauges(c.d)[series("group_count", protocol="consumer")] == 1


def test_consumer_group_heartbeat_with_preparing_rebalance_classic_group():
    c = client()
    old, _ = stable_classic_group(c, n=2)
    view = classic_view(c)
    cid, parked = view.join(
        old["memberId"], protos=protos(("foo",)), session_timeout=SESSION, rebalance_timeout=REBALANCE
    )
    assert parked is None and c.group().state == "PreparingRebalance"
    assert c.join("m2", ["foo"])["errorCode"] == 0
    assert c.d.response(cid)["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code
    assert c.d.response(cid)["memberId"] == old["memberId"]


def test_consumer_group_heartbeat_with_non_empty_classic_group_refused():
    # testConsumerGroupHeartbeatWithNonEmptyClassicGroup: a group whose embedded protocol is not
    # the consumer one, or malformed, or too big, stays classic.
    c = client()
    view = classic_view(c)
    from tests.group.group_helpers import join_and_rebalance

    join_and_rebalance(view, protos=protos(("foo",)))  # its assignment bytes are not a ConsumerProtocolAssignment
    resp = c.join("m1", ["foo"])
    assert (resp["errorCode"], resp["errorMessage"]) == (
        Errors.GROUP_ID_NOT_FOUND.code,
        f"Cannot upgrade classic group {GROUP} to consumer group because the embedded consumer protocol is malformed.",
    )
    assert c.group().type == "classic" and c.group().state == "Stable"
    c2 = client(group_consumer_max_size=1)
    stable_classic_group(c2, n=2)
    resp = c2.join("m1", ["foo"])
    assert resp["errorMessage"] == (
        f"Cannot upgrade classic group {GROUP} to consumer group because the group "
        "size exceeds the consumer group maximum size."
    )


@pytest.mark.parametrize("user_data,expect_upgrade", [(None, True), (b"", True), (b"\x00", False)])
def test_consumer_group_heartbeat_with_custom_assignor_classic_group(user_data, expect_upgrade):
    """GroupMetadataManagerTest.testConsumerGroupHeartbeatWithCustomAssignorClassicGroup: a classic
    assignment carrying a custom assignor's userData cannot be upgraded (it would be lost)."""
    c = client()
    stable_classic_group(c, user_data=user_data)
    mark = len(c.records())
    resp = c.join("m2", ["foo"], assignor="range")
    if expect_upgrade:
        assert resp["errorCode"] == 0 and c.group().type == "consumer"
    else:
        assert (resp["errorCode"], resp["errorMessage"]) == (
            Errors.GROUP_ID_NOT_FOUND.code,
            f"Cannot upgrade classic group {GROUP} to consumer group because an unsupported "
            "custom assignor is in use. Please refer to the documentation or switch to a default "
            "assignor before re-attempting the upgrade.",
        )
        assert c.group().type == "classic" and c.group().state == "Stable" and c.records(mark) == []


def test_upgrade_disabled_by_policy():
    c = client(group_consumer_migration_policy="disabled")
    stable_classic_group(c)
    assert c.join("m1", ["foo"])["errorMessage"] == (
        f"Cannot upgrade classic group {GROUP} to consumer group because online upgrade is disabled."
    )
    assert c.group().type == "classic"


# ====================================================================== online downgrade
def mixed_group(c) -> str:
    """A consumer-protocol member m1 and a classic member, both Stable with disjoint partitions."""
    c.join("m1", ["foo"], assignor="range")
    c.heartbeat("m1", 1, owned={"foo": [0, 1, 2, 3, 4, 5]})
    joined = classic_join_new(c)
    mid = joined["memberId"]
    release(c)
    rejoined = classic_join(c, mid)
    assert assigned(sync(c, mid, rejoined["generationId"])) == target_of(c, mid)
    assert str(c.group().state) == "Stable"
    return mid


def test_last_consumer_protocol_member_leaving_consumer_group():
    c = client()
    mid = mixed_group(c)
    epoch = c.group().group_epoch
    target_of_before = target_of(c, mid)
    mark = len(c.records())
    resp = c.heartbeat("m1", -1)
    assert (resp["errorCode"], resp["memberEpoch"]) == (0, -1)
    group = c.group()
    assert group.type == "classic" and group.state == "PreparingRebalance"
    gid = GROUP
    keys = [k for k, _ in c.records(mark)]
    both = lambda kind: {record_key(kind, gid, "m1"), record_key(kind, gid, mid)}  # noqa: E731
    assert set(keys[0:2]) == both("ConsumerGroupCurrentMemberAssignment")
    assert set(keys[2:4]) == both("ConsumerGroupTargetAssignmentMember")
    assert keys[4] == record_key("ConsumerGroupTargetAssignmentMetadata", gid)
    assert set(keys[5:7]) == both("ConsumerGroupMemberMetadata")
    assert keys[7:9] == [record_key("ConsumerGroupPartitionMetadata", gid), record_key("ConsumerGroupMetadata", gid)]
    assert all(v is None for _, v in c.records(mark)[:9])
    assert keys[9:] == [record_key("GroupMetadata", gid)]
    value = c.records(mark)[9][1]
    assert (value["protocolType"], value["protocol"], value["generation"], value["leader"]) == (
        "consumer",
        "range",
        epoch,
        mid,
    )
    [m] = value["members"]
    assert (m["memberId"], m["sessionTimeout"], m["rebalanceTimeout"]) == (mid, SESSION, REBALANCE)
    assert m["assignment"] == encode_assignment(target_of_before)
    assert timer_deadline(c, "classic-session", mid) == c.now + SESSION
    assert c.d.partition.timers.get(record_key("classic-join", gid)) is not None
    # The classic member rejoins the classic group's rebalance and completes it alone.
    view = classic_view(c)
    assert view.heartbeat(mid, epoch)["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code
    cid, joined = view.join(mid, protos=protos(), session_timeout=SESSION, rebalance_timeout=REBALANCE)
    joined = joined or c.d.response(cid)
    assert joined["errorCode"] == 0 and joined["generationId"] == epoch + 1 and joined["leader"] == mid
    _, s = view.sync(mid, joined["generationId"], {mid: encode_assignment({"foo": list(range(6))})})
    assert s["errorCode"] == 0 and c.group().state == "Stable"
    # The metrics' gauges followed the downgrade: one classic group, Stable, no consumer group.
    assert live_gauges(c.d) == scanned_gauges(c.d)
    assert live_gauges(c.d)[series("group_count", protocol="classic")] == 1
    # The log rebuilds the classic group.
    rebuilt = c.rebuilt().component("groups").groups[GROUP]
    assert rebuilt.type == "classic" and list(rebuilt.members) == [mid]


def test_last_consumer_protocol_member_session_timeout_in_consumer_group():
    c = client()
    mid = mixed_group(c)
    # Only the classic member heartbeats; the consumer-protocol member's session expires.
    for _ in range(20):
        c.sleep(SESSION // 2)
        classic_view(c).heartbeat(
            mid, c.member(mid).member_epoch if c.group().type == "consumer" else c.group().generation_id
        )
        if c.group().type == "classic":
            break
    assert c.group().type == "classic" and list(c.group().members) == [mid]


def test_downgrade_disabled_by_policy():
    c = client(group_consumer_migration_policy="upgrade")
    mid = mixed_group(c)
    c.heartbeat("m1", -1)
    assert c.group().type == "consumer" and set(c.group().members) == {mid}
    [skipped] = c.d.events_named("DowngradeSkipped")
    assert skipped["reason"] == "online downgrade is disabled" and skipped["groupId"] == GROUP


def test_no_conversion_when_size_exceeds_classic_max_group_size():
    c = client(group_max_size=1)
    mixed_group(c)
    classic_join_new(c)
    c.heartbeat("m1", -1)
    assert c.group().type == "consumer" and len(c.group().members) == 2
    [skipped] = c.d.events_named("DowngradeSkipped")
    assert skipped["reason"] == "its group size is greater than classic group max size"


def test_classic_members_after_a_reload():
    # onLoaded: every member's session restarts with group.consumer.session.timeout.ms; the classic
    # member's next heartbeat restores its own; its metadata came back from the records.
    c = client()
    mid = mixed_group(c)
    part = c.rebuilt()
    timer = part.timers.get(record_key("consumer-session", GROUP, mid))
    assert timer is not None and timer.deadline_ms == c.now + c.d.config["group.consumer.session.timeout.ms"]
    rebuilt = part.component("groups").groups[GROUP].members[mid]
    assert rebuilt.classic_member_metadata == c.member(mid).classic_member_metadata
    assert base64.b64decode(rebuilt.supported_classic_protocols[0][1])


def test_last_static_consumer_protocol_member_replaced_by_classic_protocol_member():
    c = client()
    c.join("m1", ["foo"], instance_id="i1", assignor="range")
    c.heartbeat("m1", 1, owned={"foo": [0, 1, 2, 3, 4, 5]})
    classic = classic_join(c, "", instance_id="i2")
    mid = classic["memberId"]
    release(c)
    rejoined = classic_join(c, mid, instance_id="i2")
    sync(c, mid, rejoined["generationId"], instance_id="i2")
    epoch = c.group().group_epoch
    old_target = target_of(c, "m1")
    mark = len(c.records())
    # A classic member with m1's instance id replaces it: the group becomes classic, no rebalance.
    resp = classic_join(c, "", instance_id="i1")
    new_id = resp["memberId"]
    assert (resp["errorCode"], resp["generationId"], resp["protocolType"]) == (0, epoch, "consumer")
    group = c.group()
    assert group.type == "classic" and group.state == "Stable" and group.generation_id == epoch
    assert set(group.members) == {mid, new_id}
    assert group.members[new_id].assignment == encode_assignment(old_target)
    keys = [k for k, _ in c.records(mark)]
    assert keys[:3] == [
        record_key("ConsumerGroupCurrentMemberAssignment", GROUP, "m1"),
        record_key("ConsumerGroupTargetAssignmentMember", GROUP, "m1"),
        record_key("ConsumerGroupMemberMetadata", GROUP, "m1"),
    ]
    assert keys[-2:] == [record_key("ConsumerGroupMetadata", GROUP), record_key("GroupMetadata", GROUP)]
    # The replacing member syncs with the classic group and gets the replaced member's partitions.
    _, s = classic_view(c).sync(new_id, resp["generationId"], instance_id="i1")
    assert s["errorCode"] == 0 and decode_assignment(s["assignment"]).as_dict() == old_target
    assert timer_deadline(c, "classic-session", mid) is not None
