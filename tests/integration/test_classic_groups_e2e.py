"""Classic consumer groups end to end: the group member client (client/classic_group.py) through the
real Kafka broker and the real Spark job.

- three members form one generation (the broker's default `group.initial.rebalance.delay.ms`,
  3 s, gathers them) with the range assignment the leader computes from the broker's partition
  counts; one is killed and the others rebalance after its session timeout; the offsets committed
  before are fetched by the new owners after;
- static members restart (leader and follower) without a rebalance;
- the job is SIGKILLed while JoinGroup responses are parked; after the restart the rebalance
  completes and the members converge;
- every rebalance and expiry has its event with a reason, and rebuilding each coordinator
  partition from the real state-log topic gives the job's state (read from the checkpoint).
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

from client.admin import GroupAdmin
from client.classic_group import STABLE, ClassicGroupMember
from client.topic_reader import events as read_events
from client.topic_reader import read_records, state_log
from coordinator import CoordinatorPartition, Errors, coordinator_partition
from coordinator.group.classic.consumer_protocol import decode_assignment
from coordinator.messages import StateRecord
from streaming.inspect_state import read_states
from tests.group.test_group_replay import normalized

pytestmark = pytest.mark.integration

TOPICS = {"e2e-orders": 7, "e2e-payments": 3}
# kafka-python's default session timeout. At the broker's minimum (6 s) a member can expire between
# a timer-driven JoinGroup answer and its SyncGroup: its session restarts at the join's logical
# completion time, and the answer reaches it the timer grace (1 s) plus a micro-batch or two later,
# several seconds on a loaded machine (see docs/protocol.md, classic groups, deviations).
SESSION_MS = 10000
HEARTBEAT_MS = 2000
WAIT = 120  # seconds; the machine is shared and one request round trip is about a second


@pytest.fixture(scope="module")
def job(job_factory, kafka):
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()])
    except TopicAlreadyExistsError:
        pass
    finally:
        admin.close()
    # Kafka's defaults for the group coordinator (3 s initial rebalance delay, 6 s minimum session).
    job = job_factory()
    warm_up(job)
    return job


def warm_up(job) -> None:
    """The first micro-batches of a (re)started query are slow (Python workers, state stores):
    one round trip first, so that what follows runs at the job's steady pace."""
    client = job.client(f"e2e-warm-up-{job.starts}")
    try:
        t = time.monotonic()
        client.request("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["warm-up"]}, timeout=WAIT)
        print(f"\nfirst round trip after the job started: {time.monotonic() - t:.1f} s")
    finally:
        client.close()


@pytest.fixture(scope="module")
def members(job):
    made: list[ClassicGroupMember] = []

    def make(group_id: str, *, start: bool = True, **kw) -> ClassicGroupMember:
        kw.setdefault("session_timeout_ms", SESSION_MS)
        kw.setdefault("heartbeat_interval_ms", HEARTBEAT_MS)
        kw.setdefault("rebalance_timeout_ms", 60000)
        m = ClassicGroupMember(
            job.bootstrap,
            group_id,
            list(TOPICS),
            requests_topic=job.topics["requests"],
            responses_topic=job.topics["responses"],
            **kw,
        )
        made.append(m)
        return m.start() if start else m

    yield make
    for m in made:
        m.abandon()


def start_together(ms: list[ClassicGroupMember]) -> None:
    threads = [threading.Thread(target=m.start) for m in ms]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def expected_range(ms: list[ClassicGroupMember]) -> dict[str, dict[str, list[int]]]:
    """Kafka's RangeAssignor for these members: static first by instance id, then by member id."""
    order = sorted(ms, key=lambda m: (m.group_instance_id is None, m.group_instance_id or m.member_id))
    out: dict[str, dict[str, list[int]]] = {m.member_id: {} for m in ms}
    for topic, n in TOPICS.items():
        q, extra = divmod(n, len(order))
        start = 0
        for i, m in enumerate(order):
            k = q + (i < extra)
            if k:
                out[m.member_id][topic] = list(range(start, start + k))
            start += k
    return out


def converge(ms: list[ClassicGroupMember], min_generation: int, timeout: float = WAIT) -> int:
    """Every member Stable in one generation >= min_generation, holding the range assignment of
    exactly these members; returns the generation."""
    deadline = time.monotonic() + timeout
    while True:
        for m in ms:
            m.wait_stable(min_generation, timeout=max(1.0, deadline - time.monotonic()))
        generations = {m.generation.generation_id for m in ms}
        if len(generations) == 1 and all(m.state == STABLE for m in ms):
            break
        assert time.monotonic() < deadline, f"members did not converge: {[str(m.generation) for m in ms]}"
        time.sleep(0.2)
    assert {m.member_id: m.assignment for m in ms} == expected_range(ms)
    assert sum(m.is_leader for m in ms) == 1
    return generations.pop()


def group_events(job, group_id: str, until=None, timeout: float = 30) -> list[dict]:
    """The group's events (until `until(events)` holds, or timeout), without the copies a
    replayed micro-batch writes again."""

    def parse(recs) -> list[dict]:
        out = {}
        for r in recs:
            if r.key == group_id.encode("utf-8") and r.value:
                out.setdefault(r.value, json.loads(r.value))
        return list(out.values())

    recs = read_records(
        job.bootstrap,
        job.topics["events"],
        timeout_s=timeout,
        until=None if until is None else (lambda recs: until(parse(recs))),
    )
    return parse(recs)


def named(evs: list[dict], name: str) -> list[dict]:
    return [e for e in evs if e["event"] == name]


# ====================================================================== scenarios


def test_three_members_form_a_group_lose_one_to_its_session_timeout_and_keep_their_offsets(job, members):
    group = "e2e-classic-three"
    ms = [members(group, start=False) for _ in range(3)]
    start_together(ms)
    assert converge(ms, 1) == 1  # the initial delay gathered all three in one generation
    leader = next(m for m in ms if m.is_leader)
    assert len(leader.last_join_response["members"]) == 3  # the leader got every subscription
    assert [m.joins_sent for m in ms] == [2, 2, 2]  # MEMBER_ID_REQUIRED, then the join with the id
    latencies = sorted(m.join_sync_ms[0] for m in ms)
    print(
        f"\njoin->sync, 3 members joining together (initial delay 3000 ms): "
        f"{', '.join(f'{x:.0f}' for x in latencies)} ms"
    )

    evs = group_events(job, group, until=lambda es: named(es, "RebalanceCompleted"))
    first = named(evs, "RebalanceStarted")[0]
    assert first["initial"] is True and first["generationId"] == 0
    assert first["reason"].startswith("Adding new member ")
    done = named(evs, "RebalanceCompleted")[0]
    assert done["generationId"] == 1 and sorted(done["memberIds"]) == sorted(m.member_id for m in ms)

    committed = {}
    for i, m in enumerate(ms):
        offsets = {(t, p): 1000 * (i + 1) + p for t, ps in m.assignment.items() for p in ps}
        assert set(m.commit(offsets, metadata=f"by {m.member_id}").values()) == {"NONE"}
        committed.update(offsets)
    assert len(committed) == sum(TOPICS.values())

    victim = ms.pop(1)
    killed_at = time.monotonic()
    victim.abandon()  # a killed consumer: no LeaveGroup, its heartbeats just stop
    assert converge(ms, 2) == 2
    took = time.monotonic() - killed_at
    assert took >= SESSION_MS / 1000 - HEARTBEAT_MS / 1000 - 0.5, took

    evs = group_events(
        job, group, until=lambda es: any(e["generationId"] == 2 for e in named(es, "RebalanceCompleted"))
    )
    expired = named(evs, "MemberSessionExpired")
    assert [(e["memberId"], e["pending"]) for e in expired] == [(victim.member_id, False)]
    second = named(evs, "RebalanceStarted")[1]
    assert second["reason"] == f"removing member {victim.member_id} on heartbeat expiration."
    assert second["generationId"] == 1 and second["initial"] is False
    assert sorted(named(evs, "RebalanceCompleted")[1]["memberIds"]) == sorted(m.member_id for m in ms)

    # The new owners fetch what was committed before the rebalance, the dead member's included.
    fetched = {}
    for m in ms:
        fetched.update(m.committed())
    assert fetched == committed
    # The killed member's generation is gone: a commit in its name is refused.
    client = job.client(f"ghost-{group}")
    try:
        r = client.request(
            "OffsetCommit",
            9,
            {
                "groupId": group,
                "generationIdOrMemberEpoch": 1,
                "memberId": victim.member_id,
                "groupInstanceId": None,
                "topics": [
                    {
                        "name": "e2e-orders",
                        "partitions": [
                            {
                                "partitionIndex": 0,
                                "committedOffset": 1,
                                "committedLeaderEpoch": -1,
                                "committedMetadata": None,
                            }
                        ],
                    }
                ],
            },
            timeout=WAIT,
        )
        assert r["topics"][0]["partitions"][0]["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    finally:
        client.close()


def test_a_static_member_restarts_without_a_rebalance(job, members):
    group = "e2e-classic-static"
    kw = dict(session_timeout_ms=30000, heartbeat_interval_ms=2000)
    ms = [members(group, group_instance_id=f"instance-{i}", start=False, **kw) for i in range(2)]
    start_together(ms)
    assert converge(ms, 1) == 1
    assert [m.joins_sent for m in ms] == [1, 1]  # static members get no MEMBER_ID_REQUIRED
    before = {m.group_instance_id: m.assignment for m in ms}
    old_leader = next(m for m in ms if m.is_leader)
    follower = next(m for m in ms if not m.is_leader)

    # The leader's process dies and a new one starts with the same instance id (a new client id,
    # a new member id): no rebalance, the same generation and assignment, and JoinGroup v9 tells
    # the new leader to skip the assignment (KIP-814).
    old_leader.abandon()
    new_leader = members(group, group_instance_id=old_leader.group_instance_id, **kw)
    new_leader.wait_stable(1, timeout=WAIT)
    assert new_leader.generation.generation_id == 1 and new_leader.is_leader
    assert new_leader.member_id != old_leader.member_id
    assert new_leader.last_join_response["skipAssignment"] is True
    assert new_leader.assignment == before[old_leader.group_instance_id]
    assert new_leader.join_sync_ms[0] < 30000

    # A new process for the follower's instance id starts while the old one still runs (a zombie):
    # the new one takes over without a rebalance, the old one is fenced on its next heartbeat.
    replacement = members(group, group_instance_id=follower.group_instance_id, **kw)
    replacement.wait_stable(1, timeout=WAIT)
    assert replacement.assignment == before[follower.group_instance_id]
    follower.wait_for(lambda m: m.fatal_error is not None, timeout=WAIT)
    assert follower.fatal_error.error is Errors.FENCED_INSTANCE_ID

    time.sleep(2 * kw["heartbeat_interval_ms"] / 1000)  # heartbeats go on without a rebalance
    assert all(m.state == STABLE and m.generation.generation_id == 1 for m in (new_leader, replacement))
    evs = group_events(job, group, until=lambda es: len(named(es, "StaticMemberReplaced")) >= 2)
    assert len(named(evs, "RebalanceStarted")) == 1  # the initial one only
    assert [(e["groupInstanceId"], e["oldMemberId"], e["newMemberId"]) for e in named(evs, "StaticMemberReplaced")] == [
        (old_leader.group_instance_id, old_leader.member_id, new_leader.member_id),
        (follower.group_instance_id, follower.member_id, replacement.member_id),
    ]


def test_sigkill_while_join_responses_are_parked_then_the_rebalance_completes(job, members):
    group = "e2e-classic-kill"
    kw = dict(rebalance_timeout_ms=180000)  # the rebalance waits through the restart
    a, b = members(group, start=False, **kw), members(group, start=False, **kw)
    start_together([a, b])
    assert converge([a, b], 1) == 1

    # b's poll loop stalls (heartbeats go on, it does not rejoin); c joins; a rejoins on its next
    # heartbeat. a's and c's JoinGroup responses are parked until b rejoins.
    b.stall()
    c = members(group, **kw)
    a.wait_for(lambda m: m.state != STABLE, timeout=WAIT)
    c.wait_for(lambda m: m.joins_sent == 2, timeout=WAIT)
    time.sleep(0.5)
    job.wait_caught_up()  # both JoinGroups are applied and committed: parked in the job's state
    evs = group_events(job, group, until=lambda es: len(named(es, "RebalanceStarted")) >= 2)
    assert named(evs, "RebalanceStarted")[1]["reason"].startswith(f"Adding new member {c.member_id}")
    joins = (a.joins_sent, c.joins_sent)
    assert a.state != STABLE and c.state != STABLE

    job.kill()
    time.sleep(3)  # requests (b's heartbeats) keep arriving while the job is down
    job.start()
    warm_up(job)
    b.resume()
    assert converge([a, b, c], 2) == 2
    # a and c got the answers to the JoinGroups they sent before the kill: no retry was needed.
    assert (a.joins_sent, c.joins_sent) == joins
    evs = group_events(
        job, group, until=lambda es: any(e["generationId"] == 2 for e in named(es, "RebalanceCompleted"))
    )
    assert len(named(evs, "RebalanceStarted")) == 2  # no extra rebalance across the kill
    assert not named(evs, "MemberSessionExpired") and not named(evs, "MembersRemoved")


def test_admin_lists_the_groups_of_every_coordinator_partition_and_describes_them(job, members):
    single = members("e2e-classic-single")
    single.wait_stable(1, timeout=WAIT)
    print(f"\njoin->sync, 1 member (initial delay 3000 ms): {single.join_sync_ms[0]:.0f} ms")
    client = job.client("e2e-admin")
    try:
        admin = GroupAdmin(client, partitions=job.cfg.coordinator_partitions)
        listed = {g["groupId"]: g for g in admin.list_groups()}
        for gid in ("e2e-classic-three", "e2e-classic-static", "e2e-classic-kill", "e2e-classic-single"):
            assert listed[gid]["groupState"] == "Stable" and listed[gid]["protocolType"] == "consumer"
            assert listed[gid]["groupType"] == "classic"
            assert listed[gid]["coordinatorPartition"] == coordinator_partition(gid, job.cfg.coordinator_partitions)
        p = listed["e2e-classic-single"]["coordinatorPartition"]
        assert [g["groupId"] for g in admin.list_groups(partitions=[p])] == sorted(
            g for g, e in listed.items() if e["coordinatorPartition"] == p
        )
        described = admin.describe_groups(["e2e-classic-single"])["e2e-classic-single"]
        assert (described["groupState"], described["protocolData"]) == ("Stable", "range")
        [m] = described["members"]
        assert m["memberId"] == single.member_id and m["clientId"] == single.client_id
        assert (
            decode_assignment(m["memberAssignment"]).as_dict()
            == single.assignment
            == {t: list(range(n)) for t, n in TOPICS.items()}
        )
    finally:
        client.close()


def test_every_rebalance_has_an_event_and_the_state_log_rebuilds_the_jobs_state(job, members):
    groups = ["e2e-classic-three", "e2e-classic-static", "e2e-classic-kill", "e2e-classic-single"]
    all_events = read_events(job.bootstrap, job.topics["events"], timeout_s=30)
    for gid in groups:
        evs = {json.dumps(e, sort_keys=True): e for e in all_events if e.get("groupId") == gid}.values()
        to_preparing = [e for e in evs if e["event"] == "GroupStateChanged" and e["toState"] == "PreparingRebalance"]
        started = [e for e in evs if e["event"] == "RebalanceStarted"]
        assert len(started) == len(to_preparing) >= 1
        assert all(e["reason"] for e in started)

    # Stop the job between micro-batches while every group is at rest (Stable or Empty), then
    # compare what the checkpoint holds with what replaying the state-log topic rebuilds.
    job.wait_caught_up()
    job.stop()
    config = job.cfg.coordinator_config()
    states = read_states(str(job.cfg.checkpoint))
    partitions = {coordinator_partition(g, config["coordinator.partitions"]) for g in groups}
    for p in sorted(partitions):
        live = CoordinatorPartition(p, config, states[p])
        records = [StateRecord(k, v) for k, v in state_log(job.bootstrap, job.topics["state_log"], p, timeout_s=30)]
        rebuilt = CoordinatorPartition.from_records(p, records, config=config, now_ms=live.clock_ms)
        live_groups = live.component("groups")
        assert all(g.state in ("Stable", "Empty") for g in live_groups.groups.values())
        assert normalized(rebuilt.component("groups")) == normalized(live_groups)
    assert {
        g
        for p in partitions
        for g in normalized(CoordinatorPartition(p, config, states[p]).component("groups"))["groups"]
    } >= set(groups)
