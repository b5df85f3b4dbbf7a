"""State-log records of the transaction coordinator (the role of `__transaction_state`).

TransactionLog (one per transactional id, compacted on the key):

    key   ["TransactionLog","<transactionalId>"]
    value {"type":"TransactionLog", <the fields of Kafka's TransactionLogValue, camelCase>}
          or null (a tombstone: the transactional id expired)

    producerId, previousProducerId, nextProducerId, producerEpoch, transactionTimeoutMs,
    transactionStatus (the state id, int8), transactionPartitions ([{topic, partitionIds}], null in
    Empty), transactionLastUpdateTimestampMs, transactionStartTimestampMs, clientTransactionVersion,
    and, not in Kafka, clientKind ("json" | "kafka": the kind of client that initialized the current
    producer, which decides how its markers are written; absent in older records: "json")

    Like Kafka's record, it holds no lastProducerEpoch: a replay loads it as -1, as
    `TransactionLog.read` does. Unlike Kafka 4.x's `TransactionLog.valueToBytes`, which leaves the
    tagged PreviousProducerId/NextProducerId of its schema at their default -1, their real values
    are written, so that a TV2 transaction completing over an epoch overflow survives a restart.

ProducerIdBlock (one per coordinator partition):

    key   ["ProducerIdBlock",<coordinator partition>]
    value {"type":"ProducerIdBlock","assignedPartition":p,"coordinatorPartitions":N,
           "blockIndex":k,"firstProducerId":f,"lastProducerId":l}

    written when a partition carves a new block of producer ids (see pid.py); the role of the
    controller's ProducerIdsRecord.
"""

from __future__ import annotations

from itertools import groupby

from ..records import record_key
from .metadata import (
    CLIENT_KINDS,
    JSON_CLIENT,
    NO_PRODUCER_EPOCH,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
    sorted_partitions,
)

TRANSACTION_LOG = "TransactionLog"
PRODUCER_ID_BLOCK = "ProducerIdBlock"


def txn_key(transactional_id: str) -> str:
    return record_key(TRANSACTION_LOG, transactional_id)


def value_of(transit: TxnTransitMetadata) -> dict:
    if transit.txn_state == TransactionState.EMPTY and transit.topic_partitions:
        raise ValueError(f"Transaction is not expected to have any partitions since its state is Empty: {transit}")
    partitions = None
    if transit.txn_state != TransactionState.EMPTY:
        partitions = [
            {"topic": topic, "partitionIds": [p for _, p in group]}
            for topic, group in groupby(sorted_partitions(transit.topic_partitions), key=lambda tp: tp[0])
        ]
    return {
        "type": TRANSACTION_LOG,
        "producerId": transit.producer_id,
        "previousProducerId": transit.prev_producer_id,
        "nextProducerId": transit.next_producer_id,
        "producerEpoch": transit.producer_epoch,
        "transactionTimeoutMs": transit.txn_timeout_ms,
        "transactionStatus": transit.txn_state.id,
        "transactionPartitions": partitions,
        "transactionLastUpdateTimestampMs": transit.txn_last_update_timestamp,
        "transactionStartTimestampMs": transit.txn_start_timestamp,
        "clientTransactionVersion": transit.client_transaction_version,
        "clientKind": transit.client_kind,
    }


def metadata_of(transactional_id: str, value: dict) -> TransactionMetadata:
    """TransactionLog.read: the metadata a loading coordinator installs (no pending state, last
    epoch unknown)."""
    state = TransactionState.from_id(value["transactionStatus"])
    parts: set = set()
    if state != TransactionState.EMPTY:
        for entry in value.get("transactionPartitions") or []:
            parts.update((entry["topic"], p) for p in entry["partitionIds"])
    return TransactionMetadata(
        transactional_id,
        value["producerId"],
        value.get("previousProducerId", -1),
        value.get("nextProducerId", -1),
        value["producerEpoch"],
        NO_PRODUCER_EPOCH,
        value["transactionTimeoutMs"],
        state,
        parts,
        value["transactionStartTimestampMs"],
        value["transactionLastUpdateTimestampMs"],
        value.get("clientTransactionVersion", 0),
        client_kind=_client_kind(value.get("clientKind")),
    )


def _client_kind(kind) -> str:
    return kind if kind in CLIENT_KINDS else JSON_CLIENT


def block_key(coordinator_partition: int) -> str:
    return record_key(PRODUCER_ID_BLOCK, coordinator_partition)
