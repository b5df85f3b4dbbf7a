"""Which kind of client initialized a transactional id's producer (JSON client or Kafka client
through the gateway), and that every marker decided for its transactions carries that kind
([txn] markers = "auto" routes them by it: docs/protocol.md, "Transaction markers")."""

from __future__ import annotations

import json

import state as state_codec
from coordinator import CoordinatorPartition
from coordinator.batch import run_batch
from coordinator.errors import Errors
from coordinator.txn.markers import parse_marker
from coordinator.txn.metadata import JSON_CLIENT, KAFKA_CLIENT, TransactionState
from tests.txn.txn_helpers import Producer, driver, records_of, txn

S = TransactionState


def marker_kinds(d) -> list[tuple[str, str]]:
    """(type, clientKind) of every marker the driver has seen, in order."""
    out = []
    for rec in d.data:
        m = parse_marker(rec.headers, rec.value)
        if m is not None:
            out.append((m["type"], m["clientKind"]))
    return out


def replayed(d) -> CoordinatorPartition:
    return d.rebuilt()


def test_init_through_the_gateway_marks_the_producer_and_its_markers():
    d = driver()
    p = Producer(d)
    assert p.init(kafka_client=True)["errorCode"] == 0
    assert txn(d).client_kind == KAFKA_CLIENT
    assert records_of(d)[-1]["clientKind"] == "kafka"
    assert d.events_named("ProducerInitialized")[-1]["clientKind"] == "kafka"
    p.add(("orders", 0), ("orders", 1))
    assert p.end(True)["errorCode"] == 0
    assert marker_kinds(d) == [("COMMIT", "kafka")] * 2
    # The kind stays with every later record of the producer (Ongoing, Prepare*, Complete*).
    d.advance(1)
    assert {r["clientKind"] for r in records_of(d)} == {"kafka"}


def test_a_json_client_is_the_default_and_a_json_init_switches_the_id_back():
    d = driver()
    p = Producer(d)
    p.init()
    assert txn(d).client_kind == JSON_CLIENT and records_of(d)[-1]["clientKind"] == "json"
    p.init(kafka_client=True)  # a Kafka client takes the transactional id over (epoch bump)
    assert txn(d).client_kind == KAFKA_CLIENT
    p.init()  # and a JSON client takes it back
    assert txn(d).client_kind == JSON_CLIENT
    p.add(("orders", 0))
    p.end(False)
    assert marker_kinds(d) == [("ABORT", "json")]


def test_a_timeout_abort_keeps_the_kind_of_the_producer():
    d = driver()
    p = Producer(d, timeout_ms=1000)
    p.init(kafka_client=True)
    p.add(("orders", 2))
    d.advance(20_000)
    assert d.events_named("TransactionAbortedByTimeout")
    assert marker_kinds(d) == [("ABORT", "kafka")]


def test_a_fencing_abort_has_the_kind_of_the_fenced_producer_and_the_new_producer_its_own():
    d = driver()
    old = Producer(d)
    old.init(kafka_client=True)
    old.add(("orders", 0))
    new = Producer(d)
    assert new.init()["errorCode"] == Errors.CONCURRENT_TRANSACTIONS.code  # the ongoing transaction is aborted
    # The fence abort's marker closes data the Kafka client wrote: a control record.
    assert marker_kinds(d) == [("ABORT", "kafka")]
    d.advance(1)  # Complete*
    assert new.init()["errorCode"] == 0
    assert txn(d).client_kind == JSON_CLIENT


def test_the_kind_survives_a_state_log_replay_and_the_state_snapshot():
    d = driver()
    p = Producer(d)
    p.init(kafka_client=True)
    p.add(("orders", 0))
    part = replayed(d)
    assert part.component("transactions").txns[p.tid].client_kind == KAFKA_CLIENT
    blob = state_codec.encode(part.to_json())
    loaded = CoordinatorPartition(part.partition_id, part.config, state_codec.decode(*blob))
    assert loaded.component("transactions").txns[p.tid].client_kind == KAFKA_CLIENT
    # A transaction caught in Prepare* by a replay re-sends its markers with the kind.
    p.end(True)
    part = replayed(d)
    blob = state_codec.encode(part.to_json())
    _, out = run_batch(
        lambda: CoordinatorPartition(part.partition_id, part.config, state_codec.decode(*blob)), [], d.now + 1
    )
    resent = [parse_marker(r.headers, r.value) for r in out.data]
    assert [(m["type"], m["clientKind"]) for m in resent] == [("COMMIT", "kafka")]


def test_records_and_snapshots_without_the_field_load_as_json():
    d = driver()
    p = Producer(d)
    p.init()
    p.add(("orders", 0))
    for _, value in d.records:
        if value is not None:
            value.pop("clientKind", None)  # a record written before the field existed
    part = replayed(d)
    assert part.component("transactions").txns[p.tid].client_kind == JSON_CLIENT
    # A JSON client's snapshot has no clientKind at all (as before the field existed).
    snapshot = json.dumps(part.to_json())
    assert "clientKind" not in snapshot


def test_the_envelope_flag_must_be_a_boolean():
    d = driver()
    raw = json.dumps(
        {
            "apiKey": "InitProducerId",
            "apiVersion": 5,
            "correlationId": 99,
            "clientId": "c",
            "kafkaClient": "yes",
            "request": {"transactionalId": "known", "transactionTimeoutMs": 60000},
        }
    ).encode()
    d.send_raw(raw)
    r = d.responses[99]
    assert r["errorCode"] == Errors.INVALID_REQUEST.code and "kafkaClient" in r["errorMessage"]
    assert txn(d) is None
