"""Kafka's message files as the gateway's wire codec reads them (gateway/codec.py).

The files are Kafka 4.4.0's own, unchanged: the coordinator APIs' in
`coordinator/protocol/messages/kafka/` (the service's too), and those only the gateway needs (the
request and response headers, ApiVersions, Metadata, DescribeCluster, SaslHandshake,
SaslAuthenticate) in `gateway/messages/`, both copied from the kafka-clients 4.4.0 jar's
`common/message/`. Unlike the service's loader (coordinator/protocol/loader.py), which needs only
names, versions and defaults, the codec needs what decides the bytes: tags, tagged and flexible
versions, and which versions make a field nullable.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from coordinator.protocol.loader import parse_versions, read_message_file

SCALARS = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "string", "bytes", "uuid", "records"}
)
Range = tuple[int, int | None] | None  # parse_versions' form; None: no version


@dataclass(frozen=True)
class Field:
    name: str  # camelCase, as Kafka's JSON converters print it
    type: Any  # a scalar name, ArrayOf or Struct
    versions: Range
    nullable: Range
    tag: int | None
    tagged: Range
    flexible: Range | str  # "message": the message's flexible versions; else the field's own override
    default: str | None  # the file's default, as written ("-1", "null", "0x7fffffff", ...)


@dataclass(frozen=True)
class ArrayOf:
    item: Any


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class Message:
    name: str
    api_key: int | None  # None for the headers
    kind: str  # "request", "response" or "header"
    valid: Range
    flexible: Range
    body: Struct


def _paths():
    yield resources.files("coordinator.protocol") / "messages" / "kafka"
    yield resources.files("gateway") / "messages"


@cache
def _files() -> dict[str, Any]:
    return {p.name[:-5]: p for root in _paths() for p in root.iterdir() if p.name.endswith(".json")}


@cache
def load(name: str) -> Message:
    """The message `name` ("OffsetCommitRequest", "RequestHeader", ...)."""
    path = _files().get(name)
    if path is None:
        raise KeyError(f"no message file {name}.json")
    raw = read_message_file(path)
    commons = {c["name"]: c for c in raw.get("commonStructs", [])}
    body = Struct(raw["name"], tuple(_field(f, commons) for f in raw["fields"]))
    return Message(
        raw["name"],
        raw.get("apiKey"),
        raw["type"],
        parse_versions(raw["validVersions"]),
        parse_versions(raw.get("flexibleVersions", "none")),
        body,
    )


def _field(spec: dict, commons: dict) -> Field:
    flexible = spec.get("flexibleVersions")
    return Field(
        spec["name"][0].lower() + spec["name"][1:],
        _type(spec["type"], spec, commons),
        parse_versions(spec["versions"]),
        parse_versions(spec.get("nullableVersions")),
        spec.get("tag"),
        parse_versions(spec.get("taggedVersions")),
        "message" if flexible is None else parse_versions(flexible),
        None
        if "default" not in spec
        else str(spec["default"]).lower()
        if isinstance(spec["default"], bool)
        else str(spec["default"]),
    )


def _type(name: str, spec: dict, commons: dict) -> Any:
    if name.startswith("[]"):
        return ArrayOf(_type(name[2:], spec, commons))
    if name in SCALARS:
        return name
    fields = spec.get("fields")
    if fields is None:
        fields = commons[name]["fields"]
    return Struct(name, tuple(_field(f, commons) for f in fields))


@cache
def by_key() -> dict[tuple[int, str], Message]:
    """(api key, "request" / "response") -> the message, for every file at hand."""
    out = {}
    for name in _files():
        if name.endswith(("Request", "Response")):
            m = load(name)
            if m.api_key is not None:
                out[(m.api_key, m.kind)] = m
    return out


def versions(api_key: int) -> tuple[int, int] | None:
    """The versions of an API the codec can read and write (its request file's validVersions)."""
    m = by_key().get((api_key, "request"))
    if m is None or m.valid is None:
        return None
    lo, hi = m.valid
    return lo, hi if hi is not None else lo
