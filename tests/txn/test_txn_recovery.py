"""Rebuilding a partition from its state log, and crashes around the two-phase commit."""

from __future__ import annotations

import copy
import json

import state as state_codec
from coordinator import CoordinatorPartition
from coordinator.batch import InputRecord, run_batch
from coordinator.errors import Errors
from coordinator.routing import coordinator_partition
from coordinator.txn.markers import parse_marker
from coordinator.txn.metadata import SHORT_MAX, TV_2, TransactionState
from tests.txn.txn_helpers import Producer, driver, same_partition_ids, seed

S = TransactionState


def replayed(d, now=None) -> CoordinatorPartition:
    return d.rebuilt(now_ms=now)


def loader_of(part: CoordinatorPartition):
    blob = state_codec.encode(part.to_json())
    return lambda: CoordinatorPartition(part.partition_id, part.config, state_codec.decode(*blob))


def run(part, t, records=()):
    return run_batch(loader_of(part), list(records), t)


def busy_partition():
    """A partition with transactional ids in every settled state, a rotated producer id, an epoch
    fence, expired ids and idempotent producers."""
    d = driver("base")
    a, b, c, e, f, g, x = same_partition_ids(7, d.partition_id, "r")
    px = Producer(d, x)
    px.init()
    px.add(("orders", 9))
    px.end(True)
    pg = Producer(d, g)
    pg.init()
    d.advance(604_800_000 + 7_200_000)  # x and g expire
    pa = Producer(d, a)
    pa.init()
    pa.add(("orders", 0))
    pa.add_offsets("group-1")
    pa.end(True, version=4)  # CompleteCommit (TV1)
    pb = Producer(d, b)
    pb.init()
    pb.add(("orders", 1), ("payments", 0))
    pb.end(False)  # CompleteAbort (TV2, epoch bumped)
    Producer(d, c).init()  # Empty
    pe = Producer(d, e, timeout_ms=900000)
    pe.init()
    pe.add(("orders", 2))
    pe.init(keep=True)  # fences the producer and aborts its transaction
    pe.init(keep=True)
    pe.add(("orders", 2))  # Ongoing again
    d.send("InitProducerId", 4, {"transactionalId": None, "transactionTimeoutMs": 0})  # idempotent
    seed(d, f, state=S.EMPTY, producer_id=77, producer_epoch=SHORT_MAX - 1, start=-1)
    d.send(
        "InitProducerId",
        5,
        {"transactionalId": f, "transactionTimeoutMs": 1000, "producerId": 77, "producerEpoch": SHORT_MAX - 1},
    )  # rotation
    pg = Producer(d, g)
    pg.init()  # g again, after its expiry
    d.advance(1)
    return d, (a, b, c, e, f, g, x)


def normalized(part: CoordinatorPartition) -> dict:
    """The component snapshot without what Kafka keeps only in memory: lastProducerEpoch (not in
    the TransactionLog value, -1 after a load) and the cursor in the current producer-id block
    (the rest of a block is lost on a load, as in Kafka)."""
    snap = copy.deepcopy(part.component("transactions").to_json())
    for t in snap["transactions"].values():
        t["lastProducerEpoch"] = -1
    snap["producerIds"] = {"nextBlock": snap["producerIds"]["nextBlock"]}
    snap.pop("nextCorrelationId")
    return snap


def test_rebuild_by_replay_equals_the_original():
    d, ids = busy_partition()
    original = d.partition
    rebuilt = replayed(d)
    assert rebuilt.component("transactions").persistent_view() == original.component("transactions").persistent_view()
    assert normalized(rebuilt) == normalized(original)
    assert rebuilt.timers.schedule_view() == original.timers.schedule_view()  # abort and expiration timers rebuilt
    assert rebuilt.deferred == {} and len(rebuilt.out) == 0
    # Every settled state is represented, and the expired ids are gone.
    states = {tid: m.state for tid, m in rebuilt.component("transactions").txns.items()}
    a, b, c, e, f, g, x = ids
    assert states == {a: S.COMPLETE_COMMIT, b: S.COMPLETE_ABORT, c: S.EMPTY, e: S.ONGOING, f: S.EMPTY, g: S.EMPTY}
    assert rebuilt.component("transactions").txns[f].prev_producer_id == 77


def test_producer_ids_are_never_reused_after_a_replay():
    d, _ = busy_partition()
    handed_out = {v["producerId"] for k, v in d.records if v and v.get("type") == "TransactionLog"}
    rebuilt = replayed(d)
    _, out = run(
        rebuilt,
        d.now,
        [
            InputRecord(
                None,
                json.dumps(
                    {
                        "apiKey": "InitProducerId",
                        "apiVersion": 4,
                        "correlationId": 1,
                        "clientId": "c",
                        "request": {"transactionalId": None, "transactionTimeoutMs": 0},
                    }
                ).encode(),
                d.now,
            )
        ],
    )
    pid = out.responses[0].body["producerId"]
    assert pid not in handed_out and pid > max(handed_out)
    assert pid % 1000 == 0 and (pid // 1000) % 50 == d.partition_id  # the next block of this partition


def committed_txn_in_prepare(d, tid):
    """EndTxn(commit) of a transaction over 3 data partitions and 2 groups; returns the outputs of
    the batch that wrote PrepareCommit."""
    p = Producer(d, tid)
    p.init()
    p.add(("orders", 0), ("orders", 1), ("payments", 7))
    groups = [
        "group-a",
        next(
            g
            for g in (f"g{i}" for i in range(100))
            if coordinator_partition(g, 50) != coordinator_partition("group-a", 50)
        ),
    ]
    for g in groups:
        p.add_offsets(g)
    before = len(d.data), len(d.internal_requests)
    assert p.end(True)["errorCode"] == 0
    return p, groups, d.data[before[0] :], d.internal_requests[before[1] :]


def test_transaction_caught_in_prepare_commit_at_a_crash_completes_on_the_next_batch():
    d = driver("crash")
    p, groups, markers, requests = committed_txn_in_prepare(d, "crash")
    # Every marker went out with the PrepareCommit record.
    assert sorted((m.topic, m.partition) for m in markers) == [("orders", 0), ("orders", 1), ("payments", 7)]
    assert all(parse_marker(m.headers, m.value)["type"] == "COMMIT" for m in markers)
    assert sorted(r[1]["request"]["markers"][0]["topics"][0]["partitionIndexes"][0] for r in requests) == sorted(
        coordinator_partition(g, 50) for g in groups
    )
    # "Crash": the stream restarts from the state committed with that batch.
    after_prepare = d.partition
    m = after_prepare.component("transactions").txns["crash"]
    assert (m.state, m.pending_state) == (S.PREPARE_COMMIT, S.COMPLETE_COMMIT)
    assert after_prepare.next_deadline() == after_prepare.clock_ms + 1  # asks Spark for a batch
    part, out = run(after_prepare, d.now + 5000)
    [rec] = out.records
    assert rec.value["transactionStatus"] == S.COMPLETE_COMMIT.id and rec.value["transactionPartitions"] == []
    assert out.data == [] and out.requests == []  # nothing re-sent: the markers were durable
    assert [e.body["event"] for e in out.events] == ["TransactionCompleted"]
    assert part.component("transactions").txns["crash"].state == S.COMPLETE_COMMIT


def test_a_replayed_prepare_batch_reproduces_every_output():
    # A crash before Spark commits the batch replays it from the state it started with: the
    # outputs must be the same (duplicates of markers and requests are harmless).
    d = driver("again")
    p = Producer(d, "again")
    p.init()
    p.add(("orders", 0))
    p.add_offsets("group-a")
    before = d.partition
    cid, raw = d.envelope(
        "EndTxn",
        5,
        {"transactionalId": "again", "producerId": p.producer_id, "producerEpoch": p.epoch, "committed": True},
    )
    recs = [InputRecord("again", raw, d.now + 1, 0, 99)]
    part1, out1 = run(before, d.now + 1, recs)
    part2, out2 = run(before, d.now + 1, recs)
    assert part1.to_json() == part2.to_json()
    for attr in ("responses", "events", "records", "requests", "data"):
        assert getattr(out1, attr) == getattr(out2, attr)
    assert len(out1.data) == 1 and len(out1.requests) == 1


def test_transaction_caught_in_prepare_by_a_log_replay_resends_every_marker_then_completes():
    d = driver("lost")
    p, groups, markers, requests = committed_txn_in_prepare(d, "lost")
    # The partition is rebuilt from its state log only (the Complete record was never written).
    rebuilt = replayed(d, now=d.now + 10)
    assert len(rebuilt.out) == 0  # nothing is emitted while loading
    m = rebuilt.component("transactions").txns["lost"]
    assert (m.state, m.pending_state) == (S.PREPARE_COMMIT, S.COMPLETE_COMMIT)
    assert rebuilt.next_deadline() is not None
    # First batch: every marker and WriteTxnMarkers request is sent again, Complete waits.
    part, out = run(rebuilt, d.now + 20)
    assert [(x.topic, x.partition, x.key, x.value, x.headers) for x in out.data] == [
        (x.topic, x.partition, x.key, x.value, x.headers) for x in markers
    ]
    assert [(r.key, r.envelope["request"]) for r in out.requests] == [(k, e["request"]) for k, e in requests]
    assert out.records == [] and [e.body["event"] for e in out.events] == ["TransactionMarkersResent"]
    # Second batch: Complete.
    part, out = run(part, d.now + 30)
    assert [r.value["transactionStatus"] for r in out.records] == [S.COMPLETE_COMMIT.id]
    assert out.data == [] and part.component("transactions").txns["lost"].state == S.COMPLETE_COMMIT
    # Requests during the load window get CONCURRENT_TRANSACTIONS, as while markers are in flight.


def test_requests_for_a_reloaded_prepare_transaction_wait_for_its_completion():
    d = driver("lost2")
    p, _, _, _ = committed_txn_in_prepare(d, "lost2")
    rebuilt = replayed(d)
    raw = json.dumps(
        {
            "apiKey": "InitProducerId",
            "apiVersion": 5,
            "correlationId": 5,
            "clientId": "c",
            "request": {"transactionalId": "lost2", "transactionTimeoutMs": 1000},
        }
    ).encode()
    part, out = run(rebuilt, d.now + 1, [InputRecord("lost2", raw, d.now + 1)])
    assert out.responses[0].body["errorCode"] == Errors.CONCURRENT_TRANSACTIONS.code  # markers being re-sent
    part, out = run(part, d.now + 2)
    part, out = run(part, d.now + 3, [InputRecord("lost2", raw, d.now + 3)])
    assert out.responses[0].body["errorCode"] == 0


def test_replayed_abort_without_partitions_completes():
    d = driver("empty-abort")
    seed(d, "empty-abort", state=S.EMPTY, producer_epoch=3, start=-1, tv=TV_2)
    d.records.append(
        (
            '["TransactionLog","empty-abort"]',
            {
                "type": "TransactionLog",
                "producerId": 10,
                "previousProducerId": 10,
                "nextProducerId": -1,
                "producerEpoch": 4,
                "transactionTimeoutMs": 60000,
                "transactionStatus": S.PREPARE_ABORT.id,
                "transactionPartitions": [],
                "transactionLastUpdateTimestampMs": d.now,
                "transactionStartTimestampMs": d.now,
                "clientTransactionVersion": 2,
            },
        )
    )
    part, out = run(replayed(d), d.now + 1)
    assert [r.value["transactionStatus"] for r in out.records] == [S.COMPLETE_ABORT.id]


def test_tv2_overflow_completion_survives_a_replay():
    # nextProducerId is in the record, so the completion after a load moves to the new producer id.
    d = driver("ovf")
    seed(d, "ovf", state=S.ONGOING, producer_epoch=SHORT_MAX - 1, partitions=[("t", 0)], tv=TV_2)
    r = d.send(
        "EndTxn", 5, {"transactionalId": "ovf", "producerId": 10, "producerEpoch": SHORT_MAX - 1, "committed": True}
    )
    part, _ = run(replayed(d), d.now + 1)
    part, _ = run(part, d.now + 2)
    m = part.component("transactions").txns["ovf"]
    assert (m.state, m.producer_id, m.producer_epoch) == (S.COMPLETE_COMMIT, r["producerId"], 0)


def test_snapshot_is_json_with_string_keys_and_round_trips():
    d, _ = busy_partition()
    p = Producer(d, "snap")
    if coordinator_partition("snap", 50) == d.partition_id:
        p.init()
    snap = d.partition.to_json()

    def check(o):
        if isinstance(o, dict):
            assert all(isinstance(k, str) for k in o)
            for v in o.values():
                check(v)
        elif isinstance(o, list):
            for v in o:
                check(v)
        else:
            assert o is None or isinstance(o, (str, int, float, bool))

    check(snap)
    assert json.loads(json.dumps(snap)) == snap
    assert CoordinatorPartition(d.partition_id, d.config, json.loads(json.dumps(snap))).to_json() == snap
