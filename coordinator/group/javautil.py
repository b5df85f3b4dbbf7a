"""Small reproductions of Java library behaviour that leaks into Kafka's observable results.

Kafka's group coordinator keeps some collections in `java.util.HashMap`s and picks "the first"
or "the maximum" while iterating them, so the iteration order of a HashMap decides ties. For
string keys chosen by clients (protocol names such as "range" and "roundrobin") we can reproduce
that order exactly; member ids contain random UUIDs in Kafka, so no order over them can match
Kafka's and the coordinator uses insertion order there (see docs/protocol.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

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
