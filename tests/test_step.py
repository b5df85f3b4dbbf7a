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


def test_timeout_call_fires_due_timers_and_replays_identically():
    step = make_step(SETTINGS)
    g = GroupStateStandIn(now=10_000)
    join = {"groupId": "my-group", "sessionTimeoutMs": 6000, "rebalanceTimeoutMs": 6000, "memberId": "",
            "groupInstanceId": None, "protocolType": "consumer",
            "protocols": [{"name": "range", "metadata": ""}], "reason": None}
    out = run(step, 12, [frame(("my-group", env("JoinGroup", 9, 1, join), 100, 9_000, 0, 0))], g)
    assert json.loads(out[out.topic == "resp"].iloc[0]["value"])["response"]["errorCode"] == 79  # MEMBER_ID_REQUIRED
    after_join = g.value
    # Spark's timeout call: one empty frame, at a batch time past the pending member's session.
    replays = [run(step, 12, [frame()], GroupStateStandIn(after_join, now=16_000)) for _ in range(2)]
    assert not replays[0].empty and replays[0].equals(replays[1])
    # The Spark timeout was re-armed at the pending member's session deadline (appended at 9 000,
    # 6 000 ms session), relative to the batch time 10 000.
    assert g.timeout == (9_000 + 6_000) - 10_000


def test_records_too_large_for_the_sink_never_reach_it():
    small = StepSettings(**{**SETTINGS.__dict__, "max_record_bytes": 1500})
    step = make_step(small)
    g = GroupStateStandIn()
    keys = [f"k{i}" for i in range(20)]
    hostile_key = "x" * 5000
    out = run(step, 0, [frame(("g", env("FindCoordinator", 4, 1, {"keyType": 0, "coordinatorKeys": keys}), 100, 1, 0, 0),
                              (hostile_key, b"not json", 8, 2, 0, 1))], g)
    sizes = [len(v or b"") + len(k.encode()) for k, v in zip(out["key"], out["value"])]
    assert max(sizes) <= 1500
    resp = json.loads(out[out.topic == "resp"].iloc[0]["value"])["response"]
    assert resp["errorCode"] == -1 and "larger than 1500 bytes" in resp["errorMessage"]
    events = [json.loads(v) for v in out[out.topic == "ev"]["value"]]
    assert {e["event"] for e in events} == {"RequestRejected", "RecordTooLarge"}
    assert all(len(k) <= 1025 for k in out[out.topic == "ev"]["key"])
