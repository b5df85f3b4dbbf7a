"""Classic consumer groups end to end: the group member client (client/classic_group.py) through the
real Kafka broker and the real Spark job.

- three members form one generation (the broker's default `group.initial.rebalance.delay.ms`,
  3 s, gathers them) with the range assignment the leader computes from the broker's partition
  counts; one is killed and the others rebalance after its session timeout; the offsets committed
  before are fetched by the new owners after;
- static members restart (leader and follower) without a rebalance;
- every rebalance and expiry has its event with a reason, and rebuilding each coordinator
  partition from the real state-log topic gives the job's state of this module's groups (read from
  the running job's checkpoint, at a committed micro-batch).

The module runs on the test run's shared job (tests/integration/conftest.py), which keeps Kafka's
classic-group defaults; its groups, topics and client ids are its own.
"""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from client.admin import GroupAdmin
from client.classic_group import STABLE, ClassicGroupMember
from client.drill.verify import CheckpointStates
from client.topic_reader import end_offsets, state_log
from client.topic_reader import events as read_events
from coordinator import CoordinatorPartition, Errors, coordinator_partition
from coordinator.group.classic.consumer_protocol import decode_assignment
from coordinator.messages import StateRecord
from streaming.inspect_state import committed_progress
from tests.group.test_group_replay import normalized

from .flows import converge, group_events, named, start_together
from .harness import wait_topics_known

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("plain")]

TOPICS = {"classic-e2e-orders": 7, "classic-e2e-payments": 3}
GROUPS = ["e2e-classic-three", "e2e-classic-static", "e2e-classic-single"]  # this module's groups
# kafka-python's default session timeout. At the broker's minimum (6 s) a member can expire between
# a timer-driven JoinGroup answer and its SyncGroup: its session restarts at the join's logical
# completion time, and the answer reaches it the timer grace (1 s) plus a micro-batch or two later,
# several seconds on a loaded machine (see docs/protocol.md, classic groups, deviations).
SESSION_MS = 10000
HEARTBEAT_MS = 2000
WAIT = 120  # seconds; the machine is shared and one request round trip is about a second


@pytest.fixture(scope="module")
def events_start(job) -> dict[int, int]:
    """The events topic's end offsets before this module's first request (the module reads only
    what comes after); then the data topics, known to every coordinator partition. Their probe is
    the module's first round trip: what follows runs at the job's steady pace."""
    start = end_offsets(job.bootstrap, job.topics["events"])
    t = time.monotonic()
    wait_topics_known(job, TOPICS)
    print(f"\ndata topics known to the job after {time.monotonic() - t:.1f} s")
    return start


@pytest.fixture(scope="module")
def members(job, events_start):
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


# ====================================================================== scenarios


def test_three_members_form_a_group_lose_one_to_its_session_timeout_and_keep_their_offsets(job, members, events_start):
    group = "e2e-classic-three"
    ms = [members(group, start=False) for _ in range(3)]
    start_together(ms)
    assert converge(ms, 1, TOPICS) == 1  # the initial delay gathered all three in one generation
    leader = next(m for m in ms if m.is_leader)
    assert len(leader.last_join_response["members"]) == 3  # the leader got every subscription
    assert [m.joins_sent for m in ms] == [2, 2, 2]  # MEMBER_ID_REQUIRED, then the join with the id
    latencies = sorted(m.join_sync_ms[0] for m in ms)
    print(
        f"\njoin->sync, 3 members joining together (initial delay 3000 ms): "
        f"{', '.join(f'{x:.0f}' for x in latencies)} ms"
    )

    evs = group_events(job, group, events_start, until=lambda es: named(es, "RebalanceCompleted"))
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
    assert converge(ms, 2, TOPICS) == 2
    took = time.monotonic() - killed_at
    assert took >= SESSION_MS / 1000 - HEARTBEAT_MS / 1000 - 0.5, took

    evs = group_events(
        job,
        group,
        events_start,
        until=lambda es: any(e["generationId"] == 2 for e in named(es, "RebalanceCompleted")),
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
    client = job.client(f"classic-e2e-ghost-{group}")
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
                        "name": "classic-e2e-orders",
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


def test_a_static_member_restarts_without_a_rebalance(job, members, events_start):
    group = "e2e-classic-static"
    kw = dict(session_timeout_ms=30000, heartbeat_interval_ms=2000)
    ms = [members(group, group_instance_id=f"instance-{i}", start=False, **kw) for i in range(2)]
    start_together(ms)
    assert converge(ms, 1, TOPICS) == 1
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
    evs = group_events(job, group, events_start, until=lambda es: len(named(es, "StaticMemberReplaced")) >= 2)
    assert len(named(evs, "RebalanceStarted")) == 1  # the initial one only
    assert [(e["groupInstanceId"], e["oldMemberId"], e["newMemberId"]) for e in named(evs, "StaticMemberReplaced")] == [
        (old_leader.group_instance_id, old_leader.member_id, new_leader.member_id),
        (follower.group_instance_id, follower.member_id, replacement.member_id),
    ]


def test_admin_lists_the_groups_of_every_coordinator_partition_and_describes_them(job, members):
    single = members("e2e-classic-single")
    single.wait_stable(1, timeout=WAIT)
    print(f"\njoin->sync, 1 member (initial delay 3000 ms): {single.join_sync_ms[0]:.0f} ms")
    client = job.client("classic-e2e-admin")
    try:
        admin = GroupAdmin(client, partitions=job.cfg.coordinator_partitions)
        # The job holds other modules' groups too: only this module's are checked by name.
        listed = {g["groupId"]: g for g in admin.list_groups()}
        for gid in GROUPS:
            assert listed[gid]["groupState"] == "Stable" and listed[gid]["protocolType"] == "consumer"
            assert listed[gid]["groupType"] == "classic"
            assert listed[gid]["coordinatorPartition"] == coordinator_partition(gid, job.cfg.coordinator_partitions)
        # One coordinator partition's listing: its groups only (whoever's), sorted, this module's among them.
        p = listed["e2e-classic-single"]["coordinatorPartition"]
        on_p = [g["groupId"] for g in admin.list_groups(partitions=[p])]
        assert on_p == sorted(on_p)
        assert all(coordinator_partition(g, job.cfg.coordinator_partitions) == p for g in on_p)
        assert {g for g in GROUPS if listed[g]["coordinatorPartition"] == p} <= set(on_p)
        assert set(on_p) <= {g for g, e in listed.items() if e["coordinatorPartition"] == p}  # none from nowhere
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


def own_groups(comp, groups: list[str]) -> dict:
    """`normalized` of the groups component, restricted to `groups` (with their offsets): the
    shared job's coordinator partitions hold other modules' groups (of every type) too."""
    view = SimpleNamespace(
        groups={g: comp.groups[g] for g in groups if g in comp.groups},
        offsets=SimpleNamespace(
            committed={g: comp.offsets.committed[g] for g in groups if g in comp.offsets.committed},
            pending={pid: {g: o for g, o in gs.items() if g in groups} for pid, gs in comp.offsets.pending.items()},
        ),
    )
    return normalized(view)


def test_every_rebalance_has_an_event_and_the_state_log_rebuilds_the_jobs_state(job, members, events_start):
    all_events = read_events(job.bootstrap, job.topics["events"], timeout_s=30, start=events_start)
    for gid in GROUPS:
        evs = {json.dumps(e, sort_keys=True): e for e in all_events if e.get("groupId") == gid}.values()
        to_preparing = [e for e in evs if e["event"] == "GroupStateChanged" and e["toState"] == "PreparingRebalance"]
        started = [e for e in evs if e["event"] == "RebalanceStarted"]
        assert len(started) == len(to_preparing) >= 1
        assert all(e["reason"] for e in started)

    # Every group of this module at rest (its live members Stable, the others gone) before the
    # checkpoint is read: the committed batch below covers these DescribeGroups.
    client = job.client("classic-e2e-rest")
    try:
        admin = GroupAdmin(client, partitions=job.cfg.coordinator_partitions)
        deadline = time.monotonic() + WAIT
        while True:
            at_rest = {g: d["groupState"] for g, d in admin.describe_groups(GROUPS).items()}
            if set(at_rest.values()) <= {"Stable", "Empty"}:
                break
            assert time.monotonic() < deadline, f"groups not at rest: {at_rest}"
            time.sleep(0.2)
    finally:
        client.close()

    # The job runs on (it is shared): the state of a committed micro-batch (its files are
    # immutable) against a replay of the state-log topic, read after that batch was committed, so
    # it holds at least what the batch wrote (later records are other modules' groups: this
    # module's are at rest). A running job purges old batches: one purged meanwhile is read again.
    config = job.cfg.coordinator_config()
    partitions = {coordinator_partition(g, config["coordinator.partitions"]) for g in GROUPS}
    checkpoint = CheckpointStates(str(job.cfg.checkpoint), job.cfg.stream.get("state_store", "rocksdb"))
    checkpoint.open()  # the reader's Spark session first (slow), then the batch id
    try:
        for attempt in range(3):
            job.wait_caught_up()
            batch = committed_progress(str(job.cfg.checkpoint))[0]
            try:
                states = checkpoint.read(batch)
                break
            except Exception as e:  # noqa: BLE001 - the running job may have purged that batch meanwhile
                if attempt == 2 or "OFFSET_LOG_UNAVAILABLE" not in str(e):
                    raise
    finally:
        checkpoint.close()
    seen: set[str] = set()
    for p in sorted(partitions):
        live = CoordinatorPartition(p, config, states[p])
        records = [StateRecord(k, v) for k, v in state_log(job.bootstrap, job.topics["state_log"], p, timeout_s=30)]
        rebuilt = CoordinatorPartition.from_records(p, records, config=config, now_ms=live.clock_ms)
        live_groups = live.component("groups")
        assert all(live_groups.groups[g].state in ("Stable", "Empty") for g in GROUPS if g in live_groups.groups)
        expected = own_groups(live_groups, GROUPS)
        assert own_groups(rebuilt.component("groups"), GROUPS) == expected
        seen |= set(expected["groups"])
    assert seen == set(GROUPS)
