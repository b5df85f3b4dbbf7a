"""The transaction coordinator's shape (issue 14): literal handler tables, handlers that return a
CoordinatorResult, and TransactionLog records that change the state only when the runtime
replays them."""

from __future__ import annotations

import inspect

from coordinator.api import all_apis
from coordinator.messages import ReplyTo, Request
from coordinator.result import CoordinatorResult
from coordinator.txn.metadata import TransactionState
from tests.core_driver import REPLAYER_ARGS, call_handler, dispatch_targets
from tests.txn.txn_helpers import Producer, driver, records_of

S = TransactionState


def request(d, api: str, version: int, body: dict) -> Request:
    return Request(ReplyTo(api, version, 1, "client", None), body, d.now)


def test_every_transactions_api_timer_and_record_kind_reaches_a_method_from_one_literal_table():
    comp = driver("layout").component("transactions")
    cls = type(comp)
    served = {spec.name for spec in all_apis() if spec.component == "transactions"}
    assert set(cls.HANDLERS) == served
    managers = {id(m) for m in (comp, comp.state, comp.markers, comp.pids)}
    for table, args in ((cls.HANDLERS, (None,)), (cls.TIMER_HANDLERS, (None,)), (cls.REPLAYERS, REPLAYER_ARGS)):
        assert any(v is table for v in vars(cls).values())  # declared in the class body
        for target in dispatch_targets(table, comp, args).values():
            assert inspect.ismethod(target) and id(target.__self__) in managers, target


def test_a_handler_returns_its_records_and_only_their_replay_changes_the_state():
    d = driver("layout")
    p = Producer(d, "layout")
    p.init()
    part = d.partition
    comp = part.component("transactions")
    result = call_handler(
        part,
        "AddPartitionsToTxn",
        request(
            d,
            "AddPartitionsToTxn",
            3,
            {
                "v3AndBelowTransactionalId": "layout",
                "v3AndBelowProducerId": p.producer_id,
                "v3AndBelowProducerEpoch": p.epoch,
                "v3AndBelowTopics": [{"name": "orders", "partitions": [0]}],
            },
        ),
    )
    assert isinstance(result, CoordinatorResult)
    [record] = result.records
    assert record.value["transactionStatus"] == S.ONGOING.id and result.replay_records
    # Until the runtime applies the result, the transition is only pending (Kafka: the write is
    # in flight); nothing was emitted.
    md = comp.txns["layout"]
    assert (md.state, md.pending_state, md.topic_partitions) == (S.EMPTY, S.ONGOING, set())
    assert len(part.out) == 0
    part.apply(result, request(d, "AddPartitionsToTxn", 3, {}).reply)
    assert (md.state, md.pending_state, md.topic_partitions) == (S.ONGOING, None, {("orders", 0)})
    assert part.out.records == [record]


def test_end_txn_answers_with_the_prepare_record_and_completes_by_replay_a_batch_later():
    d = driver("layout2")
    p = Producer(d, "layout2")
    p.init()
    p.add(("orders", 0))
    r = p.end(True)
    assert r["errorCode"] == 0
    md = d.component("transactions").txns["layout2"]
    assert (md.state, md.pending_state) == (S.PREPARE_COMMIT, S.COMPLETE_COMMIT)
    d.advance(1)  # the next batch: the markers are durable, Complete* is written and replayed
    md = d.component("transactions").txns["layout2"]
    assert (md.state, md.pending_state) == (S.COMPLETE_COMMIT, None)
    assert [v["transactionStatus"] for v in records_of(d, "layout2")][-2:] == [
        S.PREPARE_COMMIT.id,
        S.COMPLETE_COMMIT.id,
    ]
    assert (md.producer_id, md.producer_epoch) == (r["producerId"], r["producerEpoch"])
