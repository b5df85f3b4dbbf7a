"""Kafka's message JSON files, read into request validators and response shapers.

A message file (`messages/kafka/`: Kafka 4.4.0's, vendored unchanged; `messages/service/`: the
service's own, same format) lists a message's fields with the versions they exist in, the versions
in which they may be null, their defaults and tags. From it:

- `request_struct(name)` builds the `coordinator.schema.Struct` that validates a request body
  (schema.py's rules: a field is optional when the file declares a default, when it is nullable in
  the version, or when it is tagged);
- `shape(name, version, data)` gives a response body with exactly the fields of that version, in
  the file's order (nested structs and arrays too), each absent field at its default, as Kafka's
  generated JSON converters print a response object.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from ..schema import Array, F, Struct

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
_SCALARS = {"bool", "int8", "int16", "int32", "int64", "uint16", "float64", "string", "bytes", "uuid", "records"}
_INTS = {"int8", "int16", "int32", "int64", "uint16"}
_COMMENT = re.compile(r"^\s*//.*$", re.M)
_SOURCES = ("service", "kafka")  # the service's own files first (WriteTxnMarkers v2 extends Kafka's)


@dataclass(frozen=True)
class FieldSpec:
    name: str  # camelCase, as Kafka's JSON converters print it
    type: Any  # a scalar name, ArrayOf or MessageStruct
    versions: tuple[int, int | None]
    nullable: tuple[int, int | None] | None
    tagged: bool
    default: Any  # _NO_DEFAULT when the file declares none

    def in_version(self, v: int) -> bool:
        return in_range(self.versions, v)


@dataclass(frozen=True)
class ArrayOf:
    item: Any  # a scalar name, ArrayOf or MessageStruct


@dataclass(frozen=True)
class MessageStruct:
    name: str
    fields: tuple[FieldSpec, ...]


@dataclass(frozen=True)
class Message:
    name: str  # e.g. "JoinGroupRequest"
    api_key: int
    valid_versions: tuple[int, int | None]
    body: MessageStruct
    ours: bool  # written by the service (messages/service/), not vendored from Kafka


_NO_DEFAULT = object()


def in_range(rng: tuple[int, int | None] | None, v: int) -> bool:
    """Whether version `v` is in a range of `parse_versions` (None: no version is)."""
    if rng is None:
        return False
    lo, hi = rng
    return v >= lo and (hi is None or v <= hi)


def parse_versions(text: str | None) -> tuple[int, int | None] | None:
    """Kafka's version ranges: "3+", "0-7", "5", "none"."""
    if text is None or text == "none":
        return None
    if text.endswith("+"):
        return int(text[:-1]), None
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


def _versions(text: str) -> tuple[int, int | None]:
    rng = parse_versions(text)
    if rng is None:
        raise ValueError(f"no versions: {text!r}")
    return rng


def _camel(name: str) -> str:
    return name[0].lower() + name[1:]


def read_message_file(path) -> dict:
    """A Kafka message file's JSON (its `//` comment lines removed)."""
    return json.loads(_COMMENT.sub("", path.read_text(encoding="utf-8")))


def _read(name: str) -> tuple[dict, bool]:
    root = resources.files(__package__) / "messages"
    for source in _SOURCES:
        path = root / source / f"{name}.json"
        if path.is_file():
            return read_message_file(path), source == "service"
    raise KeyError(f"no message file {name}.json")


@cache
def load(name: str) -> Message:
    """The message `name` ("JoinGroupRequest", ...)."""
    raw, ours = _read(name)
    return parse_message(raw, ours)


def parse_message(raw: dict, ours: bool = False) -> Message:
    """A message file's JSON (comments removed) as a `Message`."""
    commons = {c["name"]: c for c in raw.get("commonStructs", [])}
    body = MessageStruct(raw["name"], tuple(_field(f, commons) for f in raw["fields"]))
    return Message(raw["name"], raw["apiKey"], _versions(raw["validVersions"]), body, ours)


def _type(type_name: str, spec: dict, commons: dict) -> Any:
    if type_name.startswith("[]"):
        return ArrayOf(_type(type_name[2:], spec, commons))
    if type_name in _SCALARS:
        return type_name
    fields = spec.get("fields")
    if fields is None:
        fields = commons[type_name]["fields"]
    return MessageStruct(type_name, tuple(_field(f, commons) for f in fields))


def _field(spec: dict, commons: dict) -> FieldSpec:
    t = _type(spec["type"], spec, commons)
    nullable = parse_versions(spec.get("nullableVersions"))
    default = _default(t, spec["default"]) if "default" in spec else _NO_DEFAULT
    return FieldSpec(_camel(spec["name"]), t, _versions(spec["versions"]), nullable, "taggedVersions" in spec, default)


def _default(t: Any, value: Any) -> Any:
    """A declared default as the JSON value it stands for ("null", "-1", "0x7fffffff", "false", ...)."""
    if value == "null":
        return None
    if isinstance(t, ArrayOf):
        return () if value in ("[]", "") else value  # (a tuple: specs are hashable)
    if t in _INTS:
        return value if isinstance(value, int) else int(value, 0)
    if t == "bool":
        return value if isinstance(value, bool) else value == "true"
    if t == "float64":
        return float(value)
    return value


# ====================================================================== request validators


@cache
def request_struct(name: str) -> Struct:
    """The validator of request message `name` ("JoinGroupRequest")."""
    return validator(load(name))


def validator(message: Message) -> Struct:
    """The `schema.Struct` that validates a body of `message`."""
    return _struct(message.body)


def _struct(s: MessageStruct) -> Struct:
    out = []
    for f in s.fields:
        kw: dict = {"versions": f.versions, "nullable": f.nullable, "tagged": f.tagged}
        if f.default is not _NO_DEFAULT:
            kw["default"] = list(f.default) if type(f.default) is tuple else f.default
        out.append(F(f.name, _schema_type(f.type), **kw))
    return Struct(*out)


def _schema_type(t: Any) -> Any:
    if isinstance(t, ArrayOf):
        return Array(_schema_type(t.item))
    if isinstance(t, MessageStruct):
        return _struct(t)
    return t


# ====================================================================== response shaper


def zero(t: Any) -> Any:
    """The value of a field whose file declares no default, as Kafka's generated classes set it."""
    if isinstance(t, ArrayOf):
        return ()
    if isinstance(t, MessageStruct):
        return None  # shaped into the struct's own defaults by the caller
    if t in _INTS:
        return 0
    return {"bool": False, "string": "", "bytes": "", "uuid": ZERO_UUID, "float64": 0.0, "records": None}[t]


class _Plan:
    """How to shape one struct in one version (compiled once; hashed by identity)."""

    __slots__ = ("fields", "names", "nested")

    def __init__(self, fields: tuple):
        self.fields = fields  # (name, default, struct plan or None, array item plan or None)
        self.names = tuple(f[0] for f in fields)
        self.nested = tuple((name, sub, item) for name, _, sub, item in fields if sub is not None or item is not None)


@cache
def _plan(s: MessageStruct, version: int) -> _Plan:
    out = []
    for f in s.fields:
        if not f.in_version(version):
            continue
        sub = _plan(f.type, version) if isinstance(f.type, MessageStruct) else None
        item = (
            _plan(f.type.item, version)
            if isinstance(f.type, ArrayOf) and isinstance(f.type.item, MessageStruct)
            else None
        )
        if f.default is not _NO_DEFAULT:
            default = f.default
        elif isinstance(f.type, MessageStruct):
            default = _STRUCT_DEFAULT
        else:
            default = zero(f.type)
        out.append((f.name, default, sub, item))
    return _Plan(tuple(out))


_STRUCT_DEFAULT = object()


def _shape(plan: _Plan, data: dict) -> dict:
    if tuple(data) == plan.names:
        # Already exactly the version's fields in order (most nested items the handlers build):
        # only nested structs need a look.
        if not plan.nested:
            return data
        out = dict(data)
        for name, sub, item in plan.nested:
            value = out[name]
            if value is not None:
                out[name] = _shape(sub, value) if sub is not None else _shape_list(item, value)
        return out
    out = {}
    for name, default, sub, item in plan.fields:
        if name in data:
            value = data[name]
            if value is not None:
                if sub is not None:
                    value = _shape(sub, value)
                elif item is not None:
                    value = _shape_list(item, value)
        elif default is _STRUCT_DEFAULT:
            value = _shape(sub, {})
        else:
            value = [] if type(default) is tuple else default
        out[name] = value
    return out


def _shape_list(item: _Plan, values: list) -> list:
    if item.nested:
        return [_shape(item, x) for x in values]
    names = item.names  # flat items: those already in shape are kept as they are
    return [x if tuple(x) == names else _shape(item, x) for x in values]


def shape(name: str, version: int, data: dict, path: tuple[str, ...] = ()) -> dict:
    """`data` as message `name` prints in `version`: exactly the version's fields, in the file's
    order, absent ones at their default. `path` names a nested struct (e.g. ("groups",) for one
    entry of DescribeGroupsResponse's `groups`) to shape just that entry."""
    try:
        return _SHAPERS[name, version, path](data)
    except KeyError:
        if (name, version, path) in _SHAPERS:
            raise  # raised by the shaper itself (a bad body), not for want of one
    shaper = _SHAPERS[name, version, path] = compiled_shaper(plan(name, version, path))
    return shaper(data)


_SHAPERS: dict[tuple, Any] = {}


def shape_message(message: Message, version: int, data: dict) -> dict:
    """`shape` for a `Message` at hand (one not in messages/)."""
    return _shape(_plan(message.body, version), data)


@cache
def compiled_shaper(p: _Plan):
    """`_shape(p, data)` as a function of `data` written for `p` (compiled once per plan): the
    common case, a body already in the version's fields and order (what most handlers build), in one
    pass without `_shape`'s walk over the plan; anything else it hands to `_shape`. The result is
    `_shape`'s, object for object (tests/runtime/test_shape_compiled.py holds them equal)."""
    env: dict[str, Any] = {"_shape": _shape, "PLAN": p, "NAMES": p.names}
    lines = ["def shaper(data):", "    if tuple(data) != NAMES:", "        return _shape(PLAN, data)"]
    if not p.nested:
        lines.append("    return data")
    else:
        lines.append("    out = dict(data)")
        for i, (name, sub, item) in enumerate(p.nested):
            lines.append(f"    value = out[{name!r}]")
            lines.append("    if value is not None:")
            if sub is not None:  # a struct: shaped as _shape does
                env[f"SUB{i}"] = compiled_shaper(sub)
                shaped = f"SUB{i}(value)"
            elif item.nested:  # _shape_list: items with nested fields, each shaped
                env[f"ITEM{i}"] = compiled_shaper(item)
                shaped = f"[ITEM{i}(x) for x in value]"
            else:  # _shape_list: flat items, those already in shape kept as they are
                env[f"ITEM{i}"], env[f"NAMES{i}"] = item, item.names
                shaped = f"[x if tuple(x) == NAMES{i} else _shape(ITEM{i}, x) for x in value]"
            lines.append(f"        out[{name!r}] = {shaped}")
        lines.append("    return out")
    # The source is built above from the plan alone (field names from the message files).
    exec(compile("\n".join(lines), "<compiled_shaper>", "exec"), env)
    return env["shaper"]


@cache
def plan(name: str, version: int, path: tuple[str, ...] = ()) -> _Plan:
    s = load(name).body
    for step in path:
        t = next(f.type for f in s.fields if f.name == step)
        s = t.item if isinstance(t, ArrayOf) else t
    return _plan(s, version)


def has_field(name: str, version: int, field: str, path: tuple[str, ...] = ()) -> bool:
    return field in plan(name, version, path).names
