"""Java orderings that Kafka's results depend on, reproduced where it matters.

Kafka sorts strings with `String.compareTo` (UTF-16 code units), which differs from Python's code
point order only for strings mixing characters above U+FFFF with U+E000..U+FFFF. Where Kafka's
output depends on `HashMap` iteration order of a small map of strings (the assignor names listed in
an UNSUPPORTED_ASSIGNOR message), `hashmap_order` reproduces it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...routing import java_string_hashcode


def order_key(s: str) -> bytes:
    """Sort key giving Java's `String.compareTo` order (UTF-16 code units, then length)."""
    return s.encode("utf-16-be", "surrogatepass")


def sorted_java(strings: Iterable[str]) -> list[str]:
    return sorted(strings, key=order_key)


def _spread(h: int) -> int:
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def hashmap_order(keys_in_insertion_order: Iterable[str], capacity: int = 16) -> list[str]:
    """Iteration order of a `java.util.HashMap<String, ?>` with `capacity` buckets holding these
    keys: by bucket, then insertion order within a bucket (a resize keeps that relative order).
    A default HashMap (and `Collectors.toMap`) has 16 buckets up to 12 entries."""
    keys = list(dict.fromkeys(keys_in_insertion_order))
    while len(keys) > capacity * 3 // 4:
        capacity *= 2
    return [
        k for _, _, k in sorted((_spread(java_string_hashcode(k)) & (capacity - 1), i, k) for i, k in enumerate(keys))
    ]
