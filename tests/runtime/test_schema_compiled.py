"""The compiled request validators (`Struct.validate`'s fast path) answer exactly as the general
walk (`Struct._validate`): the same body (values, their types, the order of keys) for every request
that fits, the same error text for every one that does not, for every API and version, on bodies
damaged one field at a time and on random ones. Their canonical branch (a body with every field of
the version) answers as their per-field blocks."""

from __future__ import annotations

import copy
import dataclasses
import random
from collections import OrderedDict

import pytest

from coordinator import schema
from coordinator.api import all_apis, lookup
from coordinator.schema import _INT_RANGES, MAX_STRING_BYTES, Array, F, SchemaError, Struct, _Misfit
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


def typed(value):
    """`value` with the type of everything in it and the order of its keys, to compare exactly."""
    if isinstance(value, dict):
        return type(value).__name__, [(k, typed(v)) for k, v in value.items()]
    if isinstance(value, list):
        return type(value).__name__, [typed(v) for v in value]
    return type(value).__name__, repr(value)


def outcome(struct: Struct, body, version: int, general: bool):
    try:
        return "ok", typed(struct._validate(body, version, "") if general else struct.validate(body, version))
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


class Text(str):
    pass


class Number(int):
    pass


def random_value(t, version: int, nullable: bool, rng: random.Random, odd: float):
    """A value for a field of type `t`: mostly one that fits, now and then an odd one."""
    if nullable and rng.random() < 0.25:
        return None
    if rng.random() < odd:
        return rng.choice([*ODD_VALUES, Text("t"), Number(1), OrderedDict(a=1), (1,), b"x", 2.0])
    if isinstance(t, Struct):
        return random_body(t, version, rng, odd)
    if isinstance(t, Array):
        return [random_value(t.item, version, False, rng, odd) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        return rng.choice([lo, hi, 0, max(lo, -1), rng.randint(lo, hi), lo - 1 if odd and rng.random() < 0.1 else lo])
    if t == "string":
        return rng.choice(
            [
                "",
                "g",
                "consumer-1",
                "é" * rng.randint(1, 3),
                "\U0001f600",
                "a" * MAX_STRING_BYTES,
                "a" * (MAX_STRING_BYTES // 2 + 1),  # fits alone; two of them do not fit together
                "é" * (MAX_STRING_BYTES // 2),
            ]
        )
    if t == "bool":
        return rng.random() < 0.5
    if t == "bytes":
        return rng.choice(["", "AAEC", "not base64!" if odd else "AA=="])
    if t == "uuid":
        return rng.choice(["AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAA" if odd else "_-AAAAAAAAAAAAAAAAAAAA"])
    raise AssertionError(t)


def random_body(struct: Struct, version: int, rng: random.Random, odd: float) -> dict:
    """Every field of the version (the canonical branch's case) and, unless `odd` is 0, now and then
    one left out; now and then one of another version or an unknown key added, in a random order."""
    items = []
    for f in struct.fields:
        here = f.in_version(version)
        if (here and (not odd or rng.random() < 0.95)) or (not here and rng.random() < 0.1):
            items.append((f.name, random_value(f.type, version, f.nullable_in(version), rng, odd)))
    if rng.random() < 0.1:
        items.append(("unknownField", 1))
    if rng.random() < 0.3:
        rng.shuffle(items)
    body = dict(items)
    if rng.random() < 0.02:
        return OrderedDict(body)  # a dict, but not of the canonical branch's type
    return body


def rebuilt(t):
    """The same type, of new Structs (a deep copy would copy the mandatory fields' sentinel too)."""
    if isinstance(t, Struct):
        return Struct(*(dataclasses.replace(f, type=rebuilt(f.type)) for f in t.fields))
    return Array(rebuilt(t.item)) if isinstance(t, Array) else t


def per_field_only(struct: Struct, versions, monkeypatch) -> Struct:
    """A copy of `struct` whose compiled validators have no canonical branch: the full path."""
    plain = rebuilt(struct)  # with empty caches of compiled validators, nested ones too
    with monkeypatch.context() as m:
        m.setattr(schema, "_canonical_branch", lambda present, version, names: [])
        for version in versions:
            plain._compiled[version] = schema._compile_struct(plain, version)
    return plain


def compiled_outcome(validator, body):
    try:
        return "ok", typed(validator(body))
    except _Misfit:
        return "misfit", None


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.name) for s in all_apis()])
def test_the_canonical_branch_answers_as_the_per_field_blocks_on_random_bodies(spec, monkeypatch):
    rng = random.Random(f"canonical-{spec.name}")
    versions = range(spec.min_version, spec.max_version + 1)
    plain = per_field_only(spec.request, versions, monkeypatch)
    fits = 0
    for version in versions:
        fast = spec.request._compiled.get(version) or schema._compile_struct(spec.request, version)
        for i in range(40):
            clean = i % 4 == 0
            body = random_body(spec.request, version, rng, odd=0.0 if clean else 0.05)
            answer = compiled_outcome(fast, body)
            assert answer == compiled_outcome(plain._compiled[version], body), (version, body)
            assert outcome(spec.request, body, version, general=False) == outcome(
                spec.request, body, version, general=True
            ), (version, body)
            assert answer[0] == "ok" or not clean, (version, body)  # the bodies that fit are tested too
            fits += answer[0] == "ok"
    assert fits >= 10 * len(versions)


def test_the_canonical_branch_copies_arrays_and_takes_no_shortcut_on_what_it_cannot_prove():
    commit = lookup("OffsetCommit").request
    partition = {"partitionIndex": 0, "committedOffset": 1, "committedLeaderEpoch": -1, "committedMetadata": None}
    body = {"groupId": "g", "generationIdOrMemberEpoch": -1, "memberId": "", "groupInstanceId": None}
    body["topics"] = [{"name": "t", "partitions": [partition]}]
    out = commit.validate(body, 9)
    assert out == body and out["topics"] is not body["topics"] and out["topics"][0] is not body["topics"][0]
    assert out["topics"][0]["partitions"][0] is not partition
    # two strings that fit alone, too long together: valid (decided by the per-field blocks)
    long = {**body, "groupId": "a" * 20000, "memberId": "b" * 20000}
    assert commit.validate(long, 9)["memberId"] == "b" * 20000
    # a str subclass is a string; an int subclass, a bool or a float is no integer
    assert type(commit.validate({**body, "groupId": Text("g")}, 9)["groupId"]) is Text
    for wrong in (Number(1), True, 1.0):
        with pytest.raises(SchemaError, match="generationIdOrMemberEpoch"):
            commit.validate({**body, "generationIdOrMemberEpoch": wrong}, 9)
    # a body missing a field with a default gets the default
    assert commit.validate({k: v for k, v in body.items() if k != "groupInstanceId"}, 9)["groupInstanceId"] is None
