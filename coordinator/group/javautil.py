"""Small reproductions of Java library behaviour that leaks into Kafka's observable results.

Kafka's group coordinator keeps some collections in `java.util.HashMap`s and picks "the first"
or "the maximum" while iterating them, so the iteration order of a HashMap decides ties. For
string keys chosen by clients (protocol names such as "range" and "roundrobin") we can reproduce
that order exactly; member ids contain random UUIDs in Kafka, so no order over them can match
Kafka's and the coordinator uses insertion order there (see docs/protocol.md).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..routing import java_string_hashcode

T = TypeVar("T")


def _spread(h: int) -> int:
    """HashMap.hash(): h ^ (h >>> 16) on the 32-bit hash code."""
    u = h & 0xFFFFFFFF
    return (u ^ (u >> 16)) & 0xFFFFFFFF


def java_hashmap_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a `HashMap<String, ?>` into which `keys` were inserted in order
    (duplicates ignored). Buckets are visited in index order; keys sharing a bucket keep their
    insertion order (resizes split buckets without reordering them). Tree bins, used only for 8+
    colliding keys, are not modelled."""
    unique = list(dict.fromkeys(keys))
    capacity = 16
    while len(unique) > capacity * 3 // 4:
        capacity *= 2
    indexed = [(_spread(java_string_hashcode(k)) & (capacity - 1), i, k) for i, k in enumerate(unique)]
    return [k for _, _, k in sorted(indexed)]


def java_utf16_length(s: str) -> int:
    """`String.length()`: UTF-16 code units (a character outside the BMP counts twice)."""
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _table_size_for(cap: int) -> int:
    """HashMap.tableSizeFor: the power of two at least `cap` (1 for 0)."""
    n = 1
    while n < cap:
        n *= 2
    return n


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def java_expected_capacity(n: int) -> int:
    """AssignorHelpers.newHashMap / newHashSet(n): `(int) (((n + 1) / 0.75f) + 1)` (float maths)."""
    return int(_f32(_f32(float(n + 1)) / 0.75) + 1)


def java_int_hash(i: int) -> int:
    return i & 0xFFFFFFFF


def java_uuid_hash(msb: int, lsb: int) -> int:
    """Uuid.hashCode: (int) (h >> 32) ^ (int) h of h = msb ^ lsb."""
    h = (msb ^ lsb) & 0xFFFFFFFFFFFFFFFF
    return ((h >> 32) ^ h) & 0xFFFFFFFF


class JavaHashMap:
    """The iteration order of a `java.util.HashMap` (and of a HashSet, its key set): buckets in index
    order, a bucket's keys in insertion order (a resize splits buckets without reordering them;
    removals reorder nothing). `hash_of` is the key's `hashCode()`; `capacity` the constructor's
    initial capacity (None: the default, 16). The table never shrinks. Tree bins (8+ colliding
    keys in a table of 64+) are not modelled."""

    def __init__(self, hash_of: Callable[[Any], int], capacity: int | None = None, items: Iterable = ()):
        self._hash_of = hash_of
        self._first_capacity = 16 if capacity is None else _table_size_for(capacity)
        self._capacity = 0  # the table is allocated at the first put
        self._entries: dict = {}  # key -> [insertion sequence, value]
        self._seq = 0
        for k, v in items:
            self.put(k, v)

    def put(self, key, value=None) -> None:
        entry = self._entries.get(key)
        if entry is not None:
            entry[1] = value
            return
        if self._capacity == 0:
            self._capacity = self._first_capacity
        self._seq += 1
        self._entries[key] = [self._seq, value]
        if len(self._entries) > int(self._capacity * 0.75):
            self._capacity *= 2

    def add(self, key) -> None:
        """HashSet.add."""
        self.put(key)

    def get(self, key, default=None):
        entry = self._entries.get(key)
        return default if entry is None else entry[1]

    def compute_if_absent(self, key, make: Callable[[], Any]):
        if key not in self._entries:
            self.put(key, make())
        return self._entries[key][1]

    def remove(self, key) -> bool:
        return self._entries.pop(key, None) is not None

    def __contains__(self, key) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> list:
        """The keys in iteration order (a snapshot: an iterator's remove() of the current key does
        not change the order of the others)."""
        mask = self._capacity - 1

        def where(key):
            return (_spread(self._hash_of(key)) & mask, self._entries[key][0])

        return sorted(self._entries, key=where)

    def __iter__(self):
        return iter(self.keys())

    def items(self) -> list[tuple]:
        return [(k, self._entries[k][1]) for k in self.keys()]
