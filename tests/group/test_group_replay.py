"""Coordinator load: rebuilding the groups and offsets of a partition from its state-log records
(GroupMetadataManager.replay / OffsetMetadataManager.replay / onLoaded)."""

from __future__ import annotations

import pytest

from coordinator import CoordinatorPartition
from coordinator.group.classic.consumer_protocol import encode_subscription
from coordinator.group.classic.group import EMPTY, PREPARING_REBALANCE, STABLE, ClassicGroup
from coordinator.messages import StateRecord
from coordinator.records import record_key
from tests.group.group_helpers import (
    GroupTestClient,
    b64,
    group_on_partition,
    join_and_rebalance,
    protocols,
    seed_transactional_offset,
    static_members_join_and_rebalance,
)

SUBSCRIPTION = encode_subscription(["foo"])


def metadata_record(group_id: str, members: int, rebalance_timeout: int = 9000, ts: int = 1000) -> StateRecord:
    return StateRecord(
        record_key("GroupMetadata", group_id),
        {
            "type": "GroupMetadata",
            "protocolType": "consumer",
            "generation": 1,
            "protocol": "range",
            "leader": "member-0",
            "currentStateTimestamp": ts,
            "members": [
                {
                    "memberId": f"member-{i}",
                    "groupInstanceId": f"group-instance-id-{i}",
                    "clientId": f"client-{i}",
                    "clientHost": f"host-{i}",
                    "rebalanceTimeout": rebalance_timeout,
                    "sessionTimeout": 4000,
                    "subscription": SUBSCRIPTION,
                    "assignment": b64(2),
                }
                for i in range(members)
            ],
        },
    )


@pytest.mark.parametrize("use_default_rebalance_timeout", [True, False])
def test_replay_group_metadata_records(use_default_rebalance_timeout):
    part = CoordinatorPartition.from_records(
        0, [metadata_record("group-id", 2, -1 if use_default_rebalance_timeout else 9000)], now_ms=5000
    )
    g: ClassicGroup = part.component("groups").groups["group-id"]
    assert (g.state, g.generation_id, g.protocol_type, g.protocol_name, g.leader_id, g.state_timestamp) == (
        STABLE,
        1,
        "consumer",
        "range",
        "member-0",
        1000,
    )
    assert [
        (
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            m.rebalance_timeout_ms,
            m.session_timeout_ms,
            m.protocols,
            m.assignment,
        )
        for m in g.members.values()
    ] == [
        (
            f"member-{i}",
            f"group-instance-id-{i}",
            f"client-{i}",
            f"host-{i}",
            4000 if use_default_rebalance_timeout else 9000,
            4000,
            [("range", SUBSCRIPTION)],
            b64(2),
        )
        for i in range(2)
    ]
    assert g.subscribed_topics == ["foo"]


def test_on_loaded_schedules_classic_group_member_heartbeats():
    part = CoordinatorPartition.from_records(0, [metadata_record("group-id", 2)], now_ms=5000)
    for i in range(2):
        timer = part.timers.get(record_key("classic-session", "group-id", f"member-{i}"))
        assert timer is not None and timer.deadline_ms == 5000 + 4000


def test_on_loaded_exceed_group_max_size_triggers_rebalance():
    from coordinator import CoordinatorConfig

    part = CoordinatorPartition.from_records(
        0, [metadata_record("group-id", 2)], config=CoordinatorConfig({"group.max.size": 1}), now_ms=5000
    )
    g = part.component("groups").groups["group-id"]
    assert g.state == PREPARING_REBALANCE and g.num_members() == 2


def test_replay_of_tombstones_and_simple_groups():
    records = [
        StateRecord(
            record_key("OffsetCommit", "simple", "t", 0),
            {
                "type": "OffsetCommit",
                "offset": 5,
                "leaderEpoch": 3,
                "metadata": "m",
                "commitTimestamp": 10,
                "expireTimestamp": -1,
            },
        ),
        metadata_record("gone", 1),
        StateRecord(record_key("GroupMetadata", "gone"), None),
        StateRecord(
            record_key("OffsetCommit", "simple", "t", 1),
            {
                "type": "OffsetCommit",
                "offset": 6,
                "leaderEpoch": -1,
                "metadata": "",
                "commitTimestamp": 10,
                "expireTimestamp": -1,
            },
        ),
        StateRecord(record_key("OffsetCommit", "simple", "t", 1), None),
        StateRecord(
            record_key("OffsetCommit", "txn", "t", 0),
            {
                "type": "OffsetCommit",
                "offset": 9,
                "leaderEpoch": -1,
                "metadata": "",
                "commitTimestamp": 10,
                "expireTimestamp": -1,
                "producerId": 42,
            },
        ),
    ]
    comp = CoordinatorPartition.from_records(0, records, now_ms=100).component("groups")
    assert set(comp.groups) == {"simple", "txn"}
    simple = comp.groups["simple"]
    assert simple.state == EMPTY and simple.protocol_type is None and simple.state_timestamp == 100
    o = comp.offsets.get("simple", "t", 0)
    assert (o.committed_offset, o.leader_epoch, o.metadata) == (5, 3, "m")
    assert comp.offsets.get("simple", "t", 1) is None
    assert comp.offsets.get("txn", "t", 0) is None and comp.has_pending_transactional_offsets("txn", "t", 0)


def test_unknown_record_types_are_not_claimed():
    with pytest.raises(ValueError):
        CoordinatorPartition.from_records(0, [StateRecord(record_key("Nope", "x"), {})])


# ====================================================================== live state == rebuilt state
def normalized(comp) -> dict:
    """What the state log preserves: Kafka loads a group as Stable (with members) or Empty, with
    only the selected protocol's metadata; parked requests, pending members and timers are not
    persisted."""
    groups = {}
    for gid, g in comp.groups.items():
        state = STABLE if g.members else EMPTY
        groups[gid] = {
            "state": state,
            "generation": g.generation_id,
            "protocolType": g.protocol_type or None,
            "protocol": g.protocol_name,
            "leader": g.leader_id,
            "stateTimestamp": g.state_timestamp if state == EMPTY and g.protocol_type else None,
            "members": [
                (
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata(g.protocol_name),
                    m.assignment,
                )
                for m in g.members.values()
            ],
        }
    offsets = {
        (gid, t, p): (o.committed_offset, o.leader_epoch, o.metadata, o.commit_timestamp_ms, o.expire_timestamp_ms)
        for gid, ts in comp.offsets.committed.items()
        for t, ps in ts.items()
        for p, o in ps.items()
    }
    pending = {
        (pid, gid, t, p): o.committed_offset
        for pid, gs in comp.offsets.pending.items()
        for gid, ts in gs.items()
        for t, ps in ts.items()
        for p, o in ps.items()
    }
    return {"groups": groups, "offsets": offsets, "pending": pending}


def compacted(records: list[tuple[str, dict | None]]) -> list[tuple[str, dict | None]]:
    """Log compaction: the last record of each key, at its position."""
    last = {}
    for i, (key, value) in enumerate(records):
        last[key] = (i, value)
    return [(key, value) for key, (i, value) in sorted(last.items(), key=lambda kv: kv[1][0])]


def scenario() -> GroupTestClient:
    """Groups in every persistent shape: Stable dynamic and static groups with offsets, a static
    member replaced without a rebalance, an Empty consumer group, a simple group, a deleted group,
    expired and deleted offsets, and an open transaction's offsets."""
    c = GroupTestClient(
        group_min_session_timeout_ms=1, offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000
    )
    pid = c.d.partition_id
    leader = join_and_rebalance(c, session_timeout=600000, rebalance_timeout=5000, protos=protocols("range", "rr"))
    c.commit({("foo", 0): 10, ("foo", 1): 11}, member_id=leader["memberId"], generation=1, metadata="meta")

    static = c.sibling(group_on_partition(pid, "static-"))
    r = static_members_join_and_rebalance(static, "leader", "follower", session_timeout=600000)
    static.join("", instance_id="follower", protos=r["protocols"], session_timeout=600000)  # replaced, no rebalance

    simple = group_on_partition(pid, "simple-")
    c.commit({("baz", 0): 5, ("baz", 1): 6}, group_id=simple, version=2, retention=500_000)
    c.send("OffsetDelete", 0, {"groupId": simple, "topics": [{"name": "baz", "partitions": [{"partitionIndex": 1}]}]})

    doomed = group_on_partition(pid, "doomed-")
    c.commit({("x", 0): 1}, group_id=doomed)
    c.send("DeleteGroups", 2, {"groupsNames": [doomed]})

    expiring = group_on_partition(pid, "expiring-")
    c.commit({("y", 0): 1}, group_id=expiring)
    c.sleep(61_000)  # offsets.retention.minutes=1: this simple group's offsets expire, and it goes
    assert c.group(expiring) is None

    emptied = group_on_partition(pid, "emptied-")
    e = c.sibling(emptied)
    el = join_and_rebalance(e, session_timeout=600000)
    e.commit({("bar", 0): 1}, member_id=el["memberId"], generation=1)
    e.leave({"memberId": el["memberId"]})

    c.mutate(lambda comp: seed_transactional_offset(comp, 77, c.group_id, "foo", 2, 99))
    # Keep the Stable groups' members alive.
    c.heartbeat(leader["memberId"], 1)
    return c


@pytest.mark.parametrize("compact", [False, True])
def test_rebuilding_from_the_state_log_gives_the_same_groups_and_offsets(compact):
    c = scenario()
    live = c.groups()
    records = compacted(c.records()) if compact else c.records()
    rebuilt = c.d.rebuilt(records).component("groups")
    assert normalized(rebuilt) == normalized(live)
    assert len(live.groups) == 4 and all(g.state in (STABLE, EMPTY) for g in live.groups.values())


def test_a_rebuilt_partition_keeps_serving():
    c = scenario()
    leader_id = c.group().leader_id
    # The driver continues from the partition rebuilt from the state log, as after a coordinator failover.
    c.d.failover()
    assert c.heartbeat(leader_id, 1)["errorCode"] == 0
    assert c.committed("foo", 0) == 10
    # Session timers were re-armed from the load time: a silent member is removed after its session.
    static_gid = next(g for g in c.groups().groups if g.startswith("static-"))
    c.sleep(600_000)
    expired = {e["memberId"] for e in c.events("MemberSessionExpired") if e["groupId"] == static_gid}
    assert len(expired) == 2
    assert c.group(static_gid) is None  # then, Empty and without offsets, it is deleted
