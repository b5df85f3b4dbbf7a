"""End to end through the real broker and the real Spark job: round trips, routing, bad input."""

from __future__ import annotations

import json

import pytest

from client import response_partition
from client.topic_reader import events, read_records
from coordinator import Errors

pytestmark = pytest.mark.integration

VECTORS = {
    "test-group": 12,
    "my-group": 12,
    "groupId": 18,
    "tx-1": 20,
    "orders-consumer": 40,
    "支付组": 39,
    "😀-group": 43,
}


@pytest.fixture(scope="module")
def job(job_factory):
    # A small request limit so that the oversized case needs no megabyte records.
    return job_factory(coordinator={"coordinator.request.max.bytes": 4096})


@pytest.fixture(scope="module")
def client(job):
    c = job.client("basics-client")
    yield c
    c.close()


def test_find_coordinator_round_trip_single_key(client, job):
    for key, partition in VECTORS.items():
        for key_type in (0, 1):
            r = client.request("FindCoordinator", 3, {"key": key, "keyType": key_type}, timeout=60)
            assert r == {
                "throttleTimeMs": 0,
                "errorCode": 0,
                "errorMessage": "NONE",
                "nodeId": partition,
                "host": "127.0.0.1",
                "port": int(job.bootstrap.rsplit(":", 1)[1]),
            }


def test_find_coordinator_batched_v4(client):
    r = client.request("FindCoordinator", 4, {"keyType": 1, "coordinatorKeys": list(VECTORS)}, timeout=60)
    assert [(c["key"], c["nodeId"], c["errorCode"]) for c in r["coordinators"]] == [
        (k, p, 0) for k, p in VECTORS.items()
    ]


def test_responses_are_keyed_by_client_and_land_on_its_partition(job, client):
    other = job.client("another-client")
    try:
        cid = other.send("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["x"]})
        envelope = other.wait(cid, timeout=60)
        assert envelope["clientId"] == "another-client" and envelope["correlationId"] == cid
        assert envelope["apiKey"] == "FindCoordinator" and envelope["apiVersion"] == 4
        expected = response_partition("another-client", job.topics["responses_partitions"])
        assert other.partition.partition == expected
        raw = read_records(job.bootstrap, job.topics["responses"], timeout_s=10)
        mine = {r.partition for r in raw if r.key == b"another-client"}
        assert mine == {expected}
    finally:
        other.close()


def test_sql_routing_matches_kafka_for_the_vectors(job, client):
    # A record without a readable correlation id becomes a RequestRejected event that names the
    # coordinator partition the stream routed it to (computed in Spark SQL from the record key).
    for key in VECTORS:
        client.send_raw(b"not json at all", key=key)
    client.send_raw(b"not json at all", key=None)
    found = events(
        job.bootstrap,
        job.topics["events"],
        timeout_s=60,
        until=lambda recs: sum(b"RequestRejected" in (r.value or b"") for r in recs) >= len(VECTORS) + 1,
    )
    rejected = {e.get("coordinatorPartition") for e in found if e["event"] == "RequestRejected"}
    assert set(VECTORS.values()) | {0} <= rejected


def _envelope(cid, api, version, body, client_id="basics-client"):
    return json.dumps(
        {"correlationId": cid, "clientId": client_id, "apiKey": api, "apiVersion": version, "request": body}
    ).encode()


BAD_INPUTS = [
    # (correlation id, raw value, expected error code, fragment of the message)
    (
        901,
        b'{"correlationId": 901, "clientId": "basics-client", "apiKey": "FindCoordinator", '
        b'"apiVersion": 3, "request": {"key": ',
        Errors.INVALID_REQUEST.code,
        "malformed JSON",
    ),
    (902, _envelope(902, "NoSuchApi", 0, {}), Errors.INVALID_REQUEST.code, "unknown apiKey"),
    (903, _envelope(903, "FindCoordinator", 99, {}), Errors.UNSUPPORTED_VERSION.code, "not supported"),
    (
        904,
        _envelope(904, "FindCoordinator", 3, {"keyType": 0}),
        Errors.INVALID_REQUEST.code,
        "unable to locate field 'key'",
    ),
    (
        905,
        _envelope(905, "FindCoordinator", 3, {"key": 17, "keyType": 0}),
        Errors.INVALID_REQUEST.code,
        "must be a string",
    ),
    (
        906,
        _envelope(906, "FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["k" * 100] * 100}),
        Errors.INVALID_REQUEST.code,
        "exceeds the limit",
    ),
    (
        907,
        _envelope(907, "FindCoordinator", 3, {"key": "g", "keyType": 9}),
        Errors.INVALID_REQUEST.code,
        "Unknown coordinator type",
    ),
]


def test_bad_input_gets_kafka_errors_and_the_query_keeps_running(job, client):
    for _, raw, _, _ in BAD_INPUTS:
        client.send_raw(raw, key="bad-input")
    client.send_raw(b"\x00\xff garbage without any id", key="bad-input")
    client.send_raw(None, key="bad-input")
    client.send_raw(b"no id, hostile key", key="k" * 300_000)  # the event must not echo all of it
    for cid, _, code, fragment in BAD_INPUTS:
        body = client.wait(cid, timeout=60)["response"]
        assert body["errorCode"] == code, body
        assert fragment in body["errorMessage"], body
    # Inputs without a correlation id became events; the query is still answering.
    found = events(
        job.bootstrap,
        job.topics["events"],
        timeout_s=60,
        until=lambda recs: sum(b'"requestOffset"' in (r.value or b"") for r in recs) >= 3,
    )
    assert sum(1 for e in found if e["event"] == "RequestRejected") >= 3
    ok = client.request("FindCoordinator", 3, {"key": "after-bad-input", "keyType": 0}, timeout=60)
    assert ok["errorCode"] == 0
    assert job.proc.poll() is None
