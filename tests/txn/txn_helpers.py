"""Helpers for the transaction coordinator tests: a producer-like client on a CoreDriver, and a way
to seed a transaction in a given state (as Kafka's tests build a TransactionMetadata directly)."""
from __future__ import annotations

import state as state_codec
from coordinator.result import CoordinatorResult
from coordinator.routing import coordinator_partition
from coordinator.txn.metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransactionMetadata, TransactionState
from tests.core_driver import CoreDriver

S = TransactionState
TID = "known"


def driver(tid: str = TID, **overrides) -> CoreDriver:
    """A driver on the partition that owns `tid` (50 coordinator partitions, Kafka's default)."""
    return CoreDriver(tid, **overrides)


def txn(d: CoreDriver, tid: str = TID) -> TransactionMetadata | None:
    return d.component("transactions").txns.get(tid)


def seed(d: CoreDriver, tid: str = TID, *, state=S.EMPTY, producer_id=10, producer_epoch=1,
         last_epoch=NO_PRODUCER_EPOCH, prev_producer_id=NO_PRODUCER_ID, next_producer_id=NO_PRODUCER_ID,
         timeout_ms=60000, partitions=(), start=None, last_update=None, tv=0, pending=None):
    """Install transaction metadata directly in the partition state (no record is written)."""
    part = d._load()
    comp = part.component("transactions")
    m = TransactionMetadata(tid, producer_id, prev_producer_id, next_producer_id, producer_epoch, last_epoch,
                            timeout_ms, state, set(partitions), d.now if start is None else start,
                            d.now if last_update is None else last_update, tv, pending)
    comp.state.txns[tid] = m
    timers = CoordinatorResult()
    comp.state.sync_timers(timers, m)
    part.apply(timers)
    d._state = part
    d._blob = state_codec.encode(part.to_json())
    return m


def same_partition_ids(n: int, partition: int, prefix: str = "t", partitions: int = 50) -> list[str]:
    """`n` transactional ids owned by coordinator partition `partition`."""
    out, i = [], 0
    while len(out) < n:
        if coordinator_partition(f"{prefix}{i}", partitions) == partition:
            out.append(f"{prefix}{i}")
        i += 1
    return out


def records_of(d: CoreDriver, tid: str = TID) -> list:
    key = f'["TransactionLog","{tid}"]'
    return [v for k, v in d.records if k == key]


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
        r = self.d.send("AddPartitionsToTxn", version, {
            "v3AndBelowTransactionalId": self.tid, "v3AndBelowProducerId": self.producer_id,
            "v3AndBelowProducerEpoch": self.epoch,
            "v3AndBelowTopics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
        return r

    def add_error(self, *parts, version: int = 3) -> int:
        r = self.add(*parts, version=version)
        codes = {p["partitionErrorCode"] for t in r["resultsByTopicV3AndBelow"] for p in t["resultsByPartition"]}
        assert len(codes) == 1, r
        return codes.pop()

    def add_offsets(self, group: str, version: int = 4) -> dict:
        return self.d.send("AddOffsetsToTxn", version, {"transactionalId": self.tid, "producerId": self.producer_id,
                                                        "producerEpoch": self.epoch, "groupId": group})

    def end(self, commit: bool, version: int = 5, epoch: int | None = None) -> dict:
        r = self.d.send("EndTxn", version, {"transactionalId": self.tid, "producerId": self.producer_id,
                                            "producerEpoch": self.epoch if epoch is None else epoch,
                                            "committed": commit})
        if version >= 5 and r["errorCode"] == 0:
            self.producer_id, self.epoch = r["producerId"], r["producerEpoch"]
        return r
