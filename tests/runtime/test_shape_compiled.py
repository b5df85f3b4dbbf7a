"""The compiled response shaper (loader.compiled_shaper) against the plan walk it stands for
(loader._shape): for every response message of messages/ in every valid version, randomized bodies
in shape, nearly in shape and far from it give the same result, byte for byte as JSON and object
for object (the compiled path keeps an input dict or list exactly where the walk keeps it)."""

from __future__ import annotations

import json
import random
from importlib import resources

import pytest

from coordinator.protocol.loader import _plan, _shape, compiled_shaper, load, plan, shape

MESSAGES = sorted(
    {
        path.name[: -len(".json")]
        for source in ("kafka", "service")
        for path in (resources.files("coordinator.protocol") / "messages" / source).iterdir()
        if path.name.endswith("Response.json")
    }
)


def _versions(name: str) -> range:
    lo, hi = load(name).valid_versions
    return range(lo, (hi if hi is not None else lo + 3) + 1)


def _scalar(rng: random.Random):
    return rng.choice([0, -1, 7, 2**40, "", "s", "é\u2028", None, True, False, 1.5, [], [1, "x"]])


def _body(p, rng: random.Random, depth: int = 0) -> dict:
    """A body for plan `p`: mostly exactly the plan's fields in order (the common case), else with
    fields missing, extra, reordered, or of unexpected types."""
    out = {}
    for name, _default, sub, item in p.fields:
        if sub is not None:
            value = None if rng.random() < 0.1 or depth > 4 else _body(sub, rng, depth + 1)
        elif item is not None:
            value = (
                None
                if rng.random() < 0.1 or depth > 4
                else [_body(item, rng, depth + 1) for _ in range(rng.randint(0, 3))]
            )
        else:
            value = _scalar(rng)
        out[name] = value
    roll = rng.random()
    if roll < 0.65 or not out:
        return out
    keys = list(out)
    if roll < 0.75:
        del out[rng.choice(keys)]
    elif roll < 0.85:
        out["notAField"] = _scalar(rng)
    elif roll < 0.95:
        rng.shuffle(keys)
        out = {k: out[k] for k in keys}
    else:
        out = {k: out[k] for k in keys[::-1] if rng.random() < 0.5}
    return out


def _structure(value, inputs: dict[int, object]) -> object:
    """`value`'s tree with each dict or list marked as one of the input's own objects (by id) or new."""
    if isinstance(value, dict):
        return (
            "dict",
            id(value) if id(value) in inputs else "new",
            [(k, _structure(v, inputs)) for k, v in value.items()],
        )
    if isinstance(value, list | tuple):
        return (
            type(value).__name__,
            id(value) if id(value) in inputs else "new",
            [_structure(v, inputs) for v in value],
        )
    return value


def _containers(value, into: dict[int, object]) -> dict[int, object]:
    if isinstance(value, dict | list):
        into[id(value)] = value
        for v in value.values() if isinstance(value, dict) else value:
            _containers(v, into)
    return into


@pytest.mark.parametrize("name", MESSAGES)
def test_the_compiled_shaper_is_the_plan_walk_for_every_version_and_body(name):
    rng = random.Random(name)
    for version in _versions(name):
        p = plan(name, version)
        fast = compiled_shaper(p)
        for _ in range(40):
            body = _body(p, rng)
            inputs = _containers(body, {})
            expected = _shape(p, body)
            got = fast(body)
            assert json.dumps(got, separators=(",", ":")) == json.dumps(expected, separators=(",", ":"))
            assert _structure(got, inputs) == _structure(expected, inputs), (name, version, body)
            assert (got is body) == (expected is body)


def test_shape_goes_through_the_compiled_shaper_of_the_plan():
    body = {"throttleTimeMs": 0, "topics": [{"name": "t", "partitions": [{"partitionIndex": 0, "errorCode": 0}]}]}
    for version in (0, 2, 8, 9):
        p = plan("OffsetCommitResponse", version)
        assert shape("OffsetCommitResponse", version, body) == _shape(p, body)
    nested = plan("OffsetCommitResponse", 9, ("topics",))
    assert nested is _plan(load("OffsetCommitResponse").body.fields[1].type.item, 9)
    assert shape("OffsetCommitResponse", 9, {"name": "t"}, ("topics",)) == {"name": "t", "partitions": []}


def test_a_body_in_shape_is_copied_where_the_walk_copies_it():
    inner = [{"partitionIndex": 0, "errorCode": 0}]
    topic = {"name": "t", "partitions": inner}
    body = {"throttleTimeMs": 0, "topics": [topic]}
    out = shape("OffsetCommitResponse", 9, body)
    assert out == body and out is not body and out["topics"][0] is not topic
    assert out["topics"][0]["partitions"] is not inner and out["topics"][0]["partitions"][0] is inner[0]
    flat = {"throttleTimeMs": 0, "errorCode": 0}
    assert shape("HeartbeatResponse", 3, flat) is flat
