"""coordinator/compact_json.py: the same text as json's own encoder, for every kind of value."""

from __future__ import annotations

import json
import random

import pytest

from coordinator.compact_json import compact_chunks, compact_encoder

_STRINGS = ["a", "é", "\ud800", '"', "\\", "\n", "\x00", "\u2028", "😀", "\x7f", "plain"]


def _value(rnd: random.Random, depth: int = 0):
    kind = rnd.randint(0, 9 if depth < 4 else 5)
    if kind == 0:
        return rnd.randint(-(2**70), 2**70)
    if kind == 1:
        return rnd.choice([0.1, 1e16, 1e-7, -0.0, 3.14159, float("nan"), float("inf"), 2.5])
    if kind == 2:
        return "".join(rnd.choice(_STRINGS) for _ in range(rnd.randint(0, 8)))
    if kind == 3:
        return rnd.choice([True, False, None])
    if kind == 4:
        return rnd.randint(-5, 5)
    if kind == 5:
        return rnd.choice(_STRINGS)
    if kind in (6, 7):
        return [_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    if kind == 8:
        return tuple(_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3)))
    keys = ["a", "b", "é", 1, 2.5, True, None, "\ud801"]
    return {rnd.choice(keys): _value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))}


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_the_same_text_as_json_for_random_values(ensure_ascii):
    encode = compact_encoder(ensure_ascii)
    reference = json.JSONEncoder(separators=(",", ":"), ensure_ascii=ensure_ascii)
    rnd = random.Random(24)
    for _ in range(3000):
        value = _value(rnd)
        assert encode(value) == reference.encode(value), value


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_the_chunks_join_into_the_encoders_text(ensure_ascii):
    encode, chunks = compact_encoder(ensure_ascii), compact_chunks(ensure_ascii)
    rnd = random.Random(25)
    for _ in range(2000):
        value = _value(rnd)
        assert "".join(chunks(value, 0)) == encode(value), value


@pytest.mark.parametrize("bad", [{"a": object()}, [1, {2}], {(1, 2): 3}])
def test_the_same_error_for_what_json_cannot_encode(bad):
    reference = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
    with pytest.raises(TypeError) as expected:
        reference.encode(bad)
    with pytest.raises(TypeError) as got:
        compact_encoder(False)(bad)
    assert str(got.value) == str(expected.value)


def test_a_failed_call_leaves_nothing_behind():
    encode = compact_encoder(False)
    shared = {"x": 1}
    with pytest.raises(TypeError):
        encode([shared, object()])
    # The same container again, now encodable: no stale record of having been inside it.
    assert encode([shared, shared]) == '[{"x":1},{"x":1}]'
