"""The transaction coordinator component ("transactions"): Kafka's TransactionCoordinator,
TransactionStateManager and TransactionMarkerChannelManager for one coordinator partition.

Appends are synchronous here: a handler prepares a transition, appends its state-log record and
completes the transition in the same call (the record, the response and everything else the batch
emits become durable together, or the batch is replayed). Kafka's asynchronous steps map as follows:

- the reply to EndTxn follows the Prepare* record at once, as in Kafka;
- markers are "sent" by emitting them in the same batch as the Prepare* record: a DataRecord per
  data partition and a WriteTxnMarkers internal request per `__consumer_offsets` partition (one
  per group coordinator partition);
- Kafka writes Complete* when every marker is acknowledged. Nothing acknowledges here, but a
  micro-batch is committed only after its sink wrote everything, so the Complete* record is written
  by work deferred to the start of the next micro-batch (`partition.defer`), when the markers are
  durable. Until then the transaction has the pending state Complete*, exactly as in Kafka while
  markers are in flight (requests get CONCURRENT_TRANSACTIONS). A transaction without partitions
  completes at once (Kafka: no markers to wait for);
- loading (`replay` + `after_replay`) prepares Complete* for every transaction caught in Prepare*,
  re-sends its markers at the start of the next batch and completes it in the batch after that.

Timers replace Kafka's periodic scans (see `_sync_timers`).
"""
from __future__ import annotations

import re
from collections import OrderedDict

from ..chunks import EMPTY_SOURCE, LazyMap
from ..group.consumer.regex import RegexError, compile_regex
from ..errors import ApiError, Error, Errors
from ..messages import Request
from ..routing import coordinator_partition, key_for_partition
from ..runtime import register_component
from ..timers import Timer
from . import apis
from . import log
from .markers import CONSUMER_OFFSETS, marker_record, write_txn_markers_body
from .metadata import (JSON_CLIENT, KAFKA_CLIENT, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, SHORT_MAX, TV_0, TV_2, IllegalStateError,
                       TransactionMetadata, TransactionState, TxnTransitMetadata, sorted_partitions,
                       supports_epoch_bump)
from .pid import ProducerIdManager

S = TransactionState
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")

TIMEOUT_TIMER = "txn-abort-timed-out"
EXPIRE_TIMER = "txn-expire-transactional-id"
COMPLETE_DEFERRED = "txn-complete"
RESEND_DEFERRED = "txn-send-markers"


def _tick(at_ms: int, interval_ms: int) -> int:
    """The first multiple of `interval_ms` at or after `at_ms`: when a periodic scan with that
    interval (ticks at multiples of it) first sees a condition that holds from `at_ms` on."""
    if interval_ms <= 0:
        return at_ms
    return -(-at_ms // interval_ms) * interval_ms


class _Result:
    """What EndTxn answers: (error, producerId, producerEpoch)."""

    __slots__ = ("error", "producer_id", "producer_epoch")

    def __init__(self, error: Error, producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH):
        self.error, self.producer_id, self.producer_epoch = error, producer_id, producer_epoch


@register_component
class TransactionCoordinator:
    name = "transactions"
    handlers = {
        "InitProducerId": "init_producer_id",
        "AddPartitionsToTxn": "add_partitions_to_txn",
        "AddOffsetsToTxn": "add_offsets_to_txn",
        "EndTxn": "end_txn",
        "DescribeTransactions": "describe_transactions",
        "ListTransactions": "list_transactions",
        "TxnVerification": "txn_verification",
    }
    timer_handlers = {
        TIMEOUT_TIMER: "on_transaction_timeout",
        EXPIRE_TIMER: "on_transactional_id_expiration",
        COMPLETE_DEFERRED: "on_complete",
        RESEND_DEFERRED: "on_send_markers",
    }
    # The cluster's finalized `transaction.version`: Kafka 4.x formats new clusters at 2. It is the
    # version of the coordinator's own aborts (timeouts, InitProducerId during a transaction).
    server_transaction_version = TV_2

    def __init__(self, partition):
        self.p = partition
        # One chunk per transactional id (coordinator/chunks.py), decoded when touched.
        self.txns: dict[str, TransactionMetadata] = _txn_map(partition.chunks)
        # The Complete* transition prepared for a transaction whose markers are in flight.
        self.pending_complete: dict[str, TxnTransitMetadata] = _pending_complete_map(partition.chunks)
        self.pids = ProducerIdManager(partition)
        self.next_correlation_id = 0

    # ======================================================================== helpers
    @property
    def _now(self) -> int:
        return self.p.clock_ms

    def _owns(self, transactional_id: str) -> bool:
        return self.p.owns(transactional_id)

    def _check_timeout(self, timeout_ms: int) -> bool:
        """TransactionStateManager.validateTransactionTimeoutMs."""
        return 0 < timeout_ms <= self.p.config["transaction.max.timeout.ms"]

    def _event(self, transactional_id: str, event: str, **fields) -> None:
        self.p.emit_event(transactional_id, event, transactionalId=transactional_id, **fields)

    def _write(self, md: TransactionMetadata, transit: TxnTransitMetadata) -> None:
        """appendTransactionToLog + completeTransitionTo: the record, then the new state."""
        self.p.append_record(log.txn_key(md.transactional_id), log.value_of(transit))
        md.complete_transition_to(transit)
        self._sync_timers(md)

    def _sync_timers(self, md: TransactionMetadata) -> None:
        """Kafka scans every transaction.abort.timed.out.transaction.cleanup.interval.ms for Ongoing
        transactions with txnStartTimestamp + txnTimeoutMs < now, and every
        transaction.remove.expired.transaction.cleanup.interval.ms for Empty/Complete* ids with
        txnLastUpdateTimestamp <= now - transactional.id.expiration.ms. Here each transaction has
        one timer per scan, due at the first scan tick (a multiple of the interval) at which the
        scan's condition holds: the same outcome as a scan running at those ticks, without waking
        partitions that have nothing due."""
        tid = md.transactional_id
        cfg = self.p.config
        if md.state == S.ONGOING and md.pending_state is None:
            due = _tick(md.txn_start_timestamp + md.txn_timeout_ms + 1,
                        cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"])
            self.p.schedule(f"{TIMEOUT_TIMER}:{tid}", due, TIMEOUT_TIMER,
                            {"transactionalId": tid, "producerId": md.producer_id})
        else:
            self.p.cancel(f"{TIMEOUT_TIMER}:{tid}")
        if md.state.expiration_allowed and md.pending_state is None:
            due = _tick(md.txn_last_update_timestamp + cfg["transactional.id.expiration.ms"],
                        cfg["transaction.remove.expired.transaction.cleanup.interval.ms"])
            self.p.schedule(f"{EXPIRE_TIMER}:{tid}", due, EXPIRE_TIMER, {"transactionalId": tid})
        else:
            self.p.cancel(f"{EXPIRE_TIMER}:{tid}")

    def _next_correlation_id(self) -> int:
        cid = self.next_correlation_id
        self.next_correlation_id = 0 if cid >= 2**31 - 1 else cid + 1
        return cid

    # ======================================================================== InitProducerId
    def init_producer_id(self, request: Request) -> dict:
        body, version = request.body, request.api_version
        tid, timeout_ms = body["transactionalId"], body["transactionTimeoutMs"]
        expected_pid, expected_epoch = body.get("producerId", -1), body.get("producerEpoch", -1)
        # KafkaApis: the producer id and epoch come together or not at all.
        if (expected_pid == NO_PRODUCER_ID) != (expected_epoch == NO_PRODUCER_EPOCH):
            raise ApiError(Errors.INVALID_REQUEST)
        expected = None if expected_pid == NO_PRODUCER_ID else (expected_pid, expected_epoch)

        if tid is None:
            # An idempotent producer: a fresh producer id from this partition, epoch 0, no state.
            return apis.init_producer_id_response(version, Errors.NONE, self.pids.generate_producer_id(), 0)
        if tid == "":
            raise ApiError(Errors.INVALID_REQUEST)
        if not self._check_timeout(timeout_ms):
            raise ApiError(Errors.INVALID_TRANSACTION_TIMEOUT)
        if not self._owns(tid):
            raise ApiError(Errors.NOT_COORDINATOR)

        # The kind of client decides how this producer's markers are written ([txn] markers = "auto").
        kind = KAFKA_CLIENT if request.kafka_client else JSON_CLIENT
        md = self.txns.get(tid)
        if md is None:
            md = TransactionMetadata(tid, self.pids.generate_producer_id(), NO_PRODUCER_ID, NO_PRODUCER_ID,
                                     NO_PRODUCER_EPOCH, NO_PRODUCER_EPOCH, timeout_ms, S.EMPTY, set(), -1,
                                     self._now, TV_0)
            self.txns[tid] = md
            transit = md.prepare_increment_producer_epoch(timeout_ms, expected and expected[1], self._now, kind)
            self._write(md, transit)
            self._event(tid, "ProducerInitialized", producerId=transit.producer_id,
                        producerEpoch=transit.producer_epoch, reason="new transactional id", clientKind=kind)
            return apis.init_producer_id_response(version, Errors.NONE, transit.producer_id, transit.producer_epoch)

        # prepareInitProducerIdTransit: everything below raises before it changes anything.
        if md.pending_transition_in_progress:
            raise ApiError(Errors.CONCURRENT_TRANSACTIONS)
        if expected is not None and not self._is_valid_expected_producer_id(md, *expected):
            raise ApiError(Errors.PRODUCER_FENCED)
        if md.state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            raise ApiError(Errors.CONCURRENT_TRANSACTIONS)
        if md.state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            if md.is_producer_epoch_exhausted() and (expected is None or expected[1] == md.producer_epoch):
                transit = md.prepare_producer_id_rotation(self.pids.generate_producer_id(), timeout_ms,
                                                          self._now, expected is not None, kind)
                reason = "producer id rotation (epoch exhausted)"
            else:
                try:
                    transit = md.prepare_increment_producer_epoch(timeout_ms, expected and expected[1], self._now,
                                                                  kind)
                except IllegalStateError as e:
                    # Kafka 4.3 answers Errors.forException: an exhausted epoch with another expected
                    # epoch (e.g. the previous one) cannot be bumped.
                    raise ApiError(Errors.UNKNOWN_SERVER_ERROR, str(e)) from None
                reason = "epoch bump" if transit.producer_epoch != md.producer_epoch else "retry"
            self._write(md, transit)
            self._event(tid, "ProducerInitialized", producerId=transit.producer_id,
                        producerEpoch=transit.producer_epoch, reason=reason, clientKind=kind)
            return apis.init_producer_id_response(version, Errors.NONE, transit.producer_id, transit.producer_epoch)
        if md.state == S.ONGOING:
            # Fence the current producer (the bumped epoch is never returned), abort its
            # transaction and let the client retry, which bumps the epoch once more.
            fenced_epoch = md.producer_epoch
            fence = md.prepare_fence_producer_epoch()
            result = self._end_transaction(tid, fence.producer_id, fence.producer_epoch, False,
                                           is_from_client=False, client_tv=self.server_transaction_version,
                                           reason="InitProducerId during an ongoing transaction")
            if result.error != Errors.NONE:
                raise IllegalStateError(f"aborting the ongoing transaction of {tid} failed: {result.error}")
            self._event(tid, "ProducerFenced", producerId=md.producer_id, fencedEpoch=fenced_epoch,
                        producerEpoch=md.producer_epoch,
                        reason="InitProducerId while a transaction was ongoing")
            return apis.init_producer_id_response(version, Errors.CONCURRENT_TRANSACTIONS)
        raise IllegalStateError(f"Found transactionalId {tid} with state {md.state!r}. "
                                "This is illegal as we should never have transitioned to this state.")

    @staticmethod
    def _is_valid_expected_producer_id(md: TransactionMetadata, pid: int, epoch: int) -> bool:
        # Accept a just-created id (epoch -1), the current producer id (the epoch is checked when it
        # is bumped), or the previous one with an exhausted epoch (a retry across a rotation).
        return (md.producer_epoch == NO_PRODUCER_EPOCH or pid == md.producer_id
                or (pid == md.prev_producer_id and epoch >= SHORT_MAX - 1))

    # ======================================================================== AddPartitionsToTxn
    def add_partitions_to_txn(self, request: Request) -> dict:
        body, version = request.body, request.api_version
        if version < 4:
            parts = apis.flatten_topics(body["v3AndBelowTopics"])
            errors = self._add_or_verify(body["v3AndBelowTransactionalId"], body["v3AndBelowProducerId"],
                                         body["v3AndBelowProducerEpoch"], parts, False, version)
            return {"throttleTimeMs": 0, "resultsByTopicV3AndBelow": apis.topic_results(parts, errors)}
        results = []
        for txn in body["transactions"]:
            parts = apis.flatten_topics(txn["topics"])
            errors = self._add_or_verify(txn["transactionalId"], txn["producerId"], txn["producerEpoch"],
                                         parts, txn["verifyOnly"], version)
            results.append({"transactionalId": txn["transactionalId"],
                            "topicResults": apis.topic_results(parts, errors)})
        return {"throttleTimeMs": 0, "errorCode": 0, "resultsByTransaction": results}

    def _add_or_verify(self, tid: str, pid: int, epoch: int, parts: list, verify_only: bool,
                       version: int) -> dict:
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
        error = self._add_partitions(tid, pid, epoch, parts, TV_2 if version > 3 else TV_0)
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
        return self.p.component("metadata").exists(topic, partition)

    def _is_service_topic(self, topic: str) -> bool:
        """The service's requests, responses, events and state-log topics (and the response topics
        a request may name in replyTo): a marker written into them would corrupt them."""
        return topic in self.p.config["coordinator.internal.topics"] or \
            self.p._reply_to_re.fullmatch(topic) is not None

    # ======================================================================== KIP-890 verification
    def verify_offsets_partition(self, tid: str, pid: int, epoch: int, partition: int, verify_only: bool) -> Error:
        """What AddPartitionsToTxn v5 (the broker form) answers for `__consumer_offsets-<partition>`
        of one transaction: verified (verifyOnly, for TxnOffsetCommit v0-4: NONE if the partition is
        in the transaction, TRANSACTION_ABORTABLE if not) or added (TxnOffsetCommit v5)."""
        tp = (CONSUMER_OFFSETS, partition)
        return self._add_or_verify(tid, pid, epoch, [tp], verify_only, 5)[tp]

    def txn_verification(self, request: Request) -> None:
        """A group coordinator partition's question (internal): answered with a
        TxnVerificationResult to that partition, on the internal channel."""
        b = request.body
        n = self.p.config["coordinator.partitions"]
        if not 0 <= b["partitionIndex"] < n:
            # Only a coordinator partition asks, about itself: there is nobody to answer.
            self._event(b["transactionalId"], "TxnVerificationDropped", partitionIndex=b["partitionIndex"],
                        verificationId=b["verificationId"])
            return None
        error = self.verify_offsets_partition(b["transactionalId"], b["producerId"], b["producerEpoch"],
                                              b["partitionIndex"], b["verifyOnly"])
        self.p.send_request(key_for_partition(b["partitionIndex"], n), "TxnVerificationResult", 0,
                            {"verificationId": b["verificationId"], "transactionalId": b["transactionalId"],
                             "errorCode": error.code},
                            self._next_correlation_id(), f"transaction-coordinator-{self.p.partition_id}")
        return None  # nobody reads a response to an internal request

    def _verify_partitions(self, tid: str, pid: int, epoch: int, parts: list) -> dict:
        """handleVerifyPartitionsInTransaction (KIP-890 part 1): nothing is written."""
        def all_(err):
            return {tp: err for tp in parts}
        if not tid:
            return all_(Errors.INVALID_REQUEST)
        if not self._owns(tid):
            return all_(Errors.NOT_COORDINATOR)
        md = self.txns.get(tid)
        if md is None or md.producer_id != pid:
            return all_(Errors.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != epoch:
            return all_(Errors.PRODUCER_FENCED)
        if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return all_(Errors.CONCURRENT_TRANSACTIONS)
        # The pending state is not checked: partitions join on the append and leave on the markers.
        return {tp: Errors.NONE if tp in md.topic_partitions else Errors.TRANSACTION_ABORTABLE for tp in parts}

    def _add_partitions(self, tid: str, pid: int, epoch: int, parts, client_tv: int) -> Error:
        """handleAddPartitionsToTransaction (Kafka 4.3 order of checks)."""
        if not tid:
            return Errors.INVALID_REQUEST
        if not self._owns(tid):
            return Errors.NOT_COORDINATOR
        md = self.txns.get(tid)
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
        self._write(md, md.prepare_add_partitions(added, self._now, client_tv))
        if started:
            self._event(tid, "TransactionStarted", producerId=md.producer_id, producerEpoch=md.producer_epoch,
                        transactionTimeoutMs=md.txn_timeout_ms)
        return Errors.NONE

    # ======================================================================== AddOffsetsToTxn
    def add_offsets_to_txn(self, request: Request) -> dict:
        body, version = request.body, request.api_version
        # The group's __consumer_offsets partition joins the transaction, as a client (TV0) add.
        offsets_partition = coordinator_partition(body["groupId"], self.p.config["coordinator.partitions"])
        error = self._add_partitions(body["transactionalId"], body["producerId"], body["producerEpoch"],
                                     [(CONSUMER_OFFSETS, offsets_partition)], TV_0)
        return {"throttleTimeMs": 0, "errorCode": apis.producer_fenced_for(version, 2, error).code}

    # ======================================================================== EndTxn
    def end_txn(self, request: Request) -> dict:
        body, version = request.body, request.api_version
        client_tv = TV_2 if version > 4 else TV_0  # TransactionVersion.transactionVersionForEndTxn
        result = self._end_transaction(body["transactionalId"], body["producerId"], body["producerEpoch"],
                                       body["committed"], is_from_client=True, client_tv=client_tv,
                                       reason="EndTxn")
        return apis.end_txn_response(version, result.error, result.producer_id, result.producer_epoch)

    def _end_transaction(self, tid: str, pid: int, epoch: int, commit: bool, *, is_from_client: bool,
                         client_tv: int, reason: str) -> _Result:
        if not tid:
            return _Result(Errors.INVALID_REQUEST)
        if not self._owns(tid):
            return _Result(Errors.NOT_COORDINATOR)
        md = self.txns.get(tid)
        if md is None:
            return _Result(Errors.INVALID_PRODUCER_ID_MAPPING)
        if supports_epoch_bump(client_tv):
            return self._end_transaction_v2(md, pid, epoch, commit, is_from_client, client_tv, reason)
        return self._end_transaction_v1(md, pid, epoch, commit, is_from_client, reason)

    def _end_transaction_v1(self, md: TransactionMetadata, pid: int, epoch: int, commit: bool,
                            is_from_client: bool, reason: str) -> _Result:
        if md.producer_id != pid:
            return _Result(Errors.INVALID_PRODUCER_ID_MAPPING)
        # Clients must match the epoch exactly; the coordinator's own abort may carry a bumped one.
        if (is_from_client and epoch != md.producer_epoch) or epoch < md.producer_epoch:
            return _Result(Errors.PRODUCER_FENCED)
        if md.pending_transition_in_progress and md.pending_state != S.PREPARE_EPOCH_FENCE:
            return _Result(Errors.CONCURRENT_TRANSACTIONS)
        st = md.state
        if st == S.ONGOING:
            next_state = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            if next_state == S.PREPARE_ABORT and md.pending_state == S.PREPARE_EPOCH_FENCE:
                # Make way for PrepareAbort and carry the fenced epoch in the record.
                md.pending_state = None
                md.producer_epoch = epoch
                md.last_producer_epoch = NO_PRODUCER_EPOCH
            transit = md.prepare_abort_or_commit(next_state, TV_0, NO_PRODUCER_ID, self._now, False)
            self._write_prepare(md, transit, commit, reason)
            return _Result(Errors.NONE)
        if st == S.COMPLETE_COMMIT:
            return _Result(Errors.NONE if commit else Errors.INVALID_TXN_STATE)
        if st == S.COMPLETE_ABORT:
            return _Result(Errors.INVALID_TXN_STATE if commit else Errors.NONE)
        if st == S.PREPARE_COMMIT:
            return _Result(Errors.CONCURRENT_TRANSACTIONS if commit else Errors.INVALID_TXN_STATE)
        if st == S.PREPARE_ABORT:
            return _Result(Errors.INVALID_TXN_STATE if commit else Errors.CONCURRENT_TRANSACTIONS)
        if st == S.EMPTY:
            return _Result(Errors.INVALID_TXN_STATE)
        raise IllegalStateError(f"Found transactionalId {md.transactional_id} with state {st!r}. "
                                "This is illegal as we should never have transitioned to this state.")

    def _end_transaction_v2(self, md: TransactionMetadata, pid: int, epoch: int, commit: bool,
                            is_from_client: bool, client_tv: int, reason: str) -> _Result:
        """TV2 (KIP-890 part 2): every end bumps the epoch; a retry is recognised by epoch + 1.

                          Abort                 Commit
                          Retry   Current       Retry   Current
            Empty         PF      EB            PF      ITS
            CompleteAbort NONE    EB            ITS     ITS
            CompleteCommit ITS    EB            NONE    ITS
        (PF PRODUCER_FENCED, ITS INVALID_TXN_STATE, EB epoch bump + PrepareAbort)"""
        pid_copy, epoch_copy = md.producer_id, md.producer_epoch
        is_fence = md.pending_state == S.PREPARE_EPOCH_FENCE
        retry_on_overflow = (not is_fence and md.prev_producer_id == pid and epoch == SHORT_MAX - 1
                             and md.producer_epoch == 0)
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
            return _Result(Errors.INVALID_PRODUCER_ID_MAPPING)
        if not valid_epoch:
            return _Result(Errors.PRODUCER_FENCED)
        if md.pending_transition_in_progress and md.pending_state != S.PREPARE_EPOCH_FENCE:
            return _Result(Errors.CONCURRENT_TRANSACTIONS)

        def complete_with(next_state: TransactionState, no_partition_added: bool) -> _Result:
            # An exhausted epoch moves to a new producer id at completion. Kafka 4.1-4.3 skip this
            # for an epoch fence, which leaves the id at epoch 32767 after a fence at 32766; a TV2
            # "retry" answer then hands 32767 to the client and its next transaction can be neither
            # fenced nor ended (the epoch would overflow). So the fence path rotates too.
            next_pid = self.pids.generate_producer_id() if md.is_producer_epoch_exhausted() else NO_PRODUCER_ID
            if next_state == S.PREPARE_ABORT and is_fence:
                # Make way for PrepareAbort; prepare_abort_or_commit bumps the epoch once (Kafka 4.1+:
                # the fenced epoch is not applied first, which overflowed at epoch 32766).
                md.pending_state = None
            transit = md.prepare_abort_or_commit(next_state, client_tv, next_pid, self._now, no_partition_added)
            complete = self._write_prepare(md, transit, next_state == S.PREPARE_COMMIT, reason)
            return _Result(Errors.NONE, complete.producer_id, complete.producer_epoch)

        if st == S.ONGOING:
            return complete_with(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, False)
        if st == S.COMPLETE_COMMIT:
            if commit:
                return _Result(Errors.NONE, pid_copy, epoch_copy) if is_retry else _Result(Errors.INVALID_TXN_STATE)
            return _Result(Errors.INVALID_TXN_STATE) if is_retry else complete_with(S.PREPARE_ABORT, True)
        if st == S.COMPLETE_ABORT:
            if not commit:
                return _Result(Errors.NONE, pid_copy, epoch_copy) if is_retry else complete_with(S.PREPARE_ABORT, True)
            return _Result(Errors.INVALID_TXN_STATE)
        if st == S.PREPARE_COMMIT:
            return _Result(Errors.CONCURRENT_TRANSACTIONS if commit else Errors.INVALID_TXN_STATE)
        if st == S.PREPARE_ABORT:
            return _Result(Errors.INVALID_TXN_STATE if commit else Errors.CONCURRENT_TRANSACTIONS)
        if st == S.EMPTY:
            return _Result(Errors.INVALID_TXN_STATE) if commit else complete_with(S.PREPARE_ABORT, True)
        raise IllegalStateError(f"Found transactionalId {md.transactional_id} with state {st!r}. "
                                "This is illegal as we should never have transitioned to this state.")

    # ======================================================================== two-phase commit
    def _write_prepare(self, md: TransactionMetadata, transit: TxnTransitMetadata, commit: bool,
                       reason: str) -> TxnTransitMetadata:
        """Write the Prepare* record (the point of no return), prepare Complete*, send the markers
        and complete once they are durable. Returns the Complete* transition."""
        from_state = md.state.state_name
        self._write(md, transit)
        tid = md.transactional_id
        complete = md.prepare_complete(self._now)
        self.pending_complete[tid] = complete
        self._event(tid, "TransactionPrepared", result="COMMIT" if commit else "ABORT", reason=reason,
                    fromState=from_state, producerId=md.producer_id, producerEpoch=md.producer_epoch,
                    partitions=[list(tp) for tp in sorted_partitions(md.topic_partitions)])
        if self._send_markers(md, commit):
            self.p.defer(f"{COMPLETE_DEFERRED}:{tid}", COMPLETE_DEFERRED,
                         {"transactionalId": tid, "producerId": md.producer_id, "producerEpoch": md.producer_epoch})
        else:
            self._complete(tid)
        return complete

    def _send_markers(self, md: TransactionMetadata, commit: bool) -> bool:
        """Emit a marker per existing data partition and a WriteTxnMarkers request per group
        coordinator partition. Returns whether anything was sent."""
        tid = md.transactional_id
        parts = sorted_partitions(md.topic_partitions)
        sent = False
        metadata = self.p.component("metadata")
        for topic, p in parts:
            if topic == CONSUMER_OFFSETS:
                continue
            if not metadata.exists(topic, p):
                # TransactionMarkerChannelManager drops the markers of deleted partitions. Writing one
                # would fail the sink (and with it the query) or re-create the topic.
                self._event(tid, "TransactionMarkerDropped", producerId=md.producer_id,
                            producerEpoch=md.producer_epoch, result="COMMIT" if commit else "ABORT",
                            topic=topic, partition=p, reason="the partition does not exist")
                continue
            self.p.write_data(marker_record(
                topic, p, committed=commit, transactional_id=tid, producer_id=md.producer_id,
                producer_epoch=md.producer_epoch, coordinator_partition=self.p.partition_id,
                transaction_version=md.client_transaction_version, client_kind=md.client_kind))
            sent = True
        n = self.p.config["coordinator.partitions"]
        for topic, p in parts:
            if topic == CONSUMER_OFFSETS:
                # __consumer_offsets partition p is owned by group coordinator partition p.
                self.p.send_request(
                    routing_key=key_for_partition(p, n), api_key="WriteTxnMarkers", api_version=2,
                    body=write_txn_markers_body(committed=commit, producer_id=md.producer_id,
                                                producer_epoch=md.producer_epoch, offsets_partitions=[p],
                                                transaction_version=md.client_transaction_version),
                    correlation_id=self._next_correlation_id(),
                    client_id=f"transaction-coordinator-{self.p.partition_id}")
                sent = True
        return sent

    def _complete(self, tid: str) -> None:
        """TransactionMarkerChannelManager.writeTxnCompletion: write the prepared Complete*."""
        md = self.txns.get(tid)
        transit = self.pending_complete.pop(tid, None)
        if md is None or transit is None or md.pending_state != transit.txn_state:
            return
        result = "COMMIT" if transit.txn_state == S.COMPLETE_COMMIT else "ABORT"
        partitions = len(md.topic_partitions)
        self._write(md, transit)
        self._event(tid, "TransactionCompleted", result=result, producerId=md.producer_id,
                    producerEpoch=md.producer_epoch, partitions=partitions)

    def on_complete(self, timer: Timer) -> None:
        self._complete(timer.payload["transactionalId"])

    def on_send_markers(self, timer: Timer) -> None:
        """After a load: re-send the markers of a transaction caught in Prepare*."""
        tid = timer.payload["transactionalId"]
        md = self.txns.get(tid)
        transit = self.pending_complete.get(tid)
        if md is None or transit is None or md.pending_state != transit.txn_state:
            return
        commit = md.state == S.PREPARE_COMMIT
        self._event(tid, "TransactionMarkersResent", result="COMMIT" if commit else "ABORT",
                    producerId=md.producer_id, producerEpoch=md.producer_epoch)
        if self._send_markers(md, commit):
            self.p.defer(f"{COMPLETE_DEFERRED}:{tid}", COMPLETE_DEFERRED,
                         {"transactionalId": tid, "producerId": md.producer_id, "producerEpoch": md.producer_epoch})
        else:
            self._complete(tid)

    # ======================================================================== timers
    def on_transaction_timeout(self, timer: Timer) -> None:
        """abortTimedOutTransactions for one transaction: fence the producer and abort."""
        tid = timer.payload["transactionalId"]
        md = self.txns.get(tid)
        if md is None or md.state != S.ONGOING or md.pending_transition_in_progress:
            return
        if md.txn_start_timestamp + md.txn_timeout_ms >= self._now:  # not timed out (yet)
            self._sync_timers(md)
            return
        if md.producer_id != timer.payload["producerId"]:
            return
        fenced_epoch = md.producer_epoch
        fence = md.prepare_fence_producer_epoch()
        result = self._end_transaction(tid, fence.producer_id, fence.producer_epoch, False, is_from_client=False,
                                       client_tv=self.server_transaction_version, reason="transaction timed out")
        if result.error != Errors.NONE:
            raise IllegalStateError(f"aborting the timed-out transaction of {tid} failed: {result.error}")
        self._event(tid, "TransactionAbortedByTimeout", producerId=md.producer_id, fencedEpoch=fenced_epoch,
                    producerEpoch=md.producer_epoch, transactionTimeoutMs=md.txn_timeout_ms,
                    transactionStartTimeMs=md.txn_start_timestamp)
        self._event(tid, "ProducerFenced", producerId=md.producer_id, fencedEpoch=fenced_epoch,
                    producerEpoch=md.producer_epoch, reason="transaction timed out")

    def on_transactional_id_expiration(self, timer: Timer) -> None:
        """removeExpiredTransactionalIds for one id: a tombstone, then the id is gone."""
        tid = timer.payload["transactionalId"]
        md = self.txns.get(tid)
        if md is None:
            return
        expiration = self.p.config["transactional.id.expiration.ms"]
        if (md.pending_state is not None or not md.state.expiration_allowed
                or md.txn_last_update_timestamp > self._now - expiration):
            self._sync_timers(md)
            return
        md.prepare_dead()
        self.p.append_record(log.txn_key(tid), None)
        del self.txns[tid]
        self.p.cancel(f"{TIMEOUT_TIMER}:{tid}")
        self.p.cancel(f"{EXPIRE_TIMER}:{tid}")
        self._event(tid, "TransactionalIdExpired", producerId=md.producer_id, producerEpoch=md.producer_epoch,
                    lastState=md.state.state_name, lastUpdateTimeMs=md.txn_last_update_timestamp,
                    expirationMs=expiration)

    # ======================================================================== describe / list
    def describe_transactions(self, request: Request) -> dict:
        return {"throttleTimeMs": 0, "transactionStates": [
            self._describe(tid) for tid in request.body["transactionalIds"]]}

    def _describe(self, tid: str) -> dict:
        if tid == "":
            return apis.describe_error_state(tid, Errors.INVALID_REQUEST)
        if not self._owns(tid):
            return apis.describe_error_state(tid, Errors.NOT_COORDINATOR)
        md = self.txns.get(tid)
        if md is None or md.state == S.DEAD:
            return apis.describe_error_state(tid, Errors.TRANSACTIONAL_ID_NOT_FOUND)
        topics: OrderedDict = OrderedDict()
        for topic, p in sorted_partitions(md.topic_partitions):
            topics.setdefault(topic, []).append(p)
        return {"errorCode": 0, "transactionalId": tid, "transactionState": md.state.state_name,
                "transactionTimeoutMs": md.txn_timeout_ms, "transactionStartTimeMs": md.txn_start_timestamp,
                "producerId": md.producer_id, "producerEpoch": md.producer_epoch,
                "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}

    def list_transactions(self, request: Request) -> dict:
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
                return {"throttleTimeMs": 0, "errorCode": Errors.INVALID_REGULAR_EXPRESSION.code,
                        "unknownStateFilters": unknown, "transactionStates": []}
        now = self._now
        out = []
        for tid in sorted(self.txns):
            md = self.txns[tid]
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
            out.append({"transactionalId": tid, "producerId": md.producer_id,
                        "transactionState": md.state.state_name})
        return {"throttleTimeMs": 0, "errorCode": 0, "unknownStateFilters": unknown, "transactionStates": out}

    # ======================================================================== snapshot and replay
    def to_json(self) -> dict:
        txns = {}
        for tid, md in self.txns.items():
            d = md.to_json()
            pending = self.pending_complete.get(tid)
            d["pendingComplete"] = pending.to_json() if pending is not None else None
            txns[tid] = d
        return {"transactions": txns, "producerIds": self.pids.to_json(),
                "nextCorrelationId": self.next_correlation_id}

    def load_json(self, data: dict) -> None:
        self.txns, self.pending_complete = _txn_map(EMPTY_SOURCE), _pending_complete_map(EMPTY_SOURCE)
        for tid, d in data.get("transactions", {}).items():
            self.txns[tid] = TransactionMetadata.from_json(tid, d)
            if d.get("pendingComplete") is not None:
                self.pending_complete[tid] = TxnTransitMetadata.from_json(d["pendingComplete"])
        self.load_rest(data)

    # Chunked storage: transactional ids per entity, the producer-id block and counters in one chunk.
    def chunk_maps(self) -> tuple:
        return self.txns, self.pending_complete

    def rest_json(self) -> dict:
        return {"producerIds": self.pids.to_json(), "nextCorrelationId": self.next_correlation_id}

    def load_rest(self, data: dict) -> None:
        self.pids.load_json(data.get("producerIds", {}))
        self.next_correlation_id = data.get("nextCorrelationId", 0)

    def replay(self, record) -> bool:
        parsed = log.parse(record.key)
        if parsed is None:
            return False
        kind, ids = parsed
        if kind == log.PRODUCER_ID_BLOCK:
            self.pids.replay(record.value)
            return True
        tid = ids[0]
        self.pending_complete.pop(tid, None)
        if record.value is None:  # tombstone: the id expired
            self.txns.pop(tid, None)
        else:
            self.txns[tid] = log.metadata_of(tid, record.value)
        return True

    def after_replay(self) -> None:
        """loadTransactionsForTxnTopicPartition: timers back, and every transaction caught in
        Prepare* gets its Complete* prepared; its markers go out at the start of the next batch."""
        for tid in sorted(self.txns):
            md = self.txns[tid]
            if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                self.pending_complete[tid] = md.prepare_complete(self._now)
                self.p.defer(f"{RESEND_DEFERRED}:{tid}", RESEND_DEFERRED, {"transactionalId": tid})
            self._sync_timers(md)

    def persistent_view(self) -> dict:
        """What the state log carries: the TransactionLog value of every transactional id and the
        next producer-id block (for tests comparing a replayed partition with the original)."""
        return {"transactions": {tid: log.value_of(md.prepare_no_transit()) for tid, md in sorted(self.txns.items())},
                "nextProducerIdBlock": self.pids.next_block}


def _txn_map(source) -> LazyMap:
    return LazyMap(source, "TransactionLog", TransactionMetadata.from_json, lambda md: md.to_json())


def _pending_complete_map(source) -> LazyMap:
    return LazyMap(source, "PendingComplete", lambda tid, d: TxnTransitMetadata.from_json(d),
                   lambda transit: transit.to_json())
