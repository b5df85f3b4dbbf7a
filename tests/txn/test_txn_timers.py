"""Timed-out transactions and expired transactional ids: Kafka's TransactionStateManagerTest and the
timeout tests of TransactionCoordinatorTest, with a controllable clock.

Kafka scans every 10 s (abort) and every hour (expiration); here each transaction has a timer due
at the first such scan tick (a multiple of the interval) at which the scan's condition holds.
"""

from __future__ import annotations

import json

import pytest

from coordinator.errors import Errors
from coordinator.txn.metadata import SHORT_MAX, TV_2, TransactionState
from tests.txn.txn_helpers import TID, Producer, driver, records_of, same_partition_ids, seed, txn

S = TransactionState
ABORT_INTERVAL = 10_000
EXPIRE_INTERVAL = 3_600_000
EXPIRATION = 604_800_000


def tick(at, interval):
    return -(-at // interval) * interval


def abort_due(start, timeout):
    return tick(start + timeout + 1, ABORT_INTERVAL)


# ============================================================================ timeouts
def test_should_abort_expired_transactions_in_ongoing_state_and_bump_epoch():
    d = driver(start_ms=1_000_000)
    p = Producer(d, timeout_ms=5000)
    p.init()
    p.add(("orders", 0), ("orders", 1))
    epoch = p.epoch
    due = abort_due(d.now, 5000)
    d.advance_to(due - 1)
    assert txn(d).state == S.ONGOING  # not before the scan that sees start + timeout < now
    d.advance_to(due)
    m = txn(d)
    assert (m.state, m.producer_epoch, m.pending_state) == (S.PREPARE_ABORT, epoch + 1, S.COMPLETE_ABORT)
    prepare = records_of(d)[-1]
    assert (prepare["transactionStatus"], prepare["producerEpoch"]) == (S.PREPARE_ABORT.id, epoch + 1)
    assert [(r.partition, r.headers) for r in d.data] == [
        (0, [("__txn_marker", b"ABORT")]),
        (1, [("__txn_marker", b"ABORT")]),
    ]
    [aborted] = d.events_named("TransactionAbortedByTimeout")
    assert (aborted["timeMs"], aborted["fencedEpoch"], aborted["producerEpoch"]) == (due, epoch, epoch + 1)
    assert d.events_named("ProducerFenced")[0]["reason"] == "transaction timed out"
    d.advance(1)  # the markers are durable: Complete
    assert txn(d).state == S.COMPLETE_ABORT and txn(d).pending_state is None
    # The slow producer is fenced.
    assert p.end(True, version=4)["errorCode"] == Errors.PRODUCER_FENCED.code
    assert p.add_error(("orders", 2)) == Errors.PRODUCER_FENCED.code


def test_should_not_abort_expired_transactions_that_have_a_pending_state_transition():
    d = driver()
    seed(d, state=S.ONGOING, producer_epoch=1, partitions=[("t", 0)], timeout_ms=1000, pending=S.PREPARE_COMMIT)
    d.advance(60_000)
    assert txn(d).state == S.ONGOING and records_of(d) == []


def test_should_only_consider_transactions_in_the_ongoing_state_to_abort():
    d = driver()
    states = [S.ONGOING, S.EMPTY, S.PREPARE_COMMIT, S.PREPARE_ABORT, S.COMPLETE_COMMIT, S.COMPLETE_ABORT]
    ids = same_partition_ids(len(states), d.partition_id)
    for i, (tid, state) in enumerate(zip(ids, states, strict=True)):
        seed(
            d,
            tid,
            state=state,
            producer_id=100 + i,
            producer_epoch=1,
            timeout_ms=1000,
            partitions=[("t", i)] if state not in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT) else [],
            start=d.now - 10_000,
        )
    d.advance(ABORT_INTERVAL)
    aborted = [e["transactionalId"] for e in d.events_named("TransactionAbortedByTimeout")]
    assert aborted == [ids[0]]


def test_abort_timer_follows_the_transaction():
    # A transaction that ends before its timeout is not aborted; the next one has its own deadline.
    d = driver(start_ms=1_000_000)
    p = Producer(d, timeout_ms=5000)
    p.init()
    p.add(("t", 0))
    p.end(True)
    d.advance(1)
    d.advance(30_000)
    assert d.events_named("TransactionAbortedByTimeout") == []
    p.add(("t", 0))
    start = d.now
    d.advance_to(abort_due(start, 5000))
    assert len(d.events_named("TransactionAbortedByTimeout")) == 1


def test_should_handle_timeout_at_epoch_overflow_boundary_correctly_tv2():
    d = driver()
    seed(d, state=S.ONGOING, producer_epoch=SHORT_MAX - 1, partitions=[("t", 0)], timeout_ms=1000, tv=TV_2)
    d.advance(ABORT_INTERVAL + 2000)
    m = txn(d)
    assert (m.state, m.producer_id, m.producer_epoch) == (S.PREPARE_ABORT, 10, SHORT_MAX)  # one bump
    new_pid = m.next_producer_id
    assert new_pid not in (-1, 10)  # deviation: Kafka 4.1-4.3 keep producer id 10 at epoch 32767
    assert [json.loads(r.value)["producerEpoch"] for r in d.data] == [SHORT_MAX]
    d.advance(1)
    m = txn(d)
    assert (m.state, m.producer_id, m.producer_epoch, m.prev_producer_id) == (S.COMPLETE_ABORT, new_pid, 0, 10)
    # With TV2 the late EndTxn of the producer that timed out looks like a retry (the overflow
    # retry from the previous producer id): its commit is refused, its abort acknowledged with the
    # new producer id, with which it can go on.
    late = {"transactionalId": TID, "producerId": 10, "producerEpoch": SHORT_MAX - 1}
    assert d.send("EndTxn", 5, dict(late, committed=True))["errorCode"] == Errors.INVALID_TXN_STATE.code
    r = d.send("EndTxn", 5, dict(late, committed=False))
    assert (r["errorCode"], r["producerId"], r["producerEpoch"]) == (0, new_pid, 0)
    p = Producer(d)
    p.producer_id, p.epoch = new_pid, 0
    assert p.add_error(("t", 1), version=3) == 0
    assert p.end(True)["errorCode"] == 0 and (p.producer_id, p.epoch) == (new_pid, 1)


def test_fence_at_epoch_32766_never_wedges_the_transactional_id():
    # Without the rotation on the fence path the id would end at epoch 32767, where the next
    # transaction can be neither fenced (InitProducerId, timeout) nor ended (EndTxn): every such
    # request would fail with UNKNOWN_SERVER_ERROR for ever.
    d = driver()
    seed(d, state=S.ONGOING, producer_epoch=SHORT_MAX - 1, partitions=[("t", 0)], timeout_ms=1000, tv=TV_2)
    assert (
        d.send("InitProducerId", 5, {"transactionalId": TID, "transactionTimeoutMs": 1000})["errorCode"]
        == Errors.CONCURRENT_TRANSACTIONS.code
    )
    r = d.send(
        "InitProducerId",
        5,
        {"transactionalId": TID, "transactionTimeoutMs": 1000, "producerId": 10, "producerEpoch": SHORT_MAX - 1},
    )
    assert r["errorCode"] == 0 and r["producerId"] != 10
    assert d.events_named("RequestFailed") == []


def test_timed_out_transaction_with_a_group_sends_write_txn_markers():
    d = driver()
    p = Producer(d, timeout_ms=1000)
    p.init()
    p.add_offsets("g1")
    d.advance(ABORT_INTERVAL + 2000)
    [(_, notice), (key, env)] = d.internal_requests  # AddOffsetsToTxn's notice, then the marker
    assert notice["apiKey"] == "TxnOffsetsAdded"
    marker = env["request"]["markers"][0]
    assert env["apiKey"] == "WriteTxnMarkers" and marker["transactionResult"] is False
    assert marker["producerEpoch"] == p.epoch + 1


# ============================================================================ expiration
def expire_due(last_update):
    return tick(last_update + EXPIRATION, EXPIRE_INTERVAL)


@pytest.mark.parametrize("state", [S.COMPLETE_COMMIT, S.COMPLETE_ABORT, S.EMPTY])
def test_should_remove_expired_transactional_ids(state):
    # shouldRemoveCompleteCommitExpiredTransactionalIds / CompleteAbort / Empty
    d = driver()
    seed(d, state=state, producer_epoch=1, start=-1 if state == S.EMPTY else d.now)
    due = expire_due(d.now)
    d.advance_to(due - 1)
    assert txn(d) is not None
    d.advance_to(due)
    assert txn(d) is None
    assert d.records[-1] == (f'["TransactionLog","{TID}"]', None)  # a tombstone
    [ev] = d.events_named("TransactionalIdExpired")
    assert (ev["lastState"], ev["timeMs"]) == (state.state_name, due)
    [desc] = d.send("DescribeTransactions", 0, {"transactionalIds": [TID]})["transactionStates"]
    assert desc["errorCode"] == Errors.TRANSACTIONAL_ID_NOT_FOUND.code
    assert (
        d.send("EndTxn", 4, {"transactionalId": TID, "producerId": 10, "producerEpoch": 1, "committed": True})[
            "errorCode"
        ]
        == Errors.INVALID_PRODUCER_ID_MAPPING.code
    )
    # The id can be used again: a fresh producer id, epoch 0.
    r = d.send("InitProducerId", 5, {"transactionalId": TID, "transactionTimeoutMs": 1000})
    assert r["errorCode"] == 0 and r["producerEpoch"] == 0


@pytest.mark.parametrize("state", [S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT])
def test_should_not_remove_transactional_ids_with_a_transaction(state):
    # shouldNotRemoveOngoingTransactionalIds / PrepareAbort / PrepareCommit (the abort timer is
    # disabled by a huge timeout so that only the expiration could act)
    d = driver(transaction_max_timeout_ms=10**9)
    seed(d, state=state, producer_epoch=1, partitions=[("t", 0)], timeout_ms=10**9)
    d.advance(EXPIRATION + 2 * EXPIRE_INTERVAL)
    assert txn(d) is not None and d.events_named("TransactionalIdExpired") == []


def test_activity_postpones_expiration():
    d = driver()
    p = Producer(d)
    p.init()
    d.advance(EXPIRATION - 1000)
    p.init()  # touches txnLastUpdateTimestamp
    d.advance(EXPIRE_INTERVAL * 2)
    assert txn(d) is not None
    d.advance_to(expire_due(txn(d).txn_last_update_timestamp))
    assert txn(d) is None


def test_transaction_expiration_removes_every_expired_id_in_one_sweep():
    # testTransactionExpirationShouldRespectBatchSize: many ids expire at the same scan; each
    # gets its own tombstone (there is no batch size limit here, one record per id).
    d = driver()
    ids = same_partition_ids(40, d.partition_id)
    for i, tid in enumerate(ids):
        seed(d, tid, state=S.COMPLETE_COMMIT, producer_id=1000 + i, producer_epoch=0)
    d.advance_to(expire_due(d.now))
    assert d.component("transactions").txns == {}
    assert sorted(k for k, v in d.records if v is None) == sorted(f'["TransactionLog","{t}"]' for t in ids)


def test_idle_partition_wakes_only_when_something_is_due():
    d = driver(start_ms=1_000_000)
    p = Producer(d, timeout_ms=5000)
    p.init()
    assert d.next_deadline() == expire_due(d.now)
    p.add(("t", 0))
    assert d.next_deadline() == abort_due(d.now, 5000)
