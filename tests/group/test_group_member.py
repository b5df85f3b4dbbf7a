"""The classic group member client (client/classic_group.py) against the real coordinator core served
in-process on the wall clock (tests/client/local_service.py): the protocol logic of the client, in
seconds. The same client runs through the real broker and Spark job in
tests/integration/test_classic_groups_e2e.py."""

from __future__ import annotations

import itertools
import time

import pytest

from client.admin import GroupAdmin
from client.classic_group import STABLE, ClassicGroupMember
from coordinator.errors import Errors
from tests.client.local_service import LocalService

TOPICS = {"orders": 7, "payments": 3}
SESSION = 600


@pytest.fixture
def service():
    s = LocalService(**{"group.min.session.timeout.ms": 100, "group.initial.rebalance.delay.ms": 150})
    yield s
    s.close()


_ids = itertools.count()


@pytest.fixture
def members(service):
    made: list[ClassicGroupMember] = []

    def make(group_id: str, topics=("orders", "payments"), instance_id: str | None = None, **kw) -> ClassicGroupMember:
        client = service.client(f"consumer-{group_id}-{next(_ids)}")
        kw.setdefault("session_timeout_ms", SESSION)
        kw.setdefault("heartbeat_interval_ms", 100)
        kw.setdefault("rebalance_timeout_ms", 3000)
        m = ClassicGroupMember(
            None, group_id, list(topics), group_instance_id=instance_id, client=client, partitions_for=TOPICS.get, **kw
        )
        made.append(m)
        return m.start()

    yield make
    for m in made:
        m.abandon()


def expected_range(member_ids: list[str]) -> dict[str, dict[str, list[int]]]:
    ordered = sorted(member_ids)
    out: dict[str, dict[str, list[int]]] = {m: {} for m in ordered}
    for topic, n in TOPICS.items():
        q, extra = divmod(n, len(ordered))
        start = 0
        for i, m in enumerate(ordered):
            k = q + (i < extra)
            if k:
                out[m][topic] = list(range(start, start + k))
            start += k
    return out


def converged(ms: list[ClassicGroupMember], generation: int, exact: bool = True) -> int:
    """Wait until every member is Stable in one generation (`generation`, or with exact=False at
    least that one) holding the range assignment of exactly these members; returns it."""
    deadline = time.monotonic() + 15
    while True:
        for m in ms:
            m.wait_stable(generation, timeout=max(0.1, deadline - time.monotonic()))
        gens = {m.generation.generation_id for m in ms}
        if len(gens) == 1 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert gens == {generation} if exact else len(gens) == 1, gens
    assert {m.member_id: m.assignment for m in ms} == expected_range([m.member_id for m in ms])
    assert sum(m.is_leader for m in ms) == 1
    return gens.pop()


def test_three_members_one_generation_range_assignment_by_the_leader(service, members):
    ms = [members("g3") for _ in range(3)]
    converged(ms, 1)
    # Each dynamic member did the MEMBER_ID_REQUIRED round trip, then joined with its id.
    assert [m.joins_sent for m in ms] == [2, 2, 2]
    assert all(m.member_id.startswith(m.client_id + "-") for m in ms)
    g = service.group("g3")
    assert (g.state, g.generation_id, g.protocol_name, g.protocol_type) == (STABLE.title(), 1, "range", "consumer")
    assert all(len(m.join_sync_ms) == 1 and m.join_sync_ms[0] > 0 for m in ms)


def test_commit_then_fetch_and_a_killed_member_is_replaced_after_its_session_timeout(service, members):
    ms = [members("gk") for _ in range(3)]
    converged(ms, 1)
    committed = {}
    for i, m in enumerate(ms):
        offsets = {(t, p): 100 * i + p for t, ps in m.assignment.items() for p in ps}
        assert set(m.commit(offsets).values()) == {"NONE"}
        committed.update(offsets)
    victim = ms.pop(1)
    victim.abandon()  # no LeaveGroup: only its session timeout removes it
    converged(ms, 2)
    expired = service.events_named("MemberSessionExpired", "gk")
    assert [e["memberId"] for e in expired] == [victim.member_id]
    started = service.events_named("RebalanceStarted", "gk")[-1]
    assert f"removing member {victim.member_id} on heartbeat expiration" in started["reason"]
    # The new owners read what was committed before, including the dead member's partitions.
    for m in ms:
        assert m.committed() == {tp: committed[tp] for tp in m.committed()}
    assert {tp for m in ms for tp in m.committed()} == set(committed)
    # A commit from the old generation is refused.
    assert set(victim_commit(service, victim).values()) == {"UNKNOWN_MEMBER_ID"}


def victim_commit(service, victim: ClassicGroupMember) -> dict:
    ghost = ClassicGroupMember(None, victim.group_id, [], client=service.client("ghost"), partitions_for=TOPICS.get)
    ghost.generation = victim.generation
    return ghost.commit({("orders", 0): 1})


def test_close_sends_leave_group_and_the_others_rebalance_at_once(service, members):
    ms = [members("gl") for _ in range(2)]
    converged(ms, 1)
    ms[0].close()
    converged(ms[1:], 2)
    left = service.events_named("MemberLeft", "gl")
    assert [(e["memberId"], e["reason"]) for e in left] == [(ms[0].member_id, "the consumer is being closed")]
    assert not service.events_named("MemberSessionExpired", "gl")


def test_static_leader_and_follower_restart_without_a_rebalance(service, members):
    a = members("gs", instance_id="a", session_timeout_ms=5000)
    b = members("gs", instance_id="b", session_timeout_ms=5000)
    converged([a, b], 1)
    assert [a.joins_sent, b.joins_sent] == [1, 1]  # static members get no MEMBER_ID_REQUIRED
    before = {m.group_instance_id: (m.member_id, m.assignment) for m in (a, b)}
    for old in sorted((a, b), key=lambda m: not m.is_leader):  # the leader first
        was_leader = old.is_leader
        old.abandon()
        new = members("gs", instance_id=old.group_instance_id, session_timeout_ms=5000)
        new.wait_stable(1, timeout=10)
        assert new.generation.generation_id == 1 and new.assignment == before[old.group_instance_id][1]
        assert new.member_id != old.member_id and new.is_leader == was_leader
        # A restarted static leader (v9) is told to skip the assignment (KIP-814).
        assert new.last_join_response["skipAssignment"] is was_leader
    assert len(service.events_named("RebalanceStarted", "gs")) == 1  # only the initial one
    assert len(service.events_named("StaticMemberReplaced", "gs")) == 2
    assert service.group("gs").generation_id == 1


def test_a_second_process_with_the_same_instance_id_fences_the_first(service, members):
    a = members("gf", instance_id="same", session_timeout_ms=5000)
    a.wait_stable(1, timeout=10)
    b = members("gf", instance_id="same", session_timeout_ms=5000)
    b.wait_stable(1, timeout=10)
    # a's next heartbeat names the replaced member id: FENCED_INSTANCE_ID, fatal for a.
    with pytest.raises(Exception) as e:
        a.wait_for(lambda m: False, timeout=5)
    assert a.fatal_error is not None and a.fatal_error.error is Errors.FENCED_INSTANCE_ID, e.value
    assert b.state == STABLE and b.generation.generation_id == 1


def test_removed_static_member_rejoins_after_unknown_member_id(service, members):
    a = members("gu", instance_id="a", session_timeout_ms=5000)
    b = members("gu", instance_id="b", session_timeout_ms=5000)
    converged([a, b], 1)
    old_id = a.member_id
    # The admin removes static member "a" by instance id (LeaveGroup with memberId "").
    admin = service.client("admin")
    r = admin.request(
        "LeaveGroup",
        5,
        {"groupId": "gu", "members": [{"memberId": "", "groupInstanceId": "a", "reason": "admin removal"}]},
    )
    assert r["members"][0]["errorCode"] == 0
    # a's heartbeat gets UNKNOWN_MEMBER_ID: it forgets its id and joins again as a new member;
    # b's gets REBALANCE_IN_PROGRESS and rejoins. Whether a's join makes it into generation 2
    # or starts generation 3 depends on which heartbeat comes first.
    converged([a, b], 2, exact=False)
    assert a.member_id != old_id and a.fatal_error is None


def test_stalled_member_holds_the_rebalance_until_it_resumes(service, members):
    a = members("gh")
    b = members("gh")
    converged([a, b], 1)
    b.stall()
    c = members("gh")
    a.wait_for(lambda m: m.state != STABLE, timeout=5)  # a rejoined; its JoinGroup is parked
    assert service.group("gh").state == "PreparingRebalance"
    b.resume()
    converged([a, b, c], 2)


def test_admin_lists_every_partition_and_describes_groups(service, members):
    ms = [members(g) for g in ("adm-1", "adm-2")]
    for m in ms:
        m.wait_stable(1, timeout=10)
    admin = GroupAdmin(service.client("admin"), partitions=service.config["coordinator.partitions"])
    listed = {g["groupId"]: g for g in admin.list_groups()}
    assert {"adm-1", "adm-2"} <= set(listed)
    assert listed["adm-1"]["groupState"] == "Stable" and listed["adm-1"]["groupType"] == "classic"
    described = admin.describe_groups(["adm-1", "adm-2", "no-such-group"])
    assert described["adm-1"]["members"][0]["memberId"] == ms[0].member_id
    assert described["no-such-group"]["errorCode"] == Errors.GROUP_ID_NOT_FOUND.code
    from coordinator.group.classic.consumer_protocol import decode_assignment

    assert decode_assignment(described["adm-2"]["members"][0]["memberAssignment"]).as_dict() == ms[1].assignment
    p = listed["adm-1"]["coordinatorPartition"]
    assert [g["groupId"] for g in admin.list_groups(partitions=[p])] == sorted(
        g for g, e in listed.items() if e["coordinatorPartition"] == p
    )
