"""The coordinators' metrics (coordinator/metrics.py): counters and gauges move with what the
groups and transactions do, a replayed batch emits the identical record, and a state without
metrics loads and is counted once."""

from __future__ import annotations

import json

import state
from coordinator import CoordinatorPartition
from coordinator.batch import InputRecord, run_batch
from coordinator.chunks import OverlaySource
from coordinator.metrics import BUCKETS_MS, series
from coordinator.runtime import component_chunk
from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient
from tests.group.group_helpers import GroupTestClient, b64, join_and_rebalance, protocols
from tests.txn.txn_helpers import Producer, driver


def metrics(d) -> dict:
    """The partition's stored metrics (what its last record carried)."""
    return d.partition.component("metrics").data


def counter(d, name: str, **labels) -> float:
    return metrics(d)["counters"].get(series(name, **labels), 0)


def gauge(d, name: str, **labels) -> int:
    return metrics(d)["gauges"].get(series(name, **labels), 0)


def hist(d, name: str, **labels) -> dict:
    return metrics(d)["histograms"][series(name, **labels)]


def scanned_gauges(d) -> dict:
    """The gauges counted from scratch by a scan of every group and transaction."""
    m = d.partition.component("metrics")
    m._count_by_scan()
    return {k: v for k, v in m.data["gauges"].items() if v}


def live_gauges(d) -> dict:
    return {k: v for k, v in metrics(d)["gauges"].items() if v}


# ====================================================================== classic groups
def test_a_classic_group_forming_rebalancing_and_emptying():
    c = GroupTestClient()
    join = join_and_rebalance(c)
    d = c.d
    assert counter(d, "group_created_total", protocol="classic") == 1
    assert gauge(d, "group_count", protocol="classic") == 1
    assert gauge(d, "classic_group_count", state="Stable") == 1
    assert counter(d, "group_member_joined_total", protocol="classic") == 1
    assert counter(d, "group_rebalance_started_total", protocol="classic") == 1
    assert counter(d, "group_rebalance_completed_total", protocol="classic") == 1
    assert counter(d, "group_assignment_changes_total", protocol="classic") == 1
    # The initial rebalance waited group.initial.rebalance.delay.ms (3 s) of logical time.
    duration = hist(d, "group_rebalance_duration_ms", protocol="classic")
    assert duration["count"] == 1 and duration["sum"] == d.config["group.initial.rebalance.delay.ms"]
    assert duration["buckets"][BUCKETS_MS.index(5000)] == 1
    assert c.heartbeat(join["memberId"], join["generationId"])["errorCode"] == 0
    assert counter(d, "requests_total", api="Heartbeat") == 1
    assert hist(d, "group_heartbeat_latency_ms", api="Heartbeat")["count"] == 1
    # The only member leaves: the group rebalances and ends Empty without reaching Stable.
    assert c.leave({"memberId": join["memberId"]})["errorCode"] == 0
    assert counter(d, "group_member_left_total", protocol="classic", reason="left") == 1
    assert counter(d, "group_rebalance_started_total", protocol="classic") == 2
    assert counter(d, "group_rebalance_failed_total", protocol="classic") == 1
    assert gauge(d, "classic_group_count", state="Stable") == 0
    assert gauge(d, "classic_group_count", state="Empty") == 1
    assert live_gauges(d) == scanned_gauges(d)
    assert list(d.partition.component("metrics").rebalances) == []


def test_a_session_expiry_and_a_second_member_rebalance():
    c = GroupTestClient()
    first = join_and_rebalance(c, session_timeout=6000)
    d = c.d
    _, second = c.join("", version=3, session_timeout=6000)  # parked until the leader rejoins
    assert second is None
    assert gauge(d, "classic_group_count", state="PreparingRebalance") == 1
    c.sleep(7000)  # the leader does not rejoin within the rebalance timeout: removed
    assert counter(d, "group_member_left_total", protocol="classic", reason="removed") == 1
    assert gauge(d, "classic_group_count", state="CompletingRebalance") == 1
    c.sleep(20_000)  # the new member never syncs: its session expires, the group empties
    left = sum(counter(d, "group_member_left_total", protocol="classic", reason=r) for r in ("expired", "removed"))
    assert left == 2
    assert counter(d, "group_rebalance_failed_total", protocol="classic") >= 1
    assert gauge(d, "classic_group_count", state="Empty") == 1
    assert live_gauges(d) == scanned_gauges(d)
    assert first["memberId"]


def test_offset_commits_expiry_and_group_deletion_by_expiry():
    c = GroupTestClient(**{"offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 1000})
    assert c.commit({("t", 0): 5, ("t", 1): 6})["topics"][0]["partitions"][0]["errorCode"] == 0
    d = c.d
    assert counter(d, "group_offset_commit_total") == 2
    assert gauge(d, "group_count", protocol="classic") == 1
    c.sleep(61_000)
    c.sleep(2_000)
    assert counter(d, "group_offset_expiration_total") == 2
    assert counter(d, "group_deleted_total", protocol="classic") == 1
    assert gauge(d, "group_count", protocol="classic") == 0
    assert gauge(d, "classic_group_count", state="Empty") == 0
    assert live_gauges(d) == scanned_gauges(d) == {}


# ====================================================================== consumer groups
def test_a_consumer_group_forms_and_rebalances_when_a_member_joins_and_leaves():
    c = ConsumerGroupTestClient(topics={"foo": 4})
    d = c.d
    r1 = c.join("m1", ["foo"])
    assert r1["errorCode"] == 0
    assert counter(d, "group_created_total", protocol="consumer") == 1
    assert gauge(d, "group_count", protocol="consumer") == 1
    assert counter(d, "group_rebalance_started_total", protocol="consumer") == 1
    assert counter(d, "group_rebalance_completed_total", protocol="consumer") == 1
    assert gauge(d, "consumer_group_count", state="Stable") == 1
    assert counter(d, "group_assignment_changes_total", protocol="consumer") >= 1
    r2 = c.join("m2", ["foo"])
    assert r2["errorCode"] == 0
    assert counter(d, "group_member_joined_total", protocol="consumer") == 2
    assert counter(d, "group_rebalance_started_total", protocol="consumer") == 2
    assert gauge(d, "consumer_group_count", state="Stable") + gauge(d, "consumer_group_count", state="Reconciling") == 1
    assert c.heartbeat(r2["memberId"], -1)["errorCode"] == 0  # leaves
    assert counter(d, "group_member_left_total", protocol="consumer", reason="left") == 1
    assert counter(d, "requests_total", api="ConsumerGroupHeartbeat") == 3
    assert live_gauges(d) == scanned_gauges(d)


def test_a_consumer_rebalance_lasts_from_the_epoch_bump_until_every_member_reconciled():
    c = ConsumerGroupTestClient(topics={"foo": 4})
    d = c.d
    r1 = c.join("m1", ["foo"])  # alone: Stable at once (a rebalance of 0 ms)
    d.now += 1000
    r2 = c.join("m2", ["foo"])  # the epoch bump: m1 must give up two partitions first
    assert gauge(d, "consumer_group_count", state="Reconciling") == 1
    d.now += 2000
    r1 = c.heartbeat("m1", r1["memberEpoch"], topics=["foo"], owned={"foo": [0, 1, 2, 3]})
    d.now += 500
    c.heartbeat("m1", r1["memberEpoch"], owned={"foo": [0, 1]})  # revoked
    d.now += 500
    c.heartbeat("m2", r2["memberEpoch"], owned={})  # gets its partitions: Stable
    assert gauge(d, "consumer_group_count", state="Stable") == 1
    duration = hist(d, "group_rebalance_duration_ms", protocol="consumer")
    assert duration["count"] == 2 and duration["sum"] == 3000
    assert duration["buckets"][0] == 1 and duration["buckets"][BUCKETS_MS.index(5000)] == 1
    assert counter(d, "group_rebalance_completed_total", protocol="consumer") == 2


def test_a_consumer_member_fenced_by_its_session_timeout():
    c = ConsumerGroupTestClient(topics={"foo": 2})
    d = c.d
    assert c.join("m1", ["foo"])["errorCode"] == 0
    c.sleep(46_000)
    assert counter(d, "group_member_left_total", protocol="consumer", reason="expired") == 1
    assert gauge(d, "consumer_group_count", state="Empty") == 1
    assert live_gauges(d) == scanned_gauges(d)


def test_a_member_fenced_in_the_batch_that_deletes_its_group_is_counted_for_its_group_type():
    c = ConsumerGroupTestClient(
        topics={"foo": 2},
        **{
            "offsets.retention.check.interval.ms": 2000,
            "coordinator.timer.grace.ms": 1000,
            "group.consumer.session.timeout.ms": 8000,
            "group.consumer.min.session.timeout.ms": 8000,
            "group.consumer.heartbeat.interval.ms": 1000,
            "group.consumer.min.heartbeat.interval.ms": 500,
        },
    )
    d = c.d
    assert c.join("m1", ["foo"])["errorCode"] == 0
    for _ in range(12):  # the session expires, and the expiry check deletes the Empty group at once
        c.sleep(1000)
    names = [e["event"] for e in c.events()]
    assert names[-4:] == ["MemberFenced", "GroupEpochBumped", "GroupStateChanged", "GroupDeleted"]
    assert counter(d, "group_member_left_total", protocol="consumer", reason="expired") == 1
    assert counter(d, "group_member_left_total", protocol="classic", reason="expired") == 0
    assert counter(d, "group_deleted_total", protocol="consumer") == 1
    assert live_gauges(d) == scanned_gauges(d) == {}


def test_conversions_between_classic_and_consumer_groups_move_the_gauges():
    c = ConsumerGroupTestClient(topics={"foo": 2})
    d = c.d
    _, raw = d.envelope(
        "OffsetCommit",
        9,
        {
            "groupId": c.group_id,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "topics": [
                {
                    "name": "foo",
                    "partitions": [
                        {"partitionIndex": 0, "committedOffset": 1, "committedLeaderEpoch": -1, "committedMetadata": ""}
                    ],
                }
            ],
        },
    )
    d.send_raw(raw, key=c.group_id)  # a simple (classic) group with an offset
    assert live_gauges(d) == {
        series("group_count", protocol="classic"): 1,
        series("classic_group_count", state="Empty"): 1,
    }
    assert c.join("m1", ["foo"])["errorCode"] == 0 and c.group().type == "consumer"  # upgraded
    assert (
        live_gauges(d)
        == scanned_gauges(d)
        == {series("group_count", protocol="consumer"): 1, series("consumer_group_count", state="Stable"): 1}
    )
    assert counter(d, "group_deleted_total", protocol="classic") == 1
    assert c.heartbeat("m1", -1)["errorCode"] == 0
    _, raw = d.envelope(
        "JoinGroup",
        9,
        {
            "groupId": c.group_id,
            "sessionTimeoutMs": 10000,
            "rebalanceTimeoutMs": 5000,
            "memberId": "",
            "protocolType": "consumer",
            "protocols": protocols("range"),
            "groupInstanceId": None,
            "reason": None,
        },
    )
    d.send_raw(raw, key=c.group_id)  # the empty consumer group is converted back to a classic one
    assert c.group().type == "classic"
    assert (
        live_gauges(d)
        == scanned_gauges(d)
        == {series("group_count", protocol="classic"): 1, series("classic_group_count", state="Empty"): 1}
    )


# ====================================================================== transactions
def test_transactions_commit_abort_and_timeout():
    d = driver()
    p = Producer(d, timeout_ms=10_000)
    assert p.init()["errorCode"] == 0
    assert counter(d, "txn_init_producer_id_total", reason="new") == 1
    assert gauge(d, "txn_transactional_id_count") == 1
    assert p.add(("a", 0))
    assert counter(d, "txn_started_total") == 1
    assert gauge(d, "txn_count", state="Ongoing") == 1
    assert p.end(True)["errorCode"] == 0
    d.advance(1)  # markers durable: the deferred completion runs
    assert counter(d, "txn_prepared_total", result="COMMIT") == 1
    assert counter(d, "txn_completed_total", result="COMMIT") == 1
    assert gauge(d, "txn_count", state="Ongoing") == gauge(d, "txn_count", state="PrepareCommit") == 0
    p.add(("a", 0))
    p.end(False)
    d.advance(1)
    assert counter(d, "txn_completed_total", result="ABORT") == 1
    p.add(("a", 0))
    d.advance(30_000)  # past the transaction timeout and the next abort scan
    d.advance(1)
    assert counter(d, "txn_timed_out_total") == 1
    assert counter(d, "txn_producer_fenced_total") == 1
    assert counter(d, "txn_completed_total", result="ABORT") == 2
    assert live_gauges(d) == scanned_gauges(d)


# ====================================================================== determinism and upgrades
def _records(d, items, t):
    recs = []
    for i, (api, version, body, key) in enumerate(items):
        _, raw = d.envelope(api, version, body)
        recs.append(InputRecord(key, raw, t, 0, 1000 + i))
    return recs


def test_a_replayed_batch_emits_the_identical_metrics_record():
    c = GroupTestClient()
    join = join_and_rebalance(c)
    d = c.d
    blob = d.stored()
    recs = _records(
        d,
        [
            (
                "Heartbeat",
                4,
                {
                    "groupId": c.group_id,
                    "generationId": join["generationId"],
                    "memberId": join["memberId"],
                    "groupInstanceId": None,
                },
                c.group_id,
            ),
            (
                "OffsetCommit",
                9,
                {
                    "groupId": c.group_id,
                    "generationIdOrMemberEpoch": join["generationId"],
                    "memberId": join["memberId"],
                    "groupInstanceId": None,
                    "topics": [
                        {
                            "name": "t",
                            "partitions": [
                                {
                                    "partitionIndex": 0,
                                    "committedOffset": 3,
                                    "committedLeaderEpoch": -1,
                                    "committedMetadata": "",
                                }
                            ],
                        }
                    ],
                },
                c.group_id,
            ),
        ],
        d.now,
    )
    batch_time = d.now + 700  # the requests waited 700 ms for their batch
    runs = []
    for _ in range(2):
        part, out = run_batch(lambda: blob.load(d.partition_id, d.config), recs, batch_time)
        runs.append((out.metrics, state.encode_partition(part)))
    assert runs[0][0] == runs[1][0] and runs[0][1] == runs[1][1]
    record = runs[0][0]
    assert record["seq"] == metrics(d)["seq"] + 1
    assert record["counters"][series("group_offset_commit_total")] == 1
    latency = record["histograms"][series("group_heartbeat_latency_ms", api="Heartbeat")]
    assert latency["count"] == 1 and latency["buckets"][BUCKETS_MS.index(1000)] == 1
    json.dumps(record)  # what the sink writes


def test_a_batch_that_does_nothing_emits_no_record_and_leaves_the_metrics_chunk_alone():
    c = GroupTestClient()
    join_and_rebalance(c)
    d = c.d
    stored = d.stored()
    part, out = run_batch(lambda: stored.load(d.partition_id, d.config), [], d.now + 10)
    assert out.metrics is None
    assert component_chunk("metrics") not in part.dirty_chunks()


def test_a_state_without_metrics_loads_and_is_counted_once():
    c = GroupTestClient()
    join_and_rebalance(c)
    c.sibling("other-group").commit({("t", 0): 1}, group_id="other-group")
    d = c.d
    before = live_gauges(d)
    stored = d.stored()
    # As a state written before metrics existed: no metrics chunk.
    old = OverlaySource(stored.reader, {component_chunk("metrics"): None})
    assert CoordinatorPartition(d.partition_id, d.config, chunks=old).component("metrics").data["seq"] == 0
    recs = _records(d, [("ListGroups", 5, {"statesFilter": [], "typesFilter": []}, None)], d.now)
    part, out = run_batch(lambda: CoordinatorPartition(d.partition_id, d.config, chunks=old), recs, d.now)
    assert out.metrics["seq"] == 1
    assert {k: v for k, v in out.metrics["gauges"].items() if v} == before
    assert out.metrics["counters"] == {
        series("requests_total", api="ListGroups"): 1,
        series("request_queue_time_ms_sum", api="ListGroups"): 0,
    }
    # A whole-snapshot state (formats 1 and 2) without metrics loads too.
    snap = d.partition.to_json()
    del snap["components"]["metrics"]
    legacy = state.StoredState(*state.encode(snap))
    part, out = run_batch(lambda: legacy.load(d.partition_id, d.config), recs, d.now)
    assert {k: v for k, v in out.metrics["gauges"].items() if v} == before


def test_metrics_record_sequence_grows_by_one_per_batch_that_did_something():
    c = GroupTestClient()
    c.commit({("t", 0): 1})
    first = metrics(c.d)["seq"]
    c.commit({("t", 0): 2})
    assert metrics(c.d)["seq"] == first + 1
    assert b64(0)


# ====================================================================== share and streams groups
def test_share_and_streams_groups_are_counted_as_kafkas_group_coordinator_metrics():
    """GroupCoordinatorMetrics (4.1.1): group-count{protocol=share|streams}, share-group-count{state}
    and streams-group-count{state} move with the groups' states; every group epoch bump is a
    rebalance of its type (ShareGroupRebalances / StreamsGroupRebalances); a deleted group leaves
    the gauges; the live gauges always equal a fresh count of the state."""
    from tests.share.share_group_helpers import ShareGroupTestClient
    from tests.streams.helpers import StreamsTestClient, subtopology, topology

    share = ShareGroupTestClient("sg", topics={"foo": 3})
    share.share_join("m1", topics=["foo"])
    d = share.d
    assert gauge(d, "group_count", protocol="share") == 1 and gauge(d, "share_group_count", state="Stable") == 1
    assert counter(d, "group_created_total", protocol="share") == 1
    # the join bumps the epoch, the initialized share-partitions bump it again
    assert counter(d, "group_rebalance_started_total", protocol="share") == 2
    assert live_gauges(d) == scanned_gauges(d)
    share.share_heartbeat("m1", -1)
    assert gauge(d, "share_group_count", state="Stable") == 0 and gauge(d, "share_group_count", state="Empty") == 1
    assert live_gauges(d) == scanned_gauges(d)

    streams = StreamsTestClient("st", topics={"foo": 2})
    topo = topology(0, subtopology("0", source=["foo"]))
    first = streams.join("m1", topo)
    d = streams.d
    # Kafka 4.2+: Stable at once (the validated topology epoch is in the group's record).
    assert gauge(d, "group_count", protocol="streams") == 1 and gauge(d, "streams_group_count", state="Stable") == 1
    streams.heartbeat("m1", first["memberEpoch"])
    assert (
        gauge(d, "streams_group_count", state="Stable") == 1 and gauge(d, "streams_group_count", state="NotReady") == 0
    )
    streams.join("m2", topo)  # m1 must give up a task: Reconciling
    assert (
        gauge(d, "streams_group_count", state="Reconciling") == 1
        and gauge(d, "streams_group_count", state="Stable") == 0
    )
    assert counter(d, "group_rebalance_started_total", protocol="streams") == 2
    assert counter(d, "group_member_joined_total", protocol="streams") == 2
    assert live_gauges(d) == scanned_gauges(d)
    streams.heartbeat("m1", -1)
    streams.heartbeat("m2", -1)
    assert gauge(d, "streams_group_count", state="Empty") == 1 and first["errorCode"] == 0
    d.send("DeleteGroups", 2, {"groupsNames": ["st"]}, key="st")
    assert gauge(d, "group_count", protocol="streams") == 0 and gauge(d, "streams_group_count", state="Empty") == 0
    assert counter(d, "group_deleted_total", protocol="streams") == 1
    assert live_gauges(d) == scanned_gauges(d) == {}
