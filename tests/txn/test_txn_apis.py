"""The transaction APIs on the wire: versions, schemas, response shapes, the marker format, the
WriteTxnMarkers contract with the group side, and producer-id allocation."""

from __future__ import annotations

import json

import pytest

from coordinator.api import lookup
from coordinator.errors import Errors
from coordinator.routing import coordinator_partition
from coordinator.txn.markers import MARKER_HEADER, parse_marker
from tests.core_driver import CoreDriver
from tests.txn.txn_helpers import TID, Producer, driver

E = Errors


@pytest.mark.parametrize(
    "name,key,lo,hi,component",
    [
        ("InitProducerId", 22, 0, 5, "transactions"),
        ("AddPartitionsToTxn", 24, 0, 5, "transactions"),
        ("AddOffsetsToTxn", 25, 0, 4, "transactions"),
        ("EndTxn", 26, 0, 5, "transactions"),
        ("WriteTxnMarkers", 27, 1, 2, "groups"),
        ("TxnOffsetCommit", 28, 0, 6, "groups"),
        ("DescribeTransactions", 65, 0, 0, "transactions"),
        ("ListTransactions", 66, 0, 2, "transactions"),
    ],
)
def test_api_keys_and_versions_of_kafka_4(name, key, lo, hi, component):
    spec = lookup(name)
    assert (spec.api_key, spec.min_version, spec.max_version, spec.component) == (key, lo, hi, component)
    assert spec.internal == (name == "WriteTxnMarkers")


def shape(r: dict) -> dict:
    """A rejected request's body without its errorMessage (a rejection always explains itself)."""
    assert isinstance(r.get("errorMessage"), str) and r["errorMessage"]
    return {k: v for k, v in r.items() if k != "errorMessage"}


def test_unsupported_version_is_answered_in_the_api_shape():
    d = driver()
    r = shape(d.send("InitProducerId", 6, {"transactionalId": TID, "transactionTimeoutMs": 1}))
    assert r == {"throttleTimeMs": 0, "errorCode": E.UNSUPPORTED_VERSION.code, "producerId": -1, "producerEpoch": -1}
    r = shape(d.send("EndTxn", 6, {}))
    assert r == {"throttleTimeMs": 0, "errorCode": E.UNSUPPORTED_VERSION.code, "producerId": -1, "producerEpoch": -1}


def test_schema_errors_are_invalid_request_in_the_api_shape():
    d = driver()
    r = shape(d.send("EndTxn", 5, {"transactionalId": TID, "producerId": 1, "producerEpoch": 0}))
    assert r == {"throttleTimeMs": 0, "errorCode": E.INVALID_REQUEST.code, "producerId": -1, "producerEpoch": -1}
    r = shape(d.send("AddPartitionsToTxn", 4, {"transactions": [{"transactionalId": TID}]}))
    assert r == {"throttleTimeMs": 0, "errorCode": E.INVALID_REQUEST.code, "resultsByTransaction": []}
    r = shape(
        d.send("AddOffsetsToTxn", 0, {"transactionalId": TID, "producerId": 1, "producerEpoch": 70000, "groupId": "g"})
    )
    assert r == {"throttleTimeMs": 0, "errorCode": E.INVALID_REQUEST.code}
    r = shape(d.send("ListTransactions", 1, {"stateFilters": "Ongoing", "producerIdFilters": []}))
    assert r == {
        "throttleTimeMs": 0,
        "errorCode": E.INVALID_REQUEST.code,
        "unknownStateFilters": [],
        "transactionStates": [],
    }


def test_init_producer_id_versions_before_3_ignore_producer_id_and_epoch():
    d = driver()
    p = Producer(d)
    p.init()
    r = d.send(
        "InitProducerId",
        2,
        {"transactionalId": TID, "transactionTimeoutMs": 1000, "producerId": 999, "producerEpoch": 7},
    )
    assert (r["errorCode"], r["producerId"], r["producerEpoch"]) == (0, p.producer_id, p.epoch + 1)


def test_end_txn_response_carries_producer_id_and_epoch_from_version_5():
    d = driver()
    p = Producer(d)
    p.init()
    p.add(("t", 0))
    assert set(p.end(True, version=4)) == {"throttleTimeMs", "errorCode"}
    p.add(("t", 0))
    r = p.end(True, version=5)
    assert set(r) == {"throttleTimeMs", "errorCode", "producerId", "producerEpoch"}


def test_null_transactional_id_is_allowed_only_for_init_producer_id():
    d = driver()
    r = d.send("EndTxn", 5, {"transactionalId": None, "producerId": 1, "producerEpoch": 0, "committed": True})
    assert r["errorCode"] == E.INVALID_REQUEST.code


# ============================================================================ markers
def test_marker_record_format():
    d = driver()
    p = Producer(d)
    p.init()
    p.add(("orders", 3))
    p.end(False)
    [m] = d.data
    assert (m.topic, m.partition, m.headers) == ("orders", 3, [(MARKER_HEADER, b"ABORT")])
    assert json.loads(m.key) == ["TxnMarker", "ABORT", p.producer_id, p.epoch]
    assert json.loads(m.value) == {
        "version": 0,
        "type": "ABORT",
        "transactionalId": TID,
        "producerId": p.producer_id,
        "producerEpoch": p.epoch,
        "coordinatorPartition": d.partition_id,
        "transactionVersion": 2,
        "clientKind": "json",
    }
    assert parse_marker(m.headers, m.value)["type"] == "ABORT"
    assert parse_marker([("other", b"x")], m.value) is None


def test_write_txn_markers_request_is_the_contract_with_the_group_side():
    d = driver()
    p = Producer(d)
    p.init()
    groups = ["group-a", "group-b", "group-c"]
    for g in groups:
        p.add_offsets(g)
    p.end(True, version=4)
    spec = lookup("WriteTxnMarkers")
    partitions = sorted({coordinator_partition(g, 50) for g in groups})
    # AddOffsetsToTxn's notices to the group partitions come first, on the markers' channel.
    notices = [(k, e) for k, e in d.internal_requests if e["apiKey"] == "TxnOffsetsAdded"]
    assert [e["request"]["partitionIndex"] for _, e in notices] == [coordinator_partition(g, 50) for g in groups]
    assert d.internal_requests[: len(notices)] == notices
    markers = d.internal_requests[len(notices) :]
    assert len(markers) == len(partitions)  # one request per group coordinator partition
    for (key, env), gp in zip(markers, partitions, strict=True):
        assert coordinator_partition(key, 50) == gp  # routed to the group coordinator partition
        assert (env["apiKey"], env["apiVersion"], env["clientId"]) == (
            "WriteTxnMarkers",
            2,
            f"transaction-coordinator-{d.partition_id}",
        )
        # The body validates against the registered schema unchanged.
        assert spec.request.validate(env["request"], 2) == env["request"]
        assert env["request"] == {
            "markers": [
                {
                    "producerId": p.producer_id,
                    "producerEpoch": p.epoch,
                    "transactionResult": True,
                    "topics": [{"name": "__consumer_offsets", "partitionIndexes": [gp]}],
                    "coordinatorEpoch": 0,
                    "transactionVersion": 0,
                }
            ]
        }
    assert len({env["correlationId"] for _, env in d.internal_requests}) == len(d.internal_requests)


def test_write_txn_markers_and_txn_offset_commit_schemas():
    wtm = lookup("WriteTxnMarkers").request
    marker = {
        "producerId": 5,
        "producerEpoch": 1,
        "transactionResult": False,
        "topics": [{"name": "__consumer_offsets", "partitionIndexes": [3]}],
        "coordinatorEpoch": 0,
    }
    assert wtm.validate({"markers": [marker]}, 1) == {"markers": [marker]}
    with pytest.raises(ValueError, match="transactionVersion"):
        wtm.validate({"markers": [marker]}, 2)
    toc = lookup("TxnOffsetCommit").request
    body = {
        "transactionalId": "t",
        "groupId": "g",
        "producerId": 5,
        "producerEpoch": 1,
        "topics": [
            {"name": "orders", "partitions": [{"partitionIndex": 0, "committedOffset": 42, "committedMetadata": None}]}
        ],
    }
    assert toc.validate(body, 3) == dict(
        body,
        generationIdOrMemberEpoch=-1,
        memberId="",
        groupInstanceId=None,
        topics=[
            {
                "name": "orders",
                "partitions": [
                    {"partitionIndex": 0, "committedOffset": 42, "committedLeaderEpoch": -1, "committedMetadata": None}
                ],
            }
        ],
    )
    assert lookup("TxnOffsetCommit").routing_field == "groupId"
    err = lookup("TxnOffsetCommit").error_response(2, body, E.PRODUCER_FENCED, None)
    assert err["topics"][0]["partitions"][0]["errorCode"] == E.INVALID_PRODUCER_EPOCH.code


# ============================================================================ producer ids
def test_producer_ids_come_in_blocks_interleaved_by_coordinator_partition():
    d = CoreDriver(partition=3)
    cids = d.send_batch([("InitProducerId", 4, {"transactionalId": None, "transactionTimeoutMs": 0})] * 1002)
    pids = [d.response(c)["producerId"] for c in cids]
    assert pids[:1000] == list(range(3000, 4000))
    assert pids[1000:] == [53000, 53001]  # block 1 of partition 3: (1 * 50 + 3) * 1000
    blocks = [v for k, v in d.records if k == '["ProducerIdBlock",3]']
    assert [(b["blockIndex"], b["firstProducerId"], b["lastProducerId"]) for b in blocks] == [
        (0, 3000, 3999),
        (1, 53000, 53999),
    ]


def test_producer_ids_are_unique_across_partitions():
    seen = set()
    for partition in range(50):
        d = CoreDriver(partition=partition)
        cids = d.send_batch([("InitProducerId", 4, {"transactionalId": None, "transactionTimeoutMs": 0})] * 3)
        pids = {d.response(c)["producerId"] for c in cids}
        assert not pids & seen
        seen |= pids


def test_txn_offset_commit_generation_id_is_read_as_generation_id_or_member_epoch():
    """Kafka 4.4.0 renamed TxnOffsetCommitRequest.GenerationId to GenerationIdOrMemberEpoch (KIP-1319;
    the wire bytes are the same). The service reads the new name, and a JSON client written against
    4.1's name still has its generation read, not silently replaced by the default -1."""
    from coordinator.envelope import parse_request

    def parsed(fields: dict) -> dict:
        body = {"transactionalId": "t", "groupId": "g", "producerId": 5, "producerEpoch": 1, "topics": [], **fields}
        envelope = {"apiKey": "TxnOffsetCommit", "apiVersion": 3, "correlationId": 1, "clientId": "c", "request": body}
        request = parse_request(json.dumps(envelope).encode(), key="g", time_ms=0)
        assert not hasattr(request, "error"), request
        return request.body

    assert parsed({"generationIdOrMemberEpoch": 7})["generationIdOrMemberEpoch"] == 7
    legacy = parsed({"generationId": 4})
    assert legacy["generationIdOrMemberEpoch"] == 4 and "generationId" not in legacy
    # Both given: the new name wins, as Kafka's converter reads only it.
    assert parsed({"generationId": 4, "generationIdOrMemberEpoch": 9})["generationIdOrMemberEpoch"] == 9
