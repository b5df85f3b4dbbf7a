"""The classic handlers return Kafka's `CoordinatorResult(records, response, replayRecords=false)`:
the group is mutated in memory, everything else (records, timers, events, parked answers) is in the
result and reaches the partition only when the runtime applies it."""

from __future__ import annotations

from coordinator.errors import Errors
from coordinator.group.classic.group import session_timer_key
from coordinator.messages import ReplyTo, Request
from coordinator.result import CoordinatorResult, Schedule
from tests.group.group_helpers import GroupTestClient, join_and_complete, protocols


def join_request(c: GroupTestClient, group_id: str, member_id: str = "", version: int = 4) -> Request:
    body = {
        "groupId": group_id,
        "sessionTimeoutMs": 10000,
        "rebalanceTimeoutMs": 5000,
        "memberId": member_id,
        "protocolType": "consumer",
        "protocols": protocols("range"),
    }
    return Request(ReplyTo("JoinGroup", version, 7, "client"), body, c.now, group_id, (0, 1))


def test_join_group_returns_an_in_memory_result_and_applies_nothing_itself():
    c = GroupTestClient(group_min_session_timeout_ms=1)
    out: list[CoordinatorResult] = []
    records, events, timers = len(c.records()), len(c.events()), dict(c.timers())
    c.mutate(lambda comp: out.append(comp.classic.join_group(join_request(c, "fresh"))))
    (result,) = out
    # The new group is in memory at once (Kafka's in-memory classic group) ...
    assert "fresh" in c.groups().groups
    # ... and its GroupMetadata record, the member's session timer, the events and the
    # MEMBER_ID_REQUIRED answer are in the result, not yet in the partition.
    assert result.replay_records is False and result.response is None
    assert [r.key for r in result.records] and all("GroupMetadata" in r.key for r in result.records)
    (reply,) = result.replies
    assert reply.body["errorCode"] == Errors.MEMBER_ID_REQUIRED.code
    member_id = reply.body["memberId"]
    assert any(isinstance(op, Schedule) and op.key == session_timer_key("fresh", member_id) for op in result.timers)
    assert [e.event for e in result.events] == ["GroupCreated"]
    assert (len(c.records()), len(c.events()), c.timers()) == (records, events, timers)


def test_heartbeat_returns_its_response_and_session_timer_in_the_result():
    c = GroupTestClient(group_min_session_timeout_ms=1)
    joined = join_and_complete(c)
    member_id, generation = joined["memberId"], joined["generationId"]
    timers = dict(c.timers())
    body = {"groupId": c.group_id, "memberId": member_id, "generationId": generation}
    out: list[CoordinatorResult] = []
    request = Request(ReplyTo("Heartbeat", 3, 9, "client"), body, c.now + 1000, c.group_id, (0, 2))
    c.mutate(lambda comp: out.append(comp.classic.heartbeat(request)))
    (result,) = out
    assert result.response is not None and result.response["errorCode"] == Errors.NONE.code
    assert [op.key for op in result.timers] == [session_timer_key(c.group_id, member_id)]
    assert not result.records and c.timers() == timers  # nothing applied by the handler
