"""Sample bodies for the golden bytes: every message the gateway codec reads or writes, every
version of Kafka 4.4.0's file, twice: every field set to a value unlike its default (two items per
array, nested structs filled, negative and wide numbers, non-ASCII strings), and every nullable
field null with empty arrays."""

from __future__ import annotations

import base64

from coordinator.protocol.loader import in_range
from gateway import apis, schema
from gateway.schema import ArrayOf, Struct

# What the gateway decodes or encodes besides the bridged APIs: FindCoordinator (answered),
# ApiVersions, Metadata, DescribeCluster (rewritten), SaslHandshake, SaslAuthenticate (read).
OTHER_API_KEYS = (10, 18, 3, 60, 17, 36)


def api_keys() -> list[int]:
    return sorted(set(apis._BY_KEY) | set(OTHER_API_KEYS))


def cases() -> list[dict]:
    out = []
    for name, versions in (("RequestHeader", (1, 2)), ("ResponseHeader", (0, 1))):
        for v in versions:
            out += _both(schema.load(name), v)
    for key in api_keys():
        for kind in ("request", "response"):
            m = schema.by_key()[(key, kind)]
            lo, hi = m.valid
            for v in range(lo, hi + 1):
                out += _both(m, v)
    return out


def _both(m: schema.Message, v: int) -> list[dict]:
    return [
        {"message": m.name, "version": v, "json": sample(m.body, v, seed, nulls)}
        for seed, nulls in ((1, False), (2, True))
    ]


def sample(s: Struct, v: int, seed: int, nulls: bool) -> dict:
    return {f.name: _value(f, v, seed * 31 + i, nulls) for i, f in enumerate(s.fields) if in_range(f.versions, v)}


def _value(f: schema.Field, v: int, n: int, nulls: bool):
    if nulls and in_range(f.nullable, v):
        return None
    t = f.type
    if isinstance(t, ArrayOf):
        if nulls:
            return []
        return [_item(t.item, v, n + k, nulls) for k in range(2)]
    return _item(t, v, n, nulls)


def _item(t, v: int, n: int, nulls: bool):
    if isinstance(t, Struct):
        return sample(t, v, n, nulls)
    sign = -1 if n % 3 == 0 else 1
    return {
        "bool": n % 2 == 0,
        "int8": sign * (n % 120 + 1),
        "int16": sign * (300 + n % 30000),
        "uint16": 40000 + n % 20000,
        "int32": sign * (70000 + n),
        "uint32": 3_000_000_000 + n,
        "int64": sign * (2**40 + n),
        "float64": n + 0.25,
        "string": f"s{n}-é✓",
        "bytes": base64.b64encode(bytes([n % 256, 0, 255, 7])).decode(),
        "uuid": base64.urlsafe_b64encode(bytes([n % 256] * 8 + [1] * 8)).decode()[:22],
        "records": None,
    }[t]
