"""The transaction APIs: Kafka's API keys, the versions Kafka 4.x serves, request schemas (camelCase
field names as Kafka's generated JSON converters print them) and error-response builders shaped
like each API's response.

Versions are those of Apache Kafka 4.3 (`validVersions` of the `*Request.json` files, without the
versions a 4.x broker does not serve): InitProducerId 0-5 (v6, KIP-939 two-phase commit, is still
`latestVersionUnstable`), AddPartitionsToTxn 0-5 (4+ is the batched broker form), AddOffsetsToTxn
0-4, EndTxn 0-5 (5 = transaction version 2, KIP-890), WriteTxnMarkers 1-2 (v0 removed by KIP-896,
v2 adds transactionVersion, KIP-1228), TxnOffsetCommit 0-5 (5: the group coordinator adds its
offsets partition to the transaction itself, KIP-890 part 2), DescribeTransactions 0,
ListTransactions 0-2 (v1 durationFilter, KIP-994; v2 transactionalIdPattern, KIP-1152).

WriteTxnMarkers and TxnOffsetCommit are registered here for the group side (component "groups"),
which implements their handlers; the transaction coordinator only sends WriteTxnMarkers.

None of these specs sets `routing_field`: Kafka answers INVALID_REQUEST for an empty
transactionalId on any broker, InitProducerId without a transactionalId on any broker, and checks
ownership per transaction in the batched AddPartitionsToTxn and in DescribeTransactions, so the
handlers check ownership themselves, in Kafka's order.
"""
from __future__ import annotations

from ..api import ApiSpec, register
from ..errors import Error, Errors
from ..schema import Array, F, Struct

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


def producer_fenced_for(version: int, first_version_with_producer_fenced: int, error: Error) -> Error:
    """Kafka answers INVALID_PRODUCER_EPOCH to request versions older than PRODUCER_FENCED (KIP-588):
    InitProducerId < 4, AddPartitionsToTxn / AddOffsetsToTxn / EndTxn < 2, TxnOffsetCommit < 3."""
    if error == Errors.PRODUCER_FENCED and version < first_version_with_producer_fenced:
        return Errors.INVALID_PRODUCER_EPOCH
    return error


# ---------------------------------------------------------------------------- InitProducerId (22)
def init_producer_id_response(version: int, error: Error, producer_id: int = NO_PRODUCER_ID,
                              producer_epoch: int = NO_PRODUCER_EPOCH) -> dict:
    error = producer_fenced_for(version, 4, error)
    return {"throttleTimeMs": 0, "errorCode": error.code, "producerId": producer_id,
            "producerEpoch": producer_epoch}


def _init_producer_id_error(version, body, error, message):
    return init_producer_id_response(version, error)


INIT_PRODUCER_ID = register(ApiSpec(
    name="InitProducerId", api_key=22, min_version=0, max_version=5,
    request=Struct(
        F("transactionalId", "string", nullable=(0, None)),
        F("transactionTimeoutMs", "int32"),
        F("producerId", "int64", versions=(3, None), default=-1),
        F("producerEpoch", "int16", versions=(3, None), default=-1),
    ),
    component="transactions", error_response=_init_producer_id_error))


# ---------------------------------------------------------------------------- AddPartitionsToTxn (24)
_TOPIC = Struct(F("name", "string"), F("partitions", Array("int32")))


def topic_results(partitions: list, errors: dict) -> list:
    """[{name, resultsByPartition: [{partitionIndex, partitionErrorCode}]}] in request order."""
    out: list = []
    by_topic: dict = {}
    for topic, p in partitions:
        if topic not in by_topic:
            by_topic[topic] = {"name": topic, "resultsByPartition": []}
            out.append(by_topic[topic])
        by_topic[topic]["resultsByPartition"].append(
            {"partitionIndex": p, "partitionErrorCode": errors[(topic, p)].code})
    return out


def flatten_topics(topics: list) -> list:
    """(topic, partition) pairs in request order, without duplicates (Kafka uses a set)."""
    seen: dict = {}
    for t in topics or []:
        for p in t.get("partitions") or []:
            seen.setdefault((t["name"], p), None)
    return list(seen)


def _add_partitions_error(version, body, error, message):
    if version < 4:
        parts = flatten_topics((body or {}).get("v3AndBelowTopics") or [])
        error = producer_fenced_for(version, 2, error)
        return {"throttleTimeMs": 0,
                "resultsByTopicV3AndBelow": topic_results(parts, {tp: error for tp in parts})}
    return {"throttleTimeMs": 0, "errorCode": error.code, "resultsByTransaction": []}


ADD_PARTITIONS_TO_TXN = register(ApiSpec(
    name="AddPartitionsToTxn", api_key=24, min_version=0, max_version=5,
    request=Struct(
        F("transactions", Array(Struct(
            F("transactionalId", "string"),
            F("producerId", "int64"),
            F("producerEpoch", "int16"),
            F("verifyOnly", "bool", default=False),
            F("topics", Array(_TOPIC)),
        )), versions=(4, None)),
        F("v3AndBelowTransactionalId", "string", versions=(0, 3)),
        F("v3AndBelowProducerId", "int64", versions=(0, 3)),
        F("v3AndBelowProducerEpoch", "int16", versions=(0, 3)),
        F("v3AndBelowTopics", Array(_TOPIC), versions=(0, 3)),
    ),
    component="transactions", error_response=_add_partitions_error))


# ---------------------------------------------------------------------------- AddOffsetsToTxn (25)
def _add_offsets_error(version, body, error, message):
    return {"throttleTimeMs": 0, "errorCode": producer_fenced_for(version, 2, error).code}


ADD_OFFSETS_TO_TXN = register(ApiSpec(
    name="AddOffsetsToTxn", api_key=25, min_version=0, max_version=4,
    request=Struct(
        F("transactionalId", "string"),
        F("producerId", "int64"),
        F("producerEpoch", "int16"),
        F("groupId", "string"),
    ),
    component="transactions", error_response=_add_offsets_error))


# ---------------------------------------------------------------------------- EndTxn (26)
def end_txn_response(version: int, error: Error, producer_id: int = NO_PRODUCER_ID,
                     producer_epoch: int = NO_PRODUCER_EPOCH) -> dict:
    body = {"throttleTimeMs": 0, "errorCode": producer_fenced_for(version, 2, error).code}
    if version >= 5:  # TV2: the producer id and epoch of the next transaction
        body["producerId"] = producer_id
        body["producerEpoch"] = producer_epoch
    return body


def _end_txn_error(version, body, error, message):
    return end_txn_response(version, error)


END_TXN = register(ApiSpec(
    name="EndTxn", api_key=26, min_version=0, max_version=5,
    request=Struct(
        F("transactionalId", "string"),
        F("producerId", "int64"),
        F("producerEpoch", "int16"),
        F("committed", "bool"),
    ),
    component="transactions", error_response=_end_txn_error))


# ---------------------------------------------------------------------------- WriteTxnMarkers (27)
def _write_txn_markers_error(version, body, error, message):
    markers = []
    for m in (body or {}).get("markers") or []:
        markers.append({"producerId": m["producerId"], "topics": [
            {"name": t["name"], "partitions": [{"partitionIndex": p, "errorCode": error.code}
                                                for p in t["partitionIndexes"]]}
            for t in m["topics"]]})
    return {"markers": markers}


WRITE_TXN_MARKERS = register(ApiSpec(
    name="WriteTxnMarkers", api_key=27, min_version=1, max_version=2,
    request=Struct(
        F("markers", Array(Struct(
            F("producerId", "int64"),
            F("producerEpoch", "int16"),
            F("transactionResult", "bool"),
            F("topics", Array(Struct(F("name", "string"), F("partitionIndexes", Array("int32"))))),
            F("coordinatorEpoch", "int32"),
            F("transactionVersion", "int8", versions=(2, None)),
        ))),
    ),
    component="groups", error_response=_write_txn_markers_error, internal=True))


# ---------------------------------------------------------------------------- TxnOffsetCommit (28)
def _txn_offset_commit_error(version, body, error, message):
    error = producer_fenced_for(version, 3, error)
    return {"throttleTimeMs": 0, "topics": [
        {"name": t["name"], "partitions": [{"partitionIndex": p["partitionIndex"], "errorCode": error.code}
                                           for p in t["partitions"]]}
        for t in (body or {}).get("topics") or []]}


# Version 5 (KIP-890 part 2, transaction version 2) asks the group coordinator to add the offsets
# partition to the transaction itself; v0-4 have it verified (KIP-890 part 1). Both go through the
# TxnVerification round trip below (coordinator/group/txn_offsets.py).
TXN_OFFSET_COMMIT = register(ApiSpec(
    name="TxnOffsetCommit", api_key=28, min_version=0, max_version=5,
    request=Struct(
        F("transactionalId", "string"),
        F("groupId", "string"),
        F("producerId", "int64"),
        F("producerEpoch", "int16"),
        F("generationId", "int32", versions=(3, None), default=-1),
        F("memberId", "string", versions=(3, None), default=""),
        F("groupInstanceId", "string", versions=(3, None), nullable=(3, None), default=None),
        F("topics", Array(Struct(
            F("name", "string"),
            F("partitions", Array(Struct(
                F("partitionIndex", "int32"),
                F("committedOffset", "int64"),
                F("committedLeaderEpoch", "int32", versions=(2, None), default=-1),
                F("committedMetadata", "string", nullable=(0, None)),
            ))),
        ))),
    ),
    component="groups", routing_field="groupId", error_response=_txn_offset_commit_error))


# ---------------------------------------------------------------------------- transaction verification
# KIP-890 between coordinator partitions (internal, no Kafka API key: Kafka's group coordinator
# sends AddPartitionsToTxn v4+ to the transaction coordinator's broker and reads its response; here
# the question and the answer are both internal requests on the signed channel, so that nobody else
# can ask on a partition's behalf or answer for the transaction coordinator).
#   TxnVerification (group partition G -> the transactionalId's partition, keyed by the id):
#     AddPartitionsToTxn v5's fields for one transaction and the offsets partition G, `verifyOnly`
#     (TxnOffsetCommit v0-4) or not (v5: add it), and `verificationId` to match the answer.
#   TxnVerificationResult (back to G, keyed by key_for_partition(G)): `verificationId`,
#     `errorCode` (the partition's AddPartitionsToTxn error).
TXN_VERIFICATION = register(ApiSpec(
    name="TxnVerification", api_key=1001, min_version=0, max_version=0,
    request=Struct(
        F("transactionalId", "string"),
        F("producerId", "int64"),
        F("producerEpoch", "int16"),
        F("verifyOnly", "bool"),
        F("partitionIndex", "int32"),  # of __consumer_offsets: the asking coordinator partition
        F("verificationId", "int64"),
    ),
    component="transactions", internal=True))

TXN_VERIFICATION_RESULT = register(ApiSpec(
    name="TxnVerificationResult", api_key=1002, min_version=0, max_version=0,
    request=Struct(
        F("verificationId", "int64"),
        F("transactionalId", "string"),
        F("errorCode", "int16"),
    ),
    component="groups", internal=True))


# ---------------------------------------------------------------------------- DescribeTransactions (65)
def describe_error_state(transactional_id: str, error: Error) -> dict:
    """A TransactionState entry with an error: the other fields keep their Java defaults."""
    return {"errorCode": error.code, "transactionalId": transactional_id, "transactionState": "",
            "transactionTimeoutMs": 0, "transactionStartTimeMs": 0, "producerId": 0,
            "producerEpoch": 0, "topics": []}


def _describe_error(version, body, error, message):
    return {"throttleTimeMs": 0, "transactionStates": [
        describe_error_state(t, error) for t in (body or {}).get("transactionalIds") or []]}


DESCRIBE_TRANSACTIONS = register(ApiSpec(
    name="DescribeTransactions", api_key=65, min_version=0, max_version=0,
    request=Struct(F("transactionalIds", Array("string"))),
    component="transactions", error_response=_describe_error))


# ---------------------------------------------------------------------------- ListTransactions (66)
def _list_error(version, body, error, message):
    return {"throttleTimeMs": 0, "errorCode": error.code, "unknownStateFilters": [],
            "transactionStates": []}


# Version 2 (Kafka 4.1, KIP-1152) adds transactionalIdPattern, an RE2/J regular expression, matched
# here with the linear-time matcher of consumer-group regexes (coordinator/group/consumer/regex.py).
LIST_TRANSACTIONS = register(ApiSpec(
    name="ListTransactions", api_key=66, min_version=0, max_version=2,
    request=Struct(
        F("stateFilters", Array("string")),
        F("producerIdFilters", Array("int64")),
        F("durationFilter", "int64", versions=(1, None), default=-1),
        F("transactionalIdPattern", "string", versions=(2, None), nullable=(2, None), default=None),
    ),
    component="transactions", error_response=_list_error))
