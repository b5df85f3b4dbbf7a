"""The bytes a coordinator partition's state is stored as, in Spark's state store.

The Spark state schema is frozen once a checkpoint exists, so it is only `(format int, payload
binary)`, and everything that may change lives inside the payload:

- `format` says how the payload is encoded:
    1  UTF-8 JSON of the partition snapshot (the first format);
    2  zlib-compressed JSON of it;
    3  per-entity chunks with a sorted index (current, `state/chunked.py`): a batch decodes only
       the entities it touches and rewrites only the chunks that changed.
- the snapshot's `schema` field versions the data model inside; `MIGRATIONS[n]` turns a schema-n
  snapshot into schema n+1, so a checkpoint written by an older release still loads.

The stream uses `load_partition` / `encode_partition` (lazy, O(entities touched)); `decode` /
`encode` convert between any format and the full snapshot dict (tests, inspection, migration).
A format-1/2 state loads through the dict and is written back in format 3 by the first batch.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable

from coordinator.chunks import OverlaySource
from coordinator.config import CoordinatorConfig
from coordinator.coordinators import CoordinatorPartition
from coordinator.runtime import PARTITION_CHUNK, SNAPSHOT_SCHEMA

from . import chunked
from .memory import large_payload

FORMAT_JSON = 1
FORMAT_ZLIB_JSON = 2
FORMAT_CHUNKED = 3
CURRENT_FORMAT = FORMAT_CHUNKED

# schema n -> schema n+1
MIGRATIONS: dict[int, Callable[[dict], dict]] = {}


def load_partition(
    fmt: int,
    payload: bytes,
    partition_id: int,
    config: CoordinatorConfig | None = None,
    reader: chunked.ChunkReader | None = None,
) -> CoordinatorPartition:
    """The partition a stored state holds. Format 3 reads entities lazily from the payload (pass
    the same `reader` to every re-run of a batch: it is immutable); older formats decode fully."""
    if fmt == FORMAT_CHUNKED:
        reader = reader or chunked.ChunkReader(payload)
        head = reader.get(PARTITION_CHUNK) or {}
        if head.get("schema", SNAPSHOT_SCHEMA) == SNAPSHOT_SCHEMA:
            return CoordinatorPartition(partition_id, config, chunks=reader)
    return CoordinatorPartition(partition_id, config, decode(fmt, payload))


class StoredState:
    """One stored `(format, payload)`, parsed once: `load` gives a fresh partition each call (a
    re-run of a batch starts from the untouched state, at O(1) cost for format 3)."""

    def __init__(self, fmt: int, payload: bytes):
        self.fmt, self.payload = fmt, payload
        large_payload(len(payload))
        self.reader = chunked.ChunkReader(payload) if fmt == FORMAT_CHUNKED else None
        self._snapshot_json: bytes | None = None

    def load(self, partition_id: int, config: CoordinatorConfig | None = None) -> CoordinatorPartition:
        if self.reader is not None:
            return load_partition(self.fmt, self.payload, partition_id, config, self.reader)
        if self._snapshot_json is None:  # decode an old format once; each load parses a fresh copy
            self._snapshot_json = json.dumps(decode(self.fmt, self.payload)).encode()
        return CoordinatorPartition(partition_id, config, json.loads(self._snapshot_json))

    def same(self, blob: tuple[int, bytes]) -> bool:
        return blob[0] == self.fmt and (blob[1] is self.payload or blob[1] == self.payload)


def encode_partition(partition: CoordinatorPartition) -> tuple[int, bytes]:
    """The current-format state of `partition`: its load payload with the chunks it touched
    rewritten (O(entities touched) plus one copy of the payload)."""
    chunks, changes = partition.chunks, partition.dirty_chunks()
    if isinstance(chunks, OverlaySource):  # loaded from a checkpoint taken part-way through a batch
        changes = {**chunks.changes(), **changes}
        chunks = chunks.base
    base = chunks if isinstance(chunks, chunked.ChunkReader) else None
    if base is not None:
        large_payload(len(base.payload))
    return FORMAT_CHUNKED, chunked.write(base, changes)


def encode(snapshot: dict, fmt: int = CURRENT_FORMAT) -> tuple[int, bytes]:
    if fmt == FORMAT_CHUNKED:
        part = CoordinatorPartition(snapshot.get("partition", 0), snapshot=migrate(snapshot))
        return encode_partition(part)
    # ensure_ascii keeps any odd code point (a lone surrogate) encodable; zlib absorbs the cost.
    text = json.dumps(snapshot, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    if fmt == FORMAT_JSON:
        return fmt, text
    if fmt == FORMAT_ZLIB_JSON:
        return fmt, zlib.compress(text, 1)
    raise ValueError(f"cannot encode state format {fmt}")


def decode(fmt: int, payload: bytes) -> dict:
    if fmt == FORMAT_JSON:
        snapshot = json.loads(payload)
    elif fmt == FORMAT_ZLIB_JSON:
        snapshot = json.loads(zlib.decompress(payload))
    elif fmt == FORMAT_CHUNKED:
        return _decode_chunked(payload)
    else:
        raise ValueError(f"unknown state format {fmt}: written by a newer release?")
    return migrate(snapshot)


def migrate(snapshot: dict) -> dict:
    schema = snapshot.get("schema", 1)
    if schema > SNAPSHOT_SCHEMA:
        raise ValueError(f"state schema {schema} is newer than this release ({SNAPSHOT_SCHEMA})")
    while schema < SNAPSHOT_SCHEMA:
        snapshot = MIGRATIONS[schema](snapshot)
        schema = snapshot["schema"]
    return snapshot


def _decode_chunked(payload: bytes) -> dict:
    reader = chunked.ChunkReader(payload)
    head = reader.get(PARTITION_CHUNK)
    if head is None:
        raise ValueError("format-3 state without its partition chunk")
    if head.get("schema") != SNAPSHOT_SCHEMA:
        # A later schema migration for chunked states goes here; none exists yet.
        raise ValueError(f"state schema {head.get('schema')} is not {SNAPSHOT_SCHEMA}")
    return CoordinatorPartition(head["partition"], chunks=reader).to_json()
