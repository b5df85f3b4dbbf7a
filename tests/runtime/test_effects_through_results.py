"""One way to cause an effect: a component returns a `CoordinatorResult` and the runtime applies it.

The runtime's check (`CoordinatorPartition.verify_effects`, on in every core test through
tests/conftest.py) fails any handler, timer handler, replayer or load hook that queues an output,
sets or cancels a timer or defers work itself. These tests prove the check bites, and that the
partition offers components no at-once effect API to begin with."""

from __future__ import annotations

import pytest

from coordinator import CoordinatorPartition
from coordinator.api import ApiSpec, register, unregister
from coordinator.messages import ReplyTo, Request, StateRecord
from coordinator.records import record_key
from coordinator.result import CoordinatorResult
from coordinator.schema import F, Struct
from coordinator.timers import Timer


class AtOnce:
    """A component that breaks the rule in each of the ways a component could."""

    name = "at-once"
    HANDLERS = {
        "SetTimerItself": lambda c, request: c.p.timers.schedule("t", c.p.clock_ms + 5, "at-once-timer"),
        "ReturnsIt": lambda c, request: CoordinatorResult(response={"errorCode": 0}).schedule(
            "t", c.p.clock_ms + 5, "at-once-timer"
        ),
    }
    TIMER_HANDLERS = {"at-once-timer": lambda c, timer: c.p.deferred.__setitem__("d", ["at-once-timer", {}])}
    REPLAYERS = {"AtOnceLog": lambda c, kind, ids, value: c.p.emit_event("k", "FromAReplayer")}

    def __init__(self, partition):
        self.p = partition

    def to_json(self):
        return {}

    def load_json(self, data):
        pass

    def after_replay(self):
        self.p.timers.schedule("loaded", self.p.clock_ms + 5, "at-once-timer")


@pytest.fixture
def part(monkeypatch):
    monkeypatch.setattr(CoordinatorPartition, "extra_components", (AtOnce,))
    for i, api in enumerate(("SetTimerItself", "ReturnsIt")):
        register(ApiSpec(api, 9100 + i, 0, 0, Struct(F("id", "int32")), component="at-once"))
    yield CoordinatorPartition(0)
    for api in ("SetTimerItself", "ReturnsIt"):
        unregister(api)


def request(api: str) -> Request:
    return Request(ReplyTo(api, 0, 1, "c", None), {"id": 1}, time_ms=0)


def test_a_handler_returning_its_effects_passes(part):
    part.handle(request("ReturnsIt"))
    assert "t" in part.timers
    assert [r.body for r in part.drain().responses] == [{"errorCode": 0}]


def test_a_handler_setting_a_timer_itself_fails(part):
    with pytest.raises(AssertionError, match="SetTimerItself's handler applied an effect itself"):
        part.handle(request("SetTimerItself"))


def test_a_timer_handler_deferring_work_itself_fails(part):
    with pytest.raises(AssertionError, match="timer handler 'at-once-timer' applied an effect itself"):
        part.fire(Timer("t", 0, "at-once-timer", {}))


def test_a_replayer_emitting_an_event_fails(part):
    with pytest.raises(AssertionError, match="the replayer of 'AtOnceLog' records applied an effect itself"):
        part.replay(StateRecord(record_key("AtOnceLog", 1), {}))


def test_a_load_hook_setting_a_timer_itself_fails(part):
    with pytest.raises(AssertionError, match="at-once's after_replay applied an effect itself"):
        CoordinatorPartition.from_records(0, [])


def test_the_partition_offers_components_no_at_once_effects():
    # What is left of the partition's effect methods is the runtime's own (rejections, failures).
    for name in ("append_record", "send_request", "write_data", "schedule", "cancel", "defer"):
        assert not hasattr(CoordinatorPartition, name), name


def test_components_are_given_their_collaborators_not_looking_them_up():
    """A component calls the coordinators coordinators.py gives it; a lookup by name (the runtime's
    `component(name)`) would hide the dependency from its imports and its constructor."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "coordinator"
    lookups = [
        f"{path.relative_to(root)}:{n}"
        for path in root.rglob("*.py")
        if path.name not in ("runtime.py", "batch.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\.component\(|\.components\b", line)
    ]
    assert lookups == []
