"""The group side of transactions: TxnOffsetCommit (API key 28) and WriteTxnMarkers (API key 27).

Plugged into the "groups" component with `GroupCoordinator.extend`. It follows Kafka 4.x:
`KafkaApis.handleTxnOffsetCommitRequest` (partitions of unknown topics are answered
UNKNOWN_TOPIC_OR_PARTITION, the others go to the coordinator), `GroupCoordinatorService.
commitTransactionalOffsets` (empty group id), `OffsetMetadataManager.commitTransactionalOffset`
(group validation, OFFSET_METADATA_TOO_LARGE per partition), `KafkaApis.
handleWriteTxnMarkersRequest` + `GroupCoordinatorShard.replayEndTransactionMarker` (COMMIT
materializes the producer's pending offsets, newer record wins; ABORT drops them), and the part of
the log layer a `__consumer_offsets` partition applies to every append: the producer state
(`ProducerStateManager`), whose epoch check fences zombies (INVALID_PRODUCER_EPOCH).

State-log records written here (besides the OffsetCommit records of the offsets themselves, which
carry "producerId" and "producerEpoch" as Kafka's record batch header does):

    ["EndTransactionMarker", producerId] -> {"type": "EndTransactionMarker", "producerId",
        "producerEpoch", "transactionResult": "COMMIT"|"ABORT", "coordinatorEpoch": 0,
        "transactionVersion", "timestamp"}            (Kafka's control record in the log)
        or null when the producer's state expires (producer.id.expiration.ms)

Replaying a marker record applies it exactly as the live marker did. Compaction needs one more
step, because it keeps only the latest record of each key: a transactional offset that is still
the latest record of its key when its marker is applied would otherwise be resolved by whatever
marker of the same producer survives compaction. So, after a marker, each such key gets its resolved
value re-appended: the materialized offset (COMMIT), or the committed offset / a tombstone (ABORT).
Re-appending is exact (it changes no comparison Kafka would make) except when another producer
also has a pending offset on the same key at that moment; then nothing is re-appended, and a
rebuild from a compacted log may resolve that offset differently (see docs/protocol.md).

Kafka answers TxnOffsetCommit only after verifying the transaction with the transaction
coordinator (KIP-890; for v5 it also adds the partition to the transaction). That needs a reply
path between coordinator partitions that the service does not have, so it is not done: the producer
must have called AddOffsetsToTxn, as Kafka clients before KIP-890 did, and TxnOffsetCommit v5 is not
served (see coordinator/txn/apis.py).
"""
from __future__ import annotations

from ..errors import ApiError, Error, Errors
from ..messages import Request, StateRecord
from ..records import parse_record_key, record_key
from ..timers import Timer
from ..txn.apis import producer_fenced_for
from .component import GroupCoordinator
from .offsets import OffsetAndMetadata

CONSUMER_OFFSETS = "__consumer_offsets"
MARKER_RECORD = "EndTransactionMarker"
EXT = "txnOffsets"  # key of this extension's state in component.extensions
T_PRODUCER_EXPIRATION = "txn-producer-expiration"
PRODUCER_EXPIRATION_KEY = record_key(T_PRODUCER_EXPIRATION)
COMMIT, ABORT = "COMMIT", "ABORT"


def marker_key(producer_id: int) -> str:
    return record_key(MARKER_RECORD, producer_id)


# ====================================================================== extension state
# component.extensions[EXT] = {
#   "producers": {"<producerId>": [epoch, lastTimestampMs]},   the partition's producer state
#   "lastRecord": {"<OffsetCommit record key>": record seq},   only for keys with pending offsets
# }
def _state(comp, create: bool = False) -> dict:
    st = comp.extensions.get(EXT)
    if st is None:
        st = {"producers": {}, "lastRecord": {}}
        if create:
            comp.extensions[EXT] = st
    return st


def _prune(comp) -> None:
    st = comp.extensions.get(EXT)
    if st is not None and not st["producers"] and not st["lastRecord"]:
        del comp.extensions[EXT]


def producer_epoch(comp, producer_id: int) -> int | None:
    """The last epoch this partition has seen for `producer_id` (None: unknown producer)."""
    entry = _state(comp)["producers"].get(str(producer_id))
    return None if entry is None else entry[0]


def _update_producer(comp, producer_id: int, epoch: int, timestamp: int) -> None:
    producers = _state(comp, create=True)["producers"]
    entry = producers.get(str(producer_id))
    if entry is None or epoch >= entry[0]:
        producers[str(producer_id)] = [epoch, timestamp]
    else:
        entry[1] = max(entry[1], timestamp)
    _ensure_expiration_timer(comp)


# ====================================================================== replay
def observe_offset_commit(comp, record: StateRecord, seq: int) -> None:
    """Every OffsetCommit record, live or replayed: the producer state of transactional offsets, and
    the position of the latest record of every key that has pending offsets."""
    _, (group_id, topic, partition) = parse_record_key(record.key)
    value = record.value
    if value is not None and value.get("producerId", -1) >= 0:
        _update_producer(comp, value["producerId"], value.get("producerEpoch", -1), value["commitTimestamp"])
    st = _state(comp)
    if value is not None and comp.offsets.has_pending(group_id, topic, partition):
        _state(comp, create=True)["lastRecord"][record.key] = seq
    elif record.key in st["lastRecord"]:
        del st["lastRecord"][record.key]
        _prune(comp)


def replay(comp, record: StateRecord) -> bool:
    kind, ids = parse_record_key(record.key)
    if kind != MARKER_RECORD:
        return False
    producer_id = ids[0]
    if record.value is None:  # the producer's state expired
        _state(comp)["producers"].pop(str(producer_id), None)
        _prune(comp)
        return True
    keys = _pending_keys(comp, producer_id)
    comp.complete_transaction(producer_id, record.value["transactionResult"] == COMMIT)
    _update_producer(comp, producer_id, record.value["producerEpoch"], record.value["timestamp"])
    last = _state(comp)["lastRecord"]
    for key, (group_id, topic, partition) in keys:
        if key in last and not comp.offsets.has_pending(group_id, topic, partition):
            del last[key]
    _prune(comp)
    return True


def on_load(comp) -> None:
    if _state(comp)["producers"]:
        _ensure_expiration_timer(comp)


def _pending_keys(comp, producer_id: int) -> list[tuple[str, tuple[str, str, int]]]:
    out = []
    for group_id, topics in comp.offsets.pending.get(producer_id, {}).items():
        for topic, partitions in topics.items():
            for partition in partitions:
                out.append((record_key("OffsetCommit", group_id, topic, partition), (group_id, topic, partition)))
    return out


# ====================================================================== TxnOffsetCommit
class _ResponseBuilder:
    """TxnOffsetCommitResponse.Builder: topics in insertion order, `merge` appends."""

    def __init__(self) -> None:
        self.topics: list[dict] = []
        self._by_name: dict[str, dict] = {}

    def add(self, topic: str, partition: int, error: Error) -> None:
        entry = self._by_name.get(topic)
        if entry is None:
            entry = self._by_name[topic] = {"name": topic, "partitions": []}
            self.topics.append(entry)
        entry["partitions"].append({"partitionIndex": partition, "errorCode": error.code})

    def body(self) -> dict:
        return {"throttleTimeMs": 0, "topics": self.topics}


def txn_offset_commit(comp, request: Request) -> dict:
    body, version = request.body, request.api_version
    metadata = comp.p.component("metadata")
    response = _ResponseBuilder()
    # KafkaApis: unknown topics and partitions are answered here; the rest go to the coordinator.
    valid: list[tuple[str, dict]] = []
    for topic in body["topics"]:
        for part in topic["partitions"]:
            if metadata.exists(topic["name"], part["partitionIndex"]):
                valid.append((topic["name"], part))
            else:
                response.add(topic["name"], part["partitionIndex"], Errors.UNKNOWN_TOPIC_OR_PARTITION)
    if not valid:
        return response.body()
    coordinator = _ResponseBuilder()
    try:
        _commit_transactional_offsets(comp, body, version, valid, coordinator)
    except ApiError as e:
        coordinator = _ResponseBuilder()
        error = producer_fenced_for(version, 3, e.error)
        for name, part in valid:
            coordinator.add(name, part["partitionIndex"], error)
    for entry in coordinator.topics:  # TxnOffsetCommitResponse.Builder.merge
        for p in entry["partitions"]:
            response.add(entry["name"], p["partitionIndex"], Errors.for_code(p["errorCode"]))
    return response.body()


def _commit_transactional_offsets(comp, body: dict, version: int, valid: list, out: _ResponseBuilder) -> None:
    """GroupCoordinatorService.commitTransactionalOffsets + OffsetMetadataManager.
    commitTransactionalOffset + the log's producer-epoch check. Raises ApiError before it changes
    anything."""
    group_id, producer_id, epoch = body["groupId"], body["producerId"], body["producerEpoch"]
    if group_id == "":
        raise ApiError(Errors.INVALID_GROUP_ID)
    if producer_id < 0:
        # What the transaction verification answers for a producer id no transaction has.
        raise ApiError(Errors.INVALID_PRODUCER_ID_MAPPING)
    member_id = body.get("memberId", "")
    instance_id = body.get("groupInstanceId")
    generation = body.get("generationId", -1)
    group = comp.groups.get(group_id)
    if group is None:
        if generation >= 0:
            raise ApiError(Errors.ILLEGAL_GENERATION)
    else:
        try:
            group.validate_offset_commit(member_id, instance_id, generation, True, version)
        except ApiError as e:
            if e.error is Errors.STALE_MEMBER_EPOCH:
                raise ApiError(Errors.ILLEGAL_GENERATION) from e
            raise
    accepted = [(name, part) for name, part in valid if not comp.is_offset_metadata_invalid(part["committedMetadata"])]
    if accepted:
        # The log layer: an append with an epoch older than the producer's last one is fenced.
        current = producer_epoch(comp, producer_id)
        if current is not None and epoch < current:
            raise ApiError(Errors.INVALID_PRODUCER_EPOCH,
                           f"Epoch of producer {producer_id} is {epoch}, which is smaller than the last "
                           f"seen epoch {current}")
    if group is None:
        comp.validate_transactional_offset_commit(group_id, member_id, instance_id, generation, version)
    for name, part in valid:
        index = part["partitionIndex"]
        if comp.is_offset_metadata_invalid(part["committedMetadata"]):
            out.add(name, index, Errors.OFFSET_METADATA_TOO_LARGE)
            continue
        comp.append_transactional_offset(producer_id, group_id, name, index, part["committedOffset"],
                                         part.get("committedLeaderEpoch", -1), part["committedMetadata"],
                                         producer_epoch=epoch)
        out.add(name, index, Errors.NONE)


# ====================================================================== WriteTxnMarkers
def write_txn_markers(comp, request: Request) -> dict:
    """KafkaApis.handleWriteTxnMarkersRequest for the partitions this coordinator partition hosts:
    only `__consumer_offsets-<own partition>`. Any other partition is not hosted here
    (UNKNOWN_TOPIC_OR_PARTITION, as a broker answers for partitions it does not have)."""
    markers = []
    for marker in request.body["markers"]:
        topics = []
        for topic in marker["topics"]:
            partitions = []
            for index in topic["partitionIndexes"]:
                if topic["name"] == CONSUMER_OFFSETS and index == comp.p.partition_id:
                    error = apply_marker(comp, marker["producerId"], marker["producerEpoch"],
                                         marker["transactionResult"], marker.get("transactionVersion", 0))
                else:
                    error = Errors.UNKNOWN_TOPIC_OR_PARTITION
                partitions.append({"partitionIndex": index, "errorCode": error.code})
            topics.append({"name": topic["name"], "partitions": partitions})
        markers.append({"producerId": marker["producerId"], "topics": topics})
    return {"markers": markers}


def apply_marker(comp, producer_id: int, epoch: int, committed: bool, transaction_version: int) -> Error:
    """Write the marker (a state-log record replayed as replayEndTransactionMarker), then re-append
    the resolved value of every key whose latest record was the producer's pending offset."""
    result = COMMIT if committed else ABORT
    current = producer_epoch(comp, producer_id)
    # ProducerAppendInfo.checkProducerEpoch for a marker: a TV2 marker carries a bumped epoch, so it
    # must be newer than anything seen; an older-version marker may repeat the current epoch.
    if current is not None and (epoch <= current if transaction_version >= 2 else epoch < current):
        comp.p.emit_event(str(producer_id), "TransactionMarkerRejected", producerId=producer_id,
                          producerEpoch=epoch, result=result, lastProducerEpoch=current,
                          transactionVersion=transaction_version)
        return Errors.INVALID_PRODUCER_EPOCH
    last = _state(comp)["lastRecord"]
    before = []
    for key, (group_id, topic, partition) in _pending_keys(comp, producer_id):
        value = comp.offsets.pending_offset(producer_id, group_id, topic, partition)
        latest = last.get(key) == value.record_seq
        others = any(pid != producer_id for pid in
                     comp.offsets.open_transactions.get(group_id, {}).get(topic, {}).get(partition, {}))
        before.append((group_id, topic, partition, value, latest, others))
    comp.append_and_replay(marker_key(producer_id), {
        "type": MARKER_RECORD, "producerId": producer_id, "producerEpoch": epoch, "transactionResult": result,
        "coordinatorEpoch": 0, "transactionVersion": transaction_version, "timestamp": comp.p.clock_ms})
    by_group: dict[str, dict] = {}
    for group_id, topic, partition, value, latest, others in before:
        committed_now = comp.offsets.get(group_id, topic, partition)
        materialized = committed and committed_now is value
        summary = by_group.setdefault(group_id, {"partitions": [], "skipped": []})
        if committed:
            if materialized:
                summary["partitions"].append([topic, partition, value.committed_offset])
            else:
                summary["skipped"].append([topic, partition])
        else:
            summary["partitions"].append([topic, partition])
        if not latest:
            continue  # a later record of the key supersedes the pending one in the log already
        if materialized:
            comp.append_offset_commit(group_id, topic, partition, _copy(value))
        elif not committed and not others:
            if committed_now is not None:
                comp.append_offset_commit(group_id, topic, partition, _copy(committed_now))
            else:
                comp.append_offset_tombstone(group_id, topic, partition)
    for group_id, summary in by_group.items():
        if committed:
            comp.emit(group_id, "TransactionalOffsetsCommitted", producerId=producer_id, producerEpoch=epoch,
                      partitions=summary["partitions"], skipped=summary["skipped"])
        else:
            comp.emit(group_id, "TransactionalOffsetsAborted", producerId=producer_id, producerEpoch=epoch,
                      partitions=summary["partitions"])
    return Errors.NONE


def _copy(value: OffsetAndMetadata) -> OffsetAndMetadata:
    return OffsetAndMetadata(value.committed_offset, value.leader_epoch, value.metadata, value.commit_timestamp_ms,
                             value.expire_timestamp_ms)


# ====================================================================== producer expiration
def _ensure_expiration_timer(comp) -> None:
    if PRODUCER_EXPIRATION_KEY not in comp.p.timers:
        comp.p.schedule(PRODUCER_EXPIRATION_KEY,
                        comp.p.clock_ms + comp.p.config["producer.id.expiration.check.interval.ms"],
                        T_PRODUCER_EXPIRATION)


def on_producer_expiration(comp, timer: Timer) -> None:
    """ProducerStateManager.removeExpiredProducers: producers without pending offsets whose last
    append is older than producer.id.expiration.ms are forgotten (their marker record too)."""
    now, expiration = comp.p.clock_ms, comp.p.config["producer.id.expiration.ms"]
    for pid, (_, last_ts) in sorted(_state(comp)["producers"].items(), key=lambda kv: int(kv[0])):
        if int(pid) not in comp.offsets.pending and now - last_ts >= expiration:
            comp.append_and_replay(marker_key(int(pid)), None)
    if _state(comp)["producers"]:
        _ensure_expiration_timer(comp)


GroupCoordinator.extend(
    apis={"TxnOffsetCommit": txn_offset_commit, "WriteTxnMarkers": write_txn_markers},
    timers={T_PRODUCER_EXPIRATION: on_producer_expiration},
    replay=replay,
    on_load=on_load,
    observe_offset_commit=observe_offset_commit,
)
