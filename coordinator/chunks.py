"""Per-entity chunks: how a partition's state is read lazily and written back by what changed.

A coordinator partition's stored state is a map of *chunks*, one per entity (a group, a group's
committed offsets, a transactional id, a timer, ...) plus a few small partition-wide chunks. A
chunk key names the kind of entity and its id, as the state log keys its records (`KINDS` lists
them; a stored key is a one-character tag and the id), and a chunk value is a JSON-compatible
object. The bytes layout lives in `state/chunked.py`; the core only sees a
`ChunkSource`, which answers by key and never decodes more than it is asked for.

`LazyMap` is the dict a component keeps its entities in: an entity is decoded from its chunk the
first time it is read, and every entity read or written in this batch is re-encoded at the end
(`dirty_items`); the rest stay as bytes. Membership, length and the key set come from the chunk
index without decoding. Iteration visits keys in chunk-key order (byte order of the UTF-8 key), the
same before and after a restart, so everything that loops over entities is deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class ChunkCorrupt(ValueError):
    """A chunk that cannot be decoded: the state is damaged; never skip the entity silently."""

    def __init__(self, key: str, detail: str):
        super().__init__(f"state chunk {describe_chunk_key(key)} is corrupt: {detail}")
        self.key = key


# Every kind of chunk, by the one-character tag its stored keys start with (a stored key is the tag
# followed by the entity's id, so that keys stay short: they are a good part of the payload).
# Tags are part of format 3: never reuse or change one.
KINDS = {
    "Partition": "P",  # the partition's clock, deferred work, timer directory
    "Component": "C",  # a component's partition-wide part, by component name
    "GroupMetadata": "g",  # a group (classic, with its pending joins and syncs; or consumer; or streams)
    "OffsetCommit": "o",  # a group's committed offsets
    "OpenTransactions": "x",  # a group's partitions with offsets of open transactions
    "PendingOffsets": "q",  # a producer's pending transactional offsets
    "TransactionLog": "t",  # a transactional id's TransactionMetadata
    "PendingComplete": "c",  # the Complete* transition of a transaction whose markers are in flight
    "Timer": "T",  # a timer, by timer key
    "TimerPage": "D",  # a page of the deadline index
    "RebalanceStart": "r",  # a group's rebalance in progress, for metrics (coordinator/metrics.py)
    "GroupConfig": "k",  # a group's dynamic configs (coordinator/group/group_configs.py)
    "ShareState": "h",  # a share-partition's state (coordinator/share/coordinator.py)
    "ParkedAuthorization": "z",  # a parked authorised request's pending merge (coordinator/acl_state.py)
}
_KIND_OF_TAG = {tag: kind for kind, tag in KINDS.items()}
assert len(_KIND_OF_TAG) == len(KINDS) and all(len(t) == 1 for t in KINDS.values())


def chunk_key(kind: str, entity_id: str = "") -> str:
    return KINDS[kind] + entity_id


def chunk_prefix(kind: str) -> str:
    """What every key of `kind` starts with."""
    return KINDS[kind]


def describe_chunk_key(key: str) -> str:
    """A stored key as people read it: ["GroupMetadata", "my-group"]."""
    kind = _KIND_OF_TAG.get(key[:1], f"?{key[:1]}")
    return json.dumps([kind, key[1:]], ensure_ascii=False)


class ChunkSource:
    """Read-only chunks, by key. The default holds none (a new partition)."""

    def get(self, key: str) -> Any | None:
        """The chunk's JSON value, decoded afresh on each call (callers may mutate it), or None."""
        return None

    def contains(self, key: str) -> bool:
        return False

    def count(self, prefix: str) -> int:
        return 0

    def keys(self, prefix: str) -> Iterator[str]:
        """Chunk keys starting with `prefix`, in byte order."""
        return iter(())


EMPTY_SOURCE = ChunkSource()

# What a component's `rest_json()` returns when its partition-wide chunk was not read this batch.
UNCHANGED = object()


class LazyMap(MutableMapping[K, V]):
    """Entities of one kind: id -> object, decoded from `source` on first access.

    `decode(id, json) -> object` and `encode(object) -> json` convert one entity; `key_type` turns
    the id found in a chunk key back into the map's key type (int for producer ids)."""

    def __init__(
        self,
        source: ChunkSource,
        kind: str,
        decode: Callable[[K, Any], V],
        encode: Callable[[V], Any],
        key_type: Callable[[str], K] = str,  # type: ignore[assignment]  # str is K's default: a TypeVar cannot have one before 3.13
    ):
        self._src = source
        self._kind = kind
        self._prefix = chunk_prefix(kind)
        self._decode = decode
        self._encode = encode
        self._key_type = key_type
        self._live: dict[K, V] = {}  # decoded or added this batch: all re-encoded at the end
        self._gone: set[K] = set()  # deleted this batch, present in the source

    def _ck(self, k: object) -> str:
        return self._prefix + (k if isinstance(k, str) else str(k))

    def __getitem__(self, k: K) -> V:
        try:
            return self._live[k]
        except KeyError:
            pass
        if k in self._gone:
            raise KeyError(k)
        ck = self._ck(k)
        raw = self._src.get(ck)
        if raw is None:
            raise KeyError(k)
        try:
            obj = self._decode(k, raw)
        except Exception as e:  # noqa: BLE001 - any failure to rebuild the entity is corruption
            raise ChunkCorrupt(ck, f"{type(e).__name__}: {e}") from e
        self._live[k] = obj
        return obj

    def get(self, k: K, default: V | None = None) -> V | None:  # type: ignore[override]  # a plain dict.get, without the overloads
        try:
            return self[k]
        except KeyError:
            return default

    def __setitem__(self, k: K, v: V) -> None:
        self._live[k] = v
        self._gone.discard(k)

    def __delitem__(self, k: K) -> None:
        if k in self._live:
            del self._live[k]
            if k not in self._gone and self._src.contains(self._ck(k)):
                self._gone.add(k)
            return
        if k in self._gone or not self._src.contains(self._ck(k)):
            raise KeyError(k)
        self._gone.add(k)

    def __contains__(self, k: object) -> bool:
        if k in self._live:
            return True
        return k not in self._gone and self._src.contains(self._ck(k))

    def __len__(self) -> int:
        added = sum(1 for k in self._live if not self._src.contains(self._ck(k)))
        return self._src.count(self._prefix) - len(self._gone) + added

    def __bool__(self) -> bool:
        return bool(self._live) or self._src.count(self._prefix) > len(self._gone)

    def __iter__(self) -> Iterator[K]:
        """Keys in chunk-key order. A full scan: O(entities), as the batch asked for all of them."""
        keys: dict[str, K] = {}
        for ck in self._src.keys(self._prefix):
            k = self._key_type(ck[1:])
            if k not in self._gone:
                keys[ck] = k
        for k in self._live:
            keys[self._ck(k)] = k
        return iter([keys[ck] for ck in sorted(keys, key=_utf8)])

    def __repr__(self) -> str:
        return f"LazyMap({self._kind}, {len(self)} entries, {len(self._live)} decoded)"

    # ------------------------------------------------------------------ writing back
    def touched(self) -> int:
        return len(self._live) + len(self._gone)

    def dirty_items(self) -> Iterator[tuple[str, Any]]:
        """(chunk key, JSON value or None for a deleted entity) for every entity this batch read
        or wrote; unchanged ones are recognised by the writer, which compares bytes."""
        for k, obj in self._live.items():
            yield self._ck(k), self._encode(obj)
        for k in self._gone:
            if k not in self._live:
                yield self._ck(k), None


def _utf8(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


def utf8_key(s: str) -> bytes:
    """A chunk key's stored bytes (byte order = code point order, lone surrogates allowed)."""
    return _utf8(s)


class OverlaySource(ChunkSource):
    """`base` with some chunks replaced or deleted: a partition's state part-way through a batch,
    without copying the payload (see `CoordinatorPartition.checkpoint`). Costs O(changes)."""

    base: ChunkSource
    texts: dict[str, str | None]

    def __init__(self, base: ChunkSource, changes: dict[str, Any]):
        texts: dict[str, str | None] = {}
        if isinstance(base, OverlaySource):  # flatten: one overlay over the stored payload
            texts.update(base.texts)
            base = base.base
        for key, value in changes.items():
            texts[key] = None if value is None else json.dumps(value, separators=(",", ":"))
        self.base = base
        self.texts = texts

    def changes(self) -> dict[str, Any]:
        return {k: None if t is None else json.loads(t) for k, t in self.texts.items()}

    def get(self, key: str) -> Any | None:
        if key in self.texts:
            text = self.texts[key]
            return None if text is None else json.loads(text)  # a fresh copy for every reader
        return self.base.get(key)

    def contains(self, key: str) -> bool:
        if key in self.texts:
            return self.texts[key] is not None
        return self.base.contains(key)

    def count(self, prefix: str) -> int:
        n = self.base.count(prefix)
        for key, text in self.texts.items():
            if key.startswith(prefix):
                n += (text is not None) - self.base.contains(key)
        return n

    def keys(self, prefix: str) -> Iterator[str]:
        mine = {k: t for k, t in self.texts.items() if k.startswith(prefix)}
        keys = {k for k in self.base.keys(prefix) if k not in mine}
        keys.update(k for k, t in mine.items() if t is not None)
        return iter(sorted(keys, key=_utf8))
