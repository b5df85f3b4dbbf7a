"""A transactional producer for the coordinator service (kafka-python underneath).

    producer = TransactionalProducer("127.0.0.1:9092", "orders-enricher-1")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("orders-enriched", b"...", key=b"order-17")
    producer.send_offsets_to_transaction({("orders", 0): 1234}, "orders-enricher")
    producer.commit_transaction()          # or abort_transaction()

It talks to the transaction and group coordinators through the request topic (JSON requests, as
`CoordinatorClient`), and writes its data records straight to the data topics, with headers naming
the producer (`client.read_committed`: `__txn_producer_id`, `__txn_producer_epoch`,
`__txn_transactional_id`). Read them with `client.read_committed.ReadCommittedConsumer`.

Protocol, as Kafka's TransactionManager runs it:
- init_transactions: FindCoordinator (key type 1), then InitProducerId v5 (CONCURRENT_TRANSACTIONS
  while an earlier instance's transaction is being aborted: retried);
- the first record for a partition in a transaction waits for AddPartitionsToTxn v3 of that
  partition (sent at once, in the background; records for partitions already in the transaction
  are written immediately);
- send_offsets_to_transaction: AddOffsetsToTxn v4, then TxnOffsetCommit v4 to the group coordinator;
- commit_transaction / abort_transaction: all pending additions answered and all records acked
  (abort drops records still waiting for their partition), then EndTxn v5. Every end bumps the
  producer epoch (transaction version 2), so records of an ended transaction can never be taken for
  a later one; the response carries the producer id and epoch of the next transaction.
The data partitions are plain topics that cannot add themselves to a transaction, so partitions and
offsets are added explicitly (AddPartitionsToTxn v3, AddOffsetsToTxn), as clients without
transaction version 2 do.

Errors: CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
NOT_COORDINATOR, REQUEST_TIMED_OUT and UNKNOWN_TOPIC_OR_PARTITION (the coordinators learn of new
topics within the stream's metadata refresh) are retried with backoff for up to `max_block_ms`.
PRODUCER_FENCED and INVALID_PRODUCER_EPOCH raise `ProducerFencedError` (fatal: another instance with
the same transactional id took over, or the transaction timed out and was aborted); other
transaction errors raise `AbortableTransactionError` (call abort_transaction, then continue) or
`FatalTransactionError`.
"""

from __future__ import annotations

import concurrent.futures
import time
from typing import Any

from kafka import KafkaProducer
from kafka.partitioner.default import murmur2

from coordinator.errors import Error, Errors

from .read_committed import producer_headers
from .request_client import CoordinatorClient, ResponseTimeout

RETRIABLE = frozenset(
    e.code
    for e in (
        Errors.CONCURRENT_TRANSACTIONS,
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.NOT_COORDINATOR,
        Errors.REQUEST_TIMED_OUT,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
    )
)
FENCED = frozenset(e.code for e in (Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH))
ABORTABLE = frozenset(
    e.code
    for e in (
        Errors.INVALID_PRODUCER_ID_MAPPING,
        Errors.TOPIC_AUTHORIZATION_FAILED,
        Errors.GROUP_AUTHORIZATION_FAILED,
        Errors.UNKNOWN_MEMBER_ID,
        Errors.ILLEGAL_GENERATION,
        Errors.FENCED_INSTANCE_ID,
        Errors.REBALANCE_IN_PROGRESS,
        Errors.OFFSET_METADATA_TOO_LARGE,
        Errors.TRANSACTION_ABORTABLE,
        Errors.UNKNOWN_PRODUCER_ID,
    )
)

UNINITIALIZED, READY, IN_TRANSACTION, ABORTABLE_ERROR, FATAL_ERROR = (
    "UNINITIALIZED",
    "READY",
    "IN_TRANSACTION",
    "ABORTABLE_ERROR",
    "FATAL_ERROR",
)


class TransactionalError(Exception):
    def __init__(self, error: Error | None, message: str):
        super().__init__(message)
        self.error = error


class ProducerFencedError(TransactionalError):
    """Another producer with the same transactional id (or the coordinator, after a timeout) fenced
    this one. Fatal: close the producer."""


class AbortableTransactionError(TransactionalError):
    """The transaction cannot commit; abort it, then the producer can go on."""


class FatalTransactionError(TransactionalError):
    """The producer cannot be used any more."""


class TransactionalProducer:
    def __init__(
        self,
        bootstrap_servers: str,
        transactional_id: str,
        *,
        transaction_timeout_ms: int = 60000,
        requests_topic: str = "coordinator-requests",
        responses_topic: str = "coordinator-responses",
        client_id: str | None = None,
        max_block_ms: int = 60000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        coordinator_client: CoordinatorClient | None = None,
        **producer_config: Any,
    ):
        if not transactional_id:
            raise ValueError("a transactional producer needs a transactional id")
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.max_block_s = max_block_ms / 1000
        self.retry_backoff_s = retry_backoff_ms / 1000
        self.retry_backoff_max_s = retry_backoff_max_ms / 1000
        self._own_client = coordinator_client is None
        self._client = coordinator_client or CoordinatorClient(
            bootstrap_servers, client_id, requests_topic=requests_topic, responses_topic=responses_topic
        )
        producer_config.setdefault("acks", "all")
        producer_config.setdefault("max_in_flight_requests_per_connection", 1)  # keep partition order
        producer_config.setdefault("linger_ms", 0)
        self._data = KafkaProducer(
            bootstrap_servers=bootstrap_servers, client_id=f"{self._client.client_id}-data", **producer_config
        )
        self.producer_id, self.producer_epoch = -1, -1
        self.coordinator_partition: int | None = None
        self.state = UNINITIALIZED
        self._last_error: TransactionalError | None = None
        self._reset_transaction()
        self._round_robin: dict[str, int] = {}

    # ------------------------------------------------------------------ state
    def _reset_transaction(self) -> None:
        self._partitions: set[tuple[str, int]] = set()  # added to the transaction
        self._adding: dict[int, dict] = {}  # correlation id -> {"partitions", "attempt", "retry_at"}
        self._waiting: dict[tuple[str, int], list] = {}  # records awaiting their partition's addition
        self._sends: list[concurrent.futures.Future] = []
        self._offsets_added = False

    def _require(self, *states: str) -> None:
        if self.state == FATAL_ERROR:
            raise FatalTransactionError(None, f"the producer is in a fatal error state: {self._last_error}")
        if self.state not in states:
            raise FatalTransactionError(None, f"invalid operation in state {self.state} (needs {'/'.join(states)})")

    def _fail(self, error: Error | None, message: str) -> TransactionalError:
        if error is not None and error.code in FENCED:
            exc: TransactionalError = ProducerFencedError(error, message)
            self.state = FATAL_ERROR
        elif error is not None and error.code in ABORTABLE:
            exc = AbortableTransactionError(error, message)
            self.state = ABORTABLE_ERROR
        else:
            exc = FatalTransactionError(error, message)
            self.state = FATAL_ERROR
        self._last_error = exc
        return exc

    # ------------------------------------------------------------------ requests
    def _call(
        self, api: str, version: int, body: dict, key: str, *, deadline: float, error_of=lambda r: r["errorCode"]
    ) -> dict:
        """Send a request and retry it while it answers a retriable error; return the response."""
        attempt = 0
        while True:
            cid = self._client.send(api, version, body, key=key)
            try:
                response = self._client.wait(cid, timeout=max(0.1, deadline - time.monotonic()))["response"]
            except ResponseTimeout as e:
                raise self._fail(Errors.REQUEST_TIMED_OUT, f"{api}: no response in time") from e
            code = error_of(response)
            if code not in RETRIABLE:
                return response
            if time.monotonic() >= deadline:
                raise self._fail(Errors.for_code(code), f"{api}: still {Errors.for_code(code).name} after retries")
            time.sleep(self._backoff(attempt, code))
            attempt += 1

    def _backoff(self, attempt: int, code: int) -> float:
        base = self.retry_backoff_s
        if code == Errors.CONCURRENT_TRANSACTIONS.code:
            base = min(base, 0.02)  # TransactionManager retries these sooner
        return min(base * (2**attempt), self.retry_backoff_max_s)

    def _deadline(self) -> float:
        return time.monotonic() + self.max_block_s

    # ------------------------------------------------------------------ API
    def init_transactions(self) -> None:
        """Get the producer id and epoch; fences any earlier producer with this transactional id
        (its open transaction is aborted)."""
        self._require(UNINITIALIZED)
        deadline = self._deadline()
        found = self._call(
            "FindCoordinator",
            4,
            {"keyType": 1, "coordinatorKeys": [self.transactional_id]},
            self.transactional_id,
            deadline=deadline,
            error_of=lambda r: r["coordinators"][0]["errorCode"],
        )
        entry = found["coordinators"][0]
        if entry["errorCode"] != 0:
            raise self._fail(Errors.for_code(entry["errorCode"]), f"FindCoordinator: {entry}")
        self.coordinator_partition = entry["nodeId"]
        r = self._call(
            "InitProducerId",
            5,
            {
                "transactionalId": self.transactional_id,
                "transactionTimeoutMs": self.transaction_timeout_ms,
                "producerId": -1,
                "producerEpoch": -1,
            },
            self.transactional_id,
            deadline=deadline,
        )
        if r["errorCode"] != 0:
            raise self._fail(Errors.for_code(r["errorCode"]), f"InitProducerId: {Errors.for_code(r['errorCode']).name}")
        self.producer_id, self.producer_epoch = r["producerId"], r["producerEpoch"]
        self.state = READY

    def begin_transaction(self) -> None:
        self._require(READY)
        self._reset_transaction()
        self.state = IN_TRANSACTION

    def partition_for(self, topic: str, key: bytes | None) -> int:
        partitions = sorted(self._data.partitions_for(topic))
        if key is not None:
            return partitions[(murmur2(key) & 0x7FFFFFFF) % len(partitions)]
        i = self._round_robin.get(topic, 0)
        self._round_robin[topic] = i + 1
        return partitions[i % len(partitions)]

    def send(
        self, topic: str, value: bytes | str | None, key: bytes | str | None = None, partition: int | None = None
    ) -> concurrent.futures.Future:
        """Write a record in the transaction; returns a future of its kafka-python RecordMetadata.
        The first record for a partition waits until the partition joined the transaction."""
        self._require(IN_TRANSACTION)
        key_b = key.encode("utf-8") if isinstance(key, str) else key
        value_b = value.encode("utf-8") if isinstance(value, str) else value
        if partition is None:
            partition = self.partition_for(topic, key_b)
        tp = (topic, partition)
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._sends.append(future)
        if tp in self._partitions and tp not in self._waiting:
            self._write(tp, key_b, value_b, future)
        else:
            self._waiting.setdefault(tp, []).append((key_b, value_b, future))
            if not any(tp in a["partitions"] for a in self._adding.values()):
                self._start_add([tp])
        self._poll_adds(block=False)
        return future

    def _write(
        self, tp: tuple[str, int], key: bytes | None, value: bytes | None, future: concurrent.futures.Future
    ) -> None:
        headers = producer_headers(self.producer_id, self.producer_epoch, self.transactional_id)
        kf = self._data.send(tp[0], value=value, key=key, partition=tp[1], headers=headers)
        kf.add_callback(future.set_result)
        kf.add_errback(lambda e: future.set_exception(e))

    def _start_add(self, partitions: list[tuple[str, int]], attempt: int = 0, deadline: float | None = None) -> None:
        topics: dict[str, list[int]] = {}
        for t, p in partitions:
            topics.setdefault(t, []).append(p)
        cid = self._client.send(
            "AddPartitionsToTxn",
            3,
            {
                "v3AndBelowTransactionalId": self.transactional_id,
                "v3AndBelowProducerId": self.producer_id,
                "v3AndBelowProducerEpoch": self.producer_epoch,
                "v3AndBelowTopics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            },
            key=self.transactional_id,
        )
        self._adding[cid] = {
            "partitions": set(partitions),
            "attempt": attempt,
            "retry_at": None,
            "deadline": self._deadline() if deadline is None else deadline,
        }

    def _poll_adds(self, block: bool) -> None:
        """Handle the answers to AddPartitionsToTxn: write the records of added partitions, retry
        retriable errors, raise the others. With `block`, until every addition is answered."""
        while self._adding:
            progressed = False
            for cid in list(self._adding):
                add = self._adding[cid]
                if add["retry_at"] is not None:
                    if time.monotonic() >= add["retry_at"]:
                        del self._adding[cid]
                        self._start_add(sorted(add["partitions"]), add["attempt"] + 1, add["deadline"])
                        progressed = True
                    continue
                envelope = self._client.responses().get(cid)
                if envelope is None:
                    if block and time.monotonic() > add["deadline"]:
                        raise self._fail(Errors.REQUEST_TIMED_OUT, "AddPartitionsToTxn: no response in time")
                    continue
                progressed = True
                self._on_add_response(cid, add, envelope["response"])
            if not block:
                return
            if not progressed:
                time.sleep(0.005)

    def _on_add_response(self, cid: int, add: dict, response: dict) -> None:
        errors = {
            (t["name"], p["partitionIndex"]): p["partitionErrorCode"]
            for t in response.get("resultsByTopicV3AndBelow", [])
            for p in t["resultsByPartition"]
        }
        codes = set(errors.values()) - {Errors.NONE.code, Errors.OPERATION_NOT_ATTEMPTED.code}
        if not errors and response.get("errorCode"):
            codes = {response["errorCode"]}
        if not codes:
            del self._adding[cid]
            for tp in sorted(add["partitions"]):
                self._partitions.add(tp)
                for key, value, future in self._waiting.pop(tp, []):
                    self._write(tp, key, value, future)
            return
        fatal = [c for c in codes if c not in RETRIABLE]
        if fatal:
            del self._adding[cid]
            error = Errors.for_code(next((c for c in fatal if c in FENCED), fatal[0]))
            for tp in add["partitions"]:
                for _, _, future in self._waiting.pop(tp, []):
                    future.set_exception(TransactionalError(error, f"AddPartitionsToTxn: {error.name}"))
            raise self._fail(error, f"AddPartitionsToTxn: {error.name} for {sorted(errors)}")
        if time.monotonic() >= add["deadline"]:
            del self._adding[cid]
            error = Errors.for_code(min(codes))
            raise self._fail(error, f"AddPartitionsToTxn: still {error.name} after retries")
        add["retry_at"] = time.monotonic() + self._backoff(add["attempt"], min(codes))

    def flush(self) -> None:
        """Wait until every record sent so far is written (their partitions added first)."""
        self._poll_adds(block=True)
        self._data.flush()
        failed = [f.exception() for f in self._sends if f.done() and f.exception() is not None]
        if failed:
            raise self._fail(Errors.UNKNOWN_SERVER_ERROR, f"{len(failed)} records could not be written: {failed[0]}")

    def send_offsets_to_transaction(self, offsets: dict, group: str | dict) -> None:
        """Commit consumer offsets with the transaction: {(topic, partition): offset or
        (offset, metadata)}; `group` is the group id or {groupId, generationId, memberId,
        groupInstanceId} (the consumer's group metadata)."""
        self._require(IN_TRANSACTION)
        meta = {"groupId": group} if isinstance(group, str) else dict(group)
        group_id = meta["groupId"]
        deadline = self._deadline()
        r = self._call(
            "AddOffsetsToTxn",
            4,
            {
                "transactionalId": self.transactional_id,
                "producerId": self.producer_id,
                "producerEpoch": self.producer_epoch,
                "groupId": group_id,
            },
            self.transactional_id,
            deadline=deadline,
        )
        if r["errorCode"] != 0:
            raise self._fail(
                Errors.for_code(r["errorCode"]), f"AddOffsetsToTxn: {Errors.for_code(r['errorCode']).name}"
            )
        self._offsets_added = True
        remaining = {}
        for tp, value in offsets.items():
            topic, partition = (tp.topic, tp.partition) if hasattr(tp, "topic") else tp
            offset, metadata = value if isinstance(value, tuple) else (value, "")
            remaining[(topic, partition)] = (offset, metadata)
        attempt = 0
        while remaining:
            topics: dict[str, list] = {}
            for (topic, partition), (offset, metadata) in remaining.items():
                topics.setdefault(topic, []).append(
                    {
                        "partitionIndex": partition,
                        "committedOffset": offset,
                        "committedLeaderEpoch": -1,
                        "committedMetadata": metadata,
                    }
                )
            cid = self._client.send(
                "TxnOffsetCommit",
                4,
                {
                    "transactionalId": self.transactional_id,
                    "groupId": group_id,
                    "producerId": self.producer_id,
                    "producerEpoch": self.producer_epoch,
                    "generationIdOrMemberEpoch": meta.get("generationId", -1),
                    "memberId": meta.get("memberId", ""),
                    "groupInstanceId": meta.get("groupInstanceId"),
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                },
                key=group_id,
            )
            try:
                resp = self._client.wait(cid, timeout=max(0.1, deadline - time.monotonic()))["response"]
            except ResponseTimeout as e:
                raise self._fail(Errors.REQUEST_TIMED_OUT, "TxnOffsetCommit: no response in time") from e
            errors = {(t["name"], p["partitionIndex"]): p["errorCode"] for t in resp["topics"] for p in t["partitions"]}
            retry = {tp for tp, code in errors.items() if code in RETRIABLE}
            bad = {tp: code for tp, code in errors.items() if code != 0 and code not in RETRIABLE}
            if bad:
                code = next((c for c in bad.values() if c in FENCED), next(iter(bad.values())))
                raise self._fail(
                    Errors.for_code(code), f"TxnOffsetCommit: {Errors.for_code(code).name} for {sorted(bad)}"
                )
            remaining = {tp: v for tp, v in remaining.items() if tp in retry}
            if remaining:
                if time.monotonic() >= deadline:
                    raise self._fail(Errors.REQUEST_TIMED_OUT, "TxnOffsetCommit: retriable errors until the deadline")
                time.sleep(self._backoff(attempt, min(errors[tp] for tp in retry)))
                attempt += 1

    def commit_transaction(self) -> None:
        self._require(IN_TRANSACTION)
        self.flush()
        self._end(commit=True)

    def abort_transaction(self) -> None:
        self._require(IN_TRANSACTION, ABORTABLE_ERROR)
        # Records still waiting for their partition are dropped; the others are aborted by the marker.
        for records in self._waiting.values():
            for _, _, future in records:
                future.set_exception(TransactionalError(None, "the transaction was aborted"))
        self._waiting.clear()
        try:
            self._poll_adds(block=True)
        except AbortableTransactionError:
            pass
        self._data.flush()
        self._end(commit=False)

    def _end(self, commit: bool) -> None:
        if not self._partitions and not self._offsets_added and not self._adding:
            self.state = READY  # nothing joined the transaction: nothing to end (as Kafka's client)
            return
        r = self._call(
            "EndTxn",
            5,
            {
                "transactionalId": self.transactional_id,
                "producerId": self.producer_id,
                "producerEpoch": self.producer_epoch,
                "committed": commit,
            },
            self.transactional_id,
            deadline=self._deadline(),
        )
        if r["errorCode"] != 0:
            raise self._fail(Errors.for_code(r["errorCode"]), f"EndTxn: {Errors.for_code(r['errorCode']).name}")
        self.producer_id, self.producer_epoch = r["producerId"], r["producerEpoch"]
        self._reset_transaction()
        self.state = READY

    def close(self) -> None:
        self._data.close()
        if self._own_client:
            self._client.close()

    def __enter__(self) -> TransactionalProducer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
