"""The Spark state function, called as applyInPandasWithState calls it (pandas frames in, pandas
frames out, a GroupState-like object), without Spark: rows, topics, partitions, timeout, replay."""
from __future__ import annotations

import json

import pandas as pd

from coordinator import CoordinatorConfig
from coordinator.metadata import BROADCAST_KEY
from streaming.step import OUTPUT_COLUMNS, StepSettings, make_step

SETTINGS = StepSettings(coordinator=CoordinatorConfig().to_json(), responses_topic="resp",
                        events_topic="ev", state_log_topic="log", requests_topic="req")


class GroupStateStandIn:
    """What the state function uses of pyspark's GroupState."""

    def __init__(self, value=None, now=10_000):
        self.value, self.now, self.timeout = value, now, None

    @property
    def exists(self):
        return self.value is not None

    @property
    def get(self):
        return self.value

    def update(self, value):
        self.value = value

    def getCurrentProcessingTimeMs(self):
        return self.now

    def setTimeoutDuration(self, ms):
        assert isinstance(ms, int) and ms > 0
        self.timeout = ms


def frame(*rows):
    return pd.DataFrame(rows, columns=["key", "value", "value_size", "ts_ms", "src_partition", "src_offset"])


def env(api, version, cid, body, client="c1"):
    return json.dumps({"apiKey": api, "apiVersion": version, "correlationId": cid, "clientId": client,
                       "request": body}).encode()


def run(step, cp, frames, gstate):
    out = list(step((cp,), iter(frames), gstate))
    return pd.concat(out) if out else pd.DataFrame(columns=OUTPUT_COLUMNS)


def test_responses_events_and_state_log_rows():
    step = make_step(SETTINGS)
    g = GroupStateStandIn()
    commit = {"groupId": "my-group", "generationIdOrMemberEpoch": -1, "memberId": "", "groupInstanceId": None,
              "topics": [{"name": "t", "partitions": [{"partitionIndex": 0, "committedOffset": 5,
                                                       "committedLeaderEpoch": -1, "committedMetadata": ""}]}]}
    out = run(step, 12, [frame(("my-group", env("OffsetCommit", 9, 1, commit), 100, 9_000, 0, 0),
                               ("my-group", b"{broken", 7, 9_001, 0, 1))], g)
    by_topic = {t: rows for t, rows in out.groupby("topic")}
    resp = by_topic["resp"].iloc[0]
    assert resp["key"] == "c1" and pd.isna(resp["partition"])
    assert json.loads(resp["value"])["response"]["topics"][0]["partitions"][0]["errorCode"] == 0
    assert set(by_topic["log"]["partition"]) == {12}  # state log: the coordinator partition
    assert json.loads(by_topic["ev"].iloc[-1]["value"])["event"] == "RequestRejected"
    assert g.exists and g.timeout is not None  # the offsets sweep timer re-armed the timeout


def test_timeout_call_and_replay_are_deterministic():
    step = make_step(SETTINGS)
    g = GroupStateStandIn()
    run(step, 3, [frame((BROADCAST_KEY, env("UpdateMetadata", 0, 1, {"topicStates": []}), 60, 1, 0, 0))], g)
    before = g.value
    a = run(step, 3, [frame()], GroupStateStandIn(before, now=20_000))  # Spark's timeout call: one empty frame
    b = run(step, 3, [frame()], GroupStateStandIn(before, now=20_000))
    assert a.equals(b)

