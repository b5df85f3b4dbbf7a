"""The bytes a coordinator partition's state is stored as, in Spark's state store.

The Spark state schema is frozen once a checkpoint exists, so it is only `(format int, payload
binary)`, and everything that may change lives inside the payload:

- `format` says how the payload is encoded:
    1  UTF-8 JSON of the partition snapshot (the first format);
    2  zlib-compressed JSON (current). Per-batch cost grows with the bytes of state rewritten, and
       snapshots are repetitive JSON, so this cuts them several-fold (see bench/state_codec.py).
- the snapshot's `schema` field versions the data model inside; `MIGRATIONS[n]` turns a schema-n
  snapshot into schema n+1, so a checkpoint written by an older release still loads.

`decode` accepts every format and schema ever written; `encode` writes the current ones.
"""
from __future__ import annotations

import json
import zlib
from typing import Callable

from coordinator.runtime import SNAPSHOT_SCHEMA

FORMAT_JSON = 1
FORMAT_ZLIB_JSON = 2
CURRENT_FORMAT = FORMAT_ZLIB_JSON

# schema n -> schema n+1
MIGRATIONS: dict[int, Callable[[dict], dict]] = {}


def encode(snapshot: dict, fmt: int = CURRENT_FORMAT) -> tuple[int, bytes]:
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
