"""End to end through the real broker and the real Spark job: round trips, routing, bad input."""

from __future__ import annotations

import json

import pytest

from client import response_partition
from client.topic_reader import end_offsets, events, read_records
from coordinator import Errors

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("plain")]

# Kafka's own answers (Utils.abs(hashCode) % 50). The shared job has a divisor of 50 partitions, so
# its answer is the vector's partition modulo its count.
VECTORS = {
    "test-group": 12,
    "my-group": 12,
    "groupId": 18,
    "tx-1": 20,
    "orders-consumer": 40,
    "支付组": 39,
    "😀-group": 43,
}


def expected_partition(job, key: str) -> int:
    partitions = job.cfg.coordinator_partitions
    assert 50 % partitions == 0, "the vectors are Kafka's answers for 50 partitions"
    return VECTORS[key] % partitions


@pytest.fixture(scope="module")
def client(job):
    c = job.client("basics-client")
    yield c
    c.close()


def test_find_coordinator_round_trip_single_key(client, job):
    for key in VECTORS:
        partition = expected_partition(job, key)
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


def test_find_coordinator_batched_v4(client, job):
    r = client.request("FindCoordinator", 4, {"keyType": 1, "coordinatorKeys": list(VECTORS)}, timeout=60)
    assert [(c["key"], c["nodeId"], c["errorCode"]) for c in r["coordinators"]] == [
        (k, expected_partition(job, k), 0) for k in VECTORS
    ]


def test_responses_are_keyed_by_client_and_land_on_its_partition(job, client):
    other = job.client("basics-another-client")
    try:
        cid = other.send("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["x"]})
        envelope = other.wait(cid, timeout=60)
        assert envelope["clientId"] == "basics-another-client" and envelope["correlationId"] == cid
        assert envelope["apiKey"] == "FindCoordinator" and envelope["apiVersion"] == 4
        expected = response_partition("basics-another-client", job.topics["responses_partitions"])
        assert other.partition.partition == expected
        raw = read_records(job.bootstrap, job.topics["responses"], timeout_s=10)
        mine = {r.partition for r in raw if r.key == b"basics-another-client"}
        assert mine == {expected}
    finally:
        other.close()


def test_sql_routing_matches_kafka_for_the_vectors(job, client):
    # A record without a readable correlation id becomes a RequestRejected event that names the
    # coordinator partition the stream routed it to (computed in Spark SQL from the record key).
    # Only the events after this test's records count (the job is shared).
    since = end_offsets(job.bootstrap, job.topics["events"])
    for key in VECTORS:
        client.send_raw(b"not json at all", key=key)
    client.send_raw(b"not json at all", key=None)
    found = events(
        job.bootstrap,
        job.topics["events"],
        timeout_s=60,
        start=since,
        until=lambda recs: sum(b"RequestRejected" in (r.value or b"") for r in recs) >= len(VECTORS) + 1,
    )
    rejected = {e.get("coordinatorPartition") for e in found if e["event"] == "RequestRejected"}
    assert {expected_partition(job, k) for k in VECTORS} | {0} <= rejected


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
        # over the shared job's coordinator.request.max.bytes (20,000)
        _envelope(906, "FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["k" * 100] * 300}),
        Errors.INVALID_REQUEST.code,
        "exceeds the limit",
    ),
    (
        907,
        _envelope(907, "FindCoordinator", 3, {"key": "g", "keyType": 9}),
        Errors.INVALID_REQUEST.code,
        "request being malformed",  # Kafka's default message, as KafkaApis answers it
    ),
]


def test_bad_input_gets_kafka_errors_and_the_query_keeps_running(job, client):
    assert len(BAD_INPUTS[5][1]) > job.cfg.coordinator_config()["coordinator.request.max.bytes"]
    since = end_offsets(job.bootstrap, job.topics["events"])
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
        start=since,
        until=lambda recs: sum(b'"requestOffset"' in (r.value or b"") for r in recs) >= 3,
    )
    assert sum(1 for e in found if e["event"] == "RequestRejected") >= 3
    ok = client.request("FindCoordinator", 3, {"key": "after-bad-input", "keyType": 0}, timeout=60)
    assert ok["errorCode"] == 0
    assert job.proc.poll() is None
