"""Reading the subscribed topics out of a consumer's JoinGroup protocol metadata.

Kafka's `ClassicGroup.computeSubscribedTopics` parses every member's metadata for the selected
protocol as a `ConsumerProtocolSubscription` at version 0 (the prefix every later version keeps):

    int16 version | int32 topic count | per topic: int16 length + UTF-8 bytes | bytes userData

Later fields (owned partitions, generation, rack) are ignored. If any member's metadata does not
parse, the group does not know its subscriptions (None), exactly as Kafka logs and gives up.
In JSON the metadata is base64, as Kafka's JSON converters print bytes.
"""
from __future__ import annotations

import base64
import binascii
import struct

CONSUMER_PROTOCOL_TYPE = "consumer"


class SchemaError(ValueError):
    pass


def parse_subscription_topics(metadata_b64: str) -> list[str]:
    """The topics of one member's subscription; raises SchemaError if it does not parse."""
    try:
        buf = base64.b64decode(metadata_b64, validate=True)
    except (binascii.Error, ValueError) as e:
        raise SchemaError("metadata is not base64") from e
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        if n < 0 or pos + n > len(buf):
            raise SchemaError("buffer underflow while parsing consumer protocol's subscription")
        chunk = buf[pos:pos + n]
        pos += n
        return chunk

    take(2)  # version: parsed with version 0 whatever it says, as Kafka does
    (count,) = struct.unpack(">i", take(4))
    if count < 0:
        raise SchemaError("non-nullable field topics was serialized as null")
    topics = []
    for _ in range(count):
        (length,) = struct.unpack(">h", take(2))
        if length < 0:
            raise SchemaError("non-nullable field topics element was serialized as null")
        try:
            topics.append(take(length).decode("utf-8"))
        except UnicodeDecodeError as e:
            raise SchemaError("topic name is not UTF-8") from e
    (user_len,) = struct.unpack(">i", take(4))
    if user_len >= 0:
        take(user_len)
    return topics


def encode_subscription(topics: list[str], user_data: bytes | None = None, version: int = 0) -> str:
    """A ConsumerProtocolSubscription (version 0 layout, any version number), base64: for tests
    and tools."""
    out = struct.pack(">h", version) + struct.pack(">i", len(topics))
    for t in topics:
        raw = t.encode("utf-8")
        out += struct.pack(">h", len(raw)) + raw
    if user_data is None:
        out += struct.pack(">i", -1)
    else:
        out += struct.pack(">i", len(user_data)) + user_data
    return base64.b64encode(out).decode("ascii")
