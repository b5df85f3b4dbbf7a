"""Transaction markers: the COMMIT/ABORT record written into every data partition of a transaction,
and the WriteTxnMarkers request sent to the group coordinator for `__consumer_offsets` partitions.

Kafka writes a control batch (attributes: transactional + control) holding one control record:
key {version 0, type ABORT=0 | COMMIT=1}, value {version 0, coordinatorEpoch}. The data topics here
are plain Kafka topics written by the stream, so a marker is an ordinary record that readers
recognise by a header:

    topic, partition   the transaction's data partition (the sink pins the partition)
    key                '["TxnMarker","COMMIT"|"ABORT",<producerId>,<producerEpoch>]' (never null,
                       so a compacted topic accepts it)
    headers            [("__txn_marker", b"COMMIT"|b"ABORT")]   <- identifies a control record
    value              UTF-8 JSON:
        {"version":0,"type":"COMMIT"|"ABORT","transactionalId":...,"producerId":...,
         "producerEpoch":...,"coordinatorPartition":...,"transactionVersion":0|2,
         "clientKind":"json"|"kafka"}

`clientKind` is the kind of client that initialized the producer (InitProducerId through the
gateway: "kafka"), kept in the transaction's metadata, so that also the markers of timeout and
fencing aborts, which no request carries, have it. With `[txn] markers = "auto"` the stream sends
the "kafka" ones to the broker as real control records (streaming/txn_markers.py) and writes the
others as these JSON records.

`producerEpoch` is the epoch the marker is written with, as in Kafka: the transaction's epoch
(TV0/TV1), or the bumped one (TV2: the data was written with producerEpoch - 1; the epoch-fence
abort of a timed-out or re-initialized producer also carries the bumped epoch). A read_committed
reader matches a marker to the open transaction of `producerId` with an epoch <= the marker's.
Markers may be written more than once (a replayed micro-batch re-emits its outputs; a state-log
replay re-sends the markers of transactions caught in Prepare*); every copy carries the same
decision, and a copy never follows data of a later transaction of the same producer, because that
transaction cannot start before the Complete record, which is written only after the markers are
durable.
"""

from __future__ import annotations

import json

from ..messages import DataRecord

MARKER_HEADER = "__txn_marker"
CONSUMER_OFFSETS = "__consumer_offsets"
COMMIT, ABORT = "COMMIT", "ABORT"


def marker_record(
    topic: str,
    partition: int,
    *,
    committed: bool,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    coordinator_partition: int,
    transaction_version: int,
    client_kind: str = "json",
) -> DataRecord:
    kind = COMMIT if committed else ABORT
    value = {
        "version": 0,
        "type": kind,
        "transactionalId": transactional_id,
        "producerId": producer_id,
        "producerEpoch": producer_epoch,
        "coordinatorPartition": coordinator_partition,
        "transactionVersion": transaction_version,
        "clientKind": client_kind,
    }
    key = json.dumps(["TxnMarker", kind, producer_id, producer_epoch], separators=(",", ":"))
    return DataRecord(
        topic,
        partition,
        key,
        json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"),
        [(MARKER_HEADER, kind.encode("ascii"))],
    )


def parse_marker(headers, value: bytes | None) -> dict | None:
    """The marker a record carries, or None if it is an ordinary data record."""
    kinds = [v for k, v in (headers or []) if k == MARKER_HEADER]
    if not kinds or value is None:
        return None
    marker = json.loads(value)
    if marker.get("type") not in (COMMIT, ABORT):
        return None
    return marker


def write_txn_markers_body(
    *, committed: bool, producer_id: int, producer_epoch: int, offsets_partitions: list[int], transaction_version: int
) -> dict:
    """A WriteTxnMarkers v2 request body (camelCase, as Kafka's JSON converter prints it) for the
    `__consumer_offsets` partitions owned by one group coordinator partition."""
    return {
        "markers": [
            {
                "producerId": producer_id,
                "producerEpoch": producer_epoch,
                "transactionResult": committed,
                "topics": [{"name": CONSUMER_OFFSETS, "partitionIndexes": sorted(offsets_partitions)}],
                "coordinatorEpoch": 0,
                "transactionVersion": transaction_version,
            }
        ]
    }
