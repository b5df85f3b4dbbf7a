"""Format 3: a coordinator partition's state as a map of per-entity chunks with a sorted index.

    header   "KCP3" magic, entry count n, live bytes, dead bytes, used data bytes   (struct HEADER)
    index    n records (data offset, key length, value length), sorted by key bytes  (struct ENTRY)
    data     for each chunk: its key (UTF-8), then its value: one flag byte (0 = JSON text,
             1 = zlib-compressed JSON text, 2 = zlib with the preset dictionary of state/zdict.py)
             and the bytes; then zero bytes of slack up to the payload's size class

Reading (`ChunkReader`) parses the header only; a key is found by binary search over the index
(O(log n), nothing built per entry), and a chunk is decompressed and parsed when asked for.

Writing (`write`) splices: the new index is the old index's fixed-size records, cut as byte slices
around the changed keys, plus a record per new chunk; the data area is the old one, copied as one
block, plus the new chunks appended. So a batch costs O(chunks it changed) Python work and one copy
of the payload. Replaced chunks stay behind as dead bytes until they outweigh the live ones; then
the payload is compacted (every live chunk copied once, amortised over the batches that made the
garbage). New chunks go into the slack at the end: payload sizes move in steps of 1/16 of their
power of two, so that batch after batch the payload has the same size and the allocator hands back
the memory it just freed instead of fresh pages (faulting in a new multi-megabyte buffer on every
batch cost several times the copy itself). Everything is a pure function of the old payload and the changes: a replayed batch writes
the same bytes.
"""

from __future__ import annotations

import json
import struct
import zlib
from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

from coordinator.chunks import ChunkCorrupt, ChunkSource, utf8_key
from coordinator.compact_json import compact_encoder

from .zdict import ZDICT_V1

MAGIC = b"KCP3"
HEADER = struct.Struct("<4sIQQQ")  # magic, entries, live data bytes, dead data bytes, used data bytes
ENTRY = struct.Struct("<III")  # data offset, key length, value length (flag byte included)
RAW, ZLIB, ZLIB_DICT = 0, 1, 2
COMPRESS_ABOVE = 48  # bytes of JSON: smaller chunks do not shrink enough to pay for zlib
COMPACT_MIN_DEAD = 1 << 16  # never compact for less garbage than this
SLACK_ABOVE = 1 << 16  # smaller payloads are written at their exact size


def size_class(n: int) -> int:
    """The payload size for `n` bytes of content: n rounded up to 1/16 of its power of two."""
    if n < SLACK_ABOVE:
        return n
    step = 1 << (n.bit_length() - 5)
    return -(-n // step) * step


# One encoder and one decoder for every chunk: json.dumps with options builds a JSONEncoder per
# call, and json.loads of bytes first sniffs their encoding in Python; a batch does both for every
# chunk it reads or writes. (Chunk texts are ASCII: written with ensure_ascii.)
# ensure_ascii keeps any odd code point (a lone surrogate) encodable, as format 2 did.
_encode = compact_encoder(ensure_ascii=True)  # (coordinator/compact_json.py)
_DECODER = json.JSONDecoder()


def dumps(value: Any) -> bytes:
    return _encode(value).encode("ascii")


def loads(text: bytes) -> Any:
    return _DECODER.decode(text.decode("utf-8", "surrogatepass"))


def _pack_value(text: bytes) -> bytes:
    if len(text) > COMPRESS_ABOVE:
        c = zlib.compressobj(1, zdict=ZDICT_V1)
        packed = c.compress(text) + c.flush()
        if len(packed) < len(text):
            return bytes((ZLIB_DICT,)) + packed
    return bytes((RAW,)) + text


_unpack_entry, _ENTRY_SIZE = ENTRY.unpack_from, ENTRY.size


class ChunkReader(ChunkSource):
    """The chunks of one format-3 payload. Immutable: safe to share between re-runs of a batch."""

    def __init__(self, payload: bytes):
        self.payload = payload
        if len(payload) < HEADER.size:
            raise ValueError("state payload too short for format 3")
        magic, self.n, self.live_bytes, self.dead_bytes, self.used = HEADER.unpack_from(payload, 0)
        if magic != MAGIC:
            raise ValueError("state payload is not format 3 (bad magic)")
        self.index_start = HEADER.size
        self.data_start = self.index_start + self.n * ENTRY.size
        if self.data_start + self.used > len(payload):
            raise ValueError("state payload truncated: index or data beyond its end")
        self._view = memoryview(payload)
        self._text: dict[bytes, bytes] = {}  # decompressed chunk text by key, for the writer
        self._positions: dict[bytes, int] = {}  # `position` of every key looked up (the payload never changes)

    # ------------------------------------------------------------------ index
    def entry(self, i: int) -> tuple[int, int, int]:
        return ENTRY.unpack_from(self.payload, self.index_start + i * ENTRY.size)

    def key_at(self, i: int) -> bytes:
        # entry(i) inlined: the binary search of every chunk lookup calls this log2(n) times.
        off, klen, _ = _unpack_entry(self.payload, self.index_start + i * _ENTRY_SIZE)
        start = self.data_start + off
        return self.payload[start : start + klen]

    def position(self, key: bytes) -> int:
        """Index of the first entry whose key is >= `key`."""
        i = self._positions.get(key)
        if i is None:
            # A batch writes back the chunks it read: their positions are searched once.
            i = self._positions[key] = bisect_left(range(self.n), key, key=self.key_at)
        return i

    def find(self, key: bytes) -> int:
        i = self.position(key)
        return i if i < self.n and self.key_at(i) == key else -1

    # ------------------------------------------------------------------ ChunkSource
    def contains(self, key: str) -> bool:
        return self.find(utf8_key(key)) >= 0

    def count(self, prefix: str) -> int:
        lo, hi = self._range(prefix)
        return hi - lo

    def keys(self, prefix: str) -> Iterator[str]:
        lo, hi = self._range(prefix)
        for i in range(lo, hi):
            yield self.key_at(i).decode("utf-8", "surrogatepass")

    def _range(self, prefix: str) -> tuple[int, int]:
        p = utf8_key(prefix)
        return self.position(p), self.position(p + b"\xff")  # 0xff never occurs in UTF-8

    def text(self, key: bytes) -> bytes | None:
        """The chunk's JSON text, or None if there is no such chunk."""
        cached = self._text.get(key)
        if cached is not None:
            return cached
        i = self.find(key)
        if i < 0:
            return None
        off, klen, vlen = self.entry(i)
        start = self.data_start + off + klen
        name = key.decode("utf-8", "surrogatepass")
        if vlen < 1 or start + vlen > self.data_start + self.used:
            raise ChunkCorrupt(name, "value outside the payload")
        flag = self.payload[start]
        body = self._view[start + 1 : start + vlen]
        if flag == RAW:
            text = bytes(body)
        elif flag in (ZLIB, ZLIB_DICT):
            try:
                d = zlib.decompressobj(zdict=ZDICT_V1) if flag == ZLIB_DICT else zlib.decompressobj()
                text = d.decompress(body) + d.flush()
                if not d.eof:
                    raise zlib.error("truncated stream")
            except zlib.error as e:
                raise ChunkCorrupt(name, f"zlib: {e}") from e
        else:
            raise ChunkCorrupt(name, f"unknown chunk encoding {flag}")
        self._text[key] = text
        return text

    def get(self, key: str) -> Any | None:
        text = self.text(utf8_key(key))
        if text is None:
            return None
        try:
            return loads(text)
        except ValueError as e:
            raise ChunkCorrupt(key, f"JSON: {e}") from e

    def items(self) -> Iterator[tuple[str, Any]]:
        for i in range(self.n):
            key = self.key_at(i).decode("utf-8", "surrogatepass")
            yield key, self.get(key)


def write(base: ChunkReader | None, changes: dict[str, Any]) -> bytes:
    """The payload of `base` with `changes` applied ({chunk key: JSON value, or None to delete})."""
    changed: dict[bytes, bytes | None] = {}
    for key, value in changes.items():
        k = utf8_key(key)
        text = None if value is None else dumps(value)
        if base is not None and base.text(k) == text:
            continue  # unchanged: keep the stored bytes
        if base is None and text is None:
            continue
        changed[k] = text
    if base is None:
        # Without a base nothing is deleted (None texts were skipped above).
        return _write_all(sorted((k, _pack_value(t)) for k, t in changed.items() if t is not None))
    if not changed:
        return base.payload

    index_parts: list = []
    new_data: list[bytes] = []
    data_end = base.used
    live, dead, n = base.live_bytes, base.dead_bytes, base.n
    prev = 0
    idx = base.index_start
    for k in sorted(changed):
        i = base.position(k)
        index_parts.append(base._view[idx + prev * ENTRY.size : idx + i * ENTRY.size])
        prev = i
        if i < base.n and base.key_at(i) == k:  # replace or delete the stored chunk
            _, klen, vlen = base.entry(i)
            live -= klen + vlen
            dead += klen + vlen
            n -= 1
            prev = i + 1
        text = changed[k]
        if text is None:
            continue
        value = _pack_value(text)
        index_parts.append(ENTRY.pack(data_end, len(k), len(value)))
        new_data += (k, value)
        data_end += len(k) + len(value)
        live += len(k) + len(value)
        n += 1
    index_parts.append(base._view[idx + prev * ENTRY.size : base.data_start])
    if dead > max(live, COMPACT_MIN_DEAD):
        return _compact(base, changed)
    header = HEADER.pack(MAGIC, n, live, dead, data_end)
    size = HEADER.size + n * ENTRY.size + data_end
    return b"".join(
        [
            header,
            *index_parts,
            base._view[base.data_start : base.data_start + base.used],
            *new_data,
            bytes(size_class(size) - size),
        ]
    )


def _compact(base: ChunkReader, changed: dict[bytes, bytes | None]) -> bytes:
    """Rewrite every live chunk once, dropping the dead bytes (their stored values are copied)."""
    chunks: dict[bytes, bytes] = {}
    for i in range(base.n):
        off, klen, vlen = base.entry(i)
        start = base.data_start + off
        chunks[base.payload[start : start + klen]] = base.payload[start + klen : start + klen + vlen]
    for k, text in changed.items():
        if text is None:
            chunks.pop(k, None)
        else:
            chunks[k] = _pack_value(text)
    return _write_all(sorted(chunks.items()))


def _write_all(chunks: list[tuple[bytes, bytes]]) -> bytes:
    index: list[bytes] = []
    data: list[bytes] = []
    offset = 0
    for k, value in chunks:
        index.append(ENTRY.pack(offset, len(k), len(value)))
        data += (k, value)
        offset += len(k) + len(value)
    size = HEADER.size + len(chunks) * ENTRY.size + offset
    return b"".join([HEADER.pack(MAGIC, len(chunks), offset, 0, offset), *index, *data, bytes(size_class(size) - size)])
