"""Kafka's TransactionCoordinator for one coordinator partition (component "transactions"): the
API handlers (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, Describe/List
Transactions, the internal TxnVerification) and the timer handlers (abort of timed-out
transactions, expiry of transactional ids), over

- `TransactionStateManager` (state_manager.py): the metadata map, the TransactionLog records and
  their replay, coordinator load, the timers standing for Kafka's periodic scans;
- `TransactionMarkerChannelManager` (marker_channel.py): the markers of a transaction in Prepare*
  and its completion once they are written (deferred work, see there);
- `ProducerIdManager` (pid.py): producer-id blocks.

Every handler and timer handler returns a `CoordinatorResult`; the runtime appends its records and
replays them, which is how TransactionLog and ProducerIdBlock records change the state. Appends are
synchronous: the record, the response and everything else the batch emits become durable
together, or the batch is replayed. The reply to EndTxn follows the Prepare* record at once, as in
Kafka.

What Kafka keeps only in memory (none of it is in a TransactionLog record). The handlers change
it directly, and only once nothing can fail with an ApiError, except where the replay does:

- the pending transition while a write is in flight: `prepare_*` sets `pending_state` on the
  metadata and the transit is held in `TransactionStateManager.in_flight` until the replay of its
  record completes it (`complete_transition_to`); it also carries `lastProducerEpoch`, which the
  record does not (a load sets it to -1, as `TransactionLog.read` does). A new transactional id
  is not put in the map by its handler: the replay of its first record installs it;
- the epoch fence of InitProducerId during a transaction and of a timeout (PrepareEpochFence,
  never written: the fenced epoch goes into the PrepareAbort record, and with transaction version
  0/1 it is set on the metadata first, as Kafka's endTransaction does);
- Complete* pending while markers are in flight (`pending_complete`, prepared by the replay of the
  Prepare* record, as Kafka prepares it in the append callback and on load; kept in the snapshot
  because the markers take a batch);
- the cursor in the current producer-id block and the correlation id of requests sent.
"""

from __future__ import annotations

import re
from collections import OrderedDict

from ..component import Component, Partition
from ..errors import ApiError, Error, Errors
from ..group.consumer.regex import RegexError, compile_regex
from ..messages import Request
from ..metadata import TopicMetadata
from ..result import CoordinatorResult
from ..routing import coordinator_partition, key_for_partition
from ..timers import Timer
from . import apis, log
from .marker_channel import COMPLETE_DEFERRED, RESEND_DEFERRED, TransactionMarkerChannelManager
from .markers import CONSUMER_OFFSETS
from .metadata import (
    JSON_CLIENT,
    KAFKA_CLIENT,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    TV_0,
    TV_2,
    IllegalStateError,
    TransactionMetadata,
    TransactionState,
    sorted_partitions,
    supports_epoch_bump,
)
from .pid import ProducerIdManager
from .state_manager import EXPIRE_TIMER, TIMEOUT_TIMER, TransactionStateManager

S = TransactionState
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


class _EndResult:
    """What ending a transaction answers (error, producerId, producerEpoch of the next
    transaction) and the metadata as the result leaves it (None if nothing was written)."""

    __slots__ = ("error", "producer_id", "producer_epoch", "after")

    def __init__(
        self,
        error: Error,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        after: TransactionMetadata | None = None,
    ):
        self.error, self.producer_id, self.producer_epoch, self.after = error, producer_id, producer_epoch, after


class TransactionCoordinator(Component):
    name = "transactions"
    # The cluster's finalized `transaction.version`: Kafka 4.x formats new clusters at 2. It is the
    # version of the coordinator's own aborts (timeouts, InitProducerId during a transaction).
    server_transaction_version = TV_2

    HANDLERS = {
        "InitProducerId": lambda c, request: c.init_producer_id(request),
        "AddPartitionsToTxn": lambda c, request: c.add_partitions_to_txn(request),
        "AddOffsetsToTxn": lambda c, request: c.add_offsets_to_txn(request),
        "EndTxn": lambda c, request: c.end_txn(request),
        "DescribeTransactions": lambda c, request: c.describe_transactions(request),
        "ListTransactions": lambda c, request: c.list_transactions(request),
        "TxnVerification": lambda c, request: c.txn_verification(request),
    }
    TIMER_HANDLERS = {
        TIMEOUT_TIMER: lambda c, timer: c.on_transaction_timeout(timer),
        EXPIRE_TIMER: lambda c, timer: c.on_transactional_id_expiration(timer),
        COMPLETE_DEFERRED: lambda c, timer: c.markers.on_complete(timer),
        RESEND_DEFERRED: lambda c, timer: c.markers.on_send_markers(timer),
    }
    # TransactionLog records: the transactional id or the producer-id block's partition is the key's id.
    REPLAYERS = {
        log.TRANSACTION_LOG: lambda c, _kind, ids, value: c.state.replay_transaction_log(ids[0], value),
        log.PRODUCER_ID_BLOCK: lambda c, _kind, ids, value: c.pids.replay(ids[0], value),
    }

    def __init__(self, partition: Partition, metadata: TopicMetadata):
        super().__init__(partition)
        self.metadata = metadata  # the broker's topics (markers go to existing partitions only)
        self.state = TransactionStateManager(partition)
        self.markers = TransactionMarkerChannelManager(partition, self.state, metadata)
        self.pids = ProducerIdManager(partition)

    @property
    def txns(self):
        """transactional id -> TransactionMetadata (read by metrics and tests)."""
        return self.state.txns

    # ======================================================================== helpers
    @property
    def _now(self) -> int:
        return self.p.clock_ms

    def _owns(self, transactional_id: str) -> bool:
        return self.p.owns(transactional_id)

    # ======================================================================== InitProducerId
    def init_producer_id(self, request: Request) -> CoordinatorResult:
        body, version = request.body, request.api_version
        tid, timeout_ms = body["transactionalId"], body["transactionTimeoutMs"]
        expected_pid, expected_epoch = body.get("producerId", -1), body.get("producerEpoch", -1)
        # KafkaApis: the producer id and epoch come together or not at all.
        if (expected_pid == NO_PRODUCER_ID) != (expected_epoch == NO_PRODUCER_EPOCH):
            raise ApiError(Errors.INVALID_REQUEST)
        expected = None if expected_pid == NO_PRODUCER_ID else (expected_pid, expected_epoch)

        result = CoordinatorResult()
        if tid is None:
            # An idempotent producer: a fresh producer id from this partition, epoch 0, no state.
            result.response = apis.init_producer_id_response(
                version, Errors.NONE, self.pids.generate_producer_id(result), 0
            )
            return result
        if tid == "":
            raise ApiError(Errors.INVALID_REQUEST)
        if not self.state.validate_transaction_timeout(timeout_ms):
            raise ApiError(Errors.INVALID_TRANSACTION_TIMEOUT)
        if not self._owns(tid):
            raise ApiError(Errors.NOT_COORDINATOR)

        # The kind of client decides how this producer's markers are written ([txn] markers = "auto").
        kind = KAFKA_CLIENT if request.kafka_client else JSON_CLIENT
        md = self.state.get(tid)
        if md is None:
            # Not put in the map: the replay of its first record installs it.
            md = TransactionMetadata(
                tid,
                self.pids.generate_producer_id(result),
                NO_PRODUCER_ID,
                NO_PRODUCER_ID,
                NO_PRODUCER_EPOCH,
                NO_PRODUCER_EPOCH,
                timeout_ms,
                S.EMPTY,
                set(),
                -1,
                self._now,
                TV_0,
            )
            transit = md.prepare_increment_producer_epoch(timeout_ms, expected and expected[1], self._now, kind)
            self.state.append_transaction_to_log(result, md, transit)
            result.emit(
                tid,
                "ProducerInitialized",
                transactionalId=tid,
                producerId=transit.producer_id,
                producerEpoch=transit.producer_epoch,
                reason="new transactional id",
                clientKind=kind,
            )
            result.response = apis.init_producer_id_response(
                version, Errors.NONE, transit.producer_id, transit.producer_epoch
            )
            return result

        # prepareInitProducerIdTransit: everything below raises before it changes anything.
        if md.pending_transition_in_progress:
            raise ApiError(Errors.CONCURRENT_TRANSACTIONS)
        if expected is not None and not self._is_valid_expected_producer_id(md, *expected):
            raise ApiError(Errors.PRODUCER_FENCED)
        if md.state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            raise ApiError(Errors.CONCURRENT_TRANSACTIONS)
        if md.state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            if md.is_producer_epoch_exhausted() and (expected is None or expected[1] == md.producer_epoch):
                transit = md.prepare_producer_id_rotation(
                    self.pids.generate_producer_id(result), timeout_ms, self._now, expected is not None, kind
                )
                reason = "producer id rotation (epoch exhausted)"
            else:
                try:
                    transit = md.prepare_increment_producer_epoch(timeout_ms, expected and expected[1], self._now, kind)
                except IllegalStateError as e:
                    # Kafka 4.3 answers Errors.forException: an exhausted epoch with another expected
                    # epoch (e.g. the previous one) cannot be bumped.
                    raise ApiError(Errors.UNKNOWN_SERVER_ERROR, str(e)) from None
                reason = "epoch bump" if transit.producer_epoch != md.producer_epoch else "retry"
            self.state.append_transaction_to_log(result, md, transit)
            result.emit(
                tid,
                "ProducerInitialized",
                transactionalId=tid,
                producerId=transit.producer_id,
                producerEpoch=transit.producer_epoch,
                reason=reason,
                clientKind=kind,
            )
            result.response = apis.init_producer_id_response(
                version, Errors.NONE, transit.producer_id, transit.producer_epoch
            )
            return result
        if md.state == S.ONGOING:
            # Fence the current producer (the bumped epoch is never returned), abort its
            # transaction and let the client retry, which bumps the epoch once more.
            fenced_epoch = md.producer_epoch
            after = self._fence_and_abort(result, md, "InitProducerId during an ongoing transaction")
            result.emit(
                tid,
                "ProducerFenced",
                transactionalId=tid,
                producerId=after.producer_id,
                fencedEpoch=fenced_epoch,
                producerEpoch=after.producer_epoch,
                reason="InitProducerId while a transaction was ongoing",
            )
            result.response = apis.init_producer_id_response(version, Errors.CONCURRENT_TRANSACTIONS)
            return result
        raise IllegalStateError(
            f"Found transactionalId {tid} with state {md.state!r}. "
            "This is illegal as we should never have transitioned to this state."
        )

    @staticmethod
    def _is_valid_expected_producer_id(md: TransactionMetadata, pid: int, epoch: int) -> bool:
        # Accept a just-created id (epoch -1), the current producer id (the epoch is checked when it
        # is bumped), or the previous one with an exhausted epoch (a retry across a rotation).
        return (
            md.producer_epoch == NO_PRODUCER_EPOCH
            or pid == md.producer_id
            or (pid == md.prev_producer_id and epoch >= SHORT_MAX - 1)
        )

    def _fence_and_abort(self, result: CoordinatorResult, md: TransactionMetadata, reason: str) -> TransactionMetadata:
        """Fence the producer of an Ongoing transaction (an epoch bump never returned to anyone)
        and abort the transaction with the fenced epoch. Returns the metadata as `result` leaves it."""
        tid = md.transactional_id
        fence = md.prepare_fence_producer_epoch()
        end = self._end_transaction(
            result,
            tid,
            fence.producer_id,
            fence.producer_epoch,
            False,
            is_from_client=False,
            client_tv=self.server_transaction_version,
            reason=reason,
        )
        if end.error != Errors.NONE or end.after is None:
            raise IllegalStateError(f"aborting the transaction of {tid} ({reason}) failed: {end.error}")
        return end.after

    # ======================================================================== AddPartitionsToTxn
    def add_partitions_to_txn(self, request: Request) -> CoordinatorResult:
        body, version = request.body, request.api_version
        result = CoordinatorResult()
        if version < 4:
            parts = apis.flatten_topics(body["v3AndBelowTopics"])
            errors = self._add_or_verify(
                result,
                body["v3AndBelowTransactionalId"],
                body["v3AndBelowProducerId"],
                body["v3AndBelowProducerEpoch"],
                parts,
                False,
                version,
            )
            result.response = {"throttleTimeMs": 0, "resultsByTopicV3AndBelow": apis.topic_results(parts, errors)}
            return result
        results = []
        for txn in body["transactions"]:
            parts = apis.flatten_topics(txn["topics"])
            errors = self._add_or_verify(
                result,
                txn["transactionalId"],
                txn["producerId"],
                txn["producerEpoch"],
                parts,
                txn["verifyOnly"],
                version,
            )
            results.append(
                {"transactionalId": txn["transactionalId"], "topicResults": apis.topic_results(parts, errors)}
            )
        result.response = {"throttleTimeMs": 0, "errorCode": 0, "resultsByTransaction": results}
        return result

    def _add_or_verify(
        self, result: CoordinatorResult, tid: str, pid: int, epoch: int, parts: list, verify_only: bool, version: int
    ) -> dict:
        """KafkaApis.handleAddPartitionsToTxnRequest for one transaction: per-partition errors."""
        # Partition checks before the coordinator: clients (v0-3) may not add internal topics (they
        # are left out of the authorized set); partitions that cannot exist are unknown. Any failed
        # partition fails the whole transaction, the others get OPERATION_NOT_ATTEMPTED.
        bad = {}
        for topic, p in parts:
            if version < 4 and (topic in INTERNAL_TOPICS or self._is_service_topic(topic)):
                bad[(topic, p)] = Errors.TOPIC_AUTHORIZATION_FAILED
            elif not self._partition_exists(topic, p):
                bad[(topic, p)] = Errors.UNKNOWN_TOPIC_OR_PARTITION
        if bad:
            return {tp: bad.get(tp, Errors.OPERATION_NOT_ATTEMPTED) for tp in parts}
        if verify_only:
            return self._verify_partitions(tid, pid, epoch, parts)
        error = self._add_partitions(result, tid, pid, epoch, parts, TV_2 if version > 3 else TV_0)
        error = apis.producer_fenced_for(version, 2, error)
        return {tp: error for tp in parts}

    def _partition_exists(self, topic: str, partition: int) -> bool:
        """`metadataCache.contains(topicPartition)`: `__consumer_offsets` has one partition per
        coordinator partition, the other internal topics and the service's own topics are never
        part of a transaction, and data topics exist as the broker's metadata says (the metadata
        component; before the first UpdateMetadata arrived, any legal name is taken to exist)."""
        if partition < 0 or not _LEGAL_TOPIC.fullmatch(topic) or topic in (".", ".."):
            return False
        if topic == CONSUMER_OFFSETS:
            return partition < self.p.config["coordinator.partitions"]
        if topic in INTERNAL_TOPICS or self._is_service_topic(topic):
            return False
        return self.metadata.exists(topic, partition)

    def _is_service_topic(self, topic: str) -> bool:
        """The service's requests, responses, events and state-log topics (and the response topics
        a request may name in replyTo): a marker written into them would corrupt them."""
        return topic in self.p.config["coordinator.internal.topics"] or self.p.reply_to_re.fullmatch(topic) is not None

    def _add_partitions(
        self, result: CoordinatorResult, tid: str, pid: int, epoch: int, parts, client_tv: int
    ) -> Error:
        """handleAddPartitionsToTransaction (Kafka 4.3 order of checks)."""
        if not tid:
            return Errors.INVALID_REQUEST
        if not self._owns(tid):
            return Errors.NOT_COORDINATOR
        md = self.state.get(tid)
        if md is None:
            return Errors.INVALID_PRODUCER_ID_MAPPING
        if md.pending_transition_in_progress:
            return Errors.CONCURRENT_TRANSACTIONS
        if md.producer_id != pid:
            return Errors.INVALID_PRODUCER_ID_MAPPING
        if md.producer_epoch != epoch:
            return Errors.PRODUCER_FENCED
        if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return Errors.CONCURRENT_TRANSACTIONS
        added = set(parts)
        if md.state == S.ONGOING and added <= md.topic_partitions:
            return Errors.NONE  # already in the transaction: nothing to write
        started = md.state != S.ONGOING
        after = self.state.append_transaction_to_log(result, md, md.prepare_add_partitions(added, self._now, client_tv))
        if started:
            result.emit(
                tid,
                "TransactionStarted",
                transactionalId=tid,
                producerId=after.producer_id,
                producerEpoch=after.producer_epoch,
                transactionTimeoutMs=after.txn_timeout_ms,
            )
        return Errors.NONE

    # ======================================================================== KIP-890 verification
    def verify_offsets_partition(
        self, result: CoordinatorResult, tid: str, pid: int, epoch: int, partition: int, verify_only: bool
    ) -> Error:
        """What AddPartitionsToTxn v5 (the broker form) answers for `__consumer_offsets-<partition>`
        of one transaction: verified (verifyOnly, for TxnOffsetCommit v0-4: NONE if the partition is
        in the transaction, TRANSACTION_ABORTABLE if not) or added (TxnOffsetCommit v5).

        Called by the group side of the same partition while it handles TxnOffsetCommit (the
        transaction is coordinated here, so no request goes out). The addition goes into the
        caller's `result`."""
        tp = (CONSUMER_OFFSETS, partition)
        return self._add_or_verify(result, tid, pid, epoch, [tp], verify_only, 5)[tp]

    def txn_verification(self, request: Request) -> CoordinatorResult:
        """A group coordinator partition's question (internal): answered with a
        TxnVerificationResult to that partition, on the internal channel (nobody reads a response
        to an internal request)."""
        b = request.body
        result = CoordinatorResult()
        n = self.p.config["coordinator.partitions"]
        if not 0 <= b["partitionIndex"] < n:
            # Only a coordinator partition asks, about itself: there is nobody to answer.
            result.emit(
                b["transactionalId"],
                "TxnVerificationDropped",
                transactionalId=b["transactionalId"],
                partitionIndex=b["partitionIndex"],
                verificationId=b["verificationId"],
            )
            return result
        tp = (CONSUMER_OFFSETS, b["partitionIndex"])
        error = self._add_or_verify(
            result, b["transactionalId"], b["producerId"], b["producerEpoch"], [tp], b["verifyOnly"], 5
        )[tp]
        result.send_request(
            key_for_partition(b["partitionIndex"], n),
            "TxnVerificationResult",
            0,
            {"verificationId": b["verificationId"], "transactionalId": b["transactionalId"], "errorCode": error.code},
            self.markers.correlation_id(),
            self.markers.client_id,
        )
        return result

    def _verify_partitions(self, tid: str, pid: int, epoch: int, parts: list) -> dict:
        """handleVerifyPartitionsInTransaction (KIP-890 part 1): nothing is written."""

        def all_(err):
            return {tp: err for tp in parts}

        if not tid:
            return all_(Errors.INVALID_REQUEST)
        if not self._owns(tid):
            return all_(Errors.NOT_COORDINATOR)
        md = self.state.get(tid)
        if md is None or md.producer_id != pid:
            return all_(Errors.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != epoch:
            return all_(Errors.PRODUCER_FENCED)
        if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return all_(Errors.CONCURRENT_TRANSACTIONS)
        # The pending state is not checked: partitions join on the append and leave on the markers.
        return {tp: Errors.NONE if tp in md.topic_partitions else Errors.TRANSACTION_ABORTABLE for tp in parts}

    # ======================================================================== AddOffsetsToTxn
    def add_offsets_to_txn(self, request: Request) -> CoordinatorResult:
        body, version = request.body, request.api_version
        result = CoordinatorResult()
        # The group's __consumer_offsets partition joins the transaction, as a client (TV0) add.
        offsets_partition = coordinator_partition(body["groupId"], self.p.config["coordinator.partitions"])
        error = self._add_partitions(
            result,
            body["transactionalId"],
            body["producerId"],
            body["producerEpoch"],
            [(CONSUMER_OFFSETS, offsets_partition)],
            TV_0,
        )
        if error == Errors.NONE and offsets_partition != self.p.partition_id:
            self._notify_offsets_added(result, body, offsets_partition)
        result.response = {"throttleTimeMs": 0, "errorCode": apis.producer_fenced_for(version, 2, error).code}
        return result

    def _notify_offsets_added(self, result: CoordinatorResult, body: dict, offsets_partition: int) -> None:
        """Tell the group's partition that this transaction (producer id and epoch) includes its
        `__consumer_offsets` partition: the TxnOffsetCommit the client sends next is then verified
        there without asking back (two micro-batches saved). Sent before any marker of the
        transaction on the same ordered channel, so it never outlives the transaction there; a
        TxnOffsetCommit that comes first is verified by asking, as before."""
        n = self.p.config["coordinator.partitions"]
        result.send_request(
            key_for_partition(offsets_partition, n),
            "TxnOffsetsAdded",
            0,
            {
                "transactionalId": body["transactionalId"],
                "producerId": body["producerId"],
                "producerEpoch": body["producerEpoch"],
                "partitionIndex": offsets_partition,
            },
            self.markers.correlation_id(),
            self.markers.client_id,
        )

    # ======================================================================== EndTxn
    def end_txn(self, request: Request) -> CoordinatorResult:
        body, version = request.body, request.api_version
        result = CoordinatorResult()
        client_tv = TV_2 if version > 4 else TV_0  # TransactionVersion.transactionVersionForEndTxn
        end = self._end_transaction(
            result,
            body["transactionalId"],
            body["producerId"],
            body["producerEpoch"],
            body["committed"],
            is_from_client=True,
            client_tv=client_tv,
            reason="EndTxn",
        )
        result.response = apis.end_txn_response(version, end.error, end.producer_id, end.producer_epoch)
        return result

    def _end_transaction(
        self,
        result: CoordinatorResult,
        tid: str,
        pid: int,
        epoch: int,
        commit: bool,
        *,
        is_from_client: bool,
        client_tv: int,
        reason: str,
    ) -> _EndResult:
        if not tid:
            return _EndResult(Errors.INVALID_REQUEST)
        if not self._owns(tid):
            return _EndResult(Errors.NOT_COORDINATOR)
        md = self.state.get(tid)
        if md is None:
            return _EndResult(Errors.INVALID_PRODUCER_ID_MAPPING)
        if supports_epoch_bump(client_tv):
            return self._end_transaction_v2(result, md, pid, epoch, commit, is_from_client, client_tv, reason)
        return self._end_transaction_v1(result, md, pid, epoch, commit, is_from_client, reason)

    def _end_transaction_v1(
        self,
        result: CoordinatorResult,
        md: TransactionMetadata,
        pid: int,
        epoch: int,
        commit: bool,
        is_from_client: bool,
        reason: str,
    ) -> _EndResult:
        if md.producer_id != pid:
            return _EndResult(Errors.INVALID_PRODUCER_ID_MAPPING)
        # Clients must match the epoch exactly; the coordinator's own abort may carry a bumped one.
        if (is_from_client and epoch != md.producer_epoch) or epoch < md.producer_epoch:
            return _EndResult(Errors.PRODUCER_FENCED)
        if md.pending_transition_in_progress and md.pending_state != S.PREPARE_EPOCH_FENCE:
            return _EndResult(Errors.CONCURRENT_TRANSACTIONS)
        st = md.state
        if st == S.ONGOING:
            next_state = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            if next_state == S.PREPARE_ABORT and md.pending_state == S.PREPARE_EPOCH_FENCE:
                # Make way for PrepareAbort and carry the fenced epoch in the record (in memory
                # first, as Kafka does).
                md.pending_state = None
                md.producer_epoch = epoch
                md.last_producer_epoch = NO_PRODUCER_EPOCH
            transit = md.prepare_abort_or_commit(next_state, TV_0, NO_PRODUCER_ID, self._now, False)
            after = self._write_prepare(result, md, transit, commit, reason)
            return _EndResult(Errors.NONE, after=after)
        if st == S.COMPLETE_COMMIT:
            return _EndResult(Errors.NONE if commit else Errors.INVALID_TXN_STATE)
        if st == S.COMPLETE_ABORT:
            return _EndResult(Errors.INVALID_TXN_STATE if commit else Errors.NONE)
        if st == S.PREPARE_COMMIT:
            return _EndResult(Errors.CONCURRENT_TRANSACTIONS if commit else Errors.INVALID_TXN_STATE)
        if st == S.PREPARE_ABORT:
            return _EndResult(Errors.INVALID_TXN_STATE if commit else Errors.CONCURRENT_TRANSACTIONS)
        if st == S.EMPTY:
            return _EndResult(Errors.INVALID_TXN_STATE)
        raise IllegalStateError(
            f"Found transactionalId {md.transactional_id} with state {st!r}. "
            "This is illegal as we should never have transitioned to this state."
        )

    def _end_transaction_v2(
        self,
        result: CoordinatorResult,
        md: TransactionMetadata,
        pid: int,
        epoch: int,
        commit: bool,
        is_from_client: bool,
        client_tv: int,
        reason: str,
    ) -> _EndResult:
        """TV2 (KIP-890 part 2): every end bumps the epoch; a retry is recognised by epoch + 1.

                          Abort                 Commit
                          Retry   Current       Retry   Current
            Empty         PF      EB            PF      ITS
            CompleteAbort NONE    EB            ITS     ITS
            CompleteCommit ITS    EB            NONE    ITS
        (PF PRODUCER_FENCED, ITS INVALID_TXN_STATE, EB epoch bump + PrepareAbort)"""
        pid_copy, epoch_copy = md.producer_id, md.producer_epoch
        is_fence = md.pending_state == S.PREPARE_EPOCH_FENCE
        retry_on_overflow = (
            not is_fence and md.prev_producer_id == pid and epoch == SHORT_MAX - 1 and md.producer_epoch == 0
        )
        retry_on_bump = not is_fence and md.producer_epoch == epoch + 1
        st = md.state
        if is_fence:
            valid_epoch = (not is_from_client or epoch == md.producer_epoch) and epoch >= md.producer_epoch
        elif st in (S.ONGOING, S.EMPTY, S.DEAD, S.PREPARE_EPOCH_FENCE):
            valid_epoch = epoch == md.producer_epoch
        elif st in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            valid_epoch = retry_on_bump
        else:  # CompleteCommit, CompleteAbort
            valid_epoch = retry_on_bump or retry_on_overflow or epoch == md.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow

        if md.producer_id != pid and not retry_on_overflow:
            return _EndResult(Errors.INVALID_PRODUCER_ID_MAPPING)
        if not valid_epoch:
            return _EndResult(Errors.PRODUCER_FENCED)
        if md.pending_transition_in_progress and md.pending_state != S.PREPARE_EPOCH_FENCE:
            return _EndResult(Errors.CONCURRENT_TRANSACTIONS)

        def complete_with(next_state: TransactionState, no_partition_added: bool) -> _EndResult:
            # An exhausted epoch moves to a new producer id at completion. Kafka 4.1-4.3 skip this
            # for an epoch fence, which leaves the id at epoch 32767 after a fence at 32766; a TV2
            # "retry" answer then hands 32767 to the client and its next transaction can be neither
            # fenced nor ended (the epoch would overflow). So the fence path rotates too.
            next_pid = self.pids.generate_producer_id(result) if md.is_producer_epoch_exhausted() else NO_PRODUCER_ID
            if next_state == S.PREPARE_ABORT and is_fence:
                # Make way for PrepareAbort; prepare_abort_or_commit bumps the epoch once (Kafka 4.1+:
                # the fenced epoch is not applied first, which overflowed at epoch 32766).
                md.pending_state = None
            transit = md.prepare_abort_or_commit(next_state, client_tv, next_pid, self._now, no_partition_added)
            after = self._write_prepare(result, md, transit, next_state == S.PREPARE_COMMIT, reason)
            # The producer id and epoch of Complete* (the next transaction's), written now or later.
            nxt = after if after.state != next_state else after.copy().prepare_complete(self._now)
            return _EndResult(Errors.NONE, nxt.producer_id, nxt.producer_epoch, after)

        if st == S.ONGOING:
            return complete_with(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, False)
        if st == S.COMPLETE_COMMIT:
            if commit:
                return (
                    _EndResult(Errors.NONE, pid_copy, epoch_copy) if is_retry else _EndResult(Errors.INVALID_TXN_STATE)
                )
            return _EndResult(Errors.INVALID_TXN_STATE) if is_retry else complete_with(S.PREPARE_ABORT, True)
        if st == S.COMPLETE_ABORT:
            if not commit:
                return (
                    _EndResult(Errors.NONE, pid_copy, epoch_copy) if is_retry else complete_with(S.PREPARE_ABORT, True)
                )
            return _EndResult(Errors.INVALID_TXN_STATE)
        if st == S.PREPARE_COMMIT:
            return _EndResult(Errors.CONCURRENT_TRANSACTIONS if commit else Errors.INVALID_TXN_STATE)
        if st == S.PREPARE_ABORT:
            return _EndResult(Errors.INVALID_TXN_STATE if commit else Errors.CONCURRENT_TRANSACTIONS)
        if st == S.EMPTY:
            return _EndResult(Errors.INVALID_TXN_STATE) if commit else complete_with(S.PREPARE_ABORT, True)
        raise IllegalStateError(
            f"Found transactionalId {md.transactional_id} with state {st!r}. "
            "This is illegal as we should never have transitioned to this state."
        )

    def _write_prepare(
        self, result: CoordinatorResult, md: TransactionMetadata, transit, commit: bool, reason: str
    ) -> TransactionMetadata:
        """The Prepare* record (the point of no return), then the markers and Complete*
        (marker_channel.py). Returns the metadata as `result` leaves it."""
        from_state = md.state.state_name
        after = self.state.append_transaction_to_log(result, md, transit)
        tid = md.transactional_id
        result.emit(
            tid,
            "TransactionPrepared",
            transactionalId=tid,
            result="COMMIT" if commit else "ABORT",
            reason=reason,
            fromState=from_state,
            producerId=after.producer_id,
            producerEpoch=after.producer_epoch,
            partitions=[list(tp) for tp in sorted_partitions(after.topic_partitions)],
        )
        return self.markers.add_txn_markers(result, after, commit)

    # ======================================================================== timers
    def on_transaction_timeout(self, timer: Timer) -> CoordinatorResult:
        """abortTimedOutTransactions for one transaction: fence the producer and abort."""
        result = CoordinatorResult()
        tid = timer.payload["transactionalId"]
        md = self.state.get(tid)
        if md is None or md.state != S.ONGOING or md.pending_transition_in_progress:
            return result
        if md.txn_start_timestamp + md.txn_timeout_ms >= self._now:  # not timed out (yet)
            self.state.sync_timers(result, md)
            return result
        if md.producer_id != timer.payload["producerId"]:
            return result
        fenced_epoch = md.producer_epoch
        after = self._fence_and_abort(result, md, "transaction timed out")
        result.emit(
            tid,
            "TransactionAbortedByTimeout",
            transactionalId=tid,
            producerId=after.producer_id,
            fencedEpoch=fenced_epoch,
            producerEpoch=after.producer_epoch,
            transactionTimeoutMs=after.txn_timeout_ms,
            transactionStartTimeMs=after.txn_start_timestamp,
        )
        result.emit(
            tid,
            "ProducerFenced",
            transactionalId=tid,
            producerId=after.producer_id,
            fencedEpoch=fenced_epoch,
            producerEpoch=after.producer_epoch,
            reason="transaction timed out",
        )
        return result

    def on_transactional_id_expiration(self, timer: Timer) -> CoordinatorResult:
        """removeExpiredTransactionalIds for one id: a tombstone, then the id is gone."""
        result = CoordinatorResult()
        tid = timer.payload["transactionalId"]
        md = self.state.get(tid)
        if md is None:
            return result
        expiration = self.p.config["transactional.id.expiration.ms"]
        if (
            md.pending_state is not None
            or not md.state.expiration_allowed
            or md.txn_last_update_timestamp > self._now - expiration
        ):
            self.state.sync_timers(result, md)
            return result
        self.state.append_tombstone(result, md)
        result.emit(
            tid,
            "TransactionalIdExpired",
            transactionalId=tid,
            producerId=md.producer_id,
            producerEpoch=md.producer_epoch,
            lastState=md.state.state_name,
            lastUpdateTimeMs=md.txn_last_update_timestamp,
            expirationMs=expiration,
        )
        return result

    # ======================================================================== describe / list
    def describe_transactions(self, request: Request) -> CoordinatorResult:
        return CoordinatorResult(
            {
                "throttleTimeMs": 0,
                "transactionStates": [self._describe(tid) for tid in request.body["transactionalIds"]],
            }
        )

    def _describe(self, tid: str) -> dict:
        if tid == "":
            return apis.describe_error_state(tid, Errors.INVALID_REQUEST)
        if not self._owns(tid):
            return apis.describe_error_state(tid, Errors.NOT_COORDINATOR)
        md = self.state.get(tid)
        if md is None or md.state == S.DEAD:
            return apis.describe_error_state(tid, Errors.TRANSACTIONAL_ID_NOT_FOUND)
        topics: OrderedDict = OrderedDict()
        for topic, p in sorted_partitions(md.topic_partitions):
            topics.setdefault(topic, []).append(p)
        return {
            "errorCode": 0,
            "transactionalId": tid,
            "transactionState": md.state.state_name,
            "transactionTimeoutMs": md.txn_timeout_ms,
            "transactionStartTimeMs": md.txn_start_timestamp,
            "producerId": md.producer_id,
            "producerEpoch": md.producer_epoch,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
        }

    def list_transactions(self, request: Request) -> CoordinatorResult:
        """The transactions of this coordinator partition, as a broker lists those it coordinates."""
        body = request.body
        unknown, states = [], set()
        for name in body["stateFilters"]:
            state = TransactionState.from_name(name)
            if state is None:
                if name not in unknown:
                    unknown.append(name)
            else:
                states.add(state)
        producer_ids = set(body["producerIdFilters"])
        duration = body.get("durationFilter", -1)
        # v2 (KIP-1152): null or "" lists every transaction; otherwise those whose whole id matches
        # (RE2/J `matcher(id).matches()`), matched in linear time; a pattern that does not compile
        # → INVALID_REGULAR_EXPRESSION, nothing listed.
        pattern_text = body.get("transactionalIdPattern")
        pattern = None
        if pattern_text:
            try:
                pattern = compile_regex(pattern_text)
            except RegexError:
                return CoordinatorResult(
                    {
                        "throttleTimeMs": 0,
                        "errorCode": Errors.INVALID_REGULAR_EXPRESSION.code,
                        "unknownStateFilters": unknown,
                        "transactionStates": [],
                    }
                )
        now = self._now
        out = []
        txns = self.state.txns
        for tid in sorted(txns):
            md = txns[tid]
            if md.state == S.DEAD:
                continue
            if producer_ids and md.producer_id not in producer_ids:
                continue
            if body["stateFilters"] and md.state not in states:
                continue
            if duration >= 0 and now - md.txn_start_timestamp <= duration:
                continue
            if pattern is not None and not pattern.fullmatch(tid):
                continue
            out.append({"transactionalId": tid, "producerId": md.producer_id, "transactionState": md.state.state_name})
        return CoordinatorResult(
            {"throttleTimeMs": 0, "errorCode": 0, "unknownStateFilters": unknown, "transactionStates": out}
        )

    # ======================================================================== snapshot and replay
    def to_json(self) -> dict:
        return {
            "transactions": self.state.to_json(),
            "producerIds": self.pids.to_json(),
            "nextCorrelationId": self.markers.next_correlation_id,
        }

    def load_json(self, data: dict) -> None:
        self.state.load_json(data.get("transactions", {}))
        self.load_rest(data)

    # Chunked storage: transactional ids per entity, the producer-id block and counters in one chunk.
    def chunk_maps(self) -> tuple:
        return self.state.chunk_maps()

    def rest_json(self) -> dict:
        return {"producerIds": self.pids.to_json(), "nextCorrelationId": self.markers.next_correlation_id}

    def load_rest(self, data: dict) -> None:
        self.pids.load_json(data.get("producerIds", {}))
        self.markers.next_correlation_id = data.get("nextCorrelationId", 0)

    def after_replay(self) -> CoordinatorResult:
        """loadTransactionsForTxnTopicPartition: the rest of the producer-id block is lost, the
        timers are back, and the markers of every transaction caught in Prepare* (its Complete*
        prepared by the replay) go out at the start of the next batch."""
        result = CoordinatorResult()
        self.pids.forget_block()
        for tid in self.state.loaded(result):
            self.markers.resend_after_load(result, tid)
        return result

    def persistent_view(self) -> dict:
        """What the state log carries: the TransactionLog value of every transactional id and the
        next producer-id block (for tests comparing a replayed partition with the original)."""
        return {"transactions": self.state.persistent_view(), "nextProducerIdBlock": self.pids.next_block}
