"""Timers without no-data micro-batches: each call of the state function reports its partition's next
deadline; the driver's waker (streaming/timer_waker.py) wakes a partition when it falls due, and the
state function drops the wake record before the core."""

from __future__ import annotations

import json

import pandas as pd

from coordinator.routing import coordinator_partition
from streaming.step import make_step
from streaming.timer_waker import REWAKE_MS, Deadlines, is_wake, wake_key

from .test_step import JOIN, TRUSTED, GroupStateStandIn, channel_frame, env, frame, run, signed


def deadline_rows(out: pd.DataFrame) -> list[dict]:
    return [json.loads(v) for v in out[out.topic == TRUSTED.timers_topic]["value"]]


def test_every_call_reports_the_partitions_next_deadline_keyed_by_partition():
    step = make_step(TRUSTED)
    g = GroupStateStandIn(now=10_000)
    out = run(step, 12, [frame(("my-group", env("JoinGroup", 9, 1, JOIN), 100, 9_000, 0, 0))], g)
    [row] = deadline_rows(out)
    # The pending member's session deadline (appended at 9 000 + 6 000): what Spark's timeout says too.
    assert row == {"coordinatorPartition": 12, "nextDeadlineMs": 10_000 + g.timeout, "batchTimeMs": 10_000}
    assert list(out[out.topic == TRUSTED.timers_topic]["key"]) == ["12"]
    # Once the member expired, nothing is scheduled but the offsets sweep; a partition with no timer
    # at all reports null.
    out = run(step, 12, [frame()], GroupStateStandIn(g.value, now=16_000))
    [row] = deadline_rows(out)
    assert row["batchTimeMs"] == 16_000 and row["nextDeadlineMs"] > 16_000
    out = run(step, 3, [channel_frame()], GroupStateStandIn())
    assert deadline_rows(out) == [{"coordinatorPartition": 3, "nextDeadlineMs": None, "batchTimeMs": 10_000}]


def test_a_wake_record_fires_the_due_timers_like_spark_s_timeout_and_answers_nothing():
    step = make_step(TRUSTED)
    g = GroupStateStandIn(now=10_000)
    run(step, 12, [frame(("my-group", env("JoinGroup", 9, 1, JOIN), 100, 9_000, 0, 0))], g)
    after_join = g.value
    key, value = wake_key(12, 50), b'{"wake":12}'
    wake = channel_frame((key, value, 16_000, 0, 7, *signed(key, value, None)))  # a wake is not stamped
    woken = run(step, 12, [wake], GroupStateStandIn(after_join, now=16_000))
    timed_out = run(step, 12, [frame()], GroupStateStandIn(after_join, now=16_000))
    assert not woken.empty and woken.equals(timed_out)  # the same outputs as Spark's timeout call
    assert "resp" not in set(woken.topic)
    assert not any(json.loads(v)["event"] == "RequestRejected" for v in woken[woken.topic == "ev"]["value"])


def test_a_client_record_with_a_wake_key_is_a_request_like_any_other():
    step = make_step(TRUSTED)
    key = wake_key(12, 50)
    body = {**JOIN, "groupId": key}
    value = env("JoinGroup", 9, 1, body)
    out = run(step, 12, [frame((key, value, len(value), 9_000, 0, 0))], GroupStateStandIn())
    [answer] = [json.loads(v) for v in out[out.topic == "resp"]["value"]]
    assert answer["correlationId"] == 1
    assert not is_wake(key, internal=False) and is_wake(key, internal=True)


def test_wake_keys_route_to_their_partition():
    for n in (1, 10, 50):
        assert [coordinator_partition(wake_key(p, n), n) for p in range(n)] == list(range(n))


def test_deadlines_wake_each_due_partition_once_and_again_only_if_it_stays_silent():
    d = Deadlines()
    d.report(1, 5_000, 1_000)
    d.report(2, 20_000, 1_000)
    d.report(3, None, 1_000)
    assert d.next_wake_ms(1_000) == 5_000
    assert d.due(4_999) == []
    assert d.due(5_000) == [1]
    d.woke([1], 5_000)
    assert d.due(5_100) == []  # woken: not again while its batch runs
    assert d.next_wake_ms(5_100) == 5_000 + REWAKE_MS
    # The batch it started reports the partition's next deadline: woken for that one only later.
    d.report(1, 7_000, 5_200)
    assert d.due(6_000) == [] and d.due(7_000) == [1]
    d.woke([1], 7_000)
    # No report follows (a lost wake record, a failed batch): woken again after REWAKE_MS.
    assert d.due(7_000 + REWAKE_MS - 1) == []
    assert d.due(7_000 + REWAKE_MS) == [1]
    # A report from an older batch (a late duplicate) changes nothing.
    d.report(2, 3_000, 900)
    assert d.next[2] == 20_000
    # A partition with nothing scheduled is never woken.
    d.report(1, None, 8_000)
    d.report(2, None, 8_000)
    assert d.due(10**12) == [] and d.next_wake_ms(0) is None


class _Sent:
    def __init__(self):
        self.records: list[tuple] = []

    def send(self, topic, key, value, headers):
        self.records.append((topic, key, json.loads(value)))

    def flush(self):
        pass


class _NoRecords:
    def poll(self, timeout_ms):
        return {}


def test_the_waker_holds_due_wakes_while_the_query_catches_up():
    # A wake appended now lets its batch fire every timer due by now: while a backlog is still being
    # read over several batches, requests appended before those deadlines may be unread.
    from streaming.timer_waker import TimerWaker

    caught_up = [False]
    waker = TimerWaker(
        "unused:9092", "timers", "internal", 50, b"k" * 32, clock=lambda: 10.0, caught_up=lambda: caught_up[0]
    )
    waker._consumer, waker._producer = _NoRecords(), _Sent()
    waker.deadlines.report(7, 9_000, 8_000)
    waker.run_once()
    assert waker._producer.records == [] and waker.wakes_sent == 0
    caught_up[0] = True
    waker.run_once()
    [(topic, key, value)] = waker._producer.records
    assert topic == "internal" and key == wake_key(7, 50).encode() and value["wake"] == 7
