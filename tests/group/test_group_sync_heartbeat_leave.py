"""SyncGroup, Heartbeat and LeaveGroup: Kafka's GroupMetadataManagerClassicGroupTest scenarios.

Timing note: Kafka's MockCoordinatorTimer runs an expired timer with the clock at the end of the
test's sleep; this runtime runs it at its deadline, as Kafka's real timer aims to. Where a Kafka
test sleeps past a deadline and then depends on the late time, the scenario here sleeps to the
deadline instead (see each test).
"""

from __future__ import annotations

import pytest

from coordinator.errors import Errors
from coordinator.group.classic.group import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroupMember,
)
from tests.group.group_helpers import (
    GroupTestClient,
    b64,
    join_and_complete,
    join_and_rebalance,
    protocols,
    static_members_join_and_rebalance,
)

DYN = 3


def client(**overrides) -> GroupTestClient:
    overrides.setdefault("group_min_session_timeout_ms", 1)
    return GroupTestClient(**overrides)


def kill(c: GroupTestClient) -> None:
    c.mutate(lambda comp: comp.groups[c.group_id].transition_to(DEAD, c.now))


def join_with_n_members(c: GroupTestClient, n: int, rebalance_timeout: int, session_timeout: int) -> list[dict]:
    """joinWithNMembers: n dynamic members join an empty group; the join completes."""
    cids = [c.join_dynamic(rebalance_timeout=rebalance_timeout, session_timeout=session_timeout)[0] for _ in range(n)]
    c.sleep(max(rebalance_timeout, 3000))
    responses = [c.response(cid) for cid in cids]
    assert all(r["errorCode"] == Errors.NONE.code for r in responses)
    assert c.group().state == COMPLETING_REBALANCE
    return responses


def verify_heartbeat(c: GroupTestClient, resp: dict, error: int) -> None:
    assert c.heartbeat(resp["memberId"], resp["generationId"])["errorCode"] == error


# ====================================================================== SyncGroup
@pytest.mark.parametrize(
    "protocol_type,protocol_name,error,expected_type,expected_name",
    [
        (
            "protocolType",
            None,
            Errors.INCONSISTENT_GROUP_PROTOCOL.code,
            None,
            None,
        ),  # testSyncGroupReturnsAnErrorWhenProtocolTypeIsInconsistent
        (
            None,
            "protocolName",
            Errors.INCONSISTENT_GROUP_PROTOCOL.code,
            None,
            None,
        ),  # ...WhenProtocolNameIsInconsistent
        (
            None,
            None,
            Errors.NONE.code,
            "consumer",
            "range",
        ),  # testSyncGroupSucceedWhenProtocolTypeAndNameAreNotProvided
        ("consumer", "range", Errors.NONE.code, "consumer", "range"),  # ...WhenProtocolTypeAndNameAreConsistent
    ],
)
def test_sync_group_protocol_type_and_name(protocol_type, protocol_name, error, expected_type, expected_name):
    c = client()
    protos = protocols("range", "roundrobin")
    leader_cid, _ = c.join("", instance_id="leader-instance-id", protos=protos, rebalance_timeout=10000)
    follower_cid, _ = c.join("", instance_id="follower-instance-id", protos=protos, rebalance_timeout=10000)
    c.sleep(10000)
    leader, follower = c.response(leader_cid), c.response(follower_cid)
    assert leader["errorCode"] == Errors.NONE.code and follower["errorCode"] == Errors.NONE.code
    gen = leader["generationId"]
    _, sync = c.sync(
        leader["memberId"], gen, {leader["memberId"]: ""}, protocol_type=protocol_type, protocol_name=protocol_name
    )
    assert (sync["errorCode"], sync["protocolType"], sync["protocolName"]) == (error, expected_type, expected_name)
    _, sync = c.sync(follower["memberId"], gen, protocol_type=protocol_type, protocol_name=protocol_name)
    assert (sync["errorCode"], sync["protocolType"], sync["protocolName"]) == (error, expected_type, expected_name)


def test_sync_group_from_unknown_group():
    c = client()
    _, sync = c.sync("member-id", 1)
    assert sync["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code


def test_sync_group_with_empty_group_id():
    c = GroupTestClient(group_id="")
    _, sync = c.sync("member-id", 1, group_id="")
    assert sync == {
        "throttleTimeMs": 0,
        "errorCode": Errors.INVALID_GROUP_ID.code,
        "protocolType": None,
        "protocolName": None,
        "assignment": "",
    }


def test_sync_group_from_unknown_member():
    c = client()
    leader = join_and_complete(c, instance_id="leader-instance-id")
    member_id = leader["memberId"]
    _, sync = c.sync(member_id, leader["generationId"], {member_id: b64(7)})
    assert sync["errorCode"] == Errors.NONE.code and sync["assignment"] == b64(7)
    _, sync = c.sync("unknown-member-id", leader["generationId"], {member_id: b64(7)})
    assert sync["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code and sync["assignment"] == ""


def test_sync_group_from_illegal_generation():
    c = client()
    leader = join_and_complete(c, instance_id="leader-instance-id")
    _, sync = c.sync(leader["memberId"], leader["generationId"] + 1)
    assert sync["errorCode"] == Errors.ILLEGAL_GENERATION.code


def test_sync_group_on_dead_group():
    c = client()
    leader = join_and_complete(c)
    kill(c)
    _, sync = c.sync(leader["memberId"], leader["generationId"])
    assert sync["errorCode"] == Errors.COORDINATOR_NOT_AVAILABLE.code


def test_sync_group_while_preparing_rebalance():
    c = client()
    leader = join_and_complete(c)
    c.join("", version=DYN)  # a new member: rebalance
    _, sync = c.sync(leader["memberId"], leader["generationId"])
    assert sync["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code


def test_sync_group_as_leader_writes_the_assignment_and_stabilizes():
    # Kafka's testSyncGroupAsLeaderAppendFailureTransformsError cannot happen here (the state-log
    # append cannot fail); the success path writes the GroupMetadata record before answering.
    c = client()
    leader = join_and_complete(c, instance_id="leader-instance-id", rebalance_timeout=5000, session_timeout=10000)
    member_id = leader["memberId"]
    mark = len(c.records())
    _, sync = c.sync(member_id, 1, {member_id: b64(1, 2), "not-a-member": b64(9)})
    assert sync == {
        "throttleTimeMs": 0,
        "errorCode": Errors.NONE.code,
        "protocolType": "consumer",
        "protocolName": "range",
        "assignment": b64(1, 2),
    }
    assert c.records(mark) == [
        (
            '["GroupMetadata","group-id"]',
            {
                "type": "GroupMetadata",
                "protocolType": "consumer",
                "generation": 1,
                "protocol": "range",
                "leader": member_id,
                "currentStateTimestamp": c.now,
                "members": [
                    {
                        "memberId": member_id,
                        "groupInstanceId": "leader-instance-id",
                        "clientId": "client",
                        "clientHost": "",
                        "rebalanceTimeout": 5000,
                        "sessionTimeout": 10000,
                        "subscription": protocols("range")[0]["metadata"],
                        "assignment": b64(1, 2),
                    }
                ],
            },
        )
    ]
    assert c.group().state == STABLE and c.events("RebalanceCompleted")


def test_sync_group_response_versions():
    c = client()
    leader = join_and_complete(c)
    _, v0 = c.sync(leader["memberId"], 1, {leader["memberId"]: b64(1)}, version=0)
    assert v0 == {"errorCode": Errors.NONE.code, "assignment": b64(1)}
    _, v4 = c.sync(leader["memberId"], 1, version=4)
    assert v4 == {"throttleTimeMs": 0, "errorCode": Errors.NONE.code, "assignment": b64(1)}


def two_member_group(c: GroupTestClient) -> tuple[dict, dict, str]:
    """A group of two at generation 2, CompletingRebalance: the leader rebalanced alone first."""
    leader0 = join_and_rebalance(c)
    kw = dict(rebalance_timeout=10000, session_timeout=5000)
    follower_cid, resp = c.join("", version=DYN, **kw)
    assert resp is None
    _, leader = c.join(leader0["memberId"], version=DYN, **kw)
    follower = c.response(follower_cid)
    assert leader["errorCode"] == Errors.NONE.code and follower["errorCode"] == Errors.NONE.code
    assert leader["generationId"] == follower["generationId"] == 2
    assert leader["leader"] == follower["leader"] == leader0["memberId"]
    assert c.group().state == COMPLETING_REBALANCE
    return leader, follower, leader0["memberId"]


def test_join_group_from_unchanged_follower_does_not_rebalance():
    c = client()
    leader, follower, _ = two_member_group(c)
    _, again = c.join(follower["memberId"], version=DYN)
    assert again["errorCode"] == Errors.NONE.code and again["generationId"] == 2


def test_join_group_from_unchanged_leader_should_rebalance():
    c = client()
    leader = join_and_rebalance(c)
    _, again = c.join(leader["memberId"])
    assert again["errorCode"] == Errors.NONE.code and again["generationId"] == leader["generationId"] + 1


def test_leader_failure_in_sync_group():
    c = client()
    leader, follower, _ = two_member_group(c)
    follower_sync_cid, resp = c.sync(follower["memberId"], 2)
    assert resp is None
    # The leader never syncs: its session (5000) ends and the follower's parked sync is told to
    # rejoin. (Kafka's test sleeps 10000; its mock timer runs this expiry at the sleep's end.)
    c.sleep(5000)
    assert c.response(follower_sync_cid)["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code
    g = c.group()
    assert list(g.members) == [follower["memberId"]] and g.state == PREPARING_REBALANCE


def test_sync_group_follower_after_leader():
    c = client()
    leader, follower, _ = two_member_group(c)
    assignment = {leader["memberId"]: b64(0), follower["memberId"]: b64(1)}
    _, sync = c.sync(leader["memberId"], 2, assignment)
    assert sync["errorCode"] == Errors.NONE.code and sync["assignment"] == b64(0)
    _, sync = c.sync(follower["memberId"], 2, assignment)
    assert sync["errorCode"] == Errors.NONE.code and sync["assignment"] == b64(1)
    assert c.group().state == STABLE


def test_sync_group_leader_after_follower():
    c = client()
    leader, follower, _ = two_member_group(c)
    follower_cid, resp = c.sync(follower["memberId"], 2)
    assert resp is None
    mark = len(c.records())
    _, sync = c.sync(leader["memberId"], 2, {leader["memberId"]: b64(0), follower["memberId"]: b64(1)})
    assert sync["errorCode"] == Errors.NONE.code and sync["assignment"] == b64(0)
    record = c.records(mark)
    assert len(record) == 1 and {m["memberId"]: m["assignment"] for m in record[0][1]["members"]} == {
        leader["memberId"]: b64(0),
        follower["memberId"]: b64(1),
    }
    assert c.response(follower_cid)["errorCode"] == Errors.NONE.code and c.response(follower_cid)["assignment"] == b64(
        1
    )
    assert c.group().state == STABLE


def test_rebalance_times_out_when_sync_request_is_not_received():
    c = client()
    responses = join_with_n_members(c, 3, 5000, 5000)
    c.sleep(2500)
    for r in responses:
        verify_heartbeat(c, r, Errors.NONE.code)
    mark = len(c.records())
    c.sleep(2500)  # the pending sync expires: every member goes, the group is Empty
    assert [v["generation"] for _, v in c.records(mark)] == [2]
    for r in responses:
        verify_heartbeat(c, r, Errors.UNKNOWN_MEMBER_ID.code)
    assert c.group().state == EMPTY


def test_rebalance_times_out_when_sync_request_is_not_received_from_followers():
    c = client()
    responses = join_with_n_members(c, 3, 5000, 5000)
    c.sleep(2500)
    for r in responses:
        verify_heartbeat(c, r, Errors.NONE.code)
    leader = responses[0]
    assert leader["leader"] == leader["memberId"]
    _, sync = c.sync(leader["memberId"], 1)
    assert sync["errorCode"] == Errors.NONE.code and c.group().state == STABLE
    verify_heartbeat(c, leader, Errors.NONE.code)
    mark = len(c.records())
    c.sleep(2500)
    assert c.records(mark) == []
    verify_heartbeat(c, leader, Errors.REBALANCE_IN_PROGRESS.code)
    for r in responses[1:]:
        verify_heartbeat(c, r, Errors.UNKNOWN_MEMBER_ID.code)
    assert c.group().state == PREPARING_REBALANCE


def test_rebalance_times_out_when_sync_request_is_not_received_from_leaders():
    c = client()
    responses = join_with_n_members(c, 3, 5000, 5000)
    c.sleep(2500)
    for r in responses:
        verify_heartbeat(c, r, Errors.NONE.code)
    follower_cids = [c.sync(r["memberId"], 1)[0] for r in responses[1:]]
    assert all(c.response(cid) is None for cid in follower_cids)
    c.sleep(2500)  # the leader did not sync
    assert all(c.response(cid)["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code for cid in follower_cids)
    verify_heartbeat(c, responses[0], Errors.UNKNOWN_MEMBER_ID.code)
    for r in responses[1:]:
        verify_heartbeat(c, r, Errors.REBALANCE_IN_PROGRESS.code)
    assert c.group().state == PREPARING_REBALANCE


def test_rebalance_does_not_time_out_when_all_sync_are_received():
    c = client()
    responses = join_with_n_members(c, 3, 5000, 5000)
    leader_id = responses[0]["memberId"]
    c.sleep(2500)
    for r in responses:
        verify_heartbeat(c, r, Errors.NONE.code)
    for r in responses:
        mark = len(c.records())
        _, sync = c.sync(r["memberId"], 1)
        assert sync["errorCode"] == Errors.NONE.code
        assert len(c.records(mark)) == (1 if r["memberId"] == leader_id else 0)
    c.sleep(2500)
    for r in responses:
        verify_heartbeat(c, r, Errors.NONE.code)
    c.sleep(2500)
    for r in responses:
        verify_heartbeat(c, r, Errors.NONE.code)
    assert c.group().state == STABLE


# ====================================================================== Heartbeat
def test_heartbeat_unknown_group():
    c = client()
    assert c.heartbeat("member-id", -1)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code


def test_heartbeat_with_empty_group_id():
    c = GroupTestClient(group_id="")
    assert c.heartbeat("member-id", -1, group_id="") == {"throttleTimeMs": 0, "errorCode": Errors.INVALID_GROUP_ID.code}


def test_heartbeat_dead_group():
    c = client()
    c.join("")
    kill(c)
    assert c.heartbeat("member-id", -1)["errorCode"] == Errors.COORDINATOR_NOT_AVAILABLE.code


def test_heartbeat_empty_group():
    c = client()
    c.join("")

    def add(comp):
        comp.groups[c.group_id].add(
            ClassicGroupMember("member-id", None, "client-id", "client-host", 10000, 5000, "consumer", [("range", "")])
        )

    c.mutate(add)
    assert c.heartbeat("member-id", 0)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code


def test_heartbeat_unknown_member_existing_group():
    c = client()
    leader = join_and_rebalance(c)
    assert c.heartbeat("unknown-member-id", leader["generationId"])["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code


def test_heartbeat_during_preparing_rebalance():
    c = client()
    _, first = c.join("")
    c.join(first["memberId"])
    assert c.group().state == PREPARING_REBALANCE
    assert c.heartbeat(first["memberId"], 0)["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code


def test_heartbeat_during_completing_rebalance():
    c = client()
    leader = join_and_complete(c)
    assert leader["generationId"] == 1 and c.group().state == COMPLETING_REBALANCE
    assert c.heartbeat(leader["memberId"], 1) == {"throttleTimeMs": 0, "errorCode": Errors.NONE.code}


def test_heartbeat_illegal_generation():
    c = client()
    leader = join_and_rebalance(c)
    assert c.heartbeat(leader["memberId"], leader["generationId"] + 1)["errorCode"] == Errors.ILLEGAL_GENERATION.code


def test_valid_heartbeat():
    c = client()
    leader = join_and_rebalance(c)
    assert c.heartbeat(leader["memberId"], leader["generationId"])["errorCode"] == Errors.NONE.code
    assert c.heartbeat(leader["memberId"], leader["generationId"], version=0) == {"errorCode": Errors.NONE.code}


def test_static_member_heartbeat_leader_with_invalid_member_id():
    c = client()
    r = static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    assert c.heartbeat(r["leaderId"], r["generationId"])["errorCode"] == Errors.NONE.code
    assert (
        c.heartbeat("invalid-member-id", r["generationId"], instance_id="leader-instance-id")["errorCode"]
        == Errors.FENCED_INSTANCE_ID.code
    )


def test_classic_group_member_session_timeout():
    c = client()
    leader = join_and_rebalance(c, session_timeout=5000)
    mark = len(c.records())
    c.sleep(5000)  # verifySessionExpiration: the group empties, at generation 2
    g = c.group()
    assert g.state == EMPTY and g.num_members() == 0 and g.generation_id == 2
    assert [v["generation"] for _, v in c.records(mark)] == [2]
    assert c.heartbeat(leader["memberId"], leader["generationId"])["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    expired = c.events("MemberSessionExpired")
    assert expired[-1]["memberId"] == leader["memberId"] and c.events("RebalanceStarted")


def test_classic_group_member_heartbeat_maintains_session():
    c = client()
    leader = join_and_rebalance(c, session_timeout=5000)
    c.sleep(2500)
    assert c.heartbeat(leader["memberId"], leader["generationId"])["errorCode"] == Errors.NONE.code
    c.sleep(2500)
    assert c.heartbeat(leader["memberId"], leader["generationId"])["errorCode"] == Errors.NONE.code


def test_classic_group_member_session_timeout_during_rebalance():
    c = client()
    leader = join_and_rebalance(c, session_timeout=5000)
    other_cid, _ = c.join("", version=DYN, rebalance_timeout=10000, session_timeout=5000)
    assert c.group().state == PREPARING_REBALANCE
    c.sleep(2500)
    assert c.heartbeat(leader["memberId"], leader["generationId"])["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code
    c.sleep(5000)  # the first member's session ends; the join completes with the new member
    assert c.heartbeat(leader["memberId"], leader["generationId"])["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    c.sleep(2500)
    other = c.response(other_cid)
    g = c.group()
    assert other["errorCode"] == Errors.NONE.code and g.num_members() == 1 and g.generation_id == 2
    assert g.state == COMPLETING_REBALANCE


def test_rebalance_completes_before_member_joins():
    c = client()
    first = join_and_complete(c, instance_id="leader-instance-id", rebalance_timeout=10000, session_timeout=5000)
    first_id = first["memberId"]
    _, sync = c.sync(first_id, 1)
    assert sync["errorCode"] == Errors.NONE.code and c.group().state == STABLE
    # A new dynamic member: rebalance (its own session is the 5-minute new-member timeout).
    second_cid, _ = c.join("", version=DYN, rebalance_timeout=10000, session_timeout=2500)
    assert c.group().state == PREPARING_REBALANCE
    for _ in range(2):
        c.sleep(2500)
        assert c.heartbeat(first_id, 1)["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code
    # The rebalance timeout (Kafka's test sleeps past it; here the sleep ends on it): the static
    # first member did not rejoin but stays; the new member leads generation 2.
    c.sleep(5000)
    second = c.response(second_cid)
    g = c.group()
    assert second["errorCode"] == Errors.NONE.code and second["leader"] == second["memberId"]
    assert g.num_members() == 2 and g.generation_id == 2 and g.state == COMPLETING_REBALANCE
    other_id = second["memberId"]
    _, sync = c.sync(other_id, 2)
    assert sync["errorCode"] == Errors.NONE.code and g.state == COMPLETING_REBALANCE and c.group().state == STABLE
    # The static member that did not rejoin is still there, with the old generation.
    assert c.heartbeat(first_id, 1)["errorCode"] == Errors.ILLEGAL_GENERATION.code
    # Its session ends 5000 after the join completed: a rebalance, keeping the new member.
    codes = []
    for _ in range(3):
        c.sleep(2000)
        codes.append(c.heartbeat(other_id, 2)["errorCode"])
    assert codes == [Errors.NONE.code, Errors.NONE.code, Errors.REBALANCE_IN_PROGRESS.code]
    assert c.group().num_members() == 1 and c.group().state == PREPARING_REBALANCE
    _, again = c.join(other_id, version=DYN, rebalance_timeout=10000, session_timeout=2500)
    assert (
        again["errorCode"] == Errors.NONE.code
        and again["generationId"] == 3
        and c.group().state == COMPLETING_REBALANCE
    )
    _, sync = c.sync(other_id, 3)
    assert sync["errorCode"] == Errors.NONE.code and c.group().state == STABLE
    for _ in range(20):
        c.sleep(2000)
        assert c.heartbeat(other_id, 3)["errorCode"] == Errors.NONE.code


def test_sync_group_empty_assignment():
    c = client()
    leader = join_and_rebalance(c)
    assert c.heartbeat(leader["memberId"], leader["generationId"])["errorCode"] == Errors.NONE.code


def test_second_member_partially_join_and_timeout():
    c = client()
    first = join_and_complete(c, instance_id="leader-instance-id", rebalance_timeout=10000, session_timeout=5000)
    c.sync(first["memberId"], 1)
    assert c.group().state == STABLE
    _, pending = c.join("", session_timeout=5000)
    assert pending["errorCode"] == Errors.MEMBER_ID_REQUIRED.code and c.group().num_pending_join_members() == 1
    for _ in range(2):
        c.sleep(2500)
        assert c.heartbeat(first["memberId"], 1)["errorCode"] == Errors.NONE.code
    g = c.group()
    assert list(g.members) == [first["memberId"]] and g.num_pending_join_members() == 0
    assert g.generation_id == 1 and g.state == STABLE


def test_heartbeat_during_rebalance_causes_rebalance_in_progress():
    c = client()
    leader = join_and_complete(c, rebalance_timeout=10000, session_timeout=5000)
    assert leader["generationId"] == 1 and c.group().state == COMPLETING_REBALANCE
    _, resp = c.join("", version=DYN, rebalance_timeout=10000, session_timeout=5000)
    assert resp is None
    assert c.heartbeat(leader["memberId"], 1)["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code


def test_group_stuck_in_rebalance_timeout_due_to_nonjoined_static_member():
    c = client()
    r = static_members_join_and_rebalance(
        c, "leader-instance-id", "follower-instance-id", rebalance_timeout=5000, session_timeout=10000
    )
    new_cid, _ = c.join("", version=DYN, protos=r["protocols"], session_timeout=10000, rebalance_timeout=5000)
    c.sleep(5000)
    new = c.response(new_cid)
    assert new["errorCode"] == Errors.NONE.code and new["leader"] == new["memberId"] and len(new["members"]) == 3
    assert new["generationId"] == 2 and c.group().state == COMPLETING_REBALANCE
    g = c.group()
    assert set(g.members) == {r["leaderId"], r["followerId"], new["memberId"]}
    leave = c.leave({"memberId": r["followerId"], "groupInstanceId": "follower-instance-id"})
    assert leave["members"] == [
        {"memberId": r["followerId"], "groupInstanceId": "follower-instance-id", "errorCode": Errors.NONE.code}
    ]
    assert c.group().state == PREPARING_REBALANCE
    c.sleep(5000)
    # A documented Kafka limitation: only the static leader is left and the group is stuck.
    g = c.group()
    assert list(g.members) == [r["leaderId"]] and g.generation_id == 2 and g.state == PREPARING_REBALANCE
    assert c.events("JoinPhaseExtended")


# ====================================================================== LeaveGroup
def test_leave_group_with_empty_group_id():
    c = GroupTestClient(group_id="")
    assert c.leave({"memberId": "m"}, group_id="") == {
        "throttleTimeMs": 0,
        "errorCode": Errors.INVALID_GROUP_ID.code,
        "members": [],
    }


def test_leave_group_unknown_group():
    c = client()
    resp = c.leave({"memberId": "member-id"})
    assert resp == {
        "throttleTimeMs": 0,
        "errorCode": Errors.NONE.code,
        "members": [{"memberId": "member-id", "groupInstanceId": None, "errorCode": Errors.UNKNOWN_MEMBER_ID.code}],
    }
    # Before v3 the member's error is the top-level error.
    assert c.leave(version=2, member_id="member-id") == {
        "throttleTimeMs": 0,
        "errorCode": Errors.UNKNOWN_MEMBER_ID.code,
    }
    assert c.leave(version=0, member_id="member-id") == {"errorCode": Errors.UNKNOWN_MEMBER_ID.code}


def test_static_members_leave_unknown_group():
    c = client()
    static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    c2 = client(group_id="invalid-group-id")
    resp = c2.leave(
        {"memberId": "", "groupInstanceId": "leader-instance-id"},
        {"memberId": "", "groupInstanceId": "follower-instance-id"},
    )
    assert [m["errorCode"] for m in resp["members"]] == [Errors.UNKNOWN_MEMBER_ID.code, Errors.UNKNOWN_MEMBER_ID.code]


def test_leave_group_unknown_member_id_existing_group():
    c = client()
    join_and_complete(c)
    mark = len(c.records())
    resp = c.leave({"memberId": "unknown-member-id"})
    assert resp["members"] == [
        {"memberId": "unknown-member-id", "groupInstanceId": None, "errorCode": Errors.UNKNOWN_MEMBER_ID.code}
    ]
    assert c.records(mark) == []


def test_leave_dead_group():
    c = client()
    c.join("")
    kill(c)
    assert c.leave({"memberId": "member-id"}) == {
        "throttleTimeMs": 0,
        "errorCode": Errors.COORDINATOR_NOT_AVAILABLE.code,
        "members": [],
    }


def test_valid_leave_group():
    c = client()
    leader = join_and_complete(c)
    mark = len(c.records())
    resp = c.leave({"memberId": leader["memberId"]})
    assert resp["members"] == [{"memberId": leader["memberId"], "groupInstanceId": None, "errorCode": Errors.NONE.code}]
    assert [v["generation"] for _, v in c.records(mark)] == [2]
    g = c.group()
    assert g.state == EMPTY and g.generation_id == 2


def test_valid_leave_group_v0():
    c = client()
    leader = join_and_complete(c)
    assert c.leave(version=0, member_id=leader["memberId"]) == {"errorCode": Errors.NONE.code}
    assert c.group().state == EMPTY


def test_leave_group_with_fenced_instance_id():
    c = client()
    join_and_complete(c, instance_id="group-instance-id")
    mark = len(c.records())
    resp = c.leave({"memberId": "other-member-id", "groupInstanceId": "group-instance-id"})
    assert resp["members"] == [
        {
            "memberId": "other-member-id",
            "groupInstanceId": "group-instance-id",
            "errorCode": Errors.FENCED_INSTANCE_ID.code,
        }
    ]
    assert c.records(mark) == []


def test_leave_group_static_member_with_unknown_member_id():
    c = client()
    join_and_complete(c, instance_id="group-instance-id")
    resp = c.leave({"memberId": "", "groupInstanceId": "group-instance-id"})
    # Administrative removal by instance id.
    assert resp["members"] == [{"memberId": "", "groupInstanceId": "group-instance-id", "errorCode": Errors.NONE.code}]
    assert c.group().state == EMPTY


def test_static_members_valid_batch_leave_group():
    c = client()
    static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    resp = c.leave(
        {"memberId": "", "groupInstanceId": "leader-instance-id"},
        {"memberId": "", "groupInstanceId": "follower-instance-id"},
    )
    assert resp["members"] == [
        {"memberId": "", "groupInstanceId": "leader-instance-id", "errorCode": Errors.NONE.code},
        {"memberId": "", "groupInstanceId": "follower-instance-id", "errorCode": Errors.NONE.code},
    ]
    assert c.group().state == EMPTY and c.group().generation_id == 2


def test_static_members_fenced_instance_batch_leave_group():
    c = client()
    static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    resp = c.leave(
        {"memberId": "", "groupInstanceId": "leader-instance-id"},
        {"memberId": "invalid-member-id", "groupInstanceId": "follower-instance-id"},
    )
    assert resp["members"] == [
        {"memberId": "", "groupInstanceId": "leader-instance-id", "errorCode": Errors.NONE.code},
        {
            "memberId": "invalid-member-id",
            "groupInstanceId": "follower-instance-id",
            "errorCode": Errors.FENCED_INSTANCE_ID.code,
        },
    ]


def test_static_members_unknown_instance_batch_leave_group():
    c = client()
    static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    mark = len(c.records())
    resp = c.leave(
        {"memberId": "", "groupInstanceId": "unknown-instance-id"},
        {"memberId": "", "groupInstanceId": "follower-instance-id"},
    )
    assert resp["members"] == [
        {"memberId": "", "groupInstanceId": "unknown-instance-id", "errorCode": Errors.UNKNOWN_MEMBER_ID.code},
        {"memberId": "", "groupInstanceId": "follower-instance-id", "errorCode": Errors.NONE.code},
    ]
    assert c.records(mark) == []  # the group rebalances (no record until the join completes)


def setup_group_with_pending_member(c: GroupTestClient) -> dict:
    from tests.group.test_group_join import setup_group_with_pending_member as setup

    return setup(c)


def test_pending_members_leave_group():
    c = client()
    s = setup_group_with_pending_member(c)
    mark = len(c.records())
    resp = c.leave({"memberId": s["pendingMemberId"]})
    assert resp["members"] == [
        {"memberId": s["pendingMemberId"], "groupInstanceId": None, "errorCode": Errors.NONE.code}
    ]
    g = c.group()
    # The pending member was all the join waited for.
    assert g.state == COMPLETING_REBALANCE and g.num_members() == 2 and g.num_pending_join_members() == 0
    assert c.records(mark) == []


def test_pending_member_batch_leave_group():
    c = client()
    s = setup_group_with_pending_member(c)
    resp = c.leave({"memberId": "", "groupInstanceId": "unknown-instance-id"}, {"memberId": s["pendingMemberId"]})
    assert resp["members"] == [
        {"memberId": "", "groupInstanceId": "unknown-instance-id", "errorCode": Errors.UNKNOWN_MEMBER_ID.code},
        {"memberId": s["pendingMemberId"], "groupInstanceId": None, "errorCode": Errors.NONE.code},
    ]


@pytest.mark.parametrize("with_unknown", [False, True])
def test_joined_member_pending_member_batch_leave_group(with_unknown):
    c = client()
    s = setup_group_with_pending_member(c)
    ids = [s["leaderId"], s["followerId"], s["pendingMemberId"]] + (["unknown-member-id"] if with_unknown else [])
    resp = c.leave(*[{"memberId": m} for m in ids])
    assert resp["members"] == [
        {
            "memberId": m,
            "groupInstanceId": None,
            "errorCode": Errors.UNKNOWN_MEMBER_ID.code if m == "unknown-member-id" else Errors.NONE.code,
        }
        for m in ids
    ]
    assert c.group().state == EMPTY


def test_leave_answers_the_parked_join_of_a_leaving_member():
    c = client()
    leader = join_and_rebalance(c)
    cid, resp = c.join(leader["memberId"], version=DYN)
    assert resp is not None  # a single member: the rebalance completes at once
    other_cid, resp = c.join("", version=DYN)
    assert resp is None
    c.leave({"memberId": c.group().leader_id}, {"memberId": list(c.group().members)[-1]})
    assert (
        c.response(other_cid)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code and c.response(other_cid)["memberId"] == ""
    )
