"""The offset store of one coordinator partition: Kafka's OffsetMetadataManager data structures.

- `committed`: group -> topic -> partition -> OffsetAndMetadata, the offsets OffsetFetch returns.
- `pending`: producer id -> group -> topic -> partition -> OffsetAndMetadata, the transactional
  offsets of ongoing transactions (TxnOffsetCommit). A COMMIT marker moves them to `committed`
  (only where they are newer, by record sequence), an ABORT drops them.
- `open_transactions`: group -> topic -> partition -> producer ids, derived from `pending`; it is
  what makes OffsetFetch(requireStable) answer UNSTABLE_OFFSET_COMMIT, keeps those partitions from
  expiring and keeps an expired group from being deleted.

Every offset carries `record_seq`, the position of its OffsetCommit record in the state log
(Kafka's recordOffset), used to decide whether a committed transaction's offset is newer than a
regular commit. It is the component's running count of OffsetCommit records, so it follows log
order both live and when the log is replayed.

Stored per entity (coordinator/chunks.py): a group's committed offsets are one chunk
(`["OffsetCommit", group]`), its open-transaction index another (`["OpenTransactions", group]`),
and each producer's pending offsets a third (`["PendingOffsets", producerId]`).
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from itertools import accumulate
from operator import attrgetter, sub

from ..chunks import EMPTY_SOURCE, ChunkSource, LazyMap


@dataclass
class OffsetAndMetadata:
    committed_offset: int
    leader_epoch: int | None  # None: no leader epoch (-1 on the wire)
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None  # set only by OffsetCommit v2-v4 retentionTimeMs
    record_seq: int = -1

    def record_value(self) -> dict:
        """OffsetCommitValue, named as Kafka's generated JSON converter names its fields."""
        return {
            "type": "OffsetCommit",
            "offset": self.committed_offset,
            "leaderEpoch": -1 if self.leader_epoch is None else self.leader_epoch,
            "metadata": self.metadata,
            "commitTimestamp": self.commit_timestamp_ms,
            "expireTimestamp": -1 if self.expire_timestamp_ms is None else self.expire_timestamp_ms,
        }

    @staticmethod
    def from_record(value: dict, record_seq: int) -> OffsetAndMetadata:
        epoch = value.get("leaderEpoch", -1)
        expire = value.get("expireTimestamp", -1)
        return OffsetAndMetadata(
            value["offset"],
            None if epoch == -1 else epoch,
            value.get("metadata") or "",
            value["commitTimestamp"],
            None if expire == -1 else expire,
            record_seq,
        )

    def is_expired(self, now_ms: int, retention_ms: int, base_timestamp) -> bool:
        """OffsetExpirationConditionImpl.isOffsetExpired."""
        if self.expire_timestamp_ms is not None:
            return now_ms >= self.expire_timestamp_ms
        return now_ms - base_timestamp(self) >= retention_ms

    def to_json(self) -> list:
        return [
            self.committed_offset,
            self.leader_epoch,
            self.metadata,
            self.commit_timestamp_ms,
            self.expire_timestamp_ms,
            self.record_seq,
        ]

    @staticmethod
    def from_json(d: list) -> OffsetAndMetadata:
        return OffsetAndMetadata(*d)


# group -> topic -> partition -> value
Offsets = dict[str, dict[str, dict[int, OffsetAndMetadata]]]
# The same, as a plain dict or as the LazyMap of committed offsets (one chunk per group).
OffsetsMap = MutableMapping[str, dict[str, dict[int, OffsetAndMetadata]]]


def _get(offsets: OffsetsMap, group: str, topic: str, partition: int) -> OffsetAndMetadata | None:
    return offsets.get(group, {}).get(topic, {}).get(partition)


def _put(offsets: OffsetsMap, group: str, topic: str, partition: int, value: OffsetAndMetadata):
    topics = offsets.setdefault(group, {})
    partitions = topics.setdefault(topic, {})
    previous = partitions.get(partition)
    partitions[partition] = value
    return previous


def _remove(offsets: OffsetsMap, group: str, topic: str, partition: int) -> OffsetAndMetadata | None:
    topics = offsets.get(group)
    if topics is None:
        return None
    partitions = topics.get(topic)
    if partitions is None:
        return None
    removed = partitions.pop(partition, None)
    if not partitions:
        del topics[topic]
    if not topics:
        del offsets[group]
    return removed


def _offsets_to_json(offsets: OffsetsMap) -> dict:
    return {g: {t: {str(p): v.to_json() for p, v in ps.items()} for t, ps in ts.items()} for g, ts in offsets.items()}


def _offsets_from_json(d: dict) -> Offsets:
    return {
        g: {t: {int(p): OffsetAndMetadata.from_json(v) for p, v in ps.items()} for t, ps in ts.items()}
        for g, ts in d.items()
    }


class OffsetStore:
    def __init__(self, source: ChunkSource = EMPTY_SOURCE) -> None:
        self.committed: LazyMap[str, dict[str, dict[int, OffsetAndMetadata]]] = LazyMap(
            source, "OffsetCommit", _group_offsets_from_json, _group_offsets_to_json
        )
        self.pending: LazyMap[int, Offsets] = LazyMap(
            source, "PendingOffsets", lambda k, j: _offsets_from_json(j), _offsets_to_json, key_type=int
        )
        self.open_transactions: LazyMap[str, dict[str, dict[int, dict[int, None]]]] = LazyMap(
            source, "OpenTransactions", _open_from_json, _open_to_json
        )

    def chunk_maps(self) -> tuple:
        return self.committed, self.pending, self.open_transactions

    # ---------------------------------------------------------------- committed offsets
    def get(self, group: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        return _get(self.committed, group, topic, partition)

    def has_committed_offset(self, group: str, topic: str, partition: int) -> bool:
        return self.get(group, topic, partition) is not None

    def put(self, group: str, topic: str, partition: int, value: OffsetAndMetadata) -> None:
        _put(self.committed, group, topic, partition, value)

    def group_offsets(self, group: str) -> dict[str, dict[int, OffsetAndMetadata]] | None:
        return self.committed.get(group)

    def iter_group(self, group: str) -> Iterator[tuple[str, int, OffsetAndMetadata]]:
        for topic, partitions in list((self.committed.get(group) or {}).items()):
            for partition, value in list(partitions.items()):
                yield topic, partition, value

    def remove(self, group: str, topic: str, partition: int) -> None:
        """An OffsetCommit tombstone: the committed offset and every pending transactional offset
        of the partition go."""
        _remove(self.committed, group, topic, partition)
        for producer_id in list((self.open_transactions.get(group) or {}).get(topic, {}).get(partition, {})):
            pending = self.pending.get(producer_id)
            if pending is not None:
                _remove(pending, group, topic, partition)
                if not pending:
                    del self.pending[producer_id]
        self._clear_open(group, topic, partition)

    # ---------------------------------------------------------------- pending (transactional)
    def add_pending(self, producer_id: int, group: str, topic: str, partition: int, value: OffsetAndMetadata) -> None:
        """A transactional offset of an ongoing transaction (replay of a TxnOffsetCommit record)."""
        _put(self.pending.setdefault(producer_id, {}), group, topic, partition, value)
        (
            self.open_transactions.setdefault(group, {}).setdefault(topic, {}).setdefault(partition, {})[producer_id]
        ) = None

    def pending_offset(self, producer_id: int, group: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        return _get(self.pending.get(producer_id) or {}, group, topic, partition)

    def has_pending(self, group: str, topic: str | None = None, partition: int | None = None) -> bool:
        """Whether `group` (or one of its topic-partitions) has offsets of an open transaction."""
        topics = self.open_transactions.get(group)
        if topics is None or topic is None:
            return topics is not None
        partitions = topics.get(topic)
        if partitions is None or partition is None:
            return partitions is not None
        return partition in partitions

    def pending_partitions(self, group: str) -> list[tuple[str, int]]:
        return [(t, p) for t, ps in (self.open_transactions.get(group) or {}).items() for p in ps]

    def complete_transaction(self, producer_id: int, committed: bool) -> list[tuple[str, str, int]]:
        """Apply a COMMIT (committed=True) or ABORT marker for `producer_id`
        (replayEndTransactionMarker). Returns the (group, topic, partition) whose committed offset
        changed. A committed offset replaces the existing one only if its record is newer."""
        offsets = self.pending.pop(producer_id, None)
        if offsets is None:
            return []
        for group, topics in offsets.items():
            for topic, partitions in topics.items():
                for partition in partitions:
                    self._remove_open(group, topic, partition, producer_id)
        changed = []
        if committed:
            for group, topics in offsets.items():
                for topic, partitions in topics.items():
                    for partition, value in partitions.items():
                        existing = self.get(group, topic, partition)
                        if existing is None or value.record_seq > existing.record_seq:
                            self.put(group, topic, partition, value)
                            changed.append((group, topic, partition))
        return changed

    def _remove_open(self, group: str, topic: str, partition: int, producer_id: int) -> None:
        producers = (self.open_transactions.get(group) or {}).get(topic, {}).get(partition)
        if producers is None:
            return
        producers.pop(producer_id, None)
        if not producers:
            self._clear_open(group, topic, partition)

    def _clear_open(self, group: str, topic: str, partition: int) -> None:
        topics = self.open_transactions.get(group)
        if topics is None:
            return
        partitions = topics.get(topic)
        if partitions is None:
            return
        partitions.pop(partition, None)
        if not partitions:
            del topics[topic]
        if not topics:
            del self.open_transactions[group]

    # ---------------------------------------------------------------- snapshot
    def to_json(self) -> dict:
        return {
            "committed": _offsets_to_json(self.committed),
            "pending": {str(pid): _offsets_to_json(o) for pid, o in self.pending.items()},
            "open": {g: _open_to_json(ts) for g, ts in self.open_transactions.items()},
        }

    @staticmethod
    def from_json(d: dict) -> OffsetStore:
        store = OffsetStore()
        for g, ts in _offsets_from_json(d.get("committed", {})).items():
            store.committed[g] = ts
        for pid, o in d.get("pending", {}).items():
            store.pending[int(pid)] = _offsets_from_json(o)
        for g, ts in d.get("open", {}).items():
            store.open_transactions[g] = _open_from_json(g, ts)
        return store


def _group_offsets_to_json(topics: dict) -> dict:
    """A group's offsets as its chunk stores them: per topic, columns (partition, offset, leader
    epoch, metadata, commit time, expire time, record seq), the integer ones delta-encoded. Offsets
    of one group are committed together, so the columns compress to a few bytes per partition."""
    out = {}
    for topic, partitions in topics.items():
        values = partitions.values()
        out[topic] = [
            _deltas(list(partitions)),
            _deltas(list(map(_OFFSET, values))),
            list(map(_EPOCH, values)),
            list(map(_METADATA, values)),
            _deltas(list(map(_COMMIT_TIME, values))),
            list(map(_EXPIRE_TIME, values)),
            _deltas(list(map(_RECORD_SEQ, values))),
        ]
    return out


# The columns' getters (C-level: a group's chunk is encoded at every batch that touches it).
_OFFSET, _EPOCH, _METADATA = attrgetter("committed_offset"), attrgetter("leader_epoch"), attrgetter("metadata")
_COMMIT_TIME, _EXPIRE_TIME = attrgetter("commit_timestamp_ms"), attrgetter("expire_timestamp_ms")
_RECORD_SEQ = attrgetter("record_seq")


def _group_offsets_from_json(_group, d: dict) -> dict:
    out = {}
    for topic, (parts, offsets, epochs, metadata, commits, expires, seqs) in d.items():
        columns = zip(_sums(offsets), epochs, metadata, _sums(commits), expires, _sums(seqs), strict=True)
        out[topic] = {p: OffsetAndMetadata(*row) for p, row in zip(_sums(parts), columns, strict=True)}
    return out


def _deltas(xs: list[int]) -> list[int]:
    return list(map(sub, xs, [0, *xs]))  # map stops at the shorter: xs[i] - xs[i - 1], xs[0] - 0


def _sums(ds: list[int]) -> list[int]:
    return list(accumulate(ds))


def _open_to_json(topics: dict) -> dict:
    return {t: {str(p): list(pids) for p, pids in ps.items()} for t, ps in topics.items()}


def _open_from_json(_group, d: dict) -> dict:
    return {t: {int(p): dict.fromkeys(pids) for p, pids in ps.items()} for t, ps in d.items()}
