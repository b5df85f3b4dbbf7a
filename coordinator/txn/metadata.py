"""Kafka's transaction state machine: `TransactionState`, `TransactionMetadata`, `TxnTransitMetadata`.

A port of `transaction-coordinator/.../TransactionState.java` and `TransactionMetadata.java`
(Kafka 4.x). Transitions are two-phase, as in Kafka:

- a `prepare_*` method checks the transition, sets `pending_state` and returns the new state as a
  `TxnTransitMetadata` without changing anything else;
- after the state-log record is written, `complete_transition_to(transit)` installs it, after
  checking the invariants Kafka checks (epoch unchanged / +1 / 0 with a new producer id, partitions
  a superset for Ongoing, empty for Empty, ...).

An illegal transition is a bug and raises `IllegalStateError` (Kafka's IllegalStateException); a
handler never catches it, so the runtime answers UNKNOWN_SERVER_ERROR without applying anything.
The only protocol error raised here is PRODUCER_FENCED from `prepare_increment_producer_epoch`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

from ..errors import ApiError, Errors

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767
INT_MAX = 2**31 - 1

# TransactionVersion feature levels (org.apache.kafka.server.common.TransactionVersion).
TV_0, TV_1, TV_2 = 0, 1, 2

# Which kind of client initialized the transactional id's current producer (not in Kafka: the
# service has two): the project's JSON clients, whose markers are JSON records, or an unmodified
# Kafka client through the gateway, whose markers must be real control records ([txn] markers).
JSON_CLIENT, KAFKA_CLIENT = "json", "kafka"
CLIENT_KINDS = (JSON_CLIENT, KAFKA_CLIENT)


def _kind_json(kind: str) -> dict:
    # In the state snapshot only when it is not the default: the snapshots of JSON clients'
    # transactions stay as they were (and as state/zdict.py's samples).
    return {} if kind == JSON_CLIENT else {"clientKind": kind}


def supports_epoch_bump(tv: int) -> bool:
    """TransactionVersion.supportsEpochBump(): TV2 (KIP-890 part 2) and later."""
    return tv >= TV_2


def is_epoch_exhausted(epoch: int) -> bool:
    """TransactionMetadata.isEpochExhausted: epochs >= Short.MAX_VALUE - 1 are never handed out,
    so that the coordinator can always fence with one more bump."""
    return epoch >= SHORT_MAX - 1


class IllegalStateError(RuntimeError):
    """Kafka's IllegalStateException: a transition the state machine forbids (a bug)."""


class IllegalArgumentError(ValueError):
    """Kafka's IllegalArgumentException (negative producer id or epoch in a transition)."""


class TransactionState(Enum):
    """(id stored in the log, name shown by DescribeTransactions/ListTransactions, expirable)."""

    EMPTY = (0, "Empty", True)
    ONGOING = (1, "Ongoing", False)
    PREPARE_COMMIT = (2, "PrepareCommit", False)
    PREPARE_ABORT = (3, "PrepareAbort", False)
    COMPLETE_COMMIT = (4, "CompleteCommit", True)
    COMPLETE_ABORT = (5, "CompleteAbort", True)
    DEAD = (6, "Dead", False)
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence", False)

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def state_name(self) -> str:
        return self.value[1]

    @property
    def expiration_allowed(self) -> bool:
        return self.value[2]

    def valid_previous_states(self) -> frozenset:
        return VALID_PREVIOUS_STATES[self]

    @staticmethod
    def from_name(name: str) -> TransactionState | None:
        return _BY_NAME.get(name)

    @staticmethod
    def named(name: str) -> TransactionState:
        """A stored state's name, which must be known (KeyError otherwise: a corrupt chunk)."""
        return _BY_NAME[name]

    @staticmethod
    def from_id(state_id: int) -> TransactionState:
        try:
            return _BY_ID[state_id]
        except KeyError:
            raise IllegalStateError(
                f"Unknown transaction state id {state_id} from the transaction status message"
            ) from None

    def __repr__(self) -> str:
        return self.state_name


S = TransactionState
_BY_NAME = {s.state_name: s for s in S}
_BY_ID = {s.id: s for s in S}

# TransactionState.VALID_PREVIOUS_STATES: target -> the states it may be entered from.
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}

TopicPartition = tuple  # (topic: str, partition: int)


def sorted_partitions(parts: Iterable[TopicPartition]) -> list[TopicPartition]:
    return sorted((str(t), int(p)) for t, p in parts)


@dataclass(frozen=True)
class TxnTransitMetadata:
    """The state a transition leads to (Kafka's TxnTransitMetadata). `prev_producer_id` is always
    the producer id before the transition, as `prepareTransitionTo` sets it."""

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int
    client_kind: str = JSON_CLIENT

    def to_json(self) -> dict:
        return {
            "producerId": self.producer_id,
            "prevProducerId": self.prev_producer_id,
            "nextProducerId": self.next_producer_id,
            "producerEpoch": self.producer_epoch,
            "lastProducerEpoch": self.last_producer_epoch,
            "txnTimeoutMs": self.txn_timeout_ms,
            "txnState": self.txn_state.state_name,
            "topicPartitions": [list(tp) for tp in sorted_partitions(self.topic_partitions)],
            "txnStartTimestamp": self.txn_start_timestamp,
            "txnLastUpdateTimestamp": self.txn_last_update_timestamp,
            "clientTransactionVersion": self.client_transaction_version,
            **_kind_json(self.client_kind),
        }

    @staticmethod
    def from_json(d: dict) -> TxnTransitMetadata:
        return TxnTransitMetadata(
            d["producerId"],
            d["prevProducerId"],
            d["nextProducerId"],
            d["producerEpoch"],
            d["lastProducerEpoch"],
            d["txnTimeoutMs"],
            TransactionState.named(d["txnState"]),
            frozenset((t, p) for t, p in d["topicPartitions"]),
            d["txnStartTimestamp"],
            d["txnLastUpdateTimestamp"],
            d["clientTransactionVersion"],
            d.get("clientKind", JSON_CLIENT),
        )


@dataclass
class _TransitionData:
    state: TransactionState
    producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    topic_partitions: frozenset
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int
    client_kind: str


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: set = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    client_transaction_version: int = TV_0
    # Kafka keeps these in memory only (they are not in the TransactionLog value).
    pending_state: TransactionState | None = None
    has_failed_epoch_fence: bool = False
    client_kind: str = JSON_CLIENT  # JSON_CLIENT | KAFKA_CLIENT: set by InitProducerId

    def __post_init__(self):
        self.topic_partitions = set((t, p) for t, p in self.topic_partitions)

    # ------------------------------------------------------------------ queries
    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def _has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    def remove_partition(self, tp: TopicPartition) -> None:
        if self.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            raise IllegalStateError(
                f"Transaction metadata's current state is {self.state!r}, and its pending state is "
                f"{self.pending_state!r} while trying to remove partitions whose txn marker has been "
                "sent, this is not expected"
            )
        self.topic_partitions.discard(tp)

    # ------------------------------------------------------------------ prepare
    def _data(self, state: TransactionState) -> _TransitionData:
        return _TransitionData(
            state,
            self.producer_id,
            self.next_producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            frozenset(self.topic_partitions),
            self.txn_start_timestamp,
            self.txn_last_update_timestamp,
            self.client_transaction_version,
            self.client_kind,
        )

    def prepare_no_transit(self) -> TxnTransitMetadata:
        return TxnTransitMetadata(
            self.producer_id,
            self.prev_producer_id,
            self.next_producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            self.state,
            frozenset(self.topic_partitions),
            self.txn_start_timestamp,
            self.txn_last_update_timestamp,
            self.client_transaction_version,
            self.client_kind,
        )

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        if self.producer_epoch == SHORT_MAX:
            raise IllegalStateError(
                "Cannot fence producer with epoch equal to Short.MaxValue since this would overflow"
            )
        # A fence whose write failed is not bumped again: that epoch was never returned to anyone.
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        data = self._data(S.PREPARE_EPOCH_FENCE)
        data.producer_epoch = bumped
        return self._prepare_transition_to(data)

    def prepare_increment_producer_epoch(
        self,
        new_txn_timeout_ms: int,
        expected_producer_epoch: int | None,
        update_timestamp: int,
        client_kind: str | None = None,
    ) -> TxnTransitMetadata:
        if self.is_producer_epoch_exhausted():
            raise IllegalStateError(f"Cannot allocate any more producer epochs for producerId {self.producer_id}")
        data = self._data(S.EMPTY)
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            # No expected epoch: bump, and forget the last epoch (a new producer instance).
            data.producer_epoch = bumped
            data.last_producer_epoch = NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_producer_epoch == self.producer_epoch:
            # The producer recovers from an error (KIP-360) and nobody else initialized since.
            data.producer_epoch = bumped
            data.last_producer_epoch = self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            # A retry of a bump that succeeded: return the current epoch unchanged.
            data.producer_epoch = self.producer_epoch
            data.last_producer_epoch = self.last_producer_epoch
        else:
            raise ApiError(
                Errors.PRODUCER_FENCED,
                f"Expected producer epoch {expected_producer_epoch} does not match current "
                f"producer epoch {self.producer_epoch} or previous producer epoch "
                f"{self.last_producer_epoch}",
            )
        data.txn_timeout_ms = new_txn_timeout_ms
        data.topic_partitions = frozenset()
        data.txn_start_timestamp = -1
        data.txn_last_update_timestamp = update_timestamp
        if client_kind is not None:
            data.client_kind = client_kind
        return self._prepare_transition_to(data)

    def prepare_producer_id_rotation(
        self,
        new_producer_id: int,
        new_txn_timeout_ms: int,
        update_timestamp: int,
        record_last_epoch: bool,
        client_kind: str | None = None,
    ) -> TxnTransitMetadata:
        if self._has_pending_transaction():
            raise IllegalStateError("Cannot rotate producer ids while a transaction is still pending")
        data = self._data(S.EMPTY)
        data.producer_id = new_producer_id
        data.producer_epoch = 0
        data.last_producer_epoch = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        data.txn_timeout_ms = new_txn_timeout_ms
        data.topic_partitions = frozenset()
        data.txn_start_timestamp = -1
        data.txn_last_update_timestamp = update_timestamp
        if client_kind is not None:
            data.client_kind = client_kind
        return self._prepare_transition_to(data)

    def prepare_add_partitions(
        self, added: Iterable[TopicPartition], update_timestamp: int, client_transaction_version: int
    ) -> TxnTransitMetadata:
        if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
            start = update_timestamp
        else:
            start = self.txn_start_timestamp
        data = self._data(S.ONGOING)
        data.topic_partitions = frozenset(self.topic_partitions) | frozenset((t, p) for t, p in added)
        data.txn_start_timestamp = start
        data.txn_last_update_timestamp = update_timestamp
        data.client_transaction_version = client_transaction_version
        return self._prepare_transition_to(data)

    def prepare_abort_or_commit(
        self,
        new_state: TransactionState,
        client_transaction_version: int,
        next_producer_id: int,
        update_timestamp: int,
        no_partition_added: bool,
    ) -> TxnTransitMetadata:
        data = self._data(new_state)
        if supports_epoch_bump(client_transaction_version):
            # TV2: every end of a transaction bumps the epoch (callers rule out overflow).
            data.producer_epoch = self.producer_epoch + 1
            data.last_producer_epoch = self.producer_epoch
        # With TV2 a transaction may be aborted without any partition: its start time is then the
        # update time.
        data.txn_start_timestamp = update_timestamp if no_partition_added else self.txn_start_timestamp
        data.next_producer_id = next_producer_id
        data.txn_last_update_timestamp = update_timestamp
        data.client_transaction_version = client_transaction_version
        return self._prepare_transition_to(data)

    def prepare_complete(self, update_timestamp: int) -> TxnTransitMetadata:
        # The Prepare record was written: a failed epoch fence is behind us.
        self.has_failed_epoch_fence = False
        data = self._data(S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT)
        # TV2 epoch overflow: complete under the next producer id with epoch 0; the last epoch stays
        # at Short.MAX_VALUE - 1, the last one the client saw.
        if supports_epoch_bump(self.client_transaction_version) and self.next_producer_id != NO_PRODUCER_ID:
            data.producer_id = self.next_producer_id
            data.producer_epoch = 0
        data.next_producer_id = NO_PRODUCER_ID
        data.topic_partitions = frozenset()
        data.txn_last_update_timestamp = update_timestamp
        return self._prepare_transition_to(data)

    def prepare_dead(self) -> TxnTransitMetadata:
        data = self._data(S.DEAD)
        data.topic_partitions = frozenset()
        return self._prepare_transition_to(data)

    def _prepare_transition_to(self, data: _TransitionData) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalStateError(
                f"Preparing transaction state transition to {data.state!r} while it "
                f"already a pending state {self.pending_state!r}"
            )
        if data.producer_id < 0:
            raise IllegalArgumentError(f"Illegal new producer id {data.producer_id}")
        # A new id is created at epoch -1 and may stay there until it is expired.
        if data.state != S.DEAD and not 0 <= data.producer_epoch <= SHORT_MAX:
            raise IllegalArgumentError(f"Illegal new producer epoch {data.producer_epoch}")
        if self.state not in data.state.valid_previous_states():
            raise IllegalStateError(
                f"Preparing transaction state transition to {data.state!r} failed since the target state "
                f"{data.state!r} is not a valid previous state of the current state {self.state!r}"
            )
        transit = TxnTransitMetadata(
            data.producer_id,
            self.producer_id,
            data.next_producer_id,
            data.producer_epoch,
            data.last_producer_epoch,
            data.txn_timeout_ms,
            data.state,
            frozenset(data.topic_partitions),
            data.txn_start_timestamp,
            data.txn_last_update_timestamp,
            data.client_transaction_version,
            data.client_kind,
        )
        self.pending_state = data.state
        return transit

    # ------------------------------------------------------------------ complete
    def complete_transition_to(self, transit: TxnTransitMetadata) -> None:
        """Kafka's completeTransitionTo: checks that `transit` may follow, then installs it."""
        self.check_transition_to(transit)
        self.install(transit)

    def check_transition_to(self, transit: TxnTransitMetadata) -> None:
        """completeTransitionTo's checks: raises IllegalStateError if `transit` may not follow."""
        to_state = self.pending_state
        if to_state is None:
            raise IllegalStateError(
                f"TransactionalId {self.transactional_id} completing transaction state "
                "transition while it does not have a pending state"
            )
        if to_state != transit.txn_state:
            self._fail(transit)
        if to_state == S.EMPTY:  # from InitProducerId
            if (
                (self.producer_epoch != transit.producer_epoch and not self._valid_producer_epoch_bump(transit))
                or transit.topic_partitions
                or transit.txn_start_timestamp != -1
            ):
                self._fail(transit)
        elif to_state == S.ONGOING:  # from AddPartitionsToTxn / AddOffsetsToTxn
            if (
                not self._valid_producer_epoch(transit)
                or not transit.topic_partitions >= frozenset(self.topic_partitions)
                or self.txn_timeout_ms != transit.txn_timeout_ms
            ):
                self._fail(transit)
        elif to_state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):  # from EndTxn
            allowed_empty_abort = (
                to_state == S.PREPARE_ABORT
                and supports_epoch_bump(transit.client_transaction_version)
                and self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
            )
            valid_timestamp = self.txn_start_timestamp == transit.txn_start_timestamp or allowed_empty_abort
            if (
                not self._valid_producer_epoch(transit)
                or frozenset(self.topic_partitions) != transit.topic_partitions
                or self.txn_timeout_ms != transit.txn_timeout_ms
                or not valid_timestamp
            ):
                self._fail(transit)
        elif to_state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT):  # after the markers
            if (
                not self._valid_producer_epoch(transit)
                or self.txn_timeout_ms != transit.txn_timeout_ms
                or transit.txn_start_timestamp == -1
            ):
                self._fail(transit)
        elif to_state == S.PREPARE_EPOCH_FENCE:
            # Never completed: the fence is followed at once by the transition to PrepareAbort.
            self._fail(transit)
        elif to_state == S.DEAD:
            raise IllegalStateError(
                f"TransactionalId {self.transactional_id} is trying to complete a transition to Dead. "
                "An expiring transactional id is removed, never persisted as Dead."
            )

    def install(self, transit: TxnTransitMetadata) -> None:
        """completeTransitionTo's update, for a transition already checked (check_transition_to)."""
        self.producer_id = transit.producer_id
        self.prev_producer_id = transit.prev_producer_id
        self.next_producer_id = transit.next_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.txn_timeout_ms = transit.txn_timeout_ms
        self.topic_partitions = set(transit.topic_partitions)
        self.txn_start_timestamp = transit.txn_start_timestamp
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.client_transaction_version = transit.client_transaction_version
        self.client_kind = transit.client_kind
        self.pending_state = None
        self.state = transit.txn_state

    def _valid_producer_epoch(self, transit: TxnTransitMetadata) -> bool:
        tv2 = supports_epoch_bump(transit.client_transaction_version)
        if tv2 and transit.txn_state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and transit.producer_epoch == 0:
            # Overflow: completing under the next producer id.
            return (
                transit.last_producer_epoch == self.last_producer_epoch and transit.prev_producer_id == self.producer_id
            )
        if tv2 and transit.txn_state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return transit.last_producer_epoch == self.producer_epoch and transit.producer_id == self.producer_id
        return transit.producer_epoch == self.producer_epoch and transit.producer_id == self.producer_id

    def _valid_producer_epoch_bump(self, transit: TxnTransitMetadata) -> bool:
        return transit.producer_epoch == self.producer_epoch + 1 or (
            transit.producer_epoch == 0 and transit.producer_id != self.producer_id
        )

    def _fail(self, transit: TxnTransitMetadata):
        raise IllegalStateError(
            f"TransactionalId {self.transactional_id} failed transition to state {transit} due to unexpected metadata"
        )

    # ------------------------------------------------------------------ snapshot
    def to_json(self) -> dict:
        return {
            "producerId": self.producer_id,
            "prevProducerId": self.prev_producer_id,
            "nextProducerId": self.next_producer_id,
            "producerEpoch": self.producer_epoch,
            "lastProducerEpoch": self.last_producer_epoch,
            "txnTimeoutMs": self.txn_timeout_ms,
            "state": self.state.state_name,
            "topicPartitions": [list(tp) for tp in sorted_partitions(self.topic_partitions)],
            "txnStartTimestamp": self.txn_start_timestamp,
            "txnLastUpdateTimestamp": self.txn_last_update_timestamp,
            "clientTransactionVersion": self.client_transaction_version,
            "pendingState": self.pending_state.state_name if self.pending_state else None,
            "hasFailedEpochFence": self.has_failed_epoch_fence,
            **_kind_json(self.client_kind),
        }

    @staticmethod
    def from_json(transactional_id: str, d: dict) -> TransactionMetadata:
        pending = d.get("pendingState")
        return TransactionMetadata(
            transactional_id,
            d["producerId"],
            d["prevProducerId"],
            d["nextProducerId"],
            d["producerEpoch"],
            d["lastProducerEpoch"],
            d["txnTimeoutMs"],
            TransactionState.named(d["state"]),
            {(t, p) for t, p in d["topicPartitions"]},
            d["txnStartTimestamp"],
            d["txnLastUpdateTimestamp"],
            d["clientTransactionVersion"],
            TransactionState.named(pending) if pending else None,
            d.get("hasFailedEpochFence", False),
            d.get("clientKind", JSON_CLIENT),
        )

    def copy(self) -> TransactionMetadata:
        # Not dataclasses.replace: handlers copy on every write (state_manager.completed).
        c = object.__new__(TransactionMetadata)
        c.__dict__.update(self.__dict__)
        c.topic_partitions = set(self.topic_partitions)
        return c
