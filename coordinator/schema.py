"""Request-body schemas with the semantics of Kafka's generated JSON converters.

A schema lists the fields of one message with the versions they exist in. Validation of a body
for a version returns a new dict holding exactly the fields of that version: values are type-checked
(Kafka's int8/16/32/64 ranges, strings within Kafka's 32767-byte limit, base64 bytes, arrays, nested
structs), absent optional fields get their default, and an absent mandatory field is an error, as
in `XxxJsonConverter.read` ("unable to locate field 'x', which is mandatory in version N").
Fields not in the version are ignored, as Kafka's converters ignore them.

A field is optional when Kafka's schema declares a default for it, when it is nullable in that
version (default null) or when it is a tagged field; otherwise it is mandatory.

The service's request schemas are built from the message JSON files (coordinator/protocol/loader.py);
`Struct` and `F` remain the form they take (and tests declare small APIs of their own with them).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

MAX_STRING_BYTES = 32767  # Kafka STRING: int16 length prefix


class SchemaError(ValueError):
    """The body does not fit the schema; the message says where and why."""


_REQUIRED = object()
_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}


@dataclass(frozen=True)
class Array:
    item: Any  # a type name or a Struct


@dataclass(frozen=True)
class F:
    name: str
    type: Any  # "string" | "bytes" | "bool" | "int8".."int64" | "uuid" | Array | Struct
    versions: tuple[int, int | None] = (0, None)
    default: Any = _REQUIRED
    nullable: tuple[int, int | None] | None = None  # versions in which null is allowed
    tagged: bool = False

    def in_version(self, v: int) -> bool:
        lo, hi = self.versions
        return v >= lo and (hi is None or v <= hi)

    def nullable_in(self, v: int) -> bool:
        if self.nullable is None:
            return False
        lo, hi = self.nullable
        return v >= lo and (hi is None or v <= hi)


@dataclass(frozen=True)
class Struct:
    fields: tuple[F, ...] = field(default_factory=tuple)
    # version -> validator (_compile_struct); not part of the value
    _compiled: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __init__(self, *fields: F):
        object.__setattr__(self, "fields", tuple(fields))
        object.__setattr__(self, "_compiled", {})

    def __getstate__(self) -> dict:
        return {"fields": self.fields}  # compiled validators are closures: built again on use

    def __setstate__(self, state: dict) -> None:
        object.__setattr__(self, "fields", state["fields"])
        object.__setattr__(self, "_compiled", {})

    def validate(self, body: Any, version: int, path: str = "") -> dict:
        """The body's fields of `version`, checked (see the module's docstring). Bodies that fit
        take a validator compiled once per version; one that does not is validated again by the
        general walk below, which names the first field at fault."""
        try:
            fast = self._compiled[version]
        except KeyError:
            fast = self._compiled[version] = _compile_struct(self, version)
        try:
            return fast(body)
        except (_Misfit, RecursionError):
            pass
        return self._validate(body, version, path)

    def _validate(self, body: Any, version: int, path: str) -> dict:
        if not isinstance(body, dict):
            raise SchemaError(f"{path or 'request'} must be a JSON object")
        out: dict[str, Any] = {}
        for f in self.fields:
            if not f.in_version(version):
                continue
            where = f"{path}{f.name}"
            if f.name not in body:
                if f.default is not _REQUIRED:
                    out[f.name] = _copy_default(f.default)
                elif f.nullable_in(version) or f.tagged:
                    out[f.name] = None if f.nullable_in(version) else _zero(f.type)
                else:
                    raise SchemaError(f"unable to locate field '{where}', which is mandatory in version {version}")
                continue
            value = body[f.name]
            if value is None:
                if f.nullable_in(version):
                    out[f.name] = None
                    continue
                raise SchemaError(f"field '{where}' must not be null in version {version}")
            out[f.name] = _check(f.type, value, version, where)
        return out


class _Misfit(Exception):
    """Raised by a compiled validator: the body does not fit; `Struct._validate` says why."""


def _compile_struct(s: Struct, version: int):
    """A validator of `s` in `version` that returns what `Struct._validate` returns for a body that
    fits and raises `_Misfit` otherwise: the per-field decisions (in version, default, nullable,
    type) are taken once here instead of for every request, and no error paths are built.

    It is generated as straight-line Python: first the canonical branch (`_canonical_branch`), for a
    body that has every field of the version, then one block per field (integer and string checks
    inline; a loop over a plan ran about three times the bytecodes for each field of every request).
    tests/runtime/test_schema_compiled.py compares both branches with the general walk."""
    names: dict[str, Any] = {"_Misfit": _Misfit, "_utf8_fits": _utf8_fits, "MAX": MAX_STRING_BYTES}
    present = [(i, f) for i, f in enumerate(s.fields) if f.in_version(version)]
    for i, f in present:
        if f.type not in _INT_RANGES and f.type != "string":
            names[f"check{i}"] = _compile_type(f.type, version)
            if isinstance(f.type, Array):
                names[f"item{i}"] = _compile_type(f.type.item, version)
    lines = ["def validate(body):", *_canonical_branch(present, version, names)]
    lines += ["    if not isinstance(body, dict):", "        raise _Misfit", "    out = {}"]
    for i, f in present:
        nullable = f.nullable_in(version)
        if f.default is not _REQUIRED:
            missing, copy = f.default, isinstance(f.default, list)
        elif nullable or f.tagged:
            missing, copy = (None, False) if nullable else (_zero(f.type), isinstance(f.type, Array))
        else:
            missing, copy = _REQUIRED, False
        key = repr(f.name)
        lines.append(f"    if {key} in body:")
        lines.append(f"        v = body[{key}]")
        lines.append("        if v is None:")
        lines.append(f"            out[{key}] = None" if nullable else "            raise _Misfit")
        lines.append("        else:")
        t = f.type
        if t in _INT_RANGES:
            lo, hi = _INT_RANGES[t]
            lines.append(f"            if type(v) is not int or not {lo} <= v <= {hi}:")
            lines.append("                raise _Misfit")
            lines.append(f"            out[{key}] = v")
        elif t == "string":
            # ASCII text is valid UTF-8 of one byte per character: no need to encode it.
            lines.append(
                "            if not isinstance(v, str) or (len(v) > MAX if v.isascii() else not _utf8_fits(v)):"
            )
            lines.append("                raise _Misfit")
            lines.append(f"            out[{key}] = v")
        else:
            lines.append(f"            out[{key}] = check{i}(v)")
        lines.append("    else:")
        if missing is _REQUIRED:
            lines.append("        raise _Misfit")
        else:
            names[f"missing{i}"] = missing
            lines.append(f"        out[{key}] = list(missing{i})" if copy else f"        out[{key}] = missing{i}")
    lines.append("    return out")
    exec("\n".join(lines), names)  # noqa: S102 - code built above from the schema, not from input
    return names["validate"]


def _canonical_branch(present: list[tuple[int, F]], version: int, names: dict[str, Any]) -> list[str]:
    """Lines that return the validated body at once when `body` is a dict holding every field of
    the version with values of their usual Python types (int, str, bool, list, dict, or None where
    nullable), as a client or the gateway sends it. The fields are read without testing for them
    first, and a string is tested by `str.isascii` called on it: a missing field (KeyError) or a
    value that is not a string (TypeError) ends the branch, at no cost when nothing is raised. The
    condition is one that suffices: when it fails, the per-field blocks decide. Nested arrays and
    structs are validated by the functions the per-field blocks call (their `_Misfit` is final).
    Written for CPython's specialised bytecodes: an itemgetter and one `map(type, ...)` check ran
    fewer bytecodes but took more time."""
    if not present:
        return []
    names["_isascii"] = str.isascii
    lines = ["    if type(body) is dict:", "        try:"]
    lines += [f"            v{i} = body[{f.name!r}]" for i, f in present]
    # ASCII text is valid UTF-8 of one byte per character: no need to encode it. The strings that
    # may not be null are tested joined (`+` of anything but two strings ends in TypeError too).
    strings = [f"v{i}" for i, f in present if f.type == "string" and not f.nullable_in(version)]
    if len(strings) > 1:
        checks = [f"_isascii(s := {' + '.join(strings)}) and len(s) <= {MAX_STRING_BYTES}"]
    else:
        checks = [f"_isascii({v}) and len({v}) <= {MAX_STRING_BYTES}" for v in strings]
    values: list[str] = []
    for i, f in present:
        t, v = f.type, f"v{i}"
        if t in _INT_RANGES:
            lo, hi = _INT_RANGES[t]
            check, value = f"type({v}) is int and {lo} <= {v} <= {hi}", v
        elif t == "string":
            check, value = "" if v in strings else f"_isascii({v}) and len({v}) <= {MAX_STRING_BYTES}", v
        elif t == "bool":
            check, value = f"type({v}) is bool", v
        elif isinstance(t, Array):
            check, value = f"type({v}) is list", f"list(map(item{i}, {v}))"
        else:  # a struct, bytes, a uuid: a check that takes any value
            check, value = "", f"check{i}({v})"
        if f.nullable_in(version):
            if check:
                checks.append(f"({v} is None or {check})")
            if value != v:
                value = f"None if {v} is None else {value}"
        elif check:
            checks.append(check)
        values.append(f"{f.name!r}: {value}")
    indent = "            "
    if checks:
        lines.append(f"            if {' and '.join(checks)}:")
        indent += "    "
    lines.append(f"{indent}return {{{', '.join(values)}}}")
    lines += ["        except (KeyError, TypeError):", "            pass"]
    return lines


def _compile_type(t: Any, version: int):
    """`_check(t, value, version, ...)` for values that pass; raises `_Misfit` for the others."""
    if isinstance(t, Struct):
        fast = t._compiled.get(version)
        if fast is None:
            fast = t._compiled[version] = _compile_struct(t, version)
        return fast
    if isinstance(t, Array):
        item = _compile_type(t.item, version)

        def array(value: Any) -> list:
            if not isinstance(value, list):
                raise _Misfit
            return list(map(item, value))

        return array
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]

        def integer(value: Any) -> int:
            if type(value) is not int or not lo <= value <= hi:
                raise _Misfit
            return value

        return integer
    if t == "string":

        def string(value: Any) -> str:
            # ASCII text is valid UTF-8 of one byte per character: no need to encode it.
            if not isinstance(value, str):
                raise _Misfit
            if value.isascii():
                if len(value) > MAX_STRING_BYTES:
                    raise _Misfit
            elif not _utf8_fits(value):
                raise _Misfit
            return value

        return string

    def other(value: Any) -> Any:  # bool, bytes, uuid: rare enough for the general check
        try:
            return _check(t, value, version, "")
        except SchemaError:
            raise _Misfit from None

    return other


def _utf8_fits(value: str) -> bool:
    try:
        return len(value.encode("utf-8")) <= MAX_STRING_BYTES
    except UnicodeEncodeError:
        return False


def _copy_default(d):
    return list(d) if isinstance(d, list) else d


def _zero(t):
    if isinstance(t, Array):
        return []
    if t in _INT_RANGES:
        return 0
    return {"string": "", "bytes": "", "bool": False, "uuid": "AAAAAAAAAAAAAAAAAAAAAA"}.get(t)


def _check(t: Any, value: Any, version: int, where: str) -> Any:
    if isinstance(t, Struct):
        return t.validate(value, version, where + ".")
    if isinstance(t, Array):
        if not isinstance(value, list):
            raise SchemaError(f"field '{where}' must be an array")
        return [_check(t.item, item, version, f"{where}[{i}]") for i, item in enumerate(value)]
    if t in _INT_RANGES:
        # bool is an int subclass in Python; JSON true is not a number.
        if type(value) is not int:
            raise SchemaError(f"field '{where}' must be an integer ({t})")
        lo, hi = _INT_RANGES[t]
        if not lo <= value <= hi:
            raise SchemaError(f"field '{where}' is out of range for {t}")
        return value
    if t == "bool":
        if type(value) is not bool:
            raise SchemaError(f"field '{where}' must be a boolean")
        return value
    if t == "string":
        if not isinstance(value, str):
            raise SchemaError(f"field '{where}' must be a string")
        try:
            n = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            raise SchemaError(f"field '{where}' is not valid unicode") from None
        if n > MAX_STRING_BYTES:
            raise SchemaError(f"field '{where}' is longer than {MAX_STRING_BYTES} bytes")
        return value
    if t == "bytes":
        # Kafka's JSON converters print bytes as base64.
        if not isinstance(value, str):
            raise SchemaError(f"field '{where}' must be a base64 string")
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise SchemaError(f"field '{where}' is not valid base64") from None
        return value
    if t == "uuid":
        # Kafka prints a Uuid as 22 characters of url-safe base64 without padding.
        if not isinstance(value, str) or len(value) != 22:
            raise SchemaError(f"field '{where}' must be a base64 Uuid")
        try:
            base64.urlsafe_b64decode(value + "==")
        except (binascii.Error, ValueError):
            raise SchemaError(f"field '{where}' must be a base64 Uuid") from None
        return value
    raise AssertionError(f"unknown schema type {t!r}")
