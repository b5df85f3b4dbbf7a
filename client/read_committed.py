"""Read data topics as Kafka's read_committed consumer does.

The data topics are plain Kafka topics: the transactional producer (`client.transactional_producer`)
writes its records there with producer headers, and the transaction coordinator writes a marker
record (`coordinator.txn.markers`) into every data partition of a transaction when it ends.

Producer headers (UTF-8 decimal strings):
    __txn_producer_id        the producer id  (present = a transactional record)
    __txn_producer_epoch     the producer epoch
    __txn_transactional_id   the transactional id (informational)

The read_committed rule, per partition, in offset order (Kafka's last stable offset, LSO):
- a record without producer headers is non-transactional: delivered;
- a transactional record is held until its producer's marker: delivered after COMMIT, dropped after
  ABORT;
- nothing is delivered past the first record of a transaction that is still open (the LSO), not
  even non-transactional records;
- markers are never delivered;
- the partition's producer state is kept as the broker keeps it: a transactional record whose epoch
  is older than the last epoch seen for its producer id (from its records or markers) is from a
  fenced producer (a Kafka broker would have rejected it): dropped. A marker older than the last
  epoch (for transaction version 2 markers: not newer, since every end bumps the epoch) is a stale
  copy (a Kafka broker would have rejected it): ignored.

A reader starting in the middle of a partition knows only the transactions whose records it reads.

    reader = ReadCommittedConsumer("127.0.0.1:9092", ["orders-out"])
    while True:
        for record in reader.poll(timeout_ms=200):
            ...
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafka import KafkaConsumer, TopicPartition

from coordinator.txn.markers import parse_marker

PRODUCER_ID_HEADER = "__txn_producer_id"
PRODUCER_EPOCH_HEADER = "__txn_producer_epoch"
TRANSACTIONAL_ID_HEADER = "__txn_transactional_id"


def producer_headers(producer_id: int, producer_epoch: int, transactional_id: str) -> list[tuple[str, bytes]]:
    return [
        (PRODUCER_ID_HEADER, str(producer_id).encode("ascii")),
        (PRODUCER_EPOCH_HEADER, str(producer_epoch).encode("ascii")),
        (TRANSACTIONAL_ID_HEADER, transactional_id.encode("utf-8")),
    ]


def parse_producer_headers(headers: Iterable[tuple[str, bytes]] | None) -> tuple[int, int] | None:
    """(producer id, epoch) of a transactional record, or None for a non-transactional one."""
    pid = epoch = None
    for key, value in headers or ():
        if key == PRODUCER_ID_HEADER:
            pid = int(value)
        elif key == PRODUCER_EPOCH_HEADER:
            epoch = int(value)
    if pid is None:
        return None
    return pid, -1 if epoch is None else epoch


_PENDING, _DELIVER, _DROP = 0, 1, 2


@dataclass
class _Entry:
    record: Any
    status: int


class ReadCommittedPartition:
    """The read_committed state of one partition. Feed its records in offset order with `add`;
    it returns the records that became deliverable, in offset order."""

    def __init__(self) -> None:
        self._buffer: deque[_Entry] = deque()  # undelivered records from the LSO on
        self._open: dict[int, list[_Entry]] = {}  # producer id -> records of its open transaction
        self._epochs: dict[int, int] = {}  # producer id -> last epoch seen
        self.next_offset: int | None = None  # offset after the last record fed
        self.committed = self.aborted = self.fenced = self.markers = 0

    def add(self, record) -> list:
        self.next_offset = record.offset + 1
        marker = parse_marker(record.headers, record.value)
        if marker is not None:
            self._on_marker(marker)
        else:
            producer = parse_producer_headers(record.headers)
            if producer is None:
                self._buffer.append(_Entry(record, _DELIVER))
            else:
                self._on_transactional(record, *producer)
        return self._drain()

    def _on_transactional(self, record, producer_id: int, epoch: int) -> None:
        last = self._epochs.get(producer_id)
        if last is not None and epoch < last:
            self.fenced += 1
            return
        self._epochs[producer_id] = epoch
        entry = _Entry(record, _PENDING)
        self._open.setdefault(producer_id, []).append(entry)
        self._buffer.append(entry)

    def _on_marker(self, marker: dict) -> None:
        producer_id, epoch = marker["producerId"], marker["producerEpoch"]
        last = self._epochs.get(producer_id)
        if last is not None and (epoch <= last if marker.get("transactionVersion", 0) >= 2 else epoch < last):
            return  # a stale copy
        self.markers += 1
        self._epochs[producer_id] = epoch
        committed = marker["type"] == "COMMIT"
        for entry in self._open.pop(producer_id, []):
            entry.status = _DELIVER if committed else _DROP
            if committed:
                self.committed += 1
            else:
                self.aborted += 1

    def _drain(self) -> list:
        out = []
        while self._buffer and self._buffer[0].status != _PENDING:
            entry = self._buffer.popleft()
            if entry.status == _DELIVER:
                out.append(entry.record)
        return out

    @property
    def last_stable_offset(self) -> int | None:
        """The offset of the first record of the oldest open transaction, or the next offset."""
        return self._buffer[0].record.offset if self._buffer else self.next_offset

    def position(self) -> int | None:
        """Where a consumer of this partition stands: every record before it was delivered or
        skipped (what a consume-transform-produce loop commits as its offset)."""
        return self.last_stable_offset

    def open_transactions(self) -> dict[int, int]:
        """Producer id -> offset of its open transaction's first record here."""
        return {pid: entries[0].record.offset for pid, entries in self._open.items() if entries}


class ReadCommittedConsumer:
    """A read_committed consumer of data topics (kafka-python underneath, no consumer group).

    `partitions` restricts it to some (topic, partition) pairs; `offsets` gives start offsets per
    (topic, partition) (default: the beginning)."""

    def __init__(
        self,
        bootstrap_servers: str,
        topics: list[str] | None = None,
        *,
        partitions: list[tuple[str, int]] | None = None,
        offsets: dict[tuple[str, int], int] | None = None,
        client_id: str | None = None,
        timeout_s: float = 30.0,
        **consumer_config,
    ):
        consumer_config.setdefault("fetch_max_wait_ms", 100)
        self._consumer = KafkaConsumer(
            bootstrap_servers=bootstrap_servers,
            group_id=None,
            enable_auto_commit=False,
            client_id=client_id or "read-committed",
            **consumer_config,
        )
        tps = [TopicPartition(t, p) for t, p in partitions or []]
        for topic in topics or []:
            deadline = time.time() + timeout_s
            parts = None
            while not parts:
                parts = self._consumer.partitions_for_topic(topic)
                if not parts:
                    if time.time() > deadline:
                        raise RuntimeError(f"topic {topic} not found")
                    time.sleep(0.2)
            tps += [TopicPartition(topic, p) for p in sorted(parts)]
        self._consumer.assign(tps)
        self._parts = {tp: ReadCommittedPartition() for tp in tps}
        for tp in tps:
            start = (offsets or {}).get((tp.topic, tp.partition))
            if start is None:
                self._consumer.seek_to_beginning(tp)
            else:
                self._consumer.seek(tp, start)

    def poll(self, timeout_ms: int = 100) -> list:
        """Records that became deliverable (kafka-python ConsumerRecords), per partition in offset
        order."""
        out = []
        for tp, records in self._consumer.poll(timeout_ms=timeout_ms).items():
            part = self._parts[tp]
            for record in records:
                out.extend(part.add(record))
        return out

    def partition_state(self, topic: str, partition: int) -> ReadCommittedPartition:
        return self._parts[TopicPartition(topic, partition)]

    def position(self, topic: str, partition: int) -> int:
        """The offset of the next record this reader will deliver in the partition."""
        tp = TopicPartition(topic, partition)
        pos = self._parts[tp].position()
        return self._consumer.position(tp) if pos is None else pos

    def seek(self, topic: str, partition: int, offset: int) -> None:
        """Restart the partition at `offset` (its read_committed state starts afresh)."""
        tp = TopicPartition(topic, partition)
        self._consumer.seek(tp, offset)
        self._parts[tp] = ReadCommittedPartition()

    def assignment(self) -> list[tuple[str, int]]:
        return [(tp.topic, tp.partition) for tp in self._parts]

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> ReadCommittedConsumer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
