"""The classic protocol's paths into consumer groups return their effects in a `CoordinatorResult`
that only the runtime applies: a classic member's Heartbeat, SyncGroup and JoinGroup, a LeaveGroup
that fences consumer-group members, and the two conversions Kafka makes in memory
(convertToClassicGroup, maybeDeleteEmptyConsumerGroup), whose results are in-memory only
(`replay_records=False`). In every case the partition rebuilt from the log equals the live one."""

from __future__ import annotations

from types import SimpleNamespace

from coordinator.errors import Errors
from coordinator.group.classic.consumer_protocol import encode_assignment
from coordinator.messages import ReplyTo, Request
from coordinator.records import record_key
from coordinator.result import Cancel, CoordinatorResult, Schedule
from tests.consumer.consumer_group_helpers import GROUP
from tests.consumer.test_consumer_group_apis import comparable
from tests.consumer.test_consumer_group_migration import (
    REBALANCE,
    SESSION,
    classic_join,
    classic_view,
    client,
    mixed_group,
    protos,
    release,
    stable_classic_group,
    sync,
)
from tests.core_driver import call_handler
from tests.group.test_group_replay import normalized


def handle(c, api: str, version: int, body: dict) -> CoordinatorResult:
    """Call the group coordinator's handler for `api` directly (not through the runtime): what it
    returns, with nothing of it applied."""
    out: list[CoordinatorResult] = []
    request = Request(ReplyTo(api, version, 99, "client"), body, c.now, GROUP, (0, 1))
    c.d.call(lambda part: out.append(call_handler(part, api, request)))
    (result,) = out
    return result


def apply(c, result: CoordinatorResult) -> None:
    """What the runtime does with a handler's result."""
    c.d.call(lambda part: part.apply(result, ReplyTo("-", 0, 99, "client")))


def of_type(groups_component, group_type: str) -> SimpleNamespace:
    groups = {gid: g for gid, g in groups_component.groups.items() if g.type == group_type}
    return SimpleNamespace(groups=groups, offsets=groups_component.offsets)


def join_body(member_id: str = "", instance_id: str | None = None) -> dict:
    """A JoinGroup of a Java consumer (the embedded consumer protocol)."""
    return {
        "groupId": GROUP,
        "sessionTimeoutMs": SESSION,
        "rebalanceTimeoutMs": REBALANCE,
        "memberId": member_id,
        "groupInstanceId": instance_id,
        "protocolType": "consumer",
        "protocols": protos(),
    }


def assert_rebuilt_equals_live(c) -> None:
    """Consumer groups whole; classic groups as far as the log keeps them (Kafka loads a classic
    group Stable or Empty at its last written generation)."""
    rebuilt, live = c.rebuilt().component("groups"), c.groups()
    assert {g: x.type for g, x in rebuilt.groups.items()} == {g: x.type for g, x in live.groups.items()}
    assert comparable(of_type(rebuilt, "consumer")) == comparable(of_type(live, "consumer"))
    assert normalized(of_type(rebuilt, "classic")) == normalized(of_type(live, "classic"))


def test_classic_member_heartbeat_returns_its_timers_in_the_result():
    c = client()
    mid = mixed_group(c)
    c.heartbeat("m1", c.member("m1").member_epoch, topics=["foo", "bar"])  # a new group epoch
    timers = c.d.partition.timers.to_json()
    body = {"groupId": GROUP, "memberId": mid, "generationId": c.member(mid).member_epoch}
    result = handle(c, "Heartbeat", 4, body)
    assert result.response is not None and result.response["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code
    assert [(type(op), op.key) for op in result.timers] == [
        (Schedule, record_key("consumer-session", GROUP, mid)),
        (Schedule, record_key("consumer-join", GROUP, mid)),
    ]
    assert not result.records and c.d.partition.timers.to_json() == timers  # nothing applied


def test_classic_member_sync_returns_its_timers_in_the_result():
    c = client()
    mid = mixed_group(c)
    generation = c.member(mid).member_epoch
    body = {
        "groupId": GROUP,
        "memberId": mid,
        "generationId": generation,
        "protocolType": "consumer",
        "protocolName": "range",
        "assignments": [],
    }
    result = handle(c, "SyncGroup", 5, body)
    assert result.response is not None and result.response["errorCode"] == 0
    assert [(type(op), op.key) for op in result.timers] == [
        (Cancel, record_key("consumer-sync", GROUP, mid)),
        (Schedule, record_key("consumer-session", GROUP, mid)),
    ]


def test_classic_member_join_returns_its_records_to_be_replayed():
    c = client()
    c.join("m1", ["foo"], assignor="range")
    first = classic_join(c, "")
    mid = first["memberId"]
    records = len(c.records())
    body = join_body(mid)
    result = handle(c, "JoinGroup", 9, body)
    assert result.replay_records is True and result.response is not None
    assert result.response["memberId"] == mid and result.response["generationId"] == 3
    assert record_key("ConsumerGroupMemberMetadata", GROUP, mid) in [r.key for r in result.records]
    assert "MemberJoined" in [e.event for e in result.events]
    # The handler applied nothing: the member is not in the group yet.
    assert mid not in c.group().members and len(c.records()) == records
    apply(c, result)
    assert c.member(mid).use_classic_protocol
    assert_rebuilt_equals_live(c)


def test_leave_group_downgrading_a_consumer_group_is_an_in_memory_result():
    c = client()
    mid = mixed_group(c)
    records = len(c.records())
    body = {"groupId": GROUP, "members": [{"memberId": "m1", "groupInstanceId": None, "reason": "admin"}]}
    result = handle(c, "LeaveGroup", 5, body)
    assert result.response is not None and result.response["errorCode"] == 0
    assert [m["errorCode"] for m in result.response["members"]] == [0]
    # Kafka's convertToClassicGroup: the groups are swapped in memory, and the tombstones and the
    # classic group's record are in the result, not replayed.
    assert result.replay_records is False
    assert c.group().type == "classic" and list(c.group().members) == [mid]
    keys = [r.key for r in result.records]
    assert keys[-1] == record_key("GroupMetadata", GROUP) and all(r.value is None for r in result.records[:-1])
    assert record_key("ConsumerGroupMetadata", GROUP) in keys
    assert len(c.records()) == records  # not yet in the log
    events = [e.event for e in result.events]
    assert events.index("MemberLeft") < events.index("GroupDeleted") < events.index("GroupCreated")
    apply(c, result)
    assert c.group().type == "classic" and c.group().state == "PreparingRebalance"
    assert_rebuilt_equals_live(c)


def test_session_timeout_downgrade_through_the_runtime_rebuilds_the_same_classic_group():
    c = client()
    mid = mixed_group(c)
    for _ in range(40):  # the classic member keeps its session; m1 stops heartbeating
        if c.group().type == "classic":
            break
        body = {"groupId": GROUP, "memberId": mid, "generationId": c.member(mid).member_epoch}
        c.d.send("Heartbeat", 4, body, key=GROUP, at=c.now + SESSION // 3)
    assert c.group().type == "classic" and list(c.group().members) == [mid]
    assert_rebuilt_equals_live(c)


def test_join_group_converting_an_empty_consumer_group_writes_its_tombstones_unreplayed():
    c = client()
    c.join("m1", ["foo"], assignor="range")
    c.heartbeat("m1", -1)  # the group is empty now
    assert c.group().type == "consumer" and not c.group().members
    body = join_body()
    result = handle(c, "JoinGroup", 3, body)  # v3: no MEMBER_ID_REQUIRED round
    assert result.replay_records is False
    keys = [r.key for r in result.records]
    # maybeDeleteEmptyConsumerGroup's tombstones first, then the classic group's record.
    assert record_key("ConsumerGroupMetadata", GROUP) in keys
    assert keys.index(record_key("ConsumerGroupMetadata", GROUP)) < keys.index(record_key("GroupMetadata", GROUP))
    assert c.group().type == "classic"  # swapped in memory, as Kafka's removeGroup
    apply(c, result)
    # The new classic group's first rebalance completes; the log then rebuilds it.
    c.sleep(REBALANCE)
    joined = c.d.response(99)
    assert joined is not None and joined["errorCode"] == 0 and joined["generationId"] == 1
    assert (
        sync(c, joined["memberId"], 1, assignments={joined["memberId"]: encode_assignment({"foo": [0]})})["errorCode"]
        == 0
    )
    assert c.group().state == "Stable"
    assert_rebuilt_equals_live(c)


def test_join_group_converting_an_empty_consumer_group_commits_the_new_group():
    """A converted group whose join writes nothing else still gets its empty GroupMetadata record
    (the tombstones do not count as the join's records)."""
    c = client()
    c.join("m1", ["foo"], assignor="range")
    c.heartbeat("m1", -1)
    body = join_body()
    result = handle(c, "JoinGroup", 9, body)  # v4+: MEMBER_ID_REQUIRED, the member is not added
    (reply,) = result.replies
    assert reply.body["errorCode"] == Errors.MEMBER_ID_REQUIRED.code
    assert [r.key for r in result.records][-1] == record_key("GroupMetadata", GROUP)
    assert result.records[-1].value is not None and result.records[-1].value["members"] == []
    apply(c, result)
    rebuilt = c.rebuilt().component("groups").groups[GROUP]
    assert rebuilt.type == "classic" and not rebuilt.members


def test_static_member_replacement_downgrade_is_an_in_memory_result_the_log_rebuilds():
    c = client()
    c.join("m1", ["foo"], instance_id="i1", assignor="range")
    c.heartbeat("m1", 1, owned={"foo": [0, 1, 2, 3, 4, 5]})
    mid = classic_join(c, "", instance_id="i2")["memberId"]
    release(c)
    rejoined = classic_join(c, mid, instance_id="i2")
    sync(c, mid, rejoined["generationId"], instance_id="i2")
    records = len(c.records())
    body = join_body(instance_id="i1")
    result = handle(c, "JoinGroup", 9, body)
    assert result.replay_records is False and result.response is not None and result.response["errorCode"] == 0
    new_id = result.response["memberId"]
    # Swapped in memory (Kafka's convertToClassicGroup), nothing appended by the handler.
    assert c.group().type == "classic" and set(c.group().members) == {mid, new_id}
    assert len(c.records()) == records
    keys = [r.key for r in result.records]
    # The join's records (m1 replaced by the new member), the tombstones of the group they leave
    # (the new member's included), then the classic group.
    assert keys[:3] == [
        record_key("ConsumerGroupCurrentMemberAssignment", GROUP, "m1"),
        record_key("ConsumerGroupTargetAssignmentMember", GROUP, "m1"),
        record_key("ConsumerGroupMemberMetadata", GROUP, "m1"),
    ]
    tombstones = [r.key for r in result.records if r.value is None]
    assert record_key("ConsumerGroupMemberMetadata", GROUP, new_id) in tombstones
    assert keys[-2:] == [record_key("ConsumerGroupMetadata", GROUP), record_key("GroupMetadata", GROUP)]
    assert "StaticMemberReplaced" in [e.event for e in result.events]
    apply(c, result)
    assert c.group().state == "Stable"
    assert_rebuilt_equals_live(c)


def test_an_online_upgrade_answers_the_parked_requests_in_its_result():
    """ConsumerGroupHeartbeat upgrading a classic group with a parked JoinGroup: the answer
    (REBALANCE_IN_PROGRESS) is in the heartbeat's result: nothing is sent until the runtime
    applies it."""
    c = client()
    old, _ = stable_classic_group(c, n=2)
    cid, parked = classic_view(c).join(
        old["memberId"], protos=protos(("foo",)), session_timeout=SESSION, rebalance_timeout=REBALANCE
    )
    assert parked is None and c.group().state == "PreparingRebalance"
    body = {
        "groupId": GROUP,
        "memberId": "m2",
        "memberEpoch": 0,
        "instanceId": None,
        "rackId": None,
        "rebalanceTimeoutMs": REBALANCE,
        "subscribedTopicNames": ["foo"],
        "serverAssignor": None,
        "topicPartitions": [],
    }
    result = handle(c, "ConsumerGroupHeartbeat", 0, body)
    [answer] = result.replies
    assert answer.reply.correlation_id == cid
    assert (answer.body["errorCode"], answer.body["memberId"]) == (Errors.REBALANCE_IN_PROGRESS.code, old["memberId"])
    assert c.d.response(cid) is None  # not answered before the result is applied
    apply(c, result)
    assert c.d.response(cid)["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code
    assert c.group().type == "consumer"
    assert_rebuilt_equals_live(c)


def test_an_online_upgrade_that_fails_leaves_the_parked_requests_parked():
    """A classic group whose embedded protocol cannot be converted: GROUP_ID_NOT_FOUND, and the
    group, its parked JoinGroup included, is as it was (the runtime checks that an ApiError
    changed nothing)."""
    c = client()
    old, _ = stable_classic_group(c, n=2, user_data=b"custom")
    cid, parked = classic_view(c).join(
        old["memberId"], protos=protos(("foo",)), session_timeout=SESSION, rebalance_timeout=REBALANCE
    )
    assert parked is None
    resp = c.join("m2", ["foo"])
    assert resp["errorCode"] == Errors.GROUP_ID_NOT_FOUND.code and "custom assignor" in resp["errorMessage"]
    assert c.group().type == "classic" and c.group().members[old["memberId"]].awaiting_join is not None
    assert c.d.response(cid) is None
