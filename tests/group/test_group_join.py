"""JoinGroup: Kafka's GroupMetadataManagerClassicGroupTest join scenarios, through the real runtime.

Version notes: JoinGroup v3 adds dynamic members at once (Kafka's `requiredKnownMemberId=false`),
v4+ answers MEMBER_ID_REQUIRED first; v9 lets a replaced static leader skip the assignment.
"""

from __future__ import annotations

import pytest

from coordinator.errors import Errors
from coordinator.group.classic.group import COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE
from tests.group.group_helpers import (
    GroupTestClient,
    b64,
    join_and_complete,
    join_and_rebalance,
    protocols,
    run_classic,
    static_members_join_and_rebalance,
)

DYN = 3  # a JoinGroup version that does not require a known member id


def client(**overrides) -> GroupTestClient:
    overrides.setdefault("group_min_session_timeout_ms", 1)
    return GroupTestClient(**overrides)


def kill(c: GroupTestClient, group_id: str | None = None) -> None:
    c.mutate(lambda comp: comp.groups[group_id or c.group_id].transition_to(DEAD, c.now))


# ====================================================================== service checks
def test_join_group_with_empty_group_id_gets_invalid_group_id():
    c = GroupTestClient(group_id="")
    _, resp = c.join("some-member", group_id="")
    assert resp["errorCode"] == Errors.INVALID_GROUP_ID.code and resp["memberId"] == "some-member"
    assert c.groups().groups == {}


@pytest.mark.parametrize("session", [5999, 1800001])
def test_join_group_with_session_timeout_out_of_range(session):
    c = GroupTestClient()
    _, resp = c.join("m", session_timeout=session)
    assert resp["errorCode"] == Errors.INVALID_SESSION_TIMEOUT.code and resp["memberId"] == "m"
    assert c.group() is None


def test_join_group_to_another_partitions_group_gets_not_coordinator():
    c = GroupTestClient()
    _, resp = c.join("", group_id="other-group-on-another-partition")
    assert resp["errorCode"] == Errors.NOT_COORDINATOR.code and resp["memberId"] == ""


# ====================================================================== creation and max size
def test_generate_records_on_new_classic_group():
    c = client()
    _, resp = c.join("")
    assert resp["errorCode"] == Errors.MEMBER_ID_REQUIRED.code
    assert c.group().state == EMPTY and c.group().num_pending_join_members() == 1
    assert c.records() == [
        (
            '["GroupMetadata","group-id"]',
            {
                "type": "GroupMetadata",
                "protocolType": "",
                "generation": 0,
                "protocol": None,
                "leader": None,
                "currentStateTimestamp": c.now,
                "members": [],
            },
        )
    ]


def test_join_group_should_receive_error_if_group_over_max_size():
    c = client(group_max_size=10)
    cids = [c.join("", version=DYN, reason="exceed max group size")[0] for _ in range(10)]
    assert all(c.response(cid) is None for cid in cids)
    before = len(c.records())
    _, resp = c.join("", version=DYN)
    assert resp["errorCode"] == Errors.GROUP_MAX_SIZE_REACHED.code and resp["memberId"] == ""
    assert len(c.records()) == before
    assert c.group().num_members() == 10


def test_dynamic_members_join_group_with_max_size_and_required_known_member():
    c = client(group_max_size=10, group_initial_rebalance_delay_ms=50)
    first = [c.join("")[1] for _ in range(11)]
    assert {r["errorCode"] for r in first} == {Errors.MEMBER_ID_REQUIRED.code}
    member_ids = [r["memberId"] for r in first]
    assert len(set(member_ids)) == 11
    g = c.group()
    assert g.num_members() == 0 and g.state == EMPTY and g.num_pending_join_members() == 11

    second = [c.join(m)[0] for m in member_ids]
    c.sleep(50)  # the first delay ends: members joined meanwhile, so it is extended
    c.sleep(50)  # nobody joined since: the join completes
    codes = [c.response(cid)["errorCode"] for cid in second]
    assert codes.count(Errors.NONE.code) == 10 and codes.count(Errors.GROUP_MAX_SIZE_REACHED.code) == 1
    g = c.group()
    assert g.num_members() == 10 and g.num_pending_join_members() == 0 and g.state == COMPLETING_REBALANCE

    # Accepted members may rejoin; the rejected one is rejected again.
    third = [c.join(m)[1] for m in member_ids]
    assert [r["errorCode"] for r in third].count(Errors.NONE.code) == 10
    assert [r["errorCode"] for r in third].count(Errors.GROUP_MAX_SIZE_REACHED.code) == 1


def test_dynamic_members_join_group_with_max_size_and_not_required_known_member():
    c = client(group_max_size=10, group_initial_rebalance_delay_ms=50)
    first = [c.join("", version=DYN)[0] for _ in range(11)]
    g = c.group()
    assert g.num_members() == 10 and g.num_awaiting_join_response() == 10 and g.state == PREPARING_REBALANCE
    c.sleep(50)
    c.sleep(50)
    responses = [c.response(cid) for cid in first]
    assert [r["errorCode"] for r in responses].count(Errors.NONE.code) == 10
    assert [r["errorCode"] for r in responses].count(Errors.GROUP_MAX_SIZE_REACHED.code) == 1
    second = [c.join(r["memberId"], version=DYN)[1] for r in responses]
    assert [r["errorCode"] for r in second].count(Errors.NONE.code) == 10
    assert [r["errorCode"] for r in second].count(Errors.GROUP_MAX_SIZE_REACHED.code) == 1
    g = c.group()
    assert g.num_members() == 10 and g.num_awaiting_join_response() == 0 and g.state == COMPLETING_REBALANCE


def test_static_members_join_group_with_max_size():
    c = client(group_max_size=10, group_initial_rebalance_delay_ms=50)
    instances = [f"instance-id-{i}" for i in range(11)]
    first = [c.join("", instance_id=i)[0] for i in instances]
    g = c.group()
    assert g.num_members() == 10 and g.num_awaiting_join_response() == 10 and g.state == PREPARING_REBALANCE
    c.sleep(50)
    c.sleep(50)
    responses = [c.response(cid) for cid in first]
    assert [r["errorCode"] for r in responses].count(Errors.GROUP_MAX_SIZE_REACHED.code) == 1
    second = [c.join(r["memberId"], instance_id=i)[1] for r, i in zip(responses, instances, strict=True)]
    assert [r["errorCode"] for r in second].count(Errors.NONE.code) == 10
    assert [r["errorCode"] for r in second].count(Errors.GROUP_MAX_SIZE_REACHED.code) == 1
    g = c.group()
    assert g.num_members() == 10 and g.num_awaiting_join_response() == 0 and g.state == COMPLETING_REBALANCE


def test_dynamic_members_can_rejoin_group_with_max_size_while_rebalancing():
    c = client(group_max_size=10, group_initial_rebalance_delay_ms=50)
    member_ids = [c.join("")[1]["memberId"] for _ in range(11)]
    assert c.group().num_pending_join_members() == 11 and c.group().state == EMPTY
    for m in member_ids:
        c.join(m)
    g = c.group()
    assert g.num_members() == 10 and g.num_awaiting_join_response() == 10 and g.state == PREPARING_REBALANCE
    # Members awaiting join may rejoin at the size limit.
    third = [c.join(m)[0] for m in member_ids]
    c.sleep(50)
    c.sleep(50)
    codes = [c.response(cid)["errorCode"] for cid in third]
    assert codes.count(Errors.NONE.code) == 10 and codes.count(Errors.GROUP_MAX_SIZE_REACHED.code) == 1
    g = c.group()
    assert g.num_members() == 10 and g.num_awaiting_join_response() == 0 and g.state == COMPLETING_REBALANCE


def test_last_joining_members_are_kicked_out_when_rejoining_group_with_max_size():
    from coordinator.group.classic.group import ClassicGroup, ClassicGroupMember

    c = client(group_max_size=10, group_initial_rebalance_delay_ms=50)
    member_ids = [f"client-id-{i}" for i in range(12)]

    def setup(comp):
        g = ClassicGroup(c.group_id, now_ms=c.now)
        comp.groups[c.group_id] = g
        for m in member_ids:
            g.add(
                ClassicGroupMember(
                    m,
                    None,
                    "client-id",
                    "client-host",
                    10000,
                    5000,
                    "consumer",
                    [("range", protocols("range")[0]["metadata"])],
                )
            )
        run_classic(comp, comp.classic.prepare_rebalance, g, "test")

    c.mutate(setup)
    cids = [c.join(m, version=DYN, rebalance_timeout=10000)[0] for m in member_ids]
    g = c.group()
    assert g.num_members() == 10 and g.num_awaiting_join_response() == 10 and g.state == PREPARING_REBALANCE
    c.sleep(10000)
    codes = [c.response(cid)["errorCode"] for cid in cids]
    assert codes == [Errors.NONE.code] * 10 + [Errors.GROUP_MAX_SIZE_REACHED.code] * 2
    g = c.group()
    assert g.state == COMPLETING_REBALANCE and list(g.members) == member_ids[:10]


# ====================================================================== unknown members, protocols
def test_join_group_unknown_member_new_group():
    c = client()
    _, resp = c.join("member-id", version=DYN)
    assert resp["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code and c.records() == []
    _, resp = c.join("member-id", instance_id="group-instance-id")
    assert resp["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code and c.records() == [] and c.group() is None


def test_join_group_protocol_type_is_not_provided_when_an_error_occurs():
    c = client()
    _, resp = c.join("member-id")
    assert resp["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code and resp["memberId"] == "member-id"
    assert resp["protocolType"] is None and resp["generationId"] == -1


def test_classic_group_join_inconsistent_protocol_type():
    c = client()
    join_and_complete(c)
    _, resp = c.join("", version=DYN, protocol_type="connect")
    assert resp["errorCode"] == Errors.INCONSISTENT_GROUP_PROTOCOL.code and resp["memberId"] == ""


def test_join_group_with_empty_protocol_type():
    c = client()
    _, resp = c.join("", version=DYN, protocol_type="")
    assert resp["errorCode"] == Errors.INCONSISTENT_GROUP_PROTOCOL.code
    _, resp = c.join("", instance_id="group-instance-id", protocol_type="")
    assert resp["errorCode"] == Errors.INCONSISTENT_GROUP_PROTOCOL.code


def test_join_group_with_empty_group_protocol():
    c = client()
    _, resp = c.join("", version=DYN, protos=[])
    assert resp["errorCode"] == Errors.INCONSISTENT_GROUP_PROTOCOL.code


def test_join_group_inconsistent_group_protocol():
    c = client()
    cid, resp = c.join("", version=DYN, protos=protocols("range"))
    assert resp is None
    _, other = c.join("", version=DYN, protos=protocols("roundrobin"))
    assert other["errorCode"] == Errors.INCONSISTENT_GROUP_PROTOCOL.code
    c.sleep(3000)
    assert c.response(cid)["errorCode"] == Errors.NONE.code


def test_join_group_second_join_inconsistent_protocol():
    c = client()
    _, first = c.join("")
    assert first["errorCode"] == Errors.MEMBER_ID_REQUIRED.code
    _, resp = c.join(first["memberId"], protos=[])
    assert resp["errorCode"] == Errors.INCONSISTENT_GROUP_PROTOCOL.code
    cid, resp = c.join(first["memberId"], protos=protocols("range"))
    assert resp is None
    c.sleep(3000)
    assert c.response(cid)["errorCode"] == Errors.NONE.code


def test_join_group_unknown_consumer_existing_group():
    c = client()
    join_and_complete(c, session_timeout=5000, rebalance_timeout=5000)
    _, resp = c.join("other-member-id")
    assert resp["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code and resp["memberId"] == "other-member-id"


def test_join_group_unknown_consumer_new_dead_group():
    c = client()
    c.join("")
    kill(c)
    _, resp = c.join("")
    assert resp["errorCode"] == Errors.COORDINATOR_NOT_AVAILABLE.code and resp["memberId"] == ""


def test_existing_member_join_dead_group():
    c = client()
    resp = join_and_complete(c)
    kill(c)
    _, again = c.join(resp["memberId"])
    assert again["errorCode"] == Errors.COORDINATOR_NOT_AVAILABLE.code and again["memberId"] == resp["memberId"]


def test_join_group_returns_the_protocol_type():
    c = client()
    leader_cid, r1 = c.join_dynamic(rebalance_timeout=3000)
    member_cid, r2 = c.join_dynamic(rebalance_timeout=3000)
    assert r1 is None and r2 is None
    c.sleep(3000)
    for cid in (leader_cid, member_cid):
        resp = c.response(cid)
        assert resp["errorCode"] == Errors.NONE.code and resp["protocolType"] == "consumer"


def test_join_group_response_fields_by_version():
    c = client()
    leader = join_and_complete(c, version=9)
    assert leader["skipAssignment"] is False and leader["members"][0]["groupInstanceId"] is None
    # v4: no protocolType/skipAssignment, no groupInstanceId in members.
    c2 = client(group_id="g2")
    cid, _ = c2.join("", version=DYN)
    c2.sleep(3000)
    resp = c2.response(cid)
    assert list(resp) == [
        "throttleTimeMs",
        "errorCode",
        "generationId",
        "protocolName",
        "leader",
        "memberId",
        "members",
    ]
    assert list(resp["members"][0]) == ["memberId", "metadata"]
    # Before v7 an absent protocol name is "", from v7 null.
    _, err = c2.join("unknown", version=6)
    assert err["protocolName"] == ""
    _, err = c2.join("unknown", version=7)
    assert err["protocolName"] is None


# ====================================================================== initial rebalance delay
def test_delay_initial_rebalance_by_group_initial_rebalance_delay_on_empty_group():
    c = client()
    cid, _ = c.join("", version=DYN)
    c.sleep(1500)
    assert c.response(cid) is None
    c.sleep(1501)
    assert c.response(cid)["errorCode"] == Errors.NONE.code


def test_reset_rebalance_delay_when_new_member_joins_group_during_initial_rebalance():
    c = client()
    first, _ = c.join("", version=DYN, rebalance_timeout=9000)
    c.sleep(2999)
    second, _ = c.join("", version=DYN, rebalance_timeout=9000)
    c.sleep(2)
    c.sleep(1501)
    assert c.response(first) is None and c.response(second) is None
    c.sleep(1500)
    assert c.response(first)["errorCode"] == Errors.NONE.code and c.response(second)["errorCode"] == Errors.NONE.code


def test_delay_rebalance_upto_rebalance_timeout():
    c = client()
    first, _ = c.join("", version=DYN, rebalance_timeout=6000)
    second, _ = c.join("", version=DYN, rebalance_timeout=6000)
    c.sleep(3001)
    third, _ = c.join("", version=DYN, rebalance_timeout=6000)
    # Right before the rebalance timeout. (Kafka's MockCoordinatorTimer runs the first delay's
    # handler at the sleep's end, 3001, so its test sees the end one millisecond later; here a
    # timer runs at its deadline, as Kafka's real timer aims to.)
    c.sleep(2998)
    assert all(c.response(x) is None for x in (first, second, third))
    c.sleep(1)
    assert all(c.response(x)["errorCode"] == Errors.NONE.code for x in (first, second, third))


# ====================================================================== new-member and pending expiry
def test_join_group_replace_static_member():
    c = client()
    old_cid, _ = c.join("", instance_id="group-instance-id", session_timeout=5000)
    g = c.group()
    assert g.num_awaiting_join_response() == 1 and g.num_members() == 1
    new_cid, resp = c.join("", instance_id="group-instance-id", session_timeout=5000)
    assert resp is None
    old = c.response(old_cid)
    assert old["errorCode"] == Errors.FENCED_INSTANCE_ID.code
    g = c.group()
    assert g.num_awaiting_join_response() == 1 and g.num_members() == 1
    c.sleep(3000)
    assert c.response(new_cid)["errorCode"] == Errors.NONE.code
    assert c.group().num_awaiting_join_response() == 0 and c.group().num_members() == 1


def test_heartbeat_expiration_should_remove_pending_member():
    c = client()
    _, resp = c.join("", session_timeout=1000)
    assert resp["errorCode"] == Errors.MEMBER_ID_REQUIRED.code
    assert c.group().num_members() == 0 and c.group().num_pending_join_members() == 1
    c.sleep(1000)
    assert c.group().num_pending_join_members() == 0
    assert c.events("MemberSessionExpired")[0]["pending"] is True


def test_heartbeat_expiration_should_remove_member():
    c = client(group_initial_rebalance_delay_ms=10 * 60 * 1000)
    cid, _ = c.join("", version=DYN)
    member_id = c.group().leader_id
    mark = len(c.records())
    c.sleep(300000)  # the new member join timeout
    assert c.response(cid)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code and c.response(cid)["memberId"] == ""
    assert c.group().num_members() == 0 and c.group().state == EMPTY and c.group().generation_id == 1
    assert c.records(mark) == [
        (
            '["GroupMetadata","group-id"]',
            {
                "type": "GroupMetadata",
                "protocolType": "consumer",
                "generation": 1,
                "protocol": None,
                "leader": None,
                "currentStateTimestamp": c.now,
                "members": [],
            },
        )
    ]
    assert c.events("MemberSessionExpired")[0]["memberId"] == member_id


def test_new_member_join_expiration():
    c = client()
    timeout = 300000
    first = join_and_complete(c, version=DYN, session_timeout=5000 + timeout, rebalance_timeout=2 * timeout)
    assert first["leader"] == first["memberId"]
    assert not any(m.is_new for m in c.group().members.values())
    second_cid, resp = c.join("", version=DYN, session_timeout=5000, rebalance_timeout=5000)
    assert resp is None
    g = c.group()
    assert g.num_members() == 2 and sum(m.is_new for m in g.members.values()) == 1
    c.sleep(timeout)
    assert c.response(second_cid)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    g = c.group()
    assert list(g.members) == [first["memberId"]] and not any(m.is_new for m in g.members.values())


def test_new_member_timeout_completion():
    c = client()
    resp = join_and_complete(c, version=DYN, session_timeout=300000 + 5000)
    assert c.group().generation_id == 1 and c.group().state == COMPLETING_REBALANCE
    _, sync = c.sync(resp["memberId"], resp["generationId"])
    assert sync["errorCode"] == Errors.NONE.code and c.group().num_members() == 1
    # The new-member timeout is gone: the member survives it.
    c.sleep(300000)
    assert c.group().num_members() == 1
    mark = len(c.records())
    c.sleep(5000)  # now its session expires
    g = c.group()
    assert g.num_members() == 0 and g.state == EMPTY and g.generation_id == 2
    assert c.records(mark)[0][1]["generation"] == 2


def test_new_member_failure_after_join_group_completion():
    c = client()
    resp = join_and_complete(c, version=DYN, session_timeout=5000, rebalance_timeout=10000)
    member_id = resp["memberId"]
    assert resp["leader"] == member_id and resp["generationId"] == 1
    _, sync = c.sync(member_id, 1)
    assert sync["errorCode"] == Errors.NONE.code and c.group().state == STABLE
    other_cid, _ = c.join("", version=DYN, session_timeout=5000, rebalance_timeout=10000)
    _, again = c.join(member_id, version=DYN, session_timeout=5000, rebalance_timeout=10000)
    assert again["errorCode"] == Errors.NONE.code and c.response(other_cid)["errorCode"] == Errors.NONE.code
    # verifySessionExpiration: both members' sessions lapse; the group ends Empty.
    c.sleep(5000)
    assert c.group().num_members() == 0 and c.group().state == EMPTY


def test_join_group_existing_pending_member_with_group_instance_id_throws_exception():
    c = client()
    _, resp = c.join("")
    assert resp["errorCode"] == Errors.MEMBER_ID_REQUIRED.code
    _, bug = c.join(resp["memberId"], instance_id="group-instance-id")
    # Kafka throws IllegalStateException: a bug path, answered UNKNOWN_SERVER_ERROR here.
    assert bug["errorCode"] == Errors.UNKNOWN_SERVER_ERROR.code
    assert c.events("RequestFailed")


# ====================================================================== existing members
def test_join_group_existing_member_updated_metadata_triggers_rebalance():
    c = client()
    resp = join_and_complete(c, protos=protocols("range"))
    member_id = resp["memberId"]
    assert c.group().state == COMPLETING_REBALANCE and c.group().generation_id == 1
    _, again = c.join(member_id, protos=protocols("range", "roundrobin"))
    assert again["errorCode"] == Errors.NONE.code
    g = c.group()
    assert g.state == COMPLETING_REBALANCE and g.generation_id == 2
    assert [p for p, _ in g.member(member_id).protocols] == ["range", "roundrobin"]


def test_join_group_as_existing_leader_triggers_rebalance_in_stable_state():
    c = client()
    resp = join_and_rebalance(c)
    _, again = c.join(resp["memberId"])
    assert again["errorCode"] == Errors.NONE.code and again["generationId"] == 2
    assert c.group().state == COMPLETING_REBALANCE


def test_join_group_as_existing_member_with_updated_metadata_triggers_rebalance_in_stable_state():
    c = client()
    leader = join_and_rebalance(c, protos=protocols("range"))
    leader_id = leader["memberId"]
    member_cid, _ = c.join("", version=DYN, protos=protocols("range"))
    _, leader_again = c.join(leader_id, protos=protocols("range"))
    member = c.response(member_cid)
    assert leader_again["errorCode"] == Errors.NONE.code and member["errorCode"] == Errors.NONE.code
    assert c.group().generation_id == 2 and c.group().num_members() == 2
    _, sync = c.sync(leader_id, 2, {leader_id: b64(0), member["memberId"]: b64(1)})
    assert c.group().state == STABLE
    member_cid, resp = c.join(member["memberId"], protos=protocols("range", "roundrobin"))
    assert resp is None
    _, leader_again = c.join(leader_id, protos=protocols("range"))
    assert leader_again["errorCode"] == Errors.NONE.code and c.response(member_cid)["errorCode"] == Errors.NONE.code
    assert c.group().generation_id == 3 and c.group().state == COMPLETING_REBALANCE


def test_join_group_existing_member_does_not_trigger_rebalance_in_stable_state():
    c = client()
    leader = join_and_rebalance(c)
    member_cid, _ = c.join("", version=DYN)
    c.join(leader["memberId"])
    member = c.response(member_cid)
    c.sync(leader["memberId"], 2, {})
    assert c.group().state == STABLE
    _, again = c.join(member["memberId"], version=DYN)
    assert again["errorCode"] == Errors.NONE.code and again["generationId"] == 2 and c.group().state == STABLE
    assert again["members"] == []


def test_join_group_existing_member_in_empty_state():
    c = client()
    resp = join_and_complete(c)

    def empty(comp):
        g = comp.groups[c.group_id]
        g.transition_to(PREPARING_REBALANCE, c.now)
        g.transition_to(EMPTY, c.now)

    c.mutate(empty)
    _, again = c.join(resp["memberId"])
    assert again["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code and again["generationId"] == -1


def test_complete_join_remove_not_yet_rejoined_dynamic_members():
    c = client()
    join_and_complete(c, session_timeout=1000, rebalance_timeout=1000)
    assert c.group().generation_id == 1
    member_cid, _ = c.join("", version=DYN, session_timeout=1000, rebalance_timeout=1000)
    assert c.group().num_members() == 2 and c.group().state == PREPARING_REBALANCE
    c.sleep(1000)  # the rebalance timeout: the leader did not rejoin
    resp = c.response(member_cid)
    assert resp["errorCode"] == Errors.NONE.code
    g = c.group()
    assert list(g.members) == [resp["memberId"]] and g.generation_id == 2
    # The leader's session (1000) ends with the rebalance timeout; scheduled first, it fires first.
    assert c.events("MemberSessionExpired")


def test_complete_join_phase_in_empty_state_skips_rebalance():
    c = client()
    c.join("", version=DYN, session_timeout=1000, rebalance_timeout=1000)
    assert c.group().generation_id == 0 and c.group().state == PREPARING_REBALANCE
    kill(c)
    c.sleep(3000)
    assert c.group().generation_id == 0


def test_complete_join_phase_no_members_rejoined_extends_join_phase():
    c = client()
    kw = dict(session_timeout=30000, rebalance_timeout=10000)
    first = join_and_complete(c, instance_id="first-instance-id", **kw)
    first_id = first["memberId"]
    second_cid, _ = c.join("", instance_id="second-instance-id", **kw)
    _, first_again = c.join(first_id, instance_id="first-instance-id", **kw)
    assert first_again["errorCode"] == Errors.NONE.code and c.response(second_cid)["errorCode"] == Errors.NONE.code
    assert c.group().num_members() == 2 and c.group().generation_id == 2
    second_id = c.response(second_cid)["memberId"]

    c.mutate(
        lambda comp: run_classic(comp, comp.classic.prepare_rebalance, comp.groups[c.group_id], "trigger rebalance")
    )
    g = c.group()
    assert g.num_members() == 2 and g.state == PREPARING_REBALANCE and g.num_awaiting_join_response() == 0
    join_key = '["classic-join","group-id"]'
    c.sleep(10000)
    assert c.timers()[join_key][0] - c.now == 10000
    c.sleep(10000)
    assert c.timers()[join_key][0] - c.now == 10000
    g = c.group()
    assert g.state == PREPARING_REBALANCE and g.num_members() == 2 and g.generation_id == 2

    first_cid, resp = c.join(first_id, instance_id="first-instance-id", **kw)
    assert resp is None and c.group().state == PREPARING_REBALANCE
    _, second = c.join(second_id, instance_id="second-instance-id", **kw)
    assert second["errorCode"] == Errors.NONE.code and c.response(first_cid)["errorCode"] == Errors.NONE.code
    assert c.group().state == COMPLETING_REBALANCE and c.group().generation_id == 3


def test_generation_id_increments_on_rebalance():
    c = client()
    leader = join_and_rebalance(c)
    _, again = c.join(leader["memberId"])
    assert again["errorCode"] == Errors.NONE.code and again["generationId"] == 2


def test_join_group_completion_when_pending_member_joins():
    c = client()
    setup = setup_group_with_pending_member(c)
    _, resp = c.join(setup["pendingMemberId"], session_timeout=2500)
    assert resp["errorCode"] == Errors.NONE.code
    g = c.group()
    assert g.state == COMPLETING_REBALANCE and g.num_members() == 3 and g.num_pending_join_members() == 0


def test_join_group_completion_when_pending_member_times_out():
    c = client()
    setup_group_with_pending_member(c)
    c.sleep(3000)  # the pending member's session (2500) lapses; the others' (5000) do not
    g = c.group()
    assert g.state == COMPLETING_REBALANCE and g.num_members() == 2 and g.num_pending_join_members() == 0


def setup_group_with_pending_member(c: GroupTestClient) -> dict:
    """setupGroupWithPendingMember: a Stable group of two, a third member pending (v4+ join
    answered MEMBER_ID_REQUIRED), and the two rejoining: the join waits for the pending member."""
    kw = dict(session_timeout=5000, rebalance_timeout=10000)
    leader_cid, _ = c.join("", version=DYN, **kw)
    follower_cid, _ = c.join("", version=DYN, **kw)
    c.sleep(10000)  # the second member extends the initial delay up to the rebalance timeout
    leader, follower = c.response(leader_cid), c.response(follower_cid)
    c.sync(leader["memberId"], leader["generationId"], {})
    c.sync(follower["memberId"], follower["generationId"])
    assert c.group().state == STABLE
    _, pending = c.join("", session_timeout=2500)
    assert pending["errorCode"] == Errors.MEMBER_ID_REQUIRED.code
    leader_cid, _ = c.join(leader["memberId"], version=DYN, **kw)
    follower_cid, _ = c.join(follower["memberId"], version=DYN, **kw)
    assert c.response(leader_cid) is None and c.response(follower_cid) is None
    assert c.group().state == PREPARING_REBALANCE
    return {"leaderId": leader["memberId"], "followerId": follower["memberId"], "pendingMemberId": pending["memberId"]}


# ====================================================================== static members
def test_static_member_join_as_first_member():
    c = client()
    join_and_complete(c, instance_id="group-instance-id")


def test_static_member_rejoin_with_explicit_unknown_member_id():
    c = client()
    join_and_complete(c, instance_id="group-instance-id", session_timeout=5000, rebalance_timeout=5000)
    _, resp = c.join("unknown-member-id", instance_id="group-instance-id")
    assert resp["errorCode"] == Errors.FENCED_INSTANCE_ID.code


@pytest.mark.parametrize("version", [8, 9])
def test_replace_static_member_in_stable_state_no_error(version):
    c = client()
    first = join_and_complete(c, instance_id="group-instance-id", protos=protocols("range"), version=version)
    old_id = first["memberId"]
    c.mutate(lambda comp: comp.groups[c.group_id].transition_to(STABLE, c.now))  # simulate the sync
    mark = len(c.records())
    new_protos = protocols("range", "roundrobin")
    _, resp = c.join(
        "",
        instance_id="group-instance-id",
        protos=new_protos,
        rebalance_timeout=7000,
        session_timeout=4500,
        version=version,
    )
    g = c.group()
    new_id = g.static_member_id("group-instance-id")
    assert [r[1]["generation"] for r in c.records(mark)] == [1]
    assert c.records(mark)[0][1]["members"][0]["memberId"] == new_id
    expected = {
        "throttleTimeMs": 0,
        "errorCode": 0,
        "generationId": 1,
        "protocolType": "consumer",
        "protocolName": "range",
        "leader": old_id,
        "memberId": new_id,
        "members": [],
    }
    if version >= 9:
        expected.update(
            leader=new_id,
            skipAssignment=True,
            members=[
                {"memberId": new_id, "groupInstanceId": "group-instance-id", "metadata": new_protos[0]["metadata"]}
            ],
        )
    assert resp == expected
    m = g.member(new_id)
    assert (m.rebalance_timeout_ms, m.session_timeout_ms) == (7000, 4500)
    assert [p for p, _ in m.protocols] == ["range", "roundrobin"]
    assert g.num_members() == 1 and g.generation_id == 1 and g.state == STABLE


def test_replace_static_member_in_stable_state_with_updated_protocol_triggers_rebalance():
    c = client()
    join_and_complete(c, instance_id="group-instance-id", protos=protocols("range", "roundrobin"))
    c.mutate(lambda comp: comp.groups[c.group_id].transition_to(STABLE, c.now))
    _, resp = c.join("", instance_id="group-instance-id", protos=protocols("roundrobin"))
    assert resp["errorCode"] == Errors.NONE.code
    g = c.group()
    assert g.num_members() == 1 and g.generation_id == 2 and g.state == COMPLETING_REBALANCE


def test_replace_static_member_in_completing_rebalance_state_triggers_rebalance():
    c = client()
    join_and_complete(c, instance_id="group-instance-id")
    assert c.group().state == COMPLETING_REBALANCE and c.group().generation_id == 1
    _, resp = c.join("", instance_id="group-instance-id")
    assert resp["errorCode"] == Errors.NONE.code
    g = c.group()
    assert g.num_members() == 1 and g.generation_id == 2 and g.state == COMPLETING_REBALANCE


def test_static_member_fence_duplicate_rejoined_follower():
    c = client()
    r = static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    c.join("", version=DYN)  # a third member: rebalance
    assert c.group().state == PREPARING_REBALANCE
    old_cid, resp = c.join(r["followerId"], instance_id="follower-instance-id")
    assert resp is None
    c.join("", instance_id="follower-instance-id")  # a duplicate takes the instance id
    old = c.response(old_cid)
    assert old == {
        "throttleTimeMs": 0,
        "errorCode": Errors.FENCED_INSTANCE_ID.code,
        "generationId": -1,
        "protocolType": None,
        "protocolName": None,
        "leader": "",
        "skipAssignment": False,
        "memberId": r["followerId"],
        "members": [],
    }
    assert c.group().state == PREPARING_REBALANCE


def test_static_member_fence_duplicate_syncing_follower_after_member_id_changed():
    c = client()
    r = static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    kw = dict(protos=r["protocols"], rebalance_timeout=10000)
    leader_cid, resp = c.join(r["leaderId"], instance_id="leader-instance-id", **kw)
    assert resp is None and c.group().state == PREPARING_REBALANCE
    _, follower = c.join(r["followerId"], instance_id="follower-instance-id", **kw)
    leader = c.response(leader_cid)
    assert leader["errorCode"] == Errors.NONE.code and leader["generationId"] == 2 and leader["leader"] == r["leaderId"]
    assert {m["groupInstanceId"] for m in leader["members"]} == {"leader-instance-id", "follower-instance-id"}
    assert (
        follower["errorCode"] == Errors.NONE.code
        and follower["members"] == []
        and follower["memberId"] == r["followerId"]
    )

    old_sync_cid, resp = c.sync(r["followerId"], 2, instance_id="follower-instance-id")
    assert resp is None
    dup_cid, resp = c.join("", instance_id="follower-instance-id", **kw)
    assert resp is None and c.group().state == PREPARING_REBALANCE
    assert c.response(old_sync_cid)["errorCode"] == Errors.FENCED_INSTANCE_ID.code
    # The rebalance timeout: the leader (not rejoined, session 10000) goes; the duplicate stays.
    c.sleep(10000)
    dup = c.response(dup_cid)
    g = c.group()
    assert dup["errorCode"] == Errors.NONE.code and g.state == COMPLETING_REBALANCE and g.generation_id == 3
    assert list(g.members) == [dup["memberId"]] and dup["leader"] == dup["memberId"]


def test_static_member_fence_duplicate_rejoining_follower_after_member_id_changed():
    c = client()
    r = static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    kw = dict(protos=r["protocols"], rebalance_timeout=10000)
    leader_cid, _ = c.join(r["leaderId"], instance_id="leader-instance-id", **kw)
    assert c.group().state == PREPARING_REBALANCE
    dup_cid, dup = c.join("", instance_id="follower-instance-id", **kw)
    assert dup is not None and dup["errorCode"] == Errors.NONE.code  # completes the join with the leader
    _, old = c.join(r["followerId"], instance_id="follower-instance-id", **kw)
    leader = c.response(leader_cid)
    assert leader["generationId"] == 2 and leader["leader"] == r["leaderId"]
    assert {m["groupInstanceId"] for m in leader["members"]} == {"leader-instance-id", "follower-instance-id"}
    assert dup["leader"] == r["leaderId"] and dup["members"] == [] and dup["generationId"] == 2
    assert old == {
        "throttleTimeMs": 0,
        "errorCode": Errors.FENCED_INSTANCE_ID.code,
        "generationId": -1,
        "protocolType": None,
        "protocolName": None,
        "leader": "",
        "skipAssignment": False,
        "memberId": r["followerId"],
        "members": [],
    }


def test_static_member_rejoin_with_known_member_id():
    c = client()
    first = join_and_complete(c, instance_id="group-instance-id")
    _, again = c.join(first["memberId"], instance_id="group-instance-id")
    # Same metadata during CompletingRebalance: answered at once.
    assert again["errorCode"] == Errors.NONE.code and c.group().state == COMPLETING_REBALANCE
    _, sync = c.sync(first["memberId"], first["generationId"], instance_id="group-instance-id")
    assert sync["errorCode"] == Errors.NONE.code and c.group().state == STABLE


@pytest.mark.parametrize("version", [8, 9])
def test_static_member_rejoin_with_leader_id_and_unknown_member_id(version):
    c = client()
    r = static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    mark = len(c.records())
    _, resp = c.join("", instance_id="leader-instance-id", protos=r["protocols"], version=version)
    # No rebalance; the new member id is persisted.
    assert len(c.records(mark)) == 1 and c.records(mark)[0][1]["generation"] == 1
    new_id = resp["memberId"]
    assert resp["errorCode"] == Errors.NONE.code and resp["generationId"] == 1 and c.group().state == STABLE
    assert resp["leader"] == (new_id if version >= 9 else r["leaderId"])
    assert resp.get("skipAssignment", False) is (version >= 9)
    assert {m["groupInstanceId"] for m in resp["members"]} == (
        {"leader-instance-id", "follower-instance-id"} if version >= 9 else set()
    )
    _, old_join = c.join(r["leaderId"], instance_id="leader-instance-id", protos=r["protocols"], version=version)
    assert old_join["errorCode"] == Errors.FENCED_INSTANCE_ID.code
    _, old_sync = c.sync(r["leaderId"], 1, instance_id="leader-instance-id")
    assert old_sync["errorCode"] == Errors.FENCED_INSTANCE_ID.code
    _, old_sync = c.sync(r["leaderId"], 1)
    assert old_sync["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code


def test_static_member_rejoin_with_leader_id_and_known_member_id():
    c = client()
    r = static_members_join_and_rebalance(
        c, "leader-instance-id", "follower-instance-id", rebalance_timeout=10000, session_timeout=10000
    )
    cid, _ = c.join(r["leaderId"], instance_id="leader-instance-id", protos=r["protocols"], rebalance_timeout=10000)
    c.sleep(10000)  # the follower's session lapses: the leader completes the join alone
    resp = c.response(cid)
    assert not c.group().has_member(r["followerId"])
    assert resp["errorCode"] == Errors.NONE.code and resp["generationId"] == 2 and resp["leader"] == r["leaderId"]
    assert [m["groupInstanceId"] for m in resp["members"]] == ["leader-instance-id"]


def test_static_member_rejoin_with_leader_id_and_unexpected_dead_group():
    c = client()
    r = static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    kill(c)
    _, resp = c.join(r["leaderId"], instance_id="leader-instance-id", protos=r["protocols"])
    assert resp["errorCode"] == Errors.COORDINATOR_NOT_AVAILABLE.code


def test_static_member_rejoin_with_leader_id_and_unexpected_empty_group():
    c = client()
    r = static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")

    def empty(comp):
        g = comp.groups[c.group_id]
        g.transition_to(PREPARING_REBALANCE, c.now)
        g.transition_to(EMPTY, c.now)

    c.mutate(empty)
    _, resp = c.join(r["leaderId"], instance_id="leader-instance-id", protos=r["protocols"])
    assert resp["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code


def test_static_member_rejoin_with_follower_id_and_change_of_protocol():
    c = client()
    r = static_members_join_and_rebalance(
        c, "leader-instance-id", "follower-instance-id", rebalance_timeout=10000, session_timeout=15000
    )
    cid, resp = c.join(
        r["followerId"],
        instance_id="follower-instance-id",
        protos=protocols("roundrobin"),
        rebalance_timeout=10000,
        session_timeout=15000,
    )
    assert resp is None
    c.sleep(10000)  # the old leader did not rejoin: re-election
    resp = c.response(cid)
    g = c.group()
    assert (
        resp["errorCode"] == Errors.NONE.code
        and g.has_static_member("leader-instance-id")
        and g.is_leader(r["followerId"])
    )
    assert resp["generationId"] == 2 and resp["protocolName"] == "roundrobin" and resp["leader"] == r["followerId"]
    assert {m["groupInstanceId"] for m in resp["members"]} == {"leader-instance-id", "follower-instance-id"}


def test_static_member_rejoin_with_unknown_member_id_and_change_of_protocol_with_selected_protocol_changed():
    c = client()
    r = static_members_join_and_rebalance(
        c, "leader-instance-id", "follower-instance-id", rebalance_timeout=10000, session_timeout=15000
    )
    assert c.group().select_protocol() != "roundrobin"
    cid, resp = c.join(
        "",
        instance_id="follower-instance-id",
        protos=protocols("roundrobin"),
        rebalance_timeout=10000,
        session_timeout=15000,
    )
    assert resp is None and c.group().select_protocol() == "roundrobin"
    c.sleep(10000)
    resp = c.response(cid)
    assert resp["errorCode"] == Errors.NONE.code and c.group().is_leader(resp["memberId"])
    assert resp["memberId"] != r["followerId"] and resp["protocolName"] == "roundrobin"
    assert {m["groupInstanceId"] for m in resp["members"]} == {"leader-instance-id", "follower-instance-id"}


def test_static_member_rejoin_with_unknown_member_id_and_change_of_protocol_while_select_protocol_unchanged():
    c = client()
    r = static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    mark = len(c.records())
    _, resp = c.join("", instance_id="follower-instance-id", protos=protocols(c.group().select_protocol()))
    assert len(c.records(mark)) == 1
    new_follower = resp["memberId"]
    assert resp["errorCode"] == Errors.NONE.code and resp["generationId"] == 1 and resp["leader"] == r["leaderId"]
    assert resp["skipAssignment"] is False and resp["members"] == [] and new_follower != r["followerId"]
    _, old = c.join(r["followerId"], instance_id="follower-instance-id", protos=protocols("range"))
    assert old["errorCode"] == Errors.FENCED_INSTANCE_ID.code
    _, sync = c.sync(r["followerId"], 1, instance_id="follower-instance-id")
    assert sync["errorCode"] == Errors.FENCED_INSTANCE_ID.code
    _, sync = c.sync(new_follower, 1, instance_id="follower-instance-id")
    assert sync["errorCode"] == Errors.NONE.code and sync["assignment"] == r["followerAssignment"]


def test_static_member_rejoin_with_known_leader_id_to_trigger_rebalance_and_follower_with_change_of_protocol():
    c = client()
    r = static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    kw = dict(protos=r["protocols"], rebalance_timeout=10000, session_timeout=5000)
    leader_cid, _ = c.join(r["leaderId"], instance_id="leader-instance-id", **kw)
    _, follower = c.join(r["followerId"], instance_id="follower-instance-id", **kw)
    leader = c.response(leader_cid)
    assert c.group().state == COMPLETING_REBALANCE and c.group().generation_id == 2
    assert leader["leader"] == r["leaderId"] and len(leader["members"]) == 2 and follower["members"] == []
    cid, resp = c.join(r["followerId"], instance_id="follower-instance-id", **dict(kw, protos=protocols("range")))
    assert resp is None and c.group().state == PREPARING_REBALANCE
    c.sleep(5000)  # the leader's session lapses; the follower awaits join and stays
    resp = c.response(cid)
    assert resp["errorCode"] == Errors.NONE.code and resp["generationId"] == 3 and resp["leader"] == r["followerId"]
    assert [m["groupInstanceId"] for m in resp["members"]] == ["follower-instance-id"]


def test_static_member_rejoin_as_follower_with_unknown_member_id():
    c = client()
    r = static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    mark = len(c.records())
    _, resp = c.join("", instance_id="follower-instance-id", protos=r["protocols"])
    assert len(c.records(mark)) == 1 and c.group().has_static_member("leader-instance-id")
    assert resp["errorCode"] == Errors.NONE.code and resp["generationId"] == 1 and resp["leader"] == r["leaderId"]
    assert resp["memberId"] != r["followerId"] and c.group().state == STABLE
    _, sync = c.sync(resp["memberId"], 1, instance_id="follower-instance-id")
    assert sync["errorCode"] == Errors.NONE.code and sync["assignment"] == r["followerAssignment"]


def test_static_member_rejoin_as_follower_with_known_member_id_and_no_protocol_change():
    c = client()
    r = static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    mark = len(c.records())
    _, resp = c.join(r["followerId"], instance_id="follower-instance-id", protos=r["protocols"])
    assert c.records(mark) == [] and c.group().state == STABLE
    assert resp["errorCode"] == Errors.NONE.code and resp["generationId"] == 1 and resp["memberId"] == r["followerId"]


@pytest.mark.parametrize(
    "instance,member", [("leader-instance-id", "followerId"), ("follower-instance-id", "leaderId")]
)
def test_static_member_rejoin_with_mismatched_instance_id(instance, member):
    # testStaticMemberRejoinAsFollowerWithMismatchedInstanceId / ...AsLeaderWithMismatchedInstanceId
    c = client()
    r = static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    _, resp = c.join(r[member], instance_id=instance, protos=r["protocols"])
    assert resp["errorCode"] == Errors.FENCED_INSTANCE_ID.code


def test_get_different_static_member_id_after_each_rejoin():
    c = client()
    r = static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    last = r["leaderId"]
    for _ in range(5):
        mark = len(c.records())
        _, resp = c.join("", instance_id="leader-instance-id", protos=r["protocols"])
        assert len(c.records(mark)) == 1
        assert resp["errorCode"] == Errors.NONE.code and resp["memberId"] == c.group().static_member_id(
            "leader-instance-id"
        )
        assert resp["memberId"] != last
        last = resp["memberId"]


def test_static_member_join_with_unknown_instance_id_and_known_member_id():
    c = client()
    r = static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")
    _, resp = c.join(r["leaderId"], instance_id="unknown-instance-id", protos=r["protocols"])
    assert resp["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code


def test_static_member_rejoin_with_illegal_state_as_unknown_member():
    c = client()
    static_members_join_and_rebalance(c, "leader-instance-id", "follower-instance-id")

    def empty(comp):
        g = comp.groups[c.group_id]
        g.transition_to(PREPARING_REBALANCE, c.now)
        g.transition_to(EMPTY, c.now)

    c.mutate(empty)
    _, resp = c.join("", instance_id="follower-instance-id", protos=protocols("range", "roundrobin"))
    assert resp["errorCode"] == Errors.UNKNOWN_SERVER_ERROR.code  # IllegalStateException in Kafka
    assert "follower-instance-id" in c.events("RequestFailed")[0]["detail"]


@pytest.mark.parametrize("who_rejoins", ["leader", "follower"])
def test_static_member_fail_to_rejoin_before_rebalance_timeout(who_rejoins):
    # testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout / ...LeaderFailToRejoin...
    c = client()
    r = static_members_join_and_rebalance(
        c, "leader-instance-id", "follower-instance-id", rebalance_timeout=10000, session_timeout=15000
    )
    new_cid, resp = c.join("", instance_id="new-member-instance-id", protos=r["protocols"])
    assert resp is None and c.group().state == PREPARING_REBALANCE
    instance = "leader-instance-id" if who_rejoins == "leader" else "follower-instance-id"
    old_id = r["leaderId"] if who_rejoins == "leader" else r["followerId"]
    old_cid, _ = c.join(old_id, instance_id=instance, protos=r["protocols"])
    c.sleep(10000)
    old, new = c.response(old_cid), c.response(new_cid)
    assert old["errorCode"] == Errors.NONE.code and new["errorCode"] == Errors.NONE.code
    leader_resp = old if old["leader"] == old["memberId"] else new
    follower_resp = new if leader_resp is old else old
    assert leader_resp["generationId"] == 2
    assert {m["groupInstanceId"] for m in leader_resp["members"]} == {
        "leader-instance-id",
        "follower-instance-id",
        "new-member-instance-id",
    }
    assert follower_resp["members"] == [] and follower_resp["leader"] == leader_resp["memberId"]
    if who_rejoins == "leader":
        assert leader_resp is old
    assert c.group().state == COMPLETING_REBALANCE and c.group().num_members() == 3
