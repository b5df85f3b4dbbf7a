"""Kafka's coordinator routing: `Utils.abs(key.hashCode()) % partitions`.

Java hashes a String over its UTF-16 code units with 32-bit overflow; `Utils.abs` maps
Integer.MIN_VALUE to 0 (unlike Math.abs).
"""

from __future__ import annotations

from functools import lru_cache

DEFAULT_COORDINATOR_PARTITIONS = 50


def java_string_hashcode(s: str) -> int:
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    return 0 if n == -0x80000000 else abs(n)


def coordinator_partition(key: str | None, partitions: int = DEFAULT_COORDINATOR_PARTITIONS) -> int:
    """The coordinator partition that owns `key` (a group id or transactional id)."""
    if key is None or len(key) > _CACHED_KEY_CHARS:
        return kafka_abs(java_string_hashcode(key or "")) % partitions
    return _cached_partition(key, partitions)


# Every request is routed (and every partition checks that it owns its key) with the same few
# thousand group and transactional ids: the pure-Python hash is remembered for them.
_CACHED_KEY_CHARS = 256


@lru_cache(maxsize=65536)
def _cached_partition(key: str, partitions: int) -> int:
    return kafka_abs(java_string_hashcode(key)) % partitions


def key_for_partition(
    partition: int, partitions: int = DEFAULT_COORDINATOR_PARTITIONS, prefix: str = "__partition-"
) -> str:
    """A deterministic routing key that lands on `partition` (for per-partition requests such as
    ListGroups, which Kafka sends to every coordinator)."""
    i = 0
    while True:
        key = f"{prefix}{partition}-{i}"
        if coordinator_partition(key, partitions) == partition:
            return key
        i += 1
