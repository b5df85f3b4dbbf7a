"""`output_rows` against the version it replaced (output_rows_reference.py): randomized batches of
outputs of every kind (responses to the service's and to per-client topics, unsafe and quarantined
ones, events, state records and tombstones, internal requests, markers) with ASCII, non-ASCII,
unencodable and missing keys, small and oversized values, under several limits, give the same
rows, byte for byte, in the same order."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest

from coordinator.messages import DataRecord, Event, InternalRequest, Outputs, ReplyTo, Response, StateRecord
from streaming import step
from streaming.step import StepSettings, output_rows
from streaming.trust import key_path, load_or_create_key
from tests.streaming.output_rows_reference import output_rows as reference_rows

_KEY_DIR = tempfile.mkdtemp(prefix="rows-key-")
load_or_create_key(Path(_KEY_DIR))
BASE = StepSettings(
    coordinator={},
    responses_topic="resp",
    events_topic="ev",
    state_log_topic="log",
    requests_topic="req",
    internal_topic="int",
    dead_letters_topic="dlq",
    internal_key_file=str(key_path(_KEY_DIR)),
    txn_markers="json",
)

KEYS = ["c1", "", "consumer-1", "é-client", "a\ud800b", "k" * 700, "日本" * 300]
TOPICS = [None, None, None, "resp", "resp.team-a", "resp.small", "resp.gone", "log", "resp.bad topic", "orders"]


def _text(rng: random.Random, n: int) -> str:
    return rng.choice(["x", "é", "\u2028", "\ud800", '"', "\\", "日"]) * n


def _body(rng: random.Random, small: bool = False) -> dict:
    size = rng.choice([0, 1, 10, 200] if small else [0, 1, 10, 200, 700, 1400])
    return {"throttleTimeMs": 0, "errorCode": rng.choice([0, 15, 16]), "blob": _text(rng, size), "n": rng.random()}


def _outputs(rng: random.Random) -> Outputs:
    """Outputs of every kind; in about half the batches, plain responses and records (ASCII keys,
    the service's own response topic, no tombstone: whole columns at once) save for a few."""
    out = Outputs()
    plain = rng.random() < 0.5
    keys = [k for k in KEYS if k.isascii() and len(k) < 100] if plain else KEYS
    topics = [rng.choice(TOPICS)] if plain else TOPICS  # one reply topic (or none) for the batch
    for i in range(rng.randint(0, 12)):
        client = None if rng.random() < 0.01 else rng.choice(keys if rng.random() < 0.95 else KEYS)
        topic = rng.choice(topics if rng.random() < 0.95 else TOPICS)
        # Now and then a correlation id, version or API name of a type no parsed request has.
        cid = i if rng.random() < 0.97 else rng.choice([True, 2.5, "7", None])
        version = rng.randint(0, 9) if rng.random() < 0.99 else rng.choice([False, 1.0])
        api = rng.choice(["OffsetCommit", "Heartbeat", "é"]) if rng.random() < 0.99 else rng.choice([None, 3])
        out.responses.append(Response(ReplyTo(api, version, cid, client, topic), _body(rng, plain)))
    for _ in range(rng.randint(0, 3)):
        key = rng.choice([*KEYS, "e" * 2000])
        out.events.append(Event(key, {"event": "GroupCreated", **_body(rng)}))
    for _ in range(rng.randint(0, 8)):
        key = rng.choice(keys if rng.random() < 0.95 else KEYS)
        value = None if rng.random() < (0.01 if plain else 0.2) else rng.choice([_body(rng), "a string", [1, 2]])
        out.records.append(StateRecord(key, value))
    for _ in range(rng.randint(0, 2)):
        stamp = None if rng.random() < 0.5 else ("p", 1, 2)
        out.requests.append(InternalRequest(rng.choice(["g1", "é"]), {"apiKey": "X", **_body(rng)}, stamp))
    for _ in range(rng.randint(0, 2)):
        out.data.append(
            DataRecord(rng.choice(["orders", "payments"]), 3, rng.choice([None, "k", "é"]), b"m", [("h", b"v")])
        )
    return out


@pytest.mark.parametrize("seed", range(6))
def test_output_rows_are_the_reference_rows_byte_for_byte(seed, monkeypatch):
    columns = []  # (topic, rows) of each batch of rows taken as whole columns
    whole = step._column_rows
    monkeypatch.setattr(step, "_column_rows", lambda topic, *a: columns.append(topic) or whole(topic, *a))
    rng = random.Random(seed)
    for _ in range(150):
        s = StepSettings(
            **{
                **BASE.__dict__,
                "max_record_bytes": rng.choice([1500, 3000, 16 << 20]),
                "quarantined_topics": rng.choice([(), ("resp.gone",), ("resp", "orders", "log")]),
            }
        )
        limits = rng.choice([None, {}, {"resp.small": 2000}, {"resp": 1600, "resp.small": 900, "log": 1000}])
        out = _outputs(rng)
        assert _rows_or_error(output_rows, out, s, limits) == _rows_or_error(reference_rows, out, s, limits)
    # The columns were taken too, for both kinds of row, the responses to more than one topic.
    assert columns.count("resp") >= 3 and columns.count("resp.team-a") >= 1 and columns.count("log") >= 10


def _rows_or_error(build, out: Outputs, s: StepSettings, limits) -> object:
    """The rows, or the error the outputs make it raise (a client id of None, which no parsed
    request has, fails a dead letter's key in both)."""
    try:
        return build(out, 7, s, limits)
    except TypeError as e:
        return ("raised", type(e), str(e))
