"""The group side of transactions: TxnOffsetCommit (API key 28) and WriteTxnMarkers (API key 27).

Built by the group coordinator (`TxnOffsetManager`, at the bottom). It follows Kafka 4.x:
`KafkaApis.handleTxnOffsetCommitRequest` (partitions of unknown topics are answered
UNKNOWN_TOPIC_OR_PARTITION, the others go to the coordinator), `GroupCoordinatorService.
commitTransactionalOffsets` (empty group id), `OffsetMetadataManager.commitTransactionalOffset`
(group validation, OFFSET_METADATA_TOO_LARGE per partition), `KafkaApis.
handleWriteTxnMarkersRequest` + `GroupCoordinatorShard.replayEndTransactionMarker` (COMMIT
materializes the producer's pending offsets, newer record wins; ABORT drops them), and the part of
the log layer a `__consumer_offsets` partition applies to every append: the producer state
(`ProducerStateManager`), whose epoch check fences zombies (INVALID_PRODUCER_EPOCH).

State-log records (keys from `coordinator.records.record_key`):

    ["TxnOffsetCommit", producerId, groupId, topic, partition]
        -> {"type": "TxnOffsetCommit", <OffsetCommitValue fields>, "producerId", "producerEpoch"}
           a pending transactional offset (Kafka: an OffsetCommit record in a transactional batch),
           or null once the producer's marker resolved it
    ["EndTransactionMarker", producerId]
        -> {"type": "EndTransactionMarker", "producerId", "producerEpoch",
            "transactionResult": "COMMIT"|"ABORT", "coordinatorEpoch": 0, "transactionVersion",
            "timestamp"}                       (Kafka's control record in __consumer_offsets)
           or null when the producer's state expires (producer.id.expiration.ms)
    ["TxnOffsetsAdded", producerId]
        -> {"type": "TxnOffsetsAdded", "transactionalId", "producerId", "producerEpoch"}
           the transaction coordinator said (TxnOffsetsAdded, below) that the producer's ongoing
           transaction includes this partition; null once the producer's marker came

Why pending offsets have keys of their own: the state log is compacted, and Kafka's log cleaner
never cleans past the last stable offset of `__consumer_offsets`, so an open transaction's records
neither vanish nor hide the committed offsets before them. A plain compacted topic has no such
rule: a pending offset under the OffsetCommit key would supersede the committed offset (a rebuild
during the transaction would lose it), and a later regular commit would erase the pending offset.
Under keys of their own they supersede nothing. When the marker comes, the marker record is written
(a rebuild replays it as Kafka replays the control record), a materialized offset is re-appended as
a regular OffsetCommit record (so that it survives compaction of the pending record), and the
producer's pending records are deleted. Re-appending gives the committed offset a later position;
so that no comparison Kafka makes changes, pending offsets of other producers that were written
after the materialized one are re-appended after it (same values).

Kafka answers TxnOffsetCommit only after verifying the transaction with the transaction
coordinator (KIP-890; for v5 it adds the partition to the transaction). So does this module: the
group partition asks the transactional id's partition with a TxnVerification internal request,
parks the TxnOffsetCommit in its state and goes on when the TxnVerificationResult arrives (or
answers it at once when both ids live on this partition). See docs/architecture.md.

The usual case asks nothing: when AddOffsetsToTxn adds this partition to a transaction, the
transaction's partition sends a TxnOffsetsAdded notice (internal) on the same ordered channel as
the transaction's markers, ahead of them. The partition records it, and a TxnOffsetCommit of that
transactional id, producer id and epoch is verified locally with the answer the transaction
coordinator would give (the partition is in the ongoing transaction: NONE, for v0-4 and v5 alike).
The producer's marker deletes the notice. Without a matching notice (it is still on its way, or
the commit is another producer's or epoch's) the request is verified by asking, as above; a request
parked that way goes on when its transaction's notice arrives.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

from ..errors import ApiError, Error, Errors
from ..messages import ReplyTo, Request, StateRecord
from ..records import record_key
from ..result import CoordinatorResult
from ..routing import coordinator_partition
from ..timers import Timer
from ..txn.apis import producer_fenced_for
from .classic.group import ClassicGroup
from .group import group_not_found
from .offsets import OffsetAndMetadata

CONSUMER_OFFSETS = "__consumer_offsets"
TXN_OFFSET_RECORD = "TxnOffsetCommit"
MARKER_RECORD = "EndTransactionMarker"
ADDED_RECORD = "TxnOffsetsAdded"
EXT = "txnOffsets"  # key of this extension's state in component.extensions
T_PRODUCER_EXPIRATION = "txn-producer-expiration"
T_VERIFICATION_TIMEOUT = "txn-verification-timeout"
PRODUCER_EXPIRATION_KEY = record_key(T_PRODUCER_EXPIRATION)
COMMIT, ABORT = "COMMIT", "ABORT"


def marker_key(producer_id: int) -> str:
    return record_key(MARKER_RECORD, producer_id)


def added_key(producer_id: int) -> str:
    return record_key(ADDED_RECORD, producer_id)


# ====================================================================== extension state
# component.extensions[EXT] = {
#   "producers": {"<producerId>": [epoch, lastTimestampMs]},   the partition's producer state
#   "keys": {"<producerId>": [TxnOffsetCommit record keys not yet deleted]},
#   "added": {"<producerId>": [transactionalId, epoch]},  TxnOffsetsAdded notices (optional key)
# }
def _state(comp, create: bool = False) -> dict:
    st = comp.extensions.get(EXT)
    if st is None:
        st = {"producers": {}, "keys": {}}
        if create:
            comp.extensions[EXT] = st
    return st


def _prune(comp) -> None:
    st = comp.extensions.get(EXT)
    # (A partition that ever verified keeps its verification counter: ids are never reused.)
    if (
        st is not None
        and not st["producers"]
        and not st["keys"]
        and not st.get("added")
        and "nextVerificationId" not in st
    ):
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


def txn_offset_key(producer_id: int, group_id: str, topic: str, partition: int) -> str:
    return record_key(TXN_OFFSET_RECORD, producer_id, group_id, topic, partition)


# ====================================================================== replay
def replay(comp, kind: str, ids: list, value: dict | None) -> None:
    """Replay a TxnOffsetCommit, EndTransactionMarker or TxnOffsetsAdded record."""
    if kind == ADDED_RECORD:
        producer_id = str(ids[0])
        if value is None:
            added = _state(comp).get("added", {})
            added.pop(producer_id, None)
            if not added:
                _state(comp).pop("added", None)
            _prune(comp)
        else:
            st = _state(comp, create=True)
            st.setdefault("added", {})[producer_id] = [value["transactionalId"], value["producerEpoch"]]
        return
    if kind == TXN_OFFSET_RECORD:
        record_key_ = txn_offset_key(*ids)
        producer_id, group_id, topic, partition = ids
        keys = _state(comp, create=True)["keys"]
        if value is None:  # resolved by the producer's marker (already replayed)
            mine = keys.get(str(producer_id), [])
            if record_key_ in mine:
                mine.remove(record_key_)
            if not mine:
                keys.pop(str(producer_id), None)
            _prune(comp)
            return
        # OffsetMetadataManager.replay of an OffsetCommit record in a transactional batch.
        seq = comp.next_record_seq
        comp.next_record_seq += 1
        if group_id not in comp.groups:
            comp.groups[group_id] = ClassicGroup(group_id, now_ms=comp.p.clock_ms)  # a simple group
        comp.offsets.add_pending(producer_id, group_id, topic, partition, OffsetAndMetadata.from_record(value, seq))
        mine = keys.setdefault(str(producer_id), [])
        if record_key_ not in mine:
            mine.append(record_key_)
        _update_producer(comp, producer_id, value["producerEpoch"], value["commitTimestamp"])
        return
    producer_id = ids[0]
    if value is None:  # the producer's state expired
        _state(comp)["producers"].pop(str(producer_id), None)
        _prune(comp)
        return
    # GroupCoordinatorShard.replayEndTransactionMarker
    comp.complete_transaction(producer_id, value["transactionResult"] == COMMIT)
    _update_producer(comp, producer_id, value["producerEpoch"], value["timestamp"])
    return


def on_load(comp, result: CoordinatorResult) -> None:
    if _state(comp)["producers"]:
        _ensure_expiration_timer(comp, result)


def _pending_of(comp, producer_id: int) -> list[tuple[str, str, int, OffsetAndMetadata]]:
    return [
        (g, t, p, v)
        for g, topics in comp.offsets.pending.get(producer_id, {}).items()
        for t, partitions in topics.items()
        for p, v in partitions.items()
    ]


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

    def body(self, version: int, request_body: dict) -> dict:
        """v6 (KIP-1319) names the answer's topics by id: the request's id of each resolved name
        (`_with_names`), an unknown id as sent."""
        if version < 6:
            return {"throttleTimeMs": 0, "topics": self.topics}
        ids = {t["name"]: t["topicId"] for t in request_body["topics"]}
        return {
            "throttleTimeMs": 0,
            "topics": [{"topicId": ids[t["name"]], "partitions": t["partitions"]} for t in self.topics],
        }


def _unknown_id_name(topic_id: str) -> str:
    # Not a legal topic name (a NUL), so it cannot collide with a resolved topic's name.
    return "\x00" + topic_id


def _with_names(comp, body: dict) -> dict:
    """KafkaApis.handleTxnOffsetCommitRequest, v6: each topic id resolved to its name with the
    metadata (as OffsetCommit v10's); an unknown one keeps a placeholder answered UNKNOWN_TOPIC_ID."""
    metadata = comp.metadata
    return {
        **body,
        "topics": [
            {**t, "name": metadata.topic_name(t["topicId"]) or _unknown_id_name(t["topicId"])} for t in body["topics"]
        ],
    }


def txn_offset_commit(comp, request: Request) -> CoordinatorResult:
    body, version = request.body, request.api_version
    if version >= 6:
        body = _with_names(comp, body)
    metadata = comp.metadata
    response = _ResponseBuilder()
    # KafkaApis: unknown topic ids, topics and partitions are answered here; the rest go to the
    # coordinator.
    valid: list[tuple[str, dict]] = []
    for topic in body["topics"]:
        name = topic["name"]
        for part in topic["partitions"]:
            if name.startswith("\x00"):
                response.add(name, part["partitionIndex"], Errors.UNKNOWN_TOPIC_ID)
            elif metadata.exists(name, part["partitionIndex"]):
                valid.append((name, part))
            else:
                response.add(name, part["partitionIndex"], Errors.UNKNOWN_TOPIC_OR_PARTITION)
    result = CoordinatorResult()
    if not valid:
        result.response = response.body(version, body)
        return result
    # GroupCoordinatorService.commitTransactionalOffsets: the group id, before the verification.
    error = _early_error(body)
    if error is None and _needs_verification(comp, body) and not _added_by_notice(comp, body):
        # The log layer's transaction verification (KIP-890): ask the transaction coordinator.
        n = comp.p.config["coordinator.partitions"]
        if coordinator_partition(body["transactionalId"], n) == comp.p.partition_id:
            answer = comp.transactions.verify_offsets_partition(
                result,
                body["transactionalId"],
                body["producerId"],
                body["producerEpoch"],
                comp.p.partition_id,
                verify_only=version < 5,
            )
            error = _verification_error(version, answer)
        else:
            _park(comp, request, body, response, valid, result)
            return result  # answered when the transaction coordinator's partition answers
    result.response = _finish(comp, body, version, response, valid, error, result)
    return result


def _early_error(body: dict) -> Error | None:
    if body["groupId"] == "":
        return Errors.INVALID_GROUP_ID
    if body["producerId"] < 0:
        # What the transaction verification answers for a producer id no transaction has.
        return Errors.INVALID_PRODUCER_ID_MAPPING
    return None


def _finish(
    comp,
    body: dict,
    version: int,
    response: _ResponseBuilder,
    valid: list,
    error: Error | None,
    result: CoordinatorResult,
) -> dict:
    """The response; the offsets' records (and a simple group's creation) go into `result`."""
    coordinator = _ResponseBuilder()
    try:
        if error is not None:
            raise ApiError(error)
        _commit_transactional_offsets(comp, body, version, valid, coordinator, result)
    except ApiError as e:
        coordinator = _ResponseBuilder()
        error = producer_fenced_for(version, 3, e.error)
        for name, part in valid:
            coordinator.add(name, part["partitionIndex"], error)
    for entry in coordinator.topics:  # TxnOffsetCommitResponse.Builder.merge
        for p in entry["partitions"]:
            response.add(entry["name"], p["partitionIndex"], Errors.for_code(p["errorCode"]))
    return response.body(version, body)


# ====================================================================== KIP-890 verification
def _needs_verification(comp, body: dict) -> bool:
    """UnifiedLog.maybeStartTransactionVerification: not needed when this offsets partition already
    holds transactional records of the producer at this epoch (hasOngoingTransaction: it was
    verified, or added, for this transaction already)."""
    if not comp.p.config["transaction.partition.verification.enable"]:
        return False
    pid = body["producerId"]
    return not (_state(comp)["keys"].get(str(pid)) and producer_epoch(comp, pid) == body["producerEpoch"])


def _added_by_notice(comp, body: dict) -> bool:
    """Whether a TxnOffsetsAdded notice says that this transaction (transactional id, producer id
    and epoch) includes this partition: then the transaction coordinator's answer is NONE and is
    not asked for. A notice older than the producer's last epoch here is not trusted."""
    pid = body["producerId"]
    notice = _state(comp).get("added", {}).get(str(pid))
    if notice is None or notice != [body["transactionalId"], body["producerEpoch"]]:
        return False
    last = producer_epoch(comp, pid)
    return last is None or last <= body["producerEpoch"]


def txn_offsets_added(comp, request: Request) -> CoordinatorResult | None:
    """The transaction coordinator's notice that AddOffsetsToTxn added this partition to the
    producer's transaction: recorded, so that its TxnOffsetCommit is verified locally. A notice for
    another partition (only a coordinator partition sends it, about the partition it routes to)
    changes nothing.

    The stream's sink may append the notice after the AddOffsetsToTxn answer, so the client's
    TxnOffsetCommit can come first and be parked to ask. Such a request goes on now, with the
    answer the question would get (NONE: T answers it after it added the partition, as the notice
    says); the question's later answer finds nothing parked and is dropped."""
    b = request.body
    if b["partitionIndex"] != comp.p.partition_id:
        return CoordinatorResult().emit(
            b["transactionalId"],
            "TxnOffsetsAddedDropped",
            transactionalId=b["transactionalId"],
            producerId=b["producerId"],
            partitionIndex=b["partitionIndex"],
        )
    notice = [b["transactionalId"], b["producerEpoch"]]
    waiting = [
        vid
        for vid, parked in sorted(_state(comp).get("verifying", {}).items(), key=lambda kv: int(kv[0]))
        if [parked["body"]["transactionalId"], parked["body"]["producerEpoch"]] == notice
        and parked["body"]["producerId"] == b["producerId"]
    ]
    record = None
    if _state(comp).get("added", {}).get(str(b["producerId"])) != notice:
        record = CoordinatorResult().record(
            added_key(b["producerId"]),
            {
                "type": ADDED_RECORD,
                "transactionalId": b["transactionalId"],
                "producerId": b["producerId"],
                "producerEpoch": b["producerEpoch"],
            },
        )
    if not waiting:
        return record
    return CoordinatorResult(steps=_resume_steps(comp, record, [int(v) for v in waiting]))


def _resume_steps(comp, record: CoordinatorResult | None, waiting: list[int]) -> Iterator[CoordinatorResult]:
    """The notice's record, then each parked request as if the verification had answered NONE,
    each computed from the state the previous one left (a first commit may create the group)."""
    if record is not None:
        yield record
    for vid in waiting:
        result = CoordinatorResult()
        unparked = _unpark(comp, vid, result)
        if unparked is None:
            continue
        reply, body, response, valid = unparked
        result.reply(reply, _finish(comp, body, reply.api_version, response, valid, None, result))
        yield result


def _verification_error(version: int, error: Error) -> Error | None:
    """AddPartitionsToTxnManager's mapping of the transaction coordinator's answer: PRODUCER_FENCED
    → INVALID_PRODUCER_EPOCH; TRANSACTION_ABORTABLE (not in the transaction) → INVALID_TXN_STATE for
    clients that predate it (TxnOffsetCommit < 4, `defaultError`); the rest as they are."""
    if error == Errors.NONE:
        return None
    if error == Errors.PRODUCER_FENCED:
        return Errors.INVALID_PRODUCER_EPOCH
    if error == Errors.TRANSACTION_ABORTABLE and version < 4:
        return Errors.INVALID_TXN_STATE
    return error


def _verification_timer_key(verification_id: int) -> str:
    return record_key(T_VERIFICATION_TIMEOUT, verification_id)


def _park(
    comp, request: Request, body: dict, response: _ResponseBuilder, valid: list, result: CoordinatorResult
) -> None:
    """Keep the request (its body with v6's names) until the transaction coordinator's partition
    answers (TxnVerification on the internal channel, answered by TxnVerificationResult), or the
    timeout."""
    st = _state(comp, create=True)
    vid = st.get("nextVerificationId", 0)
    st["nextVerificationId"] = vid + 1
    st.setdefault("verifying", {})[str(vid)] = {
        "reply": request.reply.to_json(),
        "body": body,
        "answered": response.topics,
        "valid": [[name, part] for name, part in valid],
    }
    result.send_request(
        body["transactionalId"],
        "TxnVerification",
        0,
        {
            "transactionalId": body["transactionalId"],
            "producerId": body["producerId"],
            "producerEpoch": body["producerEpoch"],
            "verifyOnly": request.api_version < 5,
            "partitionIndex": comp.p.partition_id,
            "verificationId": vid,
        },
        correlation_id=vid % 2**31,
        client_id=f"group-coordinator-{comp.p.partition_id}",
    )
    result.schedule(
        _verification_timer_key(vid),
        comp.p.clock_ms + comp.p.config["transaction.verification.timeout.ms"],
        T_VERIFICATION_TIMEOUT,
        {"verificationId": vid},
    )
    result.emit(
        body["groupId"],
        "TxnOffsetCommitVerifying",
        groupId=body["groupId"],
        transactionalId=body["transactionalId"],
        producerId=body["producerId"],
        producerEpoch=body["producerEpoch"],
        verificationId=vid,
    )


def _unpark(
    comp, verification_id: int, result: CoordinatorResult
) -> tuple[ReplyTo, dict, _ResponseBuilder, list] | None:
    entry = _state(comp).get("verifying", {}).pop(str(verification_id), None)
    if entry is None:
        return None
    result.cancel(_verification_timer_key(verification_id))
    response = _ResponseBuilder()
    for topic in entry["answered"]:
        for p in topic["partitions"]:
            response.add(topic["name"], p["partitionIndex"], Errors.for_code(p["errorCode"]))
    return ReplyTo.from_json(entry["reply"]), entry["body"], response, [(n, p) for n, p in entry["valid"]]


def txn_verification_result(comp, request: Request) -> CoordinatorResult | None:
    """The transaction coordinator's answer: the parked TxnOffsetCommit goes on (group validation,
    producer epoch, the offsets) or is answered the verification's error. An answer for a request
    no longer parked (it timed out) is dropped."""
    b = request.body
    parked = _state(comp).get("verifying", {}).get(str(b["verificationId"]))
    if parked is None or parked["body"]["transactionalId"] != b["transactionalId"]:
        return None
    result = CoordinatorResult()
    unparked = _unpark(comp, b["verificationId"], result)
    assert unparked is not None  # (its entry was just read)
    reply, body, response, valid = unparked
    error = _verification_error(reply.api_version, Errors.for_code(b["errorCode"]))
    result.reply(reply, _finish(comp, body, reply.api_version, response, valid, error, result))
    return result


def on_verification_timeout(comp, timer: Timer) -> CoordinatorResult | None:
    """No answer in `transaction.verification.timeout.ms` (the job was down, or the transaction
    coordinator's partition is stuck): COORDINATOR_NOT_AVAILABLE, as GroupCoordinatorService
    answers a write that timed out (normalizeException); the client retries."""
    result = CoordinatorResult()
    parked = _unpark(comp, timer.payload["verificationId"], result)
    if parked is None:
        return None
    reply, body, response, valid = parked
    result.reply(
        reply, _finish(comp, body, reply.api_version, response, valid, Errors.COORDINATOR_NOT_AVAILABLE, result)
    )
    return result


def _commit_transactional_offsets(
    comp, body: dict, version: int, valid: list, out: _ResponseBuilder, result: CoordinatorResult
) -> None:
    """GroupCoordinatorService.commitTransactionalOffsets + OffsetMetadataManager.
    commitTransactionalOffset + the log's producer-epoch check. Raises ApiError before it changes
    anything."""
    group_id, producer_id, epoch = body["groupId"], body["producerId"], body["producerEpoch"]
    member_id = body.get("memberId", "")
    instance_id = body.get("groupInstanceId")
    generation = body.get("generationIdOrMemberEpoch", -1)
    group = comp.groups.get(group_id)
    # OffsetMetadataManager.validateTransactionalOffsetCommit: v6 (KIP-1319) answers a missing group
    # and a consumer member's stale epoch as they are; older versions as ILLEGAL_GENERATION.
    if group is None and generation >= 0:
        if version >= 6:
            raise group_not_found(group_id)
        raise ApiError(Errors.ILLEGAL_GENERATION)
    accepted = [(name, part) for name, part in valid if not comp.is_offset_metadata_invalid(part["committedMetadata"])]
    if group is not None:
        try:
            validator = group.validate_offset_commit(member_id, instance_id, generation, True, version)
            # Kafka 4.3+: each partition with valid metadata is validated (streams groups: the
            # epoch its task was assigned at) before any record is written.
            for name, part in accepted if validator is not None else ():
                validator(name, part["partitionIndex"])
        except ApiError as e:
            if e.error is Errors.STALE_MEMBER_EPOCH and version < 6:
                raise ApiError(Errors.ILLEGAL_GENERATION) from e
            raise
    if accepted:
        # The log layer: an append with an epoch older than the producer's last one is fenced.
        current = producer_epoch(comp, producer_id)
        if current is not None and epoch < current:
            raise ApiError(
                Errors.INVALID_PRODUCER_EPOCH,
                f"Epoch of producer {producer_id} is {epoch}, which is smaller than the last seen epoch {current}",
            )
    if group is None:
        comp.validate_transactional_offset_commit(group_id, member_id, instance_id, generation, version, result)
    for name, part in valid:
        index = part["partitionIndex"]
        if comp.is_offset_metadata_invalid(part["committedMetadata"]):
            out.add(name, index, Errors.OFFSET_METADATA_TOO_LARGE)
            continue
        leader_epoch = part.get("committedLeaderEpoch", -1)
        result.records.append(
            _pending_record(
                producer_id,
                epoch,
                group_id,
                name,
                index,
                OffsetAndMetadata(
                    part["committedOffset"],
                    None if leader_epoch == -1 else leader_epoch,
                    part["committedMetadata"] or "",
                    comp.p.clock_ms,
                    None,
                ),
            )
        )
        out.add(name, index, Errors.NONE)
    if accepted:  # the producer's state, which these records start or update, expires
        _ensure_expiration_timer(comp, result)


def _pending_record(
    producer_id: int, epoch: int, group_id: str, topic: str, partition: int, offset: OffsetAndMetadata
) -> StateRecord:
    value = offset.record_value()
    value.update(type=TXN_OFFSET_RECORD, producerId=producer_id, producerEpoch=epoch)
    return StateRecord(txn_offset_key(producer_id, group_id, topic, partition), value)


# ====================================================================== WriteTxnMarkers
def write_txn_markers(comp, request: Request) -> CoordinatorResult:
    """KafkaApis.handleWriteTxnMarkersRequest for the partitions this coordinator partition hosts:
    only `__consumer_offsets-<own partition>`. Any other partition is not hosted here
    (UNKNOWN_TOPIC_OR_PARTITION, as a broker answers for partitions it does not have).

    A marker's later records depend on what its marker record does to the offsets (and a second
    marker on what the first one wrote), so the result is a chain of steps the runtime applies one
    after the other (`CoordinatorResult.steps`); the last one carries the response."""
    return CoordinatorResult(steps=_write_txn_markers_steps(comp, request.body))


def _write_txn_markers_steps(comp, body: dict) -> Iterator[CoordinatorResult]:
    markers = []
    for marker in body["markers"]:
        topics = []
        for topic in marker["topics"]:
            partitions = []
            for index in topic["partitionIndexes"]:
                if topic["name"] == CONSUMER_OFFSETS and index == comp.p.partition_id:
                    error = yield from _marker_steps(
                        comp,
                        marker["producerId"],
                        marker["producerEpoch"],
                        marker["transactionResult"],
                        marker.get("transactionVersion", 0),
                    )
                else:
                    error = Errors.UNKNOWN_TOPIC_OR_PARTITION
                partitions.append({"partitionIndex": index, "errorCode": error.code})
            topics.append({"name": topic["name"], "partitions": partitions})
        markers.append({"producerId": marker["producerId"], "topics": topics})
    yield CoordinatorResult(response={"markers": markers})


def _marker_steps(
    comp, producer_id: int, epoch: int, committed: bool, transaction_version: int
) -> Generator[CoordinatorResult, None, Error]:
    """Write the marker (a state-log record, replayed as replayEndTransactionMarker), re-append the
    offsets it materialized as regular OffsetCommit records and delete the producer's pending
    records. Each step is applied (its records replayed) before the next one is computed."""
    result = COMMIT if committed else ABORT
    current = producer_epoch(comp, producer_id)
    # ProducerAppendInfo.checkProducerEpoch for a marker: a TV2 marker carries a bumped epoch, so it
    # must be newer than anything seen; an older-version marker may repeat the current epoch.
    if current is not None and (epoch <= current if transaction_version >= 2 else epoch < current):
        yield CoordinatorResult().emit(
            str(producer_id),
            "TransactionMarkerRejected",
            producerId=producer_id,
            producerEpoch=epoch,
            result=result,
            lastProducerEpoch=current,
            transactionVersion=transaction_version,
        )
        return Errors.INVALID_PRODUCER_EPOCH
    before = _pending_of(comp, producer_id)
    marker = CoordinatorResult()
    _ensure_expiration_timer(comp, marker)  # the producer's state, which the marker updates, expires
    yield marker.record(
        marker_key(producer_id),
        {
            "type": MARKER_RECORD,
            "producerId": producer_id,
            "producerEpoch": epoch,
            "transactionResult": result,
            "coordinatorEpoch": 0,
            "transactionVersion": transaction_version,
            "timestamp": comp.p.clock_ms,
        },
    )
    by_group: dict[str, dict] = {}
    for group_id, topic, partition, value in before:
        summary = by_group.setdefault(group_id, {"partitions": [], "skipped": []})
        if not committed:
            summary["partitions"].append([topic, partition])
        elif comp.offsets.get(group_id, topic, partition) is value:
            summary["partitions"].append([topic, partition, value.committed_offset])
            yield CoordinatorResult(records=[comp.offset_commit_record(group_id, topic, partition, _copy(value))])
            # The re-appended offset has a later position than the pending record it comes from.
            # Pending offsets of other producers written in between must still be newer than it
            # (Kafka compares them with the pending record's position): they are re-appended too,
            # in their order.
            later = []
            for other in comp.offsets.open_transactions.get(group_id, {}).get(topic, {}).get(partition, {}):
                theirs = comp.offsets.pending_offset(other, group_id, topic, partition)
                if theirs.record_seq > value.record_seq:
                    later.append((theirs.record_seq, other, theirs))
            for _, other, theirs in sorted(later, key=lambda x: x[0]):
                other_epoch = producer_epoch(comp, other)
                assert other_epoch is not None  # (a producer with pending offsets has an epoch)
                yield CoordinatorResult(
                    records=[_pending_record(other, other_epoch, group_id, topic, partition, theirs)]
                )
        else:
            summary["skipped"].append([topic, partition])  # a newer regular commit wins
    done = CoordinatorResult()
    for key in list(_state(comp)["keys"].get(str(producer_id), [])):
        done.record(key, None)
    if str(producer_id) in _state(comp).get("added", {}):
        done.record(added_key(producer_id), None)  # the transaction ended: its notice with it
    for group_id, summary in by_group.items():
        if committed:
            comp.event(
                done,
                group_id,
                "TransactionalOffsetsCommitted",
                producerId=producer_id,
                producerEpoch=epoch,
                partitions=summary["partitions"],
                skipped=summary["skipped"],
            )
        else:
            comp.event(
                done,
                group_id,
                "TransactionalOffsetsAborted",
                producerId=producer_id,
                producerEpoch=epoch,
                partitions=summary["partitions"],
            )
    yield done
    return Errors.NONE


def _copy(value: OffsetAndMetadata) -> OffsetAndMetadata:
    return OffsetAndMetadata(
        value.committed_offset, value.leader_epoch, value.metadata, value.commit_timestamp_ms, value.expire_timestamp_ms
    )


# ====================================================================== producer expiration
def _ensure_expiration_timer(comp, result: CoordinatorResult) -> None:
    if PRODUCER_EXPIRATION_KEY not in comp.p.timers:
        result.schedule(
            PRODUCER_EXPIRATION_KEY,
            comp.p.clock_ms + comp.p.config["producer.id.expiration.check.interval.ms"],
            T_PRODUCER_EXPIRATION,
        )


def on_producer_expiration(comp, timer: Timer) -> CoordinatorResult:
    """ProducerStateManager.removeExpiredProducers: producers without an open transaction (no
    pending offset records) whose last append is older than producer.id.expiration.ms are
    forgotten (their marker record's tombstone)."""
    now, expiration = comp.p.clock_ms, comp.p.config["producer.id.expiration.ms"]
    st = _state(comp)
    result = CoordinatorResult()
    expired = [
        pid
        for pid, (_, last_ts) in sorted(st["producers"].items(), key=lambda kv: int(kv[0]))
        if pid not in st["keys"] and now - last_ts >= expiration
    ]
    result.records += [StateRecord(marker_key(int(pid)), None) for pid in expired]
    if len(expired) < len(st["producers"]) and PRODUCER_EXPIRATION_KEY not in comp.p.timers:
        result.schedule(
            PRODUCER_EXPIRATION_KEY,
            now + comp.p.config["producer.id.expiration.check.interval.ms"],
            T_PRODUCER_EXPIRATION,
        )
    return result


class TxnOffsetManager:
    """The group side of transactions for one group coordinator (Kafka keeps it in its
    OffsetMetadataManager and GroupCoordinatorService): the API handlers, timers and replay above,
    bound to the coordinator."""

    def __init__(self, coordinator) -> None:
        self.c = coordinator

    def txn_offset_commit(self, request: Request):
        return txn_offset_commit(self.c, request)

    def write_txn_markers(self, request: Request):
        return write_txn_markers(self.c, request)

    def txn_verification_result(self, request: Request):
        return txn_verification_result(self.c, request)

    def txn_offsets_added(self, request: Request):
        return txn_offsets_added(self.c, request)

    def on_producer_expiration(self, timer: Timer):
        return on_producer_expiration(self.c, timer)

    def on_verification_timeout(self, timer: Timer):
        return on_verification_timeout(self.c, timer)

    def replay(self, kind: str, ids: list, value: dict | None) -> None:
        replay(self.c, kind, ids, value)

    def on_loaded(self, result: CoordinatorResult) -> None:
        on_load(self.c, result)
