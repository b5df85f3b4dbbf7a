"""Kafka's TransactionStateManager for one coordinator partition: the transactional-id ->
TransactionMetadata map, the TransactionLog records that change it (by replay only), and the
timers that replace Kafka's periodic scans of it.

A handler prepares a transition on the metadata (`prepare_*` sets `pending_state`, as in Kafka
while the append is in flight) and hands the transit to `append_transaction_to_log`, which puts
the TransactionLog record into the handler's result and remembers the transit in `in_flight`.
The runtime then appends the record and replays it: `replay_transaction_log` completes the
transition (`complete_transition_to`, Kafka's append callback) when the record is the one in
flight, or installs the record as a loading coordinator reads it (`TransactionLog.read`: no
pending state, last epoch unknown). See coordinator/txn/coordinator.py for what is kept in memory.
"""

from __future__ import annotations

from ..chunks import EMPTY_SOURCE, ChunkSource, LazyMap
from ..result import CoordinatorResult
from . import log
from .metadata import TransactionMetadata, TransactionState, TxnTransitMetadata

S = TransactionState
PREPARE_STATES = (S.PREPARE_COMMIT, S.PREPARE_ABORT)

TIMEOUT_TIMER = "txn-abort-timed-out"
EXPIRE_TIMER = "txn-expire-transactional-id"


def tick(at_ms: int, interval_ms: int) -> int:
    """The first multiple of `interval_ms` at or after `at_ms`: when a periodic scan with that
    interval (ticks at multiples of it) first sees a condition that holds from `at_ms` on."""
    if interval_ms <= 0:
        return at_ms
    return -(-at_ms // interval_ms) * interval_ms


def completed(md: TransactionMetadata, transit: TxnTransitMetadata) -> TransactionMetadata:
    """A copy of `md` (whose pending transition is `transit`) as the replay of the transit's record
    will leave it: what a handler reads to go on after a write (events, timers, a second write)."""
    after = md.copy()
    after.complete_transition_to(transit)
    return after


class TransactionStateManager:
    def __init__(self, partition):
        self.p = partition
        # One chunk per transactional id (coordinator/chunks.py), decoded when touched.
        self.txns: LazyMap[str, TransactionMetadata] = txn_map(partition.chunks)
        # The Complete* transition prepared for a transaction whose markers are in flight (set by
        # the replay of its Prepare* record, Kafka's prepareComplete in the append callback).
        self.pending_complete: LazyMap[str, TxnTransitMetadata] = pending_complete_map(partition.chunks)
        # Transitions whose TransactionLog record is in a result the runtime has not applied yet
        # (Kafka's TxnTransitMetadata awaiting the append callback), with the record's value.
        # Empty between requests, so it is in no snapshot.
        self.in_flight: dict[str, tuple[TxnTransitMetadata, dict]] = {}

    # ---------------------------------------------------------------- queries
    def get(self, transactional_id: str) -> TransactionMetadata | None:
        return self.txns.get(transactional_id)

    def validate_transaction_timeout(self, timeout_ms: int) -> bool:
        """TransactionStateManager.validateTransactionTimeoutMs."""
        return 0 < timeout_ms <= self.p.config["transaction.max.timeout.ms"]

    # ---------------------------------------------------------------- writes (into a result)
    def append_transaction_to_log(
        self, result: CoordinatorResult, md: TransactionMetadata, transit: TxnTransitMetadata
    ) -> TransactionMetadata:
        """appendTransactionToLog: the transit's record goes into `result` (its replay completes
        the transition); the timers follow the new state. Returns the metadata as it will be."""
        tid = md.transactional_id
        value = log.value_of(transit)
        result.record(log.txn_key(tid), value)
        self.in_flight[tid] = (transit, value)
        after = completed(md, transit)
        self.sync_timers(result, after)
        return after

    def append_completion(
        self, result: CoordinatorResult, md: TransactionMetadata, complete: TxnTransitMetadata
    ) -> TransactionMetadata:
        """The Complete* record of a transaction whose markers are written (`md` has Complete*
        pending: live, or as it will be after its Prepare* record). Its replay completes the
        transition prepared in `pending_complete`. Returns the metadata as it will be."""
        value = log.value_of(complete)
        result.record(log.txn_key(md.transactional_id), value)
        self.in_flight[md.transactional_id] = (complete, value)
        after = completed(md, complete)
        self.sync_timers(result, after)
        return after

    def append_tombstone(self, result: CoordinatorResult, md: TransactionMetadata) -> None:
        """removeExpiredTransactionalIds for one id: prepareDead, then the tombstone, whose replay
        removes the id."""
        tid = md.transactional_id
        md.prepare_dead()
        result.record(log.txn_key(tid), None)
        result.cancel(f"{TIMEOUT_TIMER}:{tid}")
        result.cancel(f"{EXPIRE_TIMER}:{tid}")

    def sync_timers(self, result: CoordinatorResult, md: TransactionMetadata) -> None:
        """Kafka scans every transaction.abort.timed.out.transaction.cleanup.interval.ms for Ongoing
        transactions with txnStartTimestamp + txnTimeoutMs < now, and every
        transaction.remove.expired.transaction.cleanup.interval.ms for Empty/Complete* ids with
        txnLastUpdateTimestamp <= now - transactional.id.expiration.ms. Here each transaction has
        one timer per scan, due at the first scan tick (a multiple of the interval) at which the
        scan's condition holds: the same outcome as a scan running at those ticks, without waking
        partitions that have nothing due. `md` is the transaction as it will be."""
        tid = md.transactional_id
        cfg = self.p.config
        if md.state == S.ONGOING and md.pending_state is None:
            due = tick(
                md.txn_start_timestamp + md.txn_timeout_ms + 1,
                cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
            )
            result.schedule(
                f"{TIMEOUT_TIMER}:{tid}", due, TIMEOUT_TIMER, {"transactionalId": tid, "producerId": md.producer_id}
            )
        else:
            result.cancel(f"{TIMEOUT_TIMER}:{tid}")
        if md.state.expiration_allowed and md.pending_state is None:
            due = tick(
                md.txn_last_update_timestamp + cfg["transactional.id.expiration.ms"],
                cfg["transaction.remove.expired.transaction.cleanup.interval.ms"],
            )
            result.schedule(f"{EXPIRE_TIMER}:{tid}", due, EXPIRE_TIMER, {"transactionalId": tid})
        else:
            result.cancel(f"{EXPIRE_TIMER}:{tid}")

    # ---------------------------------------------------------------- replay
    def replay_transaction_log(self, transactional_id: str, value: dict | None) -> None:
        """One TransactionLog record (or tombstone): the only way the metadata changes."""
        tid = transactional_id
        in_flight = self.in_flight.pop(tid, None)
        if value is None:  # tombstone: the id expired
            self.pending_complete.pop(tid, None)
            self.txns.pop(tid, None)
            return
        md = self.txns.get(tid)
        # A Complete* is pending only while the transaction is in Prepare* (set by that record's
        # replay, below): only then is its chunk worth reading.
        pending = self.pending_complete.pop(tid, None) if md is not None and md.state in PREPARE_STATES else None
        transit = None
        if in_flight is not None and in_flight[1] is value:  # the record a handler just wrote
            transit = in_flight[0]
        elif pending is not None and log.value_of(pending) == value:  # Complete*, markers written
            transit = pending
        if md is not None and transit is not None and md.pending_state == transit.txn_state:
            if in_flight is not None and transit is in_flight[0]:
                md.install(transit)  # the handler checked this transition on a copy (`completed`)
            else:
                md.complete_transition_to(transit)  # Kafka's append callback
        else:
            md = self.txns[tid] = log.metadata_of(tid, value)  # TransactionLog.read, as on load
            if transit is not None:  # a new transactional id's first record
                md.last_producer_epoch = transit.last_producer_epoch
        if md.state in PREPARE_STATES:
            # The markers go out now (live: with this record; on load: at the next batch) and
            # Complete* is written when they are durable: it is pending meanwhile.
            self.pending_complete[tid] = md.prepare_complete(self.p.clock_ms)

    def loaded(self, result: CoordinatorResult) -> list[str]:
        """loadTransactionsForTxnTopicPartition, after every record was replayed: the timers of
        every transaction into `result`; returns the ids caught in Prepare*, whose markers must be
        sent again."""
        prepared = []
        for tid in sorted(self.txns):
            md = self.txns[tid]
            if md.state in PREPARE_STATES:
                prepared.append(tid)
            self.sync_timers(result, md)
        return prepared

    # ---------------------------------------------------------------- snapshot
    def to_json(self) -> dict:
        txns = {}
        for tid, md in self.txns.items():
            d = md.to_json()
            pending = self.pending_complete.get(tid)
            d["pendingComplete"] = pending.to_json() if pending is not None else None
            txns[tid] = d
        return txns

    def load_json(self, txns: dict) -> None:
        self.txns, self.pending_complete = txn_map(EMPTY_SOURCE), pending_complete_map(EMPTY_SOURCE)
        self.in_flight = {}
        for tid, d in txns.items():
            self.txns[tid] = TransactionMetadata.from_json(tid, d)
            if d.get("pendingComplete") is not None:
                self.pending_complete[tid] = TxnTransitMetadata.from_json(d["pendingComplete"])

    def chunk_maps(self) -> tuple:
        return self.txns, self.pending_complete

    def persistent_view(self) -> dict:
        """The TransactionLog value of every transactional id."""
        return {tid: log.value_of(md.prepare_no_transit()) for tid, md in sorted(self.txns.items())}


def txn_map(source: ChunkSource) -> LazyMap[str, TransactionMetadata]:
    return LazyMap(source, "TransactionLog", TransactionMetadata.from_json, lambda md: md.to_json())


def pending_complete_map(source: ChunkSource) -> LazyMap[str, TxnTransitMetadata]:
    return LazyMap(
        source, "PendingComplete", lambda tid, d: TxnTransitMetadata.from_json(d), lambda transit: transit.to_json()
    )
