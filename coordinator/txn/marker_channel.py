"""Kafka's TransactionMarkerChannelManager for one coordinator partition: the markers of a
transaction that reached Prepare*, and its completion once they are written.

Markers are "sent" by putting them into the same result as the Prepare* record: a DataRecord per
data partition (markers.py: a JSON marker record, or a broker control record for a Kafka client,
chosen by the stream) and a WriteTxnMarkers internal request per group coordinator partition that
owns a `__consumer_offsets` partition of the transaction. Kafka writes Complete* when every marker
is acknowledged. Nothing acknowledges here, but a micro-batch is committed only after its sink
wrote everything, so Complete* is written by work deferred to the start of the next micro-batch
(the COMPLETE_DEFERRED timer kind), when the markers are durable. A transaction with nothing to
send completes at once (Kafka: no markers to wait for). After a load, the markers of every
transaction caught in Prepare* are sent again at the start of the next batch (RESEND_DEFERRED),
and it completes in the batch after that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..result import CoordinatorResult
from ..routing import key_for_partition
from .markers import CONSUMER_OFFSETS, marker_record, write_txn_markers_body
from .metadata import TransactionMetadata, TransactionState, TxnTransitMetadata, sorted_partitions
from .state_manager import TransactionStateManager

if TYPE_CHECKING:
    from ..metadata import TopicMetadata

S = TransactionState

COMPLETE_DEFERRED = "txn-complete"
RESEND_DEFERRED = "txn-send-markers"


class TransactionMarkerChannelManager:
    def __init__(self, partition, state: TransactionStateManager, metadata: TopicMetadata):
        self.p = partition
        self.state = state
        self.metadata = metadata
        # The correlation id of the next request this partition sends (WriteTxnMarkers,
        # TxnVerificationResult): in memory in Kafka's channel, in the snapshot here.
        self.next_correlation_id = 0

    def correlation_id(self) -> int:
        """Hands out the next correlation id (moves the counter at once: call it only once the
        handler can no longer fail with an ApiError)."""
        cid = self.next_correlation_id
        self.next_correlation_id = 0 if cid >= 2**31 - 1 else cid + 1
        return cid

    @property
    def client_id(self) -> str:
        return f"transaction-coordinator-{self.p.partition_id}"

    # ---------------------------------------------------------------- after Prepare*
    def add_txn_markers(self, result: CoordinatorResult, md: TransactionMetadata, commit: bool) -> TransactionMetadata:
        """addTxnMarkersToSend for a transaction whose Prepare* record is in `result` (`md` as that
        record leaves it): the markers, then Complete* once they are durable, or at once if there
        was nothing to send. Returns the metadata as `result` leaves it."""
        tid = md.transactional_id
        if self.send_markers(result, md, commit):
            result.defer(
                f"{COMPLETE_DEFERRED}:{tid}",
                COMPLETE_DEFERRED,
                {"transactionalId": tid, "producerId": md.producer_id, "producerEpoch": md.producer_epoch},
            )
            return md
        # Complete* as the replay of the Prepare* record prepares it (same state, same clock).
        pending = md.copy()
        return self.write_txn_completion(result, pending, pending.prepare_complete(self.p.clock_ms))

    def send_markers(self, result: CoordinatorResult, md: TransactionMetadata, commit: bool) -> bool:
        """A marker per existing data partition and a WriteTxnMarkers request per group
        coordinator partition, into `result`. Returns whether anything was sent."""
        tid = md.transactional_id
        parts = sorted_partitions(md.topic_partitions)
        sent = False
        metadata = self.metadata
        for topic, p in parts:
            if topic == CONSUMER_OFFSETS:
                continue
            if not metadata.exists(topic, p):
                # TransactionMarkerChannelManager drops the markers of deleted partitions. Writing one
                # would fail the sink (and with it the query) or re-create the topic.
                result.emit(
                    tid,
                    "TransactionMarkerDropped",
                    transactionalId=tid,
                    producerId=md.producer_id,
                    producerEpoch=md.producer_epoch,
                    result="COMMIT" if commit else "ABORT",
                    topic=topic,
                    partition=p,
                    reason="the partition does not exist",
                )
                continue
            result.write_data(
                marker_record(
                    topic,
                    p,
                    committed=commit,
                    transactional_id=tid,
                    producer_id=md.producer_id,
                    producer_epoch=md.producer_epoch,
                    coordinator_partition=self.p.partition_id,
                    transaction_version=md.client_transaction_version,
                    client_kind=md.client_kind,
                )
            )
            sent = True
        n = self.p.config["coordinator.partitions"]
        for topic, p in parts:
            if topic == CONSUMER_OFFSETS:
                # __consumer_offsets partition p is owned by group coordinator partition p.
                result.send_request(
                    routing_key=key_for_partition(p, n),
                    api_key="WriteTxnMarkers",
                    api_version=2,
                    body=write_txn_markers_body(
                        committed=commit,
                        producer_id=md.producer_id,
                        producer_epoch=md.producer_epoch,
                        offsets_partitions=[p],
                        transaction_version=md.client_transaction_version,
                    ),
                    correlation_id=self.correlation_id(),
                    client_id=self.client_id,
                )
                sent = True
        return sent

    def write_txn_completion(
        self, result: CoordinatorResult, md: TransactionMetadata, complete: TxnTransitMetadata
    ) -> TransactionMetadata:
        """writeTxnCompletion: the prepared Complete* record (`md` has it pending). Returns the
        metadata as `result` leaves it."""
        tid = md.transactional_id
        partitions = len(md.topic_partitions)
        after = self.state.append_completion(result, md, complete)
        result.emit(
            tid,
            "TransactionCompleted",
            transactionalId=tid,
            result="COMMIT" if complete.txn_state == S.COMPLETE_COMMIT else "ABORT",
            producerId=after.producer_id,
            producerEpoch=after.producer_epoch,
            partitions=partitions,
        )
        return after

    # ---------------------------------------------------------------- deferred work (timer handlers)
    def _prepared(self, tid: str) -> tuple[TransactionMetadata, TxnTransitMetadata] | None:
        md = self.state.get(tid)
        complete = self.state.pending_complete.get(tid)
        if md is None or complete is None or md.pending_state != complete.txn_state:
            return None
        return md, complete

    def on_complete(self, timer) -> CoordinatorResult:
        """The markers of the previous batch are durable: write Complete*."""
        result = CoordinatorResult()
        prepared = self._prepared(timer.payload["transactionalId"])
        if prepared is not None:
            self.write_txn_completion(result, *prepared)
        return result

    def on_send_markers(self, timer) -> CoordinatorResult:
        """After a load: re-send the markers of a transaction caught in Prepare*."""
        result = CoordinatorResult()
        prepared = self._prepared(timer.payload["transactionalId"])
        if prepared is None:
            return result
        md, complete = prepared
        tid = md.transactional_id
        commit = md.state == S.PREPARE_COMMIT
        result.emit(
            tid,
            "TransactionMarkersResent",
            transactionalId=tid,
            result="COMMIT" if commit else "ABORT",
            producerId=md.producer_id,
            producerEpoch=md.producer_epoch,
        )
        if self.send_markers(result, md, commit):
            result.defer(
                f"{COMPLETE_DEFERRED}:{tid}",
                COMPLETE_DEFERRED,
                {"transactionalId": tid, "producerId": md.producer_id, "producerEpoch": md.producer_epoch},
            )
        else:
            self.write_txn_completion(result, md, complete)
        return result

    def resend_after_load(self, result: CoordinatorResult, transactional_id: str) -> None:
        result.defer(f"{RESEND_DEFERRED}:{transactional_id}", RESEND_DEFERRED, {"transactionalId": transactional_id})
