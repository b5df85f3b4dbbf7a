"""Kafka's binary messages (kio entities) <-> the service's JSON bodies, generically.

kio generates one frozen dataclass per message version from Kafka's own JSON schemas. Its field
names are the schema's names in snake_case, except that `...Ms` fields typed as durations or
timestamps lose the suffix (`sessionTimeoutMs` -> `session_timeout`, a timedelta). The service's
JSON is what Kafka's generated JSON converters print: camelCase names, bytes in base64, Uuids as 22
characters of url-safe base64. The mapping below is derived from each field's `kafka_type`, so it
covers every API kio knows; `tests/gateway/test_gateway_codec.py` checks it against Kafka's schemas.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import functools
import io
import uuid
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField, classify_field, is_optional

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MS = datetime.timedelta(milliseconds=1)
_DURATIONS = ("timedelta_i32", "timedelta_i64")
_TIMESTAMPS = ("datetime_i64",)
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def json_name(field: dataclasses.Field) -> str:
    """Kafka's camelCase name of a kio field."""
    head, *rest = field.name.split("_")
    name = head + "".join(part[:1].upper() + part[1:] for part in rest)
    if field.metadata.get("kafka_type") in _DURATIONS + _TIMESTAMPS:
        name += "Ms"
    return name


# Fields Kafka renamed after the schemas kio 0.6.5 was generated from (Kafka 4.1's): the service's
# JSON uses Kafka 4.4.0's names, the wire bytes are the same. (message class, kio's JSON name) -> name.
RENAMED = {
    ("TxnOffsetCommitRequest", "generationId"): "generationIdOrMemberEpoch",  # KIP-1319 (4.4.0)
    ("StreamsGroupHeartbeatResponse", "acceptableRecoveryLag"): "acceptableRecoveryLagLegacy",  # KIP-1331, v0
}


@dataclasses.dataclass(frozen=True)
class _FieldMap:
    field: dataclasses.Field
    name: str  # the JSON name
    kafka_type: str | None  # None for nested entities
    array: bool
    entity: type | None  # nested entity class
    optional: bool


@functools.cache
def _fields(cls: type) -> tuple[_FieldMap, ...]:
    out = []
    for f in dataclasses.fields(cls):
        kind = classify_field(f)
        entity = kind.type_ if isinstance(kind, (EntityField, EntityTupleField)) else None
        out.append(
            _FieldMap(
                f,
                RENAMED.get((cls.__name__, json_name(f)), json_name(f)),
                f.metadata.get("kafka_type"),
                isinstance(kind, (EntityTupleField, PrimitiveTupleField)),
                entity,
                is_optional(f),
            )
        )
    return tuple(out)


# ------------------------------------------------------------------ scalars
def _scalar_to_json(kafka_type: str | None, value: Any) -> Any:
    if value is None:
        return ZERO_UUID if kafka_type == "uuid" else None
    if kafka_type in _DURATIONS:
        return value // _MS
    if kafka_type in _TIMESTAMPS:
        return (value - _EPOCH) // _MS
    if kafka_type == "uuid":
        return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
    if kafka_type in ("bytes", "records"):
        return base64.b64encode(bytes(value)).decode()
    if kafka_type == "error_code":
        return int(value)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)  # kio's int subclasses
    if isinstance(value, str):
        return str(value)
    return value


def _scalar_from_json(kafka_type: str | None, value: Any) -> Any:
    if value is None:
        return None
    if kafka_type in _DURATIONS:
        return datetime.timedelta(milliseconds=value)
    if kafka_type in _TIMESTAMPS:
        return _EPOCH + datetime.timedelta(milliseconds=value)
    if kafka_type == "uuid":
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        return None if raw == bytes(16) else uuid.UUID(bytes=raw)
    if kafka_type in ("bytes", "records"):
        return base64.b64decode(value)
    if kafka_type == "error_code":
        try:
            return ErrorCode(value)
        except ValueError:  # a code newer than kio's table: kio writes it as an int16 all the same
            return _UnknownErrorCode(value)
    return value


class _UnknownErrorCode(int):
    @property
    def value(self) -> int:
        return int(self)


def _zero(fm: _FieldMap) -> Any:
    if fm.array:
        return ()
    if fm.optional:
        return None
    if fm.entity is not None:
        return from_json(fm.entity, {})
    t = fm.kafka_type
    if t == "string":
        return ""
    if t in ("bytes", "records"):
        return b""
    if t == "bool":
        return False
    if t == "uuid":
        return None
    if t in _DURATIONS:
        return datetime.timedelta(0)
    if t in _TIMESTAMPS:
        return _EPOCH
    if t == "error_code":
        return ErrorCode.none
    return 0


# ------------------------------------------------------------------ entities
def to_json(entity: Any) -> dict:
    """A kio entity as the service's JSON body (Kafka's JSON converter names and encodings)."""
    out: dict[str, Any] = {}
    cls: type = type(entity)
    for fm in _fields(cls):
        value = getattr(entity, fm.field.name)
        if fm.entity is not None:
            if fm.array:
                out[fm.name] = None if value is None else [to_json(v) for v in value]
            else:
                out[fm.name] = None if value is None else to_json(value)
        elif fm.array:
            out[fm.name] = None if value is None else [_scalar_to_json(fm.kafka_type, v) for v in value]
        else:
            out[fm.name] = _scalar_to_json(fm.kafka_type, value)
    return out


def from_json(cls: type, data: dict) -> Any:
    """A kio entity from a JSON body. A missing field takes kio's default (the schema's), else the
    type's zero value; fields kio's version does not have are ignored."""
    kwargs = {}
    for fm in _fields(cls):
        if fm.name not in data or (data[fm.name] is None and not fm.optional):
            f = fm.field
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                continue
            kwargs[f.name] = _zero(fm)
            continue
        value = data[fm.name]
        if value is None:
            kwargs[fm.field.name] = None
        elif fm.entity is not None:
            kwargs[fm.field.name] = (
                tuple(from_json(fm.entity, v) for v in value) if fm.array else from_json(fm.entity, value)
            )
        elif fm.array:
            kwargs[fm.field.name] = tuple(_scalar_from_json(fm.kafka_type, v) for v in value)
        else:
            kwargs[fm.field.name] = _scalar_from_json(fm.kafka_type, value)
    return cls(**kwargs)


# ------------------------------------------------------------------ frames
# kio resolves a schema by importing its module path on every call: a few percent of the gateway's
# time per request, kept once per (api key, version).
@functools.cache
def request_class(api_key: int, version: int) -> type[Any]:
    return load_request_schema(api_key, version)


@functools.cache
def response_class(api_key: int, version: int) -> type[Any]:
    return load_response_schema(api_key, version)


def decode_request(frame: bytes, api_key: int, version: int) -> tuple[Any, Any]:
    """(header, body entity) of a request frame (without its 4-byte size prefix)."""
    cls = request_class(api_key, version)
    # kio's readers return (value, bytes read)
    header, offset = entity_reader(cls.__header_schema__)(frame, 0)
    body, size = entity_reader(cls)(frame, offset)
    if offset + size != len(frame):
        raise ValueError(f"{len(frame) - offset - size} bytes after the request body")
    return header, body


def decode_response(frame: bytes, api_key: int, version: int) -> tuple[Any, Any]:
    cls = response_class(api_key, version)
    header, offset = entity_reader(cls.__header_schema__)(frame, 0)
    body, _ = entity_reader(cls)(frame, offset)
    return header, body


def encode_response(correlation_id: int, body: Any) -> bytes:
    """A response frame (without its size prefix), with the header version the body's API needs
    (ApiVersions always answers with header v0)."""
    cls = type(body)
    buf = io.BytesIO()
    entity_writer(cls.__header_schema__)(buf, cls.__header_schema__(correlation_id=correlation_id))
    entity_writer(cls)(buf, body)
    return buf.getvalue()


def encode_request(header: Any, body: Any) -> bytes:
    """A request frame (without its size prefix)."""
    cls = type(body)
    buf = io.BytesIO()
    entity_writer(cls.__header_schema__)(buf, header)
    entity_writer(cls)(buf, body)
    return buf.getvalue()
