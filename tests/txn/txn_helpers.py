"""Helpers for the transaction coordinator tests: a producer-like client on a CoreDriver, and a way
to seed a transaction in a given state (as Kafka's tests build a TransactionMetadata directly)."""

from __future__ import annotations

from coordinator.routing import coordinator_partition
from coordinator.txn import log as txn_log
from coordinator.txn.metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransactionMetadata, TransactionState
from tests.core_driver import CoreDriver

S = TransactionState
TID = "known"


def driver(tid: str = TID, **overrides) -> CoreDriver:
    """A driver on the partition that owns `tid` (50 coordinator partitions, Kafka's default)."""
    return CoreDriver(tid, **overrides)


def txn(d: CoreDriver, tid: str = TID) -> TransactionMetadata | None:
    return d.component("transactions").txns.get(tid)


def seed(
    d: CoreDriver,
    tid: str = TID,
    *,
    state=S.EMPTY,
    producer_id=10,
    producer_epoch=1,
    last_epoch=NO_PRODUCER_EPOCH,
    prev_producer_id=NO_PRODUCER_ID,
    next_producer_id=NO_PRODUCER_ID,
    timeout_ms=60000,
    partitions=(),
    start=None,
    last_update=None,
    tv=0,
    pending=None,
):
    """A transaction as Kafka's tests build a TransactionMetadata: its TransactionLog record,
    appended and replayed. Its timers come from a coordinator load (the driver fails over to the
    partition rebuilt from its log), except in Prepare* (a load would complete it) or with a
    pending transition, states that have none. What the log cannot carry, Kafka's tests set on the
    metadata in memory and so does this: the last producer epoch (a loaded transaction's is
    unknown), the pending transition (an append in flight, which no state between two batches
    shows; a replayed Prepare* has its Complete* pending, Kafka's tests' Prepare* has none unless
    given), the partitions of an Empty transaction."""
    m = TransactionMetadata(
        tid,
        producer_id,
        prev_producer_id,
        next_producer_id,
        producer_epoch,
        NO_PRODUCER_EPOCH,
        timeout_ms,
        state,
        set(partitions) if state != S.EMPTY else set(),
        d.now if start is None else start,
        d.now if last_update is None else last_update,
        tv,
    )
    d.inject([(txn_log.txn_key(tid), txn_log.value_of(m.prepare_no_transit()))])
    if state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT) and pending is None:
        d.failover()
    prepared = state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)
    if last_epoch != NO_PRODUCER_EPOCH or pending is not None or prepared or (state == S.EMPTY and partitions):

        def in_memory(part):
            comp = part.component("transactions")
            md = comp.txns[tid]
            md.last_producer_epoch, md.pending_state = last_epoch, pending
            md.topic_partitions = set(partitions)
            if prepared:  # the replay prepared Complete*; Kafka's tests build Prepare* without it
                comp.state.pending_complete.pop(tid, None)

        d.call(in_memory)
    return txn(d, tid)


def same_partition_ids(n: int, partition: int, prefix: str = "t", partitions: int = 50) -> list[str]:
    """`n` transactional ids owned by coordinator partition `partition`."""
    out, i = [], 0
    while len(out) < n:
        if coordinator_partition(f"{prefix}{i}", partitions) == partition:
            out.append(f"{prefix}{i}")
        i += 1
    return out


def records_of(d: CoreDriver, tid: str = TID) -> list:
    """The TransactionLog values the coordinator wrote for `tid` (not those `seed` injected)."""
    key = txn_log.txn_key(tid)
    return [v for i, (k, v) in enumerate(d.records) if k == key and i not in d.injected]


class Producer:
    """The requests a transactional producer sends, with the id and epoch it holds."""

    def __init__(self, d: CoreDriver, tid: str = TID, timeout_ms: int = 60000):
        self.d, self.tid, self.timeout_ms = d, tid, timeout_ms
        self.producer_id, self.epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH

    def init(self, version: int = 5, keep: bool = False, kafka_client: bool = False, **body) -> dict:
        req = {"transactionalId": self.tid, "transactionTimeoutMs": self.timeout_ms}
        if keep:
            req.update(producerId=self.producer_id, producerEpoch=self.epoch)
        req.update(body)
        r = self.d.send("InitProducerId", version, req, kafka_client=kafka_client)
        if r["errorCode"] == 0:
            self.producer_id, self.epoch = r["producerId"], r["producerEpoch"]
        return r

    def add(self, *parts, version: int = 3) -> dict:
        topics: dict = {}
        for t, p in parts:
            topics.setdefault(t, []).append(p)
        r = self.d.send(
            "AddPartitionsToTxn",
            version,
            {
                "v3AndBelowTransactionalId": self.tid,
                "v3AndBelowProducerId": self.producer_id,
                "v3AndBelowProducerEpoch": self.epoch,
                "v3AndBelowTopics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            },
        )
        return r

    def add_error(self, *parts, version: int = 3) -> int:
        r = self.add(*parts, version=version)
        codes = {p["partitionErrorCode"] for t in r["resultsByTopicV3AndBelow"] for p in t["resultsByPartition"]}
        assert len(codes) == 1, r
        return codes.pop()

    def add_offsets(self, group: str, version: int = 4) -> dict:
        return self.d.send(
            "AddOffsetsToTxn",
            version,
            {
                "transactionalId": self.tid,
                "producerId": self.producer_id,
                "producerEpoch": self.epoch,
                "groupId": group,
            },
        )

    def end(self, commit: bool, version: int = 5, epoch: int | None = None) -> dict:
        r = self.d.send(
            "EndTxn",
            version,
            {
                "transactionalId": self.tid,
                "producerId": self.producer_id,
                "producerEpoch": self.epoch if epoch is None else epoch,
                "committed": commit,
            },
        )
        if version >= 5 and r["errorCode"] == 0:
            self.producer_id, self.epoch = r["producerId"], r["producerEpoch"]
        return r
