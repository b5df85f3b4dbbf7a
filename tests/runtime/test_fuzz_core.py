"""Property tests of the trust boundary in the core and the step's output stage: whatever records
arrive, a batch never raises, every well-formed request gets its right answer, and every output row
is one the sink can write to a topic the service may write to."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import state
from coordinator import CoordinatorConfig, CoordinatorPartition, coordinator_partition
from coordinator.batch import InputRecord, run_batch
from coordinator.envelope import parse_request
from streaming.step import StepSettings, output_rows
from streaming.trust import key_path, load_or_create_key
from tests.runtime.fuzz_records import HostileRecords, check_answer

TOPICS = {
    "requests": "svc-requests",
    "responses": "svc-responses",
    "events": "svc-events",
    "state_log": "svc-state-log",
    "internal": "svc-internal",
    "dead_letters": "svc-dlq",
}
CONFIG = CoordinatorConfig().with_overrides(
    coordinator_internal_topics=list(TOPICS.values()),
    coordinator_reply_to_pattern=r"svc-responses(\.[A-Za-z0-9._-]{1,200})?",
    coordinator_request_max_bytes=20_000,
)
_KEY_DIR = tempfile.mkdtemp(prefix="fuzz-key-")
load_or_create_key(Path(_KEY_DIR))
SETTINGS = StepSettings(
    coordinator=CONFIG.to_json(),
    responses_topic=TOPICS["responses"],
    events_topic=TOPICS["events"],
    state_log_topic=TOPICS["state_log"],
    requests_topic=TOPICS["requests"],
    internal_topic=TOPICS["internal"],
    dead_letters_topic=TOPICS["dead_letters"],
    internal_key_file=str(key_path(_KEY_DIR)),
)
WRITABLE = {TOPICS[t] for t in ("responses", "events", "state_log", "internal", "dead_letters")}


def as_stream_record(key: bytes | None, value: bytes | None, offset: int, time_ms: int) -> InputRecord:
    """What the query hands the state function for a client record (streaming/query.py)."""
    text, valid = None, True
    if key is not None:
        try:
            text = key.decode("utf-8")
        except UnicodeDecodeError:
            text, valid = key.decode("utf-8", "replace"), False
        text = text[:32767]
    cut = None if value is None else value[: CONFIG["coordinator.request.max.bytes"] + 1]
    return InputRecord(text, cut, time_ms, offset % 2, offset, None if value is None else len(value), key_valid=valid)


@settings(max_examples=25, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_a_hostile_mix_never_fails_a_batch_and_good_requests_get_right_answers(seed):
    corpus = HostileRecords(seed, TOPICS, max_value_bytes=20_000).corpus(hostile=60, good=20)
    by_partition: dict[int, list[InputRecord]] = {}
    for offset, (key, value) in enumerate(corpus.records):
        rec = as_stream_record(key, value, offset, 1_000 + offset)
        by_partition.setdefault(coordinator_partition(rec.key, 50), []).append(rec)
    answers = {}
    for pid, records in by_partition.items():
        blob = None
        for half in (records[: len(records) // 2], records[len(records) // 2 :]):  # two batches

            def load(blob=blob, pid=pid):
                return CoordinatorPartition(pid, CONFIG, None if blob is None else state.decode(*blob))

            part, out = run_batch(load, half, 5_000)
            blob = state.encode(part.to_json())
            for r in out.responses:
                if r.reply.client_id == corpus.client_id:
                    answers[r.reply.correlation_id] = r.body
            for topic, key, value, _, _headers in output_rows(out, pid, SETTINGS):
                assert topic in WRITABLE or topic.startswith(TOPICS["responses"] + "."), topic
                key.encode("utf-8")  # Arrow needs valid UTF-8
                json.loads(value)
            assert not [e for e in out.events if e.body["event"] in ("RequestFailed", "TimerFailed")], [
                e.body for e in out.events if e.body["event"] in ("RequestFailed", "TimerFailed")
            ]
    for cid, expected in corpus.expected.items():
        check_answer(expected, answers[cid])


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=30,
)
ENVELOPE_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "apiKey": st.sampled_from(
            ["FindCoordinator", "JoinGroup", "OffsetCommit", "EndTxn", "WriteTxnMarkers", "UpdateMetadata"]
        )
        | JSON,
        "apiVersion": st.integers(-2, 12) | JSON,
        "correlationId": st.integers() | JSON,
        "clientId": st.text() | JSON,
        "replyTo": st.text() | JSON,
        "request": JSON,
    },
)


@settings(max_examples=400, derandomize=True, database=None, deadline=None)
@given(
    raw=st.binary(max_size=300)
    | JSON.map(lambda v: json.dumps(v).encode())
    | ENVELOPE_FIELDS.map(lambda v: json.dumps(v).encode("utf-8", "surrogatepass")),
    key=st.none() | st.text(max_size=40),
    internal=st.booleans(),
)
def test_parsing_never_raises(raw, key, internal):
    parse_request(raw, key=key, time_ms=1, internal=internal)
