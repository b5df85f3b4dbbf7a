"""The compiled request validators (`Struct.validate`'s fast path) answer exactly as the general
walk (`Struct._validate`): the same body for every request that fits, the same error text for every
one that does not, for every API and version, on bodies damaged one field at a time."""

from __future__ import annotations

import copy
import random

import pytest

from coordinator.api import all_apis
from coordinator.schema import MAX_STRING_BYTES, Array, F, SchemaError, Struct
from tests.runtime.test_protocol_messages import sample

# Values a client may put anywhere: each is wrong for most field types and right for some.
ODD_VALUES = [
    None,
    True,
    0,
    -1,
    2**31,
    -(2**63) - 1,
    2**63,
    1.5,
    "",
    "é",
    "\udc80",  # a lone surrogate: not encodable as UTF-8
    "x" * (MAX_STRING_BYTES + 1),
    "é" * (MAX_STRING_BYTES // 2 + 1),  # within the limit in characters, over it in bytes
    "AAAAAAAAAAAAAAAAAAAAAQ",
    "not base64!",
    [],
    [1],
    {},
]


def outcome(struct: Struct, body, version: int, general: bool):
    try:
        return "ok", (struct._validate(body, version, "") if general else struct.validate(body, version))
    except SchemaError as e:
        return "error", str(e)


def paths(value, prefix=()):
    """Every place in a body: (path of keys and indexes)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*prefix, k)
            yield from paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield (*prefix, i)
            yield from paths(v, (*prefix, i))


def damaged(body: dict, path: tuple, value) -> dict:
    out = copy.deepcopy(body)
    target = out
    for k in path[:-1]:
        target = target[k]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.name) for s in all_apis()])
def test_compiled_validators_answer_as_the_general_walk(spec):
    rng = random.Random(spec.name)
    for version in range(spec.min_version, spec.max_version + 1):
        body = sample(spec.request, version)
        cases = [body, {}, [], {"unknown": 1, **body}]
        for path in paths(body):
            cases.append(damaged(body, path, KeyError))
            cases.extend(damaged(body, path, v) for v in rng.sample(ODD_VALUES, 6))
        for case in cases:
            fast = outcome(spec.request, case, version, general=False)
            assert fast == outcome(spec.request, case, version, general=True), (version, case)


def test_defaults_are_fresh_copies_and_absent_arrays_new_lists():
    s = Struct(F("a", Array("int32"), default=[]), F("t", Array("string"), tagged=True))
    first, second = s.validate({}, 0), s.validate({}, 0)
    first["a"].append(1)
    first["t"].append("x")
    assert second == {"a": [], "t": []}
