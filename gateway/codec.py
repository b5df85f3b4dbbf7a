"""Kafka's binary protocol <-> the service's JSON bodies, from Kafka 4.4.0's own message files.

A message version is compiled once (gateway/schema.py reads the files) into a reader and a writer
that go straight between the bytes and the JSON that Kafka's generated JSON converters print:
camelCase names, every field of the version (a tagged field absent from the bytes at its default),
bytes and records in base64, Uuids as 22 characters of url-safe base64, int64 as numbers. The bytes
are those of Kafka's generated `Readable`/`Writable` code: int16/int32 lengths before the flexible
versions, unsigned varints (length + 1, 0 for null) from them, a tagged-field section at the end of
every struct of a flexible version (tags in ascending order, a field written only when it differs
from its default), a nullable struct behind an int8 marker (-1: null). Runs of fixed-width fields
are read and written with one `struct` call. `tests/gateway/test_gateway_codec.py` checks the bytes
against Kafka's own classes (golden bytes) for every bridged API and version.

A frame that does not decode raises `DecodeError` (the gateway closes the connection, as a broker
closes one whose request does not parse).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from functools import cache
from typing import Any, cast

from coordinator.protocol.loader import in_range

from . import schema
from .schema import ArrayOf, Field, Message, Struct

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
API_VERSIONS = 18  # its response header is v0 in every version (clients read it before they know)


class DecodeError(ValueError):
    """Bytes that are not a message of the expected API and version."""


_FIXED = {
    "bool": "?",
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
}
_INTS = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})
_I8, _I16, _I32 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i")
_UV = [bytes((i,)) for i in range(128)]  # the one-byte unsigned varints

Reader = Callable[[bytes, int], tuple[Any, int]]
Writer = Callable[[bytearray, Any], None]


# ------------------------------------------------------------------ varints
def read_uvarint(b: bytes, p: int) -> tuple[int, int]:
    """Kafka's ByteUtils.readUnsignedVarint: at most 5 bytes."""
    v = b[p]
    if v < 0x80:
        return v, p + 1
    value, shift = v & 0x7F, 7
    p += 1
    while True:
        v = b[p]
        p += 1
        value |= (v & 0x7F) << shift
        if v < 0x80:
            return value, p
        shift += 7
        if shift > 28:
            raise DecodeError("varint is too long")


def uvarint(v: int) -> bytes:
    if v < 0x80:
        return _UV[v]
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


# ------------------------------------------------------------------ JSON forms
def uuid_json(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode()[:22]


def uuid_bytes(value: str) -> bytes:
    raw = base64.urlsafe_b64decode(value + "==")
    if len(raw) != 16:
        raise ValueError(f"not a Uuid: {value!r}")
    return raw


def _bytes_value(value: Any) -> bytes | bytearray:
    return value if isinstance(value, (bytes, bytearray)) else base64.b64decode(value)


def default_json(f: Field, version: int) -> Any:
    """A field's default in Kafka's JSON form: the file's default, else the zero of its type (as
    Kafka's generated classes initialise it). Structs and arrays get a fresh object."""
    t, d = f.type, f.default
    if isinstance(t, ArrayOf):
        return None if d == "null" else []
    if isinstance(t, Struct):
        return None if d == "null" else struct_default(t, version)
    if d is not None and d != "":
        if d == "null":
            return None
        if t in _INTS:
            return int(d, 0)
        if t == "bool":
            return d == "true"
        if t == "float64":
            return float(d)
        return d
    if t in _INTS:
        return 0
    return {"bool": False, "float64": 0.0, "string": "", "bytes": "", "uuid": ZERO_UUID, "records": None}[t]


def struct_default(s: Struct, version: int) -> dict:
    return {f.name: default_json(f, version) for f in s.fields if in_range(f.versions, version)}


# ------------------------------------------------------------------ readers
def _length(b: bytes, p: int, flexible: bool, wide: bool) -> tuple[int, int]:
    """A length or count: -1 for null."""
    if flexible:
        n = b[p]
        if n < 0x80:  # (the usual one-byte varint, inline)
            return n - 1, p + 1
        n, p = read_uvarint(b, p)
        return n - 1, p
    if wide:
        return _I32.unpack_from(b, p)[0], p + 4
    return _I16.unpack_from(b, p)[0], p + 2


def _unused(*args: Any) -> Any:
    raise AssertionError("an array of fixed-width items is read and written whole")


def _reader(t: Any, name: str, nullable: bool, flexible: bool, version: int, message_flexible: bool) -> Reader:
    if isinstance(t, ArrayOf):
        return _array_reader(t.item, name, nullable, flexible, version, message_flexible)
    if isinstance(t, Struct):
        read_struct = _struct_reader(t, version, message_flexible)
        if not nullable:
            return read_struct

        def read_nullable_struct(b, p):
            if _I8.unpack_from(b, p)[0] < 0:
                return None, p + 1
            return read_struct(b, p + 1)

        return read_nullable_struct
    if t in _FIXED:
        s = struct.Struct(">" + _FIXED[t])
        size = s.size
        return lambda b, p: (s.unpack_from(b, p)[0], p + size)
    if t == "uuid":

        def read_uuid(b, p):
            end = p + 16
            if end > len(b):
                raise DecodeError(f"{name}: a Uuid runs past the end")
            return uuid_json(b[p:end]), end

        return read_uuid
    wide = t != "string"

    def read_sized(b, p):
        if flexible and b[p] < 0x80:
            n = b[p] - 1
            p += 1
        else:
            n, p = _length(b, p, flexible, wide)
        if n < 0:
            if n == -1 and nullable:
                return None, p
            raise DecodeError(f"non-nullable field {name} was serialized as null")
        end = p + n
        if end > len(b):
            raise DecodeError(f"{name}: {n} bytes run past the end")
        raw = b[p:end]
        # Kafka reads strings as Java does: malformed UTF-8 becomes U+FFFD, not an error
        return (raw.decode("utf-8", "replace") if not wide else base64.b64encode(raw).decode()), end

    return read_sized


def _array_reader(item: Any, name: str, nullable: bool, flexible: bool, version: int, message_flexible: bool) -> Reader:
    fixed = _FIXED.get(item) if isinstance(item, str) else None
    item_size = struct.calcsize(">" + fixed) if fixed else 0
    read_item = _unused if fixed else _reader(item, name, False, flexible, version, message_flexible)

    def read_array(b, p):
        if flexible and b[p] < 0x80:
            n = b[p] - 1
            p += 1
        else:
            n, p = _length(b, p, flexible, True)
        if n < 0:
            if n == -1 and nullable:
                return None, p
            raise DecodeError(f"non-nullable field {name} was serialized as null")
        if n > len(b) - p:  # Kafka's check before it allocates the collection
            raise DecodeError(f"{name}: an array of {n} with {len(b) - p} bytes left")
        if fixed is not None:  # (struct caches the formats)
            return list(struct.unpack_from(f">{n}{fixed}", b, p)), p + n * item_size
        out = []
        for _ in range(n):
            value, p = read_item(b, p)
            out.append(value)
        return out, p

    return read_array


def _field_flexible(f: Field, version: int, message_flexible: bool) -> bool:
    return message_flexible and (f.flexible == "message" or in_range(f.flexible, version))  # type: ignore[arg-type]


def _is_tagged(f: Field, version: int) -> bool:
    return f.tag is not None and in_range(f.tagged, version)


def _fixed_runs(fields: list[Field]) -> list[list[Field]]:
    """Consecutive untagged fields, fixed-width scalars grouped into runs."""
    runs: list[list[Field]] = []
    for f in fields:
        if f.type in _FIXED and runs and runs[-1][0].type in _FIXED:
            runs[-1].append(f)
        else:
            runs.append([f])
    return runs


@cache
def _struct_reader(s: Struct, version: int, flexible: bool) -> Reader:
    present = [f for f in s.fields if in_range(f.versions, version)]
    steps: list[tuple[bool, Any, Any]] = []
    for run in _fixed_runs([f for f in present if not _is_tagged(f, version)]):
        f = run[0]
        if f.type in _FIXED:
            fmt = struct.Struct(">" + "".join(_FIXED[x.type] for x in run))
            steps.append((True, tuple(x.name for x in run), fmt))
        else:
            nullable = in_range(f.nullable, version)
            steps.append(
                (
                    False,
                    f.name,
                    _reader(f.type, f.name, nullable, _field_flexible(f, version, flexible), version, flexible),
                )
            )
    tagged = {
        f.tag: (f.name, _reader(f.type, f.name, in_range(f.nullable, version), True, version, flexible))
        for f in present
        if _is_tagged(f, version)
    }
    # (fresh lists and dicts per message: the caller may change what it reads)
    tag_defaults = [(f, default_json(f, version)) for f in present if _is_tagged(f, version)]

    def read(b, p):
        d: dict[str, Any] = {}
        for fixed, names, fn in steps:
            if fixed:
                values = fn.unpack_from(b, p)
                p += fn.size
                if len(names) == 1:
                    d[names[0]] = values[0]
                else:
                    d.update(zip(names, values, strict=True))
            else:
                d[names], p = fn(b, p)
        if flexible:
            for f, dflt in tag_defaults:
                d[f.name] = default_json(f, version) if isinstance(dflt, (list, dict)) else dflt
            n, p = read_uvarint(b, p)
            for _ in range(n):
                tag, p = read_uvarint(b, p)
                size, p = read_uvarint(b, p)
                end = p + size
                if end > len(b):
                    raise DecodeError(f"{s.name}: tagged field {tag} runs past the end")
                known = tagged.get(tag)
                if known is not None:  # (an unknown tag is skipped, as Kafka keeps it unread)
                    d[known[0]] = known[1](b[p:end], 0)[0]
                p = end
        return d, p

    return read


# ------------------------------------------------------------------ writers
def _writer(t: Any, name: str, nullable: bool, flexible: bool, version: int, message_flexible: bool) -> Writer:
    if isinstance(t, ArrayOf):
        return _array_writer(t.item, name, flexible, version, message_flexible)
    if isinstance(t, Struct):
        write_struct = _struct_writer(t, version, message_flexible)
        if not nullable:
            return write_struct

        def write_nullable_struct(out, value):
            if value is None:
                out += b"\xff"
            else:
                out += b"\x01"
                write_struct(out, value)

        return write_nullable_struct
    if t in _FIXED:
        s = struct.Struct(">" + _FIXED[t])
        return lambda out, value: out.extend(s.pack(value))
    if t == "uuid":
        return lambda out, value: out.extend(uuid_bytes(value))
    null = b"\x00" if flexible else b"\xff\xff" if t == "string" else b"\xff\xff\xff\xff"

    def write_sized(out, value):
        if value is None:
            out += null
            return
        if t == "string":
            raw = value.encode("utf-8")
            if len(raw) > 0x7FFF:
                raise ValueError(f"'{name}' field is too long to be serialized")
        else:
            raw = _bytes_value(value)
        if flexible:
            out += uvarint(len(raw) + 1)
        elif t == "string":
            out += _I16.pack(len(raw))
        else:
            out += _I32.pack(len(raw))
        out += raw

    return write_sized


def _array_writer(item: Any, name: str, flexible: bool, version: int, message_flexible: bool) -> Writer:
    fixed = _FIXED.get(item) if isinstance(item, str) else None
    write_item = _unused if fixed else _writer(item, name, False, flexible, version, message_flexible)
    null = b"\x00" if flexible else b"\xff\xff\xff\xff"

    def write_array(out, value):
        if value is None:
            out += null
            return
        n = len(value)
        out += uvarint(n + 1) if flexible else _I32.pack(n)
        if fixed is not None:
            out += struct.pack(f">{n}{fixed}", *value)
        else:
            for x in value:
                write_item(out, x)

    return write_array


@cache
def _struct_writer(s: Struct, version: int, flexible: bool) -> Writer:
    present = [f for f in s.fields if in_range(f.versions, version)]
    steps: list[tuple[bool, Any, Any, Any]] = []
    for run in _fixed_runs([f for f in present if not _is_tagged(f, version)]):
        f = run[0]
        if f.type in _FIXED:
            fmt = struct.Struct(">" + "".join(_FIXED[x.type] for x in run))
            steps.append((True, tuple((x.name, default_json(x, version)) for x in run), fmt, None))
        else:
            nullable = in_range(f.nullable, version)
            write_field = _writer(f.type, f.name, nullable, _field_flexible(f, version, flexible), version, flexible)
            steps.append((False, (f.name, nullable), write_field, default_json(f, version)))
    tagged = sorted(
        (
            cast(int, f.tag),
            f.name,
            in_range(f.nullable, version),
            _writer(f.type, f.name, in_range(f.nullable, version), True, version, flexible),
            default_json(f, version),
        )
        for f in present
        if _is_tagged(f, version)
    )

    def write(out, d):
        for fixed, names, fn, default in steps:
            if fixed:
                values = [d.get(name, dflt) for name, dflt in names]
                try:
                    out += fn.pack(*values)
                except struct.error:  # a null where Kafka has none: the field's default
                    out += fn.pack(*(dflt if v is None else v for v, (_, dflt) in zip(values, names, strict=True)))
            else:
                # absent: the default; null where the version has no null: the default too
                value = d.get(names[0], default)
                fn(out, default if value is None and not names[1] else value)
        if flexible:
            found = []
            for tag, name, nullable, fn, dflt in tagged:
                value = d.get(name, dflt)
                if value is None and not nullable:
                    value = dflt
                if value != dflt:
                    buf = bytearray()
                    fn(buf, value)
                    found.append((tag, buf))
            out += uvarint(len(found))
            for tag, buf in found:
                out += uvarint(tag)
                out += uvarint(len(buf))
                out += buf

    return write


# ------------------------------------------------------------------ messages
def _message(api_key: int, kind: str) -> Message:
    m = schema.by_key().get((api_key, kind))
    if m is None:
        raise DecodeError(f"unknown api key {api_key}")
    return m


def is_flexible(api_key: int, version: int, kind: str = "request") -> bool:
    return in_range(_message(api_key, kind).flexible, version)


@cache
def body_codec(api_key: int, version: int, kind: str) -> tuple[Reader, Writer]:
    """(reader, writer) of an API's request or response body in one version."""
    m = _message(api_key, kind)
    if not in_range(m.valid, version):
        raise DecodeError(f"{m.name} has no version {version}")
    flex = in_range(m.flexible, version)
    return _struct_reader(m.body, version, flex), _struct_writer(m.body, version, flex)


@cache
def _header_codec(kind: str, version: int) -> tuple[Reader, Writer]:
    m = schema.load(kind)
    flex = in_range(m.flexible, version)
    return _struct_reader(m.body, version, flex), _struct_writer(m.body, version, flex)


def request_header_version(api_key: int, version: int) -> int:
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    if api_key == API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, version, "response") else 0


def known_versions(api_key: int) -> tuple[int, int] | None:
    """The versions of an API the codec reads and writes (Kafka 4.4.0's), None: an API it has no file for."""
    return schema.versions(api_key)


_ERRORS = (struct.error, IndexError, ValueError, OverflowError, TypeError, RecursionError)


def _reading(kind: str, header: str, header_version: Callable[[int, int], int]):
    """decode(frame, api_key, version) for requests or responses; the readers of an (api key,
    version) kept in a dict (the per-request path: one lookup)."""
    readers: dict[tuple[int, int], tuple[Reader, Reader]] = {}

    def decode(frame: bytes, api_key: int, version: int, whole: bool) -> tuple[dict, dict]:
        pair = readers.get((api_key, version))
        if pair is None:
            pair = readers[(api_key, version)] = (
                _header_codec(header, header_version(api_key, version))[0],
                body_codec(api_key, version, kind)[0],
            )
        try:
            head, p = pair[0](frame, 0)
            body, p = pair[1](frame, p)
        except DecodeError:
            raise
        except _ERRORS as e:
            raise DecodeError(f"{type(e).__name__}: {e}") from None
        if whole and p != len(frame):
            raise DecodeError(f"{len(frame) - p} bytes after the {kind} body")
        return head, body

    return decode


_decode_request = _reading("request", "RequestHeader", request_header_version)
_decode_response = _reading("response", "ResponseHeader", response_header_version)


def decode_request(frame: bytes, api_key: int, version: int) -> tuple[dict, dict]:
    """(header, body) of a request frame (without its size prefix), in Kafka's JSON form."""
    return _decode_request(frame, api_key, version, True)


def decode_response(frame: bytes, api_key: int, version: int) -> tuple[dict, dict]:
    """(header, body) of a response frame (without its size prefix)."""
    return _decode_response(frame, api_key, version, False)


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str | None, body: dict) -> bytes:
    """A request frame (without its size prefix)."""
    out = bytearray()
    header = {
        "requestApiKey": api_key,
        "requestApiVersion": version,
        "correlationId": correlation_id,
        "clientId": client_id,
    }
    _header_codec("RequestHeader", request_header_version(api_key, version))[1](out, header)
    body_codec(api_key, version, "request")[1](out, body)
    return bytes(out)


def encode_response(correlation_id: int, api_key: int, version: int, body: dict) -> bytes:
    """A response frame (without its size prefix), in the header version the API's version takes."""
    out = bytearray(_I32.pack(correlation_id))
    if response_header_version(api_key, version) == 1:
        out += b"\x00"  # no tagged fields in the header
    body_codec(api_key, version, "response")[1](out, body)
    return bytes(out)
