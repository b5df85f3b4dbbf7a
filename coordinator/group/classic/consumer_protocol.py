"""Kafka's ConsumerProtocol: the subscription a consumer sends as JoinGroup protocol metadata and
the assignment its leader sends back through SyncGroup (protocol type "consumer").

Layouts (`ConsumerProtocolSubscription.json` / `ConsumerProtocolAssignment.json`, versions 0-3,
not flexible; every encoding starts with an int16 version):

    Subscription:  topics [string] | userData nullable bytes | v1+ ownedPartitions [topic string,
                   partitions [int32]] | v2+ generationId int32 | v3+ rackId nullable string
    Assignment:    assignedPartitions [topic string, partitions [int32]] | userData nullable bytes

Arrays carry an int32 count, strings an int16 length, bytes an int32 length (-1 = null). A newer
version than 3 is read with the version 3 layout (Kafka's rule: later versions only append fields).
In JSON the encodings are base64, as Kafka's JSON converters print bytes.

The group coordinator itself only needs the subscribed topics: `ClassicGroup.computeSubscribedTopics`
parses every member's metadata as version 0 (the prefix every later version keeps), and if any
member's metadata does not parse, the group does not know its subscriptions, exactly as Kafka logs
and gives up (`parse_subscription_topics`). The full encoders and decoders serve clients
(`client/classic_group.py`) and tests.
"""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass, field

CONSUMER_PROTOCOL_TYPE = "consumer"
HIGHEST_SUBSCRIPTION_VERSION = 3
HIGHEST_ASSIGNMENT_VERSION = 3


class SchemaError(ValueError):
    pass


class _Reader:
    def __init__(self, metadata_b64: str, what: str):
        try:
            self.buf = base64.b64decode(metadata_b64, validate=True)
        except (binascii.Error, ValueError) as e:
            raise SchemaError("metadata is not base64") from e
        self.pos = 0
        self.what = what

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise SchemaError(f"buffer underflow while parsing consumer protocol's {self.what}")
        chunk = self.buf[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def count(self, name: str) -> int:
        n = self.int32()
        if n < 0:
            raise SchemaError(f"non-nullable field {name} was serialized as null")
        return n

    def string(self, name: str) -> str:
        value = self.nullable_string(name)
        if value is None:
            raise SchemaError(f"non-nullable field {name} was serialized as null")
        return value

    def nullable_string(self, name: str) -> str | None:
        length = self.int16()
        if length < 0:
            return None
        try:
            return self.take(length).decode("utf-8")
        except UnicodeDecodeError as e:
            raise SchemaError(f"{name} is not UTF-8") from e

    def nullable_bytes(self) -> bytes | None:
        length = self.int32()
        return None if length < 0 else self.take(length)

    def topic_partitions(self, name: str) -> list[tuple[str, list[int]]]:
        out = []
        for _ in range(self.count(name)):
            topic = self.string(f"{name} topic")
            out.append((topic, [self.int32() for _ in range(self.count(f"{name} partitions"))]))
        return out


def parse_subscription_topics(metadata_b64: str) -> list[str]:
    """The topics of one member's subscription, read as version 0 whatever its version says (as
    Kafka's group coordinator does); raises SchemaError if it does not parse."""
    r = _Reader(metadata_b64, "subscription")
    r.take(2)  # version: parsed with version 0 whatever it says, as Kafka does
    topics = [r.string("topics element") for _ in range(r.count("topics"))]
    r.nullable_bytes()
    return topics


# ====================================================================== full encodings
TopicPartitions = list[tuple[str, list[int]]]


@dataclass
class Subscription:
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None
    version: int = HIGHEST_SUBSCRIPTION_VERSION


@dataclass
class Assignment:
    partitions: TopicPartitions = field(default_factory=list)
    user_data: bytes | None = None
    version: int = HIGHEST_ASSIGNMENT_VERSION

    def as_dict(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for topic, partitions in self.partitions:
            out.setdefault(topic, []).extend(partitions)
        return out


def _string(s: str) -> bytes:
    raw = s.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


def _nullable_string(s: str | None) -> bytes:
    return struct.pack(">h", -1) if s is None else _string(s)


def _nullable_bytes(b: bytes | None) -> bytes:
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


def _topic_partitions(tps: TopicPartitions) -> bytes:
    out = struct.pack(">i", len(tps))
    for topic, partitions in tps:
        out += _string(topic) + struct.pack(">i", len(partitions))
        out += b"".join(struct.pack(">i", p) for p in partitions)
    return out


def _check_version(version: int, highest: int, what: str) -> int:
    if version < 0:
        raise SchemaError(f"Unsupported {what} version: {version}")
    return min(version, highest)


def encode_subscription(
    topics: list[str],
    user_data: bytes | None = None,
    version: int = 0,
    *,
    owned_partitions: TopicPartitions | None = None,
    generation_id: int = -1,
    rack_id: str | None = None,
) -> str:
    """A ConsumerProtocolSubscription at `version` (0-3), base64. The Java consumer sends version 3
    (ConsumerProtocol.serializeSubscription at the highest version)."""
    layout = _check_version(version, HIGHEST_SUBSCRIPTION_VERSION, "subscription")
    out = struct.pack(">h", version) + struct.pack(">i", len(topics))
    out += b"".join(_string(t) for t in topics)
    out += _nullable_bytes(user_data)
    if layout >= 1:
        out += _topic_partitions(list(owned_partitions or []))
    if layout >= 2:
        out += struct.pack(">i", generation_id)
    if layout >= 3:
        out += _nullable_string(rack_id)
    return base64.b64encode(out).decode("ascii")


def decode_subscription(metadata_b64: str) -> Subscription:
    """ConsumerProtocol.deserializeSubscription; raises SchemaError."""
    r = _Reader(metadata_b64, "subscription")
    version = r.int16()
    layout = _check_version(version, HIGHEST_SUBSCRIPTION_VERSION, "subscription")
    topics = [r.string("topics element") for _ in range(r.count("topics"))]
    sub = Subscription(topics, r.nullable_bytes(), version=version)
    if layout >= 1:
        sub.owned_partitions = r.topic_partitions("ownedPartitions")
    if layout >= 2:
        sub.generation_id = r.int32()
    if layout >= 3:
        sub.rack_id = r.nullable_string("rackId")
    return sub


def encode_assignment(
    partitions: dict[str, list[int]] | TopicPartitions,
    user_data: bytes | None = None,
    version: int = HIGHEST_ASSIGNMENT_VERSION,
) -> str:
    """A ConsumerProtocolAssignment, base64; a dict is written with its topics sorted."""
    _check_version(version, HIGHEST_ASSIGNMENT_VERSION, "assignment")
    tps = sorted(partitions.items()) if isinstance(partitions, dict) else list(partitions)
    out = struct.pack(">h", version) + _topic_partitions(tps) + _nullable_bytes(user_data)
    return base64.b64encode(out).decode("ascii")


def decode_assignment(assignment_b64: str) -> Assignment:
    """ConsumerProtocol.deserializeAssignment; raises SchemaError. No bytes at all (what the
    coordinator gives a member the leader left out) is an empty assignment."""
    if assignment_b64 == "":
        return Assignment([], None, version=0)
    r = _Reader(assignment_b64, "assignment")
    version = r.int16()
    _check_version(version, HIGHEST_ASSIGNMENT_VERSION, "assignment")
    return Assignment(r.topic_partitions("assignedPartitions"), r.nullable_bytes(), version=version)
