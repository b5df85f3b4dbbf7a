"""The transaction APIs' response bodies, shaped for the request's version (thin calls into the
message-file shaper, coordinator/protocol), and the helpers their handlers share.

The APIs themselves (versions, request fields, error shapes) are in the API table,
coordinator/protocol/table.py. Versions are those of Apache Kafka 4.3 (`validVersions` of the
`*Request.json` files, without the versions a 4.x broker does not serve): InitProducerId 0-5 (v6,
KIP-939 two-phase commit, is still `latestVersionUnstable`), AddPartitionsToTxn 0-5 (4+ is the
batched broker form), AddOffsetsToTxn 0-4, EndTxn 0-5 (5 = transaction version 2, KIP-890),
WriteTxnMarkers 1-2 (v0 removed by KIP-896, v2 adds transactionVersion, KIP-1228: the service's
own message file extends Kafka 4.1.1's), TxnOffsetCommit 0-6 (5: the group coordinator adds its
offsets partition to the transaction itself, KIP-890 part 2; 6: topic ids, KIP-1319), DescribeTransactions 0,
ListTransactions 0-2 (v1 durationFilter, KIP-994; v2 transactionalIdPattern, KIP-1152, matched with
the linear-time matcher of consumer-group regexes, coordinator/group/consumer/regex.py).

WriteTxnMarkers and TxnOffsetCommit are handled by the group side (component "groups"); the
transaction coordinator only sends WriteTxnMarkers.

None of these APIs sets a routing field: Kafka answers INVALID_REQUEST for an empty
transactionalId on any broker, InitProducerId without a transactionalId on any broker, and checks
ownership per transaction in the batched AddPartitionsToTxn and in DescribeTransactions, so the
handlers check ownership themselves, in Kafka's order.

Transaction verification (KIP-890) between coordinator partitions uses two internal APIs of the
service's own (messages/service/TxnVerification*.json; Kafka's group coordinator sends
AddPartitionsToTxn v4+ to the transaction coordinator's broker and reads its response; here the
question and the answer are both internal requests on the signed channel, so that nobody else can
ask on a partition's behalf or answer for the transaction coordinator):
  TxnVerification (group partition G -> the transactionalId's partition, keyed by the id):
    AddPartitionsToTxn v5's fields for one transaction and the offsets partition G, `verifyOnly`
    (TxnOffsetCommit v0-4) or not (v5+: add it), and `verificationId` to match the answer.
  TxnVerificationResult (back to G, keyed by key_for_partition(G)): `verificationId`,
    `errorCode` (the partition's AddPartitionsToTxn error).
and a third spares the question in the usual case:
  TxnOffsetsAdded (the transactionalId's partition -> G, keyed by key_for_partition(G)), sent by
    AddOffsetsToTxn: `transactionalId`, `producerId`, `producerEpoch` of the ongoing transaction
    that now includes `__consumer_offsets-<partitionIndex>`.
"""

from __future__ import annotations

from ..errors import Error
from ..protocol.hooks import flatten_topics, producer_fenced_for  # noqa: F401  (used by the handlers)
from ..protocol.loader import shape

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


def init_producer_id_response(
    version: int, error: Error, producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH
) -> dict:
    error = producer_fenced_for(version, 4, error)
    return shape(
        "InitProducerIdResponse",
        version,
        {"throttleTimeMs": 0, "errorCode": error.code, "producerId": producer_id, "producerEpoch": producer_epoch},
    )


def topic_results(partitions: list, errors: dict) -> list:
    """[{name, resultsByPartition: [{partitionIndex, partitionErrorCode}]}] in request order."""
    out: list = []
    by_topic: dict = {}
    for topic, p in partitions:
        if topic not in by_topic:
            by_topic[topic] = {"name": topic, "resultsByPartition": []}
            out.append(by_topic[topic])
        by_topic[topic]["resultsByPartition"].append(
            {"partitionIndex": p, "partitionErrorCode": errors[(topic, p)].code}
        )
    return out


def end_txn_response(
    version: int, error: Error, producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH
) -> dict:
    # v5 (TV2): the producer id and epoch of the next transaction
    return shape(
        "EndTxnResponse",
        version,
        {
            "throttleTimeMs": 0,
            "errorCode": producer_fenced_for(version, 2, error).code,
            "producerId": producer_id,
            "producerEpoch": producer_epoch,
        },
    )


def describe_error_state(transactional_id: str, error: Error) -> dict:
    """A TransactionState entry with an error: the other fields keep their Java defaults."""
    return shape(
        "DescribeTransactionsResponse",
        0,
        {"errorCode": error.code, "transactionalId": transactional_id},
        ("transactionStates",),
    )
