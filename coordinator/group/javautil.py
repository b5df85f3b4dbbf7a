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
    """A `java.util.HashMap` (and a HashSet, its key set) whose iteration order is Java's: buckets
    in index order, each bucket's chain in order. `put` (and HashSet.add) appends to the chain and
    resizes after the insertion that passes the threshold; `compute_if_absent` resizes first, then
    puts the new key at the head of its chain, as HashMap.computeIfAbsent does. A resize splits
    each chain keeping its order; removals reorder nothing. `hash_of` is the key's `hashCode()`,
    `capacity` the constructor's initial capacity (None: the default, 16). Tree bins (8+ colliding
    keys in a table of 64+) are not modelled."""

    def __init__(self, hash_of: Callable[[Any], int], capacity: int | None = None):
        self._hash_of = hash_of
        self._first_capacity = 16 if capacity is None else _table_size_for(capacity)
        self._table: list[list] = []  # allocated at the first insertion
        self._values: dict = {}

    def _bucket(self, key) -> int:
        return _spread(self._hash_of(key)) & (len(self._table) - 1)

    def _resize(self) -> None:
        if not self._table:
            self._table = [[] for _ in range(self._first_capacity)]
            return
        old, self._table = self._table, [[] for _ in range(2 * len(self._table))]
        for chain in old:
            for key in chain:
                self._table[self._bucket(key)].append(key)

    def _threshold(self) -> int:
        return int(len(self._table) * 0.75)

    def put(self, key, value=None) -> None:
        if key in self._values:
            self._values[key] = value
            return
        if not self._table:
            self._resize()
        self._table[self._bucket(key)].append(key)
        self._values[key] = value
        if len(self._values) > self._threshold():
            self._resize()

    def add(self, key) -> None:
        """HashSet.add."""
        self.put(key)

    def get(self, key, default=None):
        return self._values.get(key, default)

    def compute_if_absent(self, key, make: Callable[[], Any]):
        if key in self._values:
            return self._values[key]
        if not self._table or len(self._values) > self._threshold():
            self._resize()
        value = make()
        self._table[self._bucket(key)].insert(0, key)
        self._values[key] = value
        return value

    def remove(self, key) -> bool:
        if key not in self._values:
            return False
        del self._values[key]
        self._table[self._bucket(key)].remove(key)
        return True

    def __contains__(self, key) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list:
        """The keys in iteration order (a snapshot: an iterator's remove() of the current key does
        not change the order of the others)."""
        return [key for chain in self._table for key in chain]

    def __iter__(self):
        return iter(self.keys())

    def items(self) -> list[tuple]:
        return [(k, self._values[k]) for k in self.keys()]
