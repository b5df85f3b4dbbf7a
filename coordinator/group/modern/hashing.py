"""Kafka's topic and group metadata hashes (Utils.computeTopicHash / computeGroupHash, Kafka 4.1):
a modern group bumps its epoch when the hash of its subscribed topics changes."""

from __future__ import annotations

import base64
import struct

import xxhash

from ..consumer._java import order_key

TOPIC_HASH_MAGIC_BYTE = b"\x00"  # Utils.TOPIC_HASH_MAGIC_BYTE: the version of the topic hash


def _java_long(unsigned: int) -> int:
    return unsigned - (1 << 64) if unsigned >= 1 << 63 else unsigned


def _hash4j_string(s: str) -> bytes:
    """hash4j's HashSink.putString: the UTF-16 code units (little-endian), then the length in chars."""
    units = s.encode("utf-16-le", "surrogatepass")
    return units + struct.pack("<i", len(units) // 2)


def _uuid_bytes(topic_id: str | None) -> bytes:
    """A Kafka Uuid string's 16 bytes (most then least significant bits, big-endian: the two
    putLong calls write them little-endian each)."""
    try:
        raw = base64.urlsafe_b64decode((topic_id or "") + "==")
    except ValueError:
        raw = b""
    return raw if len(raw) == 16 else bytes(16)


def topic_hash(name: str, topic_id: str | None, partitions: int, racks: list[list[str]] | None = None) -> int:
    """Utils.computeTopicHash (Kafka 4.1): streaming XXH3-64 over the magic byte, the topic id, the
    name, the number of partitions and each partition's index followed by its replicas' racks
    (Java string order, each as its length then the string; `racks[i]` for partition i, None when
    the brokers have no `broker.rack`)."""
    msb, lsb = struct.unpack(">qq", _uuid_bytes(topic_id))
    data = [TOPIC_HASH_MAGIC_BYTE, struct.pack("<qq", msb, lsb), _hash4j_string(name), struct.pack("<i", partitions)]
    for i in range(partitions):
        data.append(struct.pack("<i", i))
        for rack in sorted(racks[i] if racks and i < len(racks) else (), key=order_key):
            data.append(struct.pack("<i", len(rack.encode("utf-16-le", "surrogatepass")) // 2))
            data.append(_hash4j_string(rack))
    return _java_long(xxhash.xxh3_64_intdigest(b"".join(data)))


def group_hash(topic_hashes: dict[str, int]) -> int:
    """Utils.computeGroupHash: 0 for no topics, else XXH3-64 over the topic hashes in Java string
    order of the topic names."""
    if not topic_hashes:
        return 0
    data = b"".join(struct.pack("<q", topic_hashes[name]) for name in sorted(topic_hashes, key=order_key))
    return _java_long(xxhash.xxh3_64_intdigest(data))
