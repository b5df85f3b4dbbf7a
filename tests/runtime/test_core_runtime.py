"""The core runtime: request ordering, timers between requests, crash isolation, state encoding."""

from __future__ import annotations

import json

import pytest

import state
from coordinator import CoordinatorConfig, CoordinatorPartition, Errors
from coordinator.api import ApiSpec, register, unregister
from coordinator.batch import InputRecord, order_records, run_batch
from coordinator.errors import ApiError
from coordinator.records import record_key
from coordinator.result import CoordinatorResult
from coordinator.schema import F, Struct


class Probe:
    """A test component: `Touch` records the time it ran at (a state-log record, replayed into
    its log) and can arm a timer; `Boom` crashes."""

    name = "probe"
    HANDLERS = {"Touch": lambda c, request: c.touch(request), "Boom": lambda c, request: c.boom(request)}
    TIMER_HANDLERS = {
        "probe-expire": lambda c, timer: c.expire(timer),
        "probe-crash": lambda c, timer: c.crash_timer(timer),
    }
    REPLAYERS = {"ProbeLog": lambda c, kind, ids, value: c.log.append(value["entry"])}

    def __init__(self, partition):
        self.p = partition
        self.log: list = []

    def touch(self, request):
        b = request.body
        result = CoordinatorResult(response={"errorCode": 0, "id": b["id"], "at": self.p.clock_ms})
        result.record(record_key("ProbeLog", len(self.log)), {"entry": ["touch", b["id"], self.p.clock_ms]})
        if b["timerMs"] > 0:
            kind = "probe-crash" if b["crashTimer"] else "probe-expire"
            result.schedule(f"t-{b['id']}", self.p.clock_ms + b["timerMs"], kind, {"id": b["id"]})
        if b["fail"]:
            raise ApiError(Errors.INVALID_GROUP_ID, "told to fail")
        return result

    def boom(self, request):
        self.log.append(["boom-started", request.body["id"]])  # a half-made change
        raise ZeroDivisionError("bug")

    def expire(self, timer):
        return (
            CoordinatorResult()
            .record(record_key("ProbeLog", len(self.log)), {"entry": ["expired", timer.payload["id"], self.p.clock_ms]})
            .emit(str(timer.payload["id"]), "ProbeExpired", id=timer.payload["id"])
        )

    def crash_timer(self, timer):
        self.log.append(["crash-timer", timer.payload["id"]])
        raise KeyError("timer bug")

    def to_json(self):
        return {"log": self.log}

    def load_json(self, d):
        self.log = d["log"]

    def after_replay(self):
        pass


@pytest.fixture
def probe(monkeypatch):
    monkeypatch.setattr(CoordinatorPartition, "extra_components", (Probe,))
    register(
        ApiSpec(
            "Touch",
            9000,
            0,
            0,
            Struct(
                F("id", "int32"),
                F("timerMs", "int32", default=0),
                F("fail", "bool", default=False),
                F("crashTimer", "bool", default=False),
            ),
            component="probe",
        )
    )
    register(ApiSpec("Boom", 9001, 0, 0, Struct(F("id", "int32")), component="probe"))
    yield
    unregister("Touch")
    unregister("Boom")


def env(api, cid, body, version=0):
    return json.dumps(
        {"apiKey": api, "apiVersion": version, "correlationId": cid, "clientId": "c", "request": body}
    ).encode()


def loader(blob, pid=0, config=None):
    return lambda: CoordinatorPartition(pid, config or CoordinatorConfig(), state.decode(*blob))


def fresh_blob(pid=0):
    return state.encode(CoordinatorPartition(pid).to_json())


def test_requests_apply_in_append_time_then_offset_order(probe):
    recs = [
        InputRecord(None, env("Touch", 1, {"id": 1}), 300, partition=1, offset=5),
        InputRecord(None, env("Touch", 2, {"id": 2}), 100, partition=0, offset=9),
        InputRecord(None, env("Touch", 3, {"id": 3}), 100, partition=0, offset=7),
        InputRecord(None, env("Touch", 4, {"id": 4}), 200, partition=1, offset=4),
    ]
    part, out = run_batch(loader(fresh_blob()), recs, 1000)
    assert [e[1] for e in part.component("probe").log] == [3, 2, 4, 1]
    assert [r.body["at"] for r in out.responses] == [100, 100, 200, 300]


def test_append_times_never_reorder_one_request_partition():
    # A broker clock step back must not reorder records of one request-topic partition.
    recs = [InputRecord(None, b"a", 500, 0, 1), InputRecord(None, b"b", 400, 0, 2), InputRecord(None, b"c", 450, 1, 1)]
    ordered = [(t, r.value) for t, r in order_records(recs)]
    assert ordered == [(450, b"c"), (500, b"a"), (500, b"b")]


def test_timer_between_requests_fires_between_them(probe):
    recs = [
        InputRecord(None, env("Touch", 1, {"id": 1, "timerMs": 50}), 100, 0, 0),
        InputRecord(None, env("Touch", 2, {"id": 2}), 200, 0, 1),
        InputRecord(None, env("Touch", 3, {"id": 3, "timerMs": 10_000}), 210, 0, 2),
    ]
    part, out = run_batch(loader(fresh_blob()), recs, 1000)
    log = part.component("probe").log
    assert log == [["touch", 1, 100], ["expired", 1, 150], ["touch", 2, 200], ["touch", 3, 210]]
    assert [e.body["event"] for e in out.events] == ["ProbeExpired"]
    assert out.events[0].body["timeMs"] == 150  # fired at its deadline, not at the batch time
    assert part.next_deadline() == 10_210


def test_remaining_timers_fire_at_batch_end_and_only_when_due(probe):
    blob = fresh_blob()
    part, _ = run_batch(loader(blob), [InputRecord(None, env("Touch", 1, {"id": 1, "timerMs": 500}), 100)], 200)
    assert part.component("probe").log == [["touch", 1, 100]]
    blob = state.encode(part.to_json())
    part, out = run_batch(loader(blob), [], 599)  # not yet due
    assert out.events == [] and part.next_deadline() == 600
    part, out = run_batch(loader(state.encode(part.to_json())), [], 601)
    assert [e.body["event"] for e in out.events] == ["ProbeExpired"]
    assert part.next_deadline() is None


def armed_at_100(cfg: CoordinatorConfig):
    """A fresh partition under `cfg` whose timer t-1 was armed at 100 for 500 ms (due at 600)."""
    part, _ = run_batch(
        loader(state.encode(CoordinatorPartition(0, cfg).to_json()), config=cfg),
        [InputRecord(None, env("Touch", 1, {"id": 1, "timerMs": 500}), 100)],
        100,
    )
    return part


def test_request_appended_before_deadline_but_read_late_is_applied_first(probe):
    # A heartbeat appended before the session deadline can reach the stream only in the batch
    # after one that already ran past the deadline. The grace keeps that batch from firing it.
    # (A replicated request topic: a record may stay unreadable for a while, the read margin.)
    cfg = CoordinatorConfig({"coordinator.timer.grace.ms": 1000, "coordinator.timer.read.margin.ms": 1000})
    part = armed_at_100(cfg)
    assert part.next_deadline() == 1600  # deadline 600 + read margin: when a wake must be appended
    part, out = run_batch(loader(state.encode(part.to_json()), config=cfg), [], 1550)
    assert out.events == []  # batch ran at 1550 > 600, but 1550 - grace < 600
    # The late-read request (appended at 550, re-arming the timer to 1050) comes first.
    part, out = run_batch(
        loader(state.encode(part.to_json()), config=cfg),
        [InputRecord(None, env("Touch", 2, {"id": 1, "timerMs": 500}), 550)],
        1560,
    )
    assert out.events == [] and part.timers.get("t-1").deadline_ms == 1050
    part, out = run_batch(loader(state.encode(part.to_json()), config=cfg), [], 2051)
    assert [e.body["event"] for e in out.events] == ["ProbeExpired"]


ONE_REPLICA = CoordinatorConfig({"coordinator.timer.grace.ms": 1000, "coordinator.timer.read.margin.ms": 0})


def test_a_record_read_proves_time_complete_and_fires_timers_without_the_grace(probe):
    # One replica: a record is readable once appended, and Spark asked for the batch's offsets
    # after the newest record it read was appended. So a batch that read a record appended at 650
    # has every request appended before 650: the timer due at 600 fires, before that record.
    cfg = ONE_REPLICA
    part = armed_at_100(cfg)
    assert part.next_deadline() == 600  # the waker appends its wake at the deadline itself
    blob = state.encode(part.to_json())
    # Nothing read: the batch time (1550) less the grace is all that is known.
    _, out = run_batch(loader(blob, config=cfg), [], 1550)
    assert out.events == []
    # A wake appended at 600, read by a batch at 700 (the step passes its time: wakes are not applied).
    _, out = run_batch(loader(blob, config=cfg), [], 700, read_until_ms=600)
    assert [e.body["event"] for e in out.events] == ["ProbeExpired"] and out.events[0].body["timeMs"] == 600
    # A request appended at 650 (after the deadline): the timer fires first, as Kafka's would.
    part, out = run_batch(
        loader(blob, config=cfg), [InputRecord(None, env("Touch", 2, {"id": 1, "timerMs": 500}), 650)], 700
    )
    assert [e.body["event"] for e in out.events] == ["ProbeExpired"]
    assert part.component("probe").log[-1] == ["touch", 1, 650]  # re-armed after the expiry
    # A wake at 599 proves nothing about 600 yet.
    _, out = run_batch(loader(blob, config=cfg), [], 700, read_until_ms=599)
    assert out.events == []


def test_the_read_margin_holds_back_what_a_replicated_topic_may_not_show_yet(probe):
    cfg = CoordinatorConfig({"coordinator.timer.grace.ms": 1000, "coordinator.timer.read.margin.ms": 300})
    part = armed_at_100(cfg)
    assert part.next_deadline() == 900
    blob = state.encode(part.to_json())
    _, out = run_batch(loader(blob, config=cfg), [], 1000, read_until_ms=899)
    assert out.events == []
    _, out = run_batch(loader(blob, config=cfg), [], 1000, read_until_ms=900)
    assert [e.body["event"] for e in out.events] == ["ProbeExpired"]
    # Never past the batch time, whatever a record's time says.
    _, out = run_batch(loader(blob, config=cfg), [], 550, read_until_ms=5000)
    assert out.events == []


def test_without_grace_timers_fire_at_exact_deadlines(probe):
    part, _ = run_batch(loader(fresh_blob()), [InputRecord(None, env("Touch", 1, {"id": 1, "timerMs": 500}), 100)], 100)
    part, out = run_batch(loader(state.encode(part.to_json())), [], 600)
    assert out.events[0].body["timeMs"] == 600


def test_api_error_answers_and_leaves_no_outputs(probe):
    part, out = run_batch(loader(fresh_blob()), [InputRecord(None, env("Touch", 1, {"id": 1, "fail": True}), 10)], 10)
    assert out.responses[0].body["errorCode"] == Errors.INVALID_GROUP_ID.code
    assert out.responses[0].body["errorMessage"] == "told to fail"
    # Nothing of the handler's result was applied: no record, no log entry, no timer.
    assert out.records == [] and out.events == []
    assert part.component("probe").log == [] and part.next_deadline() is None


def test_handler_crash_is_isolated_and_state_is_not_corrupted(probe):
    recs = [
        InputRecord(None, env("Touch", 1, {"id": 1}), 10, 0, 0),
        InputRecord(None, env("Boom", 2, {"id": 2}), 20, 0, 1),
        InputRecord(None, env("Touch", 3, {"id": 3}), 30, 0, 2),
    ]
    part, out = run_batch(loader(fresh_blob()), recs, 100)
    assert part.component("probe").log == [["touch", 1, 10], ["touch", 3, 30]]  # no half change
    codes = {r.reply.correlation_id: r.body["errorCode"] for r in out.responses}
    assert codes == {1: 0, 2: Errors.UNKNOWN_SERVER_ERROR.code, 3: 0}
    failed = [e.body for e in out.events if e.body["event"] == "RequestFailed"]
    assert failed and "ZeroDivisionError" in failed[0]["detail"]
    # Deterministic: a replay of the same batch gives the same outputs.
    part2, out2 = run_batch(loader(fresh_blob()), recs, 100)
    assert part2.to_json() == part.to_json()
    assert [r.body for r in out2.responses] == [r.body for r in out.responses]


def test_crashing_timer_is_dropped_not_retried_forever(probe):
    recs = [
        InputRecord(None, env("Touch", 1, {"id": 1, "timerMs": 5, "crashTimer": True}), 10, 0, 0),
        InputRecord(None, env("Touch", 2, {"id": 2}), 50, 0, 1),
    ]
    part, out = run_batch(loader(fresh_blob()), recs, 100)
    assert part.component("probe").log == [["touch", 1, 10], ["touch", 2, 50]]
    assert part.next_deadline() is None
    names = [e.body["event"] for e in out.events]
    assert "TimerDropped" in names and "TimerFailed" in names


def test_bad_input_gets_kafka_errors_and_never_touches_state(probe):
    blob = fresh_blob()
    before = state.decode(*blob)
    recs = [
        InputRecord("k", b"{not json", 1, 0, 0),
        InputRecord("k", b'{"correlationId": 7, "apiKey": "Touch", "request": {', 1, 0, 1),
        InputRecord("k", env("NoSuchApi", 8, {}), 1, 0, 2),
        InputRecord("k", env("Touch", 9, {"id": 1}, version=3), 1, 0, 3),
        InputRecord("k", env("Touch", 10, {}), 1, 0, 4),
        InputRecord("k", env("Touch", 11, {"id": "one"}), 1, 0, 5),
        InputRecord("k", env("Touch", 12, {"id": 2**40}), 1, 0, 6),
        InputRecord("k", env("Touch", 13, {"id": 1, "fail": 1}), 1, 0, 7),
        InputRecord("k", b'{"correlationId": 14, "apiKey": "Touch"}' + b" " * 2000, 1, 0, 8, value_size=5 << 20),
        InputRecord("k", json.dumps({"correlationId": "x", "apiKey": "Touch"}).encode(), 1, 0, 9),
        InputRecord("k", b"[" * 100000 + b"]" * 100000, 1, 0, 10),
        InputRecord("k", None, 1, 0, 11),
        InputRecord(
            "k", b'{"correlationId": 15, "apiKey": "Touch", "apiVersion": 0, "request": {"id": NaN}}', 1, 0, 12
        ),
        InputRecord("k", env("Touch", 16, {"id": 1}).replace(b'"c"', b'"\\ud800"'), 1, 0, 13),
    ]
    part, out = run_batch(loader(blob), recs, 5)
    codes = {r.reply.correlation_id: (r.body["errorCode"], r.body["errorMessage"]) for r in out.responses}
    assert codes[7][0] == 42 and "malformed JSON" in codes[7][1]
    assert codes[8] == (42, "unknown apiKey 'NoSuchApi'")
    assert codes[9][0] == Errors.UNSUPPORTED_VERSION.code
    assert codes[10] == (42, "unable to locate field 'id', which is mandatory in version 0")
    assert codes[11][0] == 42 and "integer" in codes[11][1]
    assert codes[12][0] == 42 and "out of range" in codes[12][1]
    assert codes[13][0] == 42 and "boolean" in codes[13][1]
    assert codes[14][0] == 42 and "exceeds the limit" in codes[14][1]
    assert codes[15][0] == 42
    assert codes[16][0] == 42 and "clientId" in codes[16][1]
    assert set(codes) == {7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
    rejected = [e.body for e in out.events if e.body["event"] == "RequestRejected"]
    assert len(rejected) == 4  # no correlation id: not JSON, bad id type, too deep, no value
    assert {e["requestOffset"] for e in rejected} == {0, 9, 10, 11}
    assert part.logical_state() == CoordinatorPartition(0, CoordinatorConfig(), before).logical_state()


def test_reply_to_must_match_the_allowed_pattern(probe):
    raw = json.loads(env("Touch", 1, {"id": 1}))
    raw["replyTo"] = "__consumer_offsets"
    ok = dict(raw, correlationId=2, replyTo="coordinator-responses.team-a")
    part, out = run_batch(
        loader(fresh_blob()),
        [InputRecord(None, json.dumps(raw).encode(), 1, 0, 0), InputRecord(None, json.dumps(ok).encode(), 1, 0, 1)],
        5,
    )
    by_cid = {r.reply.correlation_id: r for r in out.responses}
    assert by_cid[1].body["errorCode"] == Errors.INVALID_REQUEST.code and by_cid[1].reply.reply_to is None
    assert by_cid[2].body["errorCode"] == 0 and by_cid[2].reply.reply_to == "coordinator-responses.team-a"
    assert part.component("probe").log == [["touch", 1, 1]]


def test_state_formats_round_trip_and_old_format_still_decodes(probe):
    part, _ = run_batch(loader(fresh_blob()), [InputRecord(None, env("Touch", 1, {"id": 1, "timerMs": 9}), 1)], 2)
    snap = part.to_json()
    v1 = state.encode(snap, fmt=state.codec.FORMAT_JSON)
    v2 = state.encode(snap, fmt=state.codec.FORMAT_ZLIB_JSON)
    v3 = state.encode(snap)
    assert v1[0] == 1 and v2[0] == 2 and v3[0] == state.CURRENT_FORMAT == 3
    assert state.decode(*v1) == state.decode(*v2) == state.decode(*v3) == snap
    with pytest.raises(ValueError):
        state.decode(99, b"")


def test_format_1_payload_written_by_the_first_release_decodes():
    # Bytes exactly as the first release wrote them (format 1, plain JSON, schema 1).
    legacy = (
        b'{"schema":1,"partition":7,"clock":123,"timers":{"x":[500,"probe-expire",{"id":1}]},'
        b'"components":{"find_coordinator":{}}}'
    )
    snap = state.decode(1, legacy)
    part = CoordinatorPartition(7, CoordinatorConfig(), snap)
    assert part.clock_ms == 123 and part.timers.next_deadline() == 500


def test_deferred_work_runs_at_the_start_of_the_next_batch(probe):
    class Deferring(Probe):
        name = "deferring"
        HANDLERS = {"Touch2": lambda c, request: c.touch2(request)}
        TIMER_HANDLERS = {"deferred-done": lambda c, timer: c.done(timer)}
        REPLAYERS: dict = {}

        def touch2(self, request):
            return CoordinatorResult(response={"errorCode": 0}).defer(
                "d-1", "deferred-done", {"id": request.body["id"]}
            )

        def done(self, timer):
            return CoordinatorResult().emit("d", "DeferredRan", id=timer.payload["id"])

    CoordinatorPartition.extra_components = (Probe, Deferring)  # the fixture's monkeypatch restores it
    register(ApiSpec("Touch2", 9002, 0, 0, Struct(F("id", "int32")), component="deferring"))
    try:
        part, out = run_batch(loader(fresh_blob()), [InputRecord(None, env("Touch2", 1, {"id": 4}), 10)], 5000)
        assert out.events == []  # not in the batch that deferred it
        assert part.next_deadline() == 5001  # ask Spark for the next batch
        part, out = run_batch(loader(state.encode(part.to_json())), [], 5200)
        assert [e.body["event"] for e in out.events] == ["DeferredRan"]
        assert part.next_deadline() is None
    finally:
        unregister("Touch2")


WAKES = CoordinatorConfig(
    {
        "coordinator.timer.grace.ms": 1000,
        "coordinator.timer.read.margin.ms": 0,
        "coordinator.timer.batch.time.horizon": False,
    }
)


def test_with_wakes_only_what_a_batch_read_fires_timers_so_a_catch_up_fires_none_early(probe):
    # After downtime, the backlog is read over several batches whose batch time is now. A timer due
    # at 600 must not fire in the first of them if it read only records up to 500: a request
    # appended at 550 (read by the next batch) re-arms it first.
    cfg = WAKES
    part = armed_at_100(cfg)
    part, out = run_batch(
        loader(state.encode(part.to_json()), config=cfg),
        [InputRecord(None, env("Touch", 2, {"id": 9, "timerMs": 500}), 500)],
        1_000_000,
    )
    assert out.events == []  # batch time is far past 600, but the batch read only to 500
    part, out = run_batch(
        loader(state.encode(part.to_json()), config=cfg),
        [InputRecord(None, env("Touch", 3, {"id": 1, "timerMs": 500}), 550)],
        1_000_100,
    )
    assert out.events == [] and part.timers.get("t-1").deadline_ms == 1050
    # Nothing read at all (a batch of forged records only): nothing fires.
    _, out = run_batch(loader(state.encode(part.to_json()), config=cfg), [], 2_000_000)
    assert out.events == []
    # A wake appended at 1050 fires it (after id 9's, due at 1000).
    _, out = run_batch(loader(state.encode(part.to_json()), config=cfg), [], 2_000_000, read_until_ms=1050)
    assert [(e.body["event"], e.body["id"]) for e in out.events] == [("ProbeExpired", 9), ("ProbeExpired", 1)]
