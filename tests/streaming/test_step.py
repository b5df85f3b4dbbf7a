"""The Spark state function, called as applyInPandasWithState calls it (pandas frames in, pandas
frames out, a GroupState-like object), without Spark: rows, topics, partitions, timeout, replay."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd

import state
from coordinator import CoordinatorConfig
from coordinator.errors import Errors
from coordinator.metadata import BROADCAST_KEY
from coordinator.routing import coordinator_partition
from streaming.step import OUTPUT_COLUMNS, StepSettings, make_step, records_from_frames
from streaming.trust import MAC_HEADER, STAMP_HEADER, format_stamp, key_path, load_or_create_key, sign

SETTINGS = StepSettings(
    coordinator=CoordinatorConfig().to_json(),
    responses_topic="resp",
    events_topic="ev",
    state_log_topic="log",
    requests_topic="req",
)


# A classic consumer's first JoinGroup (no member id: MEMBER_ID_REQUIRED, then pending for 6 s).
JOIN = {
    "groupId": "my-group",
    "sessionTimeoutMs": 6000,
    "rebalanceTimeoutMs": 6000,
    "memberId": "",
    "groupInstanceId": None,
    "protocolType": "consumer",
    "protocols": [{"name": "range", "metadata": ""}],
    "reason": None,
}


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
    return json.dumps(
        {"apiKey": api, "apiVersion": version, "correlationId": cid, "clientId": client, "request": body}
    ).encode()


def run(step, cp, frames, gstate):
    out = list(step((cp,), iter(frames), gstate))
    return pd.concat(out) if out else pd.DataFrame(columns=OUTPUT_COLUMNS)


def test_responses_events_and_state_log_rows():
    step = make_step(SETTINGS)
    g = GroupStateStandIn()
    commit = {
        "groupId": "my-group",
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partitionIndex": 0, "committedOffset": 5, "committedLeaderEpoch": -1, "committedMetadata": ""}
                ],
            }
        ],
    }
    out = run(
        step,
        12,
        [
            frame(
                ("my-group", env("OffsetCommit", 9, 1, commit), 100, 9_000, 0, 0),
                ("my-group", b"{broken", 7, 9_001, 0, 1),
            )
        ],
        g,
    )
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
    out = run(step, 12, [frame(("my-group", env("JoinGroup", 9, 1, JOIN), 100, 9_000, 0, 0))], g)
    assert (
        json.loads(out[out.topic == "resp"].iloc[0]["value"])["response"]["errorCode"] == Errors.MEMBER_ID_REQUIRED.code
    )
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
    out = run(
        step,
        0,
        [
            frame(
                ("g", env("FindCoordinator", 4, 1, {"keyType": 0, "coordinatorKeys": keys}), 100, 1, 0, 0),
                (hostile_key, b"not json", 8, 2, 0, 1),
            )
        ],
        g,
    )
    sizes = [len(v or b"") + len(k.encode()) for k, v in zip(out["key"], out["value"], strict=True)]
    assert max(sizes) <= 1500
    resp = json.loads(out[out.topic == "resp"].iloc[0]["value"])["response"]
    assert resp["errorCode"] == Errors.UNKNOWN_SERVER_ERROR.code and "larger than 1500 bytes" in resp["errorMessage"]
    events = [json.loads(v) for v in out[out.topic == "ev"]["value"]]
    assert {e["event"] for e in events} == {"RequestRejected", "RecordTooLarge"}
    assert all(len(k) <= 1025 for k in out[out.topic == "ev"]["key"])


# ====================================================================== the trust boundary
_KEY_DIR = tempfile.mkdtemp(prefix="step-key-")
SECRET = load_or_create_key(Path(_KEY_DIR))
TRUSTED = StepSettings(
    **{
        **SETTINGS.__dict__,
        "internal_topic": "int",
        "dead_letters_topic": "dlq",
        "internal_key_file": str(key_path(_KEY_DIR)),
    }
)
BROADCAST_OWNER = coordinator_partition(BROADCAST_KEY, 50)


def channel_frame(*rows):
    """Internal-channel rows as the query hands them over: (key, value, ts, partition, offset, mac,
    stamp), the MAC and stamp headers as strings (or None)."""
    return pd.DataFrame(
        [(k, v, len(v or b""), ts, p, o, True, True, mac, st) for k, v, ts, p, o, mac, st in rows],
        columns=[
            "key",
            "value",
            "value_size",
            "ts_ms",
            "src_partition",
            "src_offset",
            "key_valid",
            "internal",
            "mac",
            "stamp",
        ],
    )


def signed(key: str, value: bytes, stamp: bytes | None, secret: bytes = SECRET) -> tuple[str, str | None]:
    return sign(secret, key.encode(), value, stamp).decode(), None if stamp is None else stamp.decode()


def metadata(cid: int, topics: dict[str, int]) -> bytes:
    states = [{"topicName": t, "numPartitions": n} for t, n in topics.items()]
    return env("UpdateMetadata", 0, cid, {"topicStates": states})


def test_forged_internal_records_never_reach_the_core_and_are_reported():
    step = make_step(TRUSTED)
    g = GroupStateStandIn()
    meta = metadata(1, {"orders": 3})
    stamp = format_stamp("metadata-publisher", 1, 0)
    for mac, st in (
        (None, None),  # no MAC
        ("0" * 64, None),  # a wrong one
        signed(BROADCAST_KEY, meta, stamp, secret=b"x" * 32),  # another key's
        (signed(BROADCAST_KEY, meta, stamp)[0], format_stamp("metadata-publisher", 1, 1).decode()),  # stamp changed
        (signed(BROADCAST_KEY, meta, None)[0], stamp.decode()),  # stamp added after signing
    ):
        out = run(step, BROADCAST_OWNER, [channel_frame((BROADCAST_KEY, meta, 1, 0, 0, mac, st))], g)
        [event] = [json.loads(v) for v in out[out.topic == "ev"]["value"]]
        assert event["event"] == "ForgedInternalRecord" and event["requestOffset"] == 0
        assert state.decode(*g.value)["components"]["metadata"]["available"] is False
    # Another partition drops the forged broadcast silently: it is reported once, by the key's owner.
    other = GroupStateStandIn()
    out = run(step, (BROADCAST_OWNER + 1) % 50, [channel_frame((BROADCAST_KEY, meta, 1, 0, 0, None, None))], other)
    assert not [v for v in out[out.topic == "ev"]["value"] if b"Forged" in v]
    # The same record, signed, is applied.
    out = run(
        step, BROADCAST_OWNER, [channel_frame((BROADCAST_KEY, meta, 2, 0, 1, *signed(BROADCAST_KEY, meta, stamp)))], g
    )
    assert state.decode(*g.value)["components"]["metadata"]["topics"] == {"orders": 3}


def test_a_replayed_metadata_broadcast_never_moves_the_metadata_back():
    step = make_step(TRUSTED)
    g = GroupStateStandIn()
    old, new = metadata(1, {"orders": 3}), metadata(2, {"orders": 3, "payments": 1})
    first, second = format_stamp("metadata-publisher", 1, 0), format_stamp("metadata-publisher", 1, 1)
    run(step, BROADCAST_OWNER, [channel_frame((BROADCAST_KEY, old, 1, 0, 0, *signed(BROADCAST_KEY, old, first)))], g)
    run(step, BROADCAST_OWNER, [channel_frame((BROADCAST_KEY, new, 2, 0, 1, *signed(BROADCAST_KEY, new, second)))], g)
    # A genuine copy of the first broadcast, written again: refused and reported.
    out = run(
        step, BROADCAST_OWNER, [channel_frame((BROADCAST_KEY, old, 3, 0, 2, *signed(BROADCAST_KEY, old, first)))], g
    )
    assert state.decode(*g.value)["components"]["metadata"]["topics"] == {"orders": 3, "payments": 1}
    [event] = [json.loads(v) for v in out[out.topic == "ev"]["value"]]
    assert event["event"] == "ReplayedInternalRecord" and event["requestOffset"] == 2
    assert (event["publisher"], event["epoch"], event["sequence"]) == ("metadata-publisher", 1, 0)
    assert (event["lastEpoch"], event["lastSequence"]) == (1, 1)
    # A restarted publisher (a new epoch, its sequence from 0 again) is not refused.
    restarted = format_stamp("metadata-publisher", 2, 0)
    newest = metadata(1, {"orders": 3, "payments": 2})
    out = run(
        step,
        BROADCAST_OWNER,
        [channel_frame((BROADCAST_KEY, newest, 4, 0, 3, *signed(BROADCAST_KEY, newest, restarted)))],
        g,
    )
    assert state.decode(*g.value)["components"]["metadata"]["topics"] == {"orders": 3, "payments": 2}
    assert not [v for v in out[out.topic == "ev"]["value"] if b"Replayed" in v]
    # ... and after it, the previous epoch's newest broadcast is stale too.
    out = run(
        step, BROADCAST_OWNER, [channel_frame((BROADCAST_KEY, new, 5, 0, 4, *signed(BROADCAST_KEY, new, second)))], g
    )
    assert state.decode(*g.value)["components"]["metadata"]["topics"] == {"orders": 3, "payments": 2}
    assert [json.loads(v)["event"] for v in out[out.topic == "ev"]["value"]] == ["ReplayedInternalRecord"]


def test_update_acls_is_taken_only_signed_and_stamped_by_the_acl_publisher():
    """UpdateAcls through the state function: the MAC and the stamp's publisher decide, a replay
    is refused, and the snapshot is in the stored state."""
    step = make_step(TRUSTED)
    g = GroupStateStandIn()
    acl = {
        "resourceType": 3,
        "resourceName": "g",
        "patternType": 3,
        "principal": "User:alice",
        "host": "*",
        "operation": 3,
        "permissionType": 3,
    }
    acls = env("UpdateAcls", 0, 1, {"acls": [acl], "superUsers": ["User:admin"], "allowEveryoneIfNoAclFound": False})
    first = format_stamp("acl-publisher", 1, 0)

    def stored_acls():
        return state.decode(*g.value)["components"].get("acls", {})

    # Unsigned: dropped before the core, reported.
    out = run(step, BROADCAST_OWNER, [channel_frame((BROADCAST_KEY, acls, 1, 0, 0, None, first.decode()))], g)
    assert [json.loads(v)["event"] for v in out[out.topic == "ev"]["value"]] == ["ForgedInternalRecord"]
    assert stored_acls() == {}
    # Signed, but stamped by another publisher: the core refuses it.
    other = format_stamp("metadata-publisher", 1, 0)
    out = run(
        step, BROADCAST_OWNER, [channel_frame((BROADCAST_KEY, acls, 2, 0, 1, *signed(BROADCAST_KEY, acls, other)))], g
    )
    assert [json.loads(v)["event"] for v in out[out.topic == "ev"]["value"]] == ["ForgedInternalRecord"]
    assert stored_acls() == {}
    # The ACL publisher's: applied and kept.
    out = run(
        step, BROADCAST_OWNER, [channel_frame((BROADCAST_KEY, acls, 3, 0, 2, *signed(BROADCAST_KEY, acls, first)))], g
    )
    assert stored_acls()["acls"] == [[3, "g", 3, "User:alice", "*", 3, 3]]
    # A genuine copy written again later, after a newer snapshot: refused, the newer one stays.
    empty = env("UpdateAcls", 0, 2, {"acls": [], "superUsers": [], "allowEveryoneIfNoAclFound": False})
    second = format_stamp("acl-publisher", 1, 1)
    run(
        step,
        BROADCAST_OWNER,
        [channel_frame((BROADCAST_KEY, empty, 4, 0, 3, *signed(BROADCAST_KEY, empty, second)))],
        g,
    )
    out = run(
        step, BROADCAST_OWNER, [channel_frame((BROADCAST_KEY, acls, 5, 0, 4, *signed(BROADCAST_KEY, acls, first)))], g
    )
    assert [json.loads(v)["event"] for v in out[out.topic == "ev"]["value"]] == ["ReplayedInternalRecord"]
    assert stored_acls()["acls"] == []


def test_requests_between_partitions_go_to_the_internal_channel_signed_and_stamped():
    from coordinator.messages import InternalRequest, Outputs
    from streaming.step import output_rows

    out = Outputs(
        requests=[InternalRequest("g", {"apiKey": "WriteTxnMarkers", "apiVersion": 2}, stamp=("partition-3", 7, 4))]
    )
    [row] = output_rows(out, 3, TRUSTED)
    stamp = b"partition-3/7/4"
    assert row[0] == "int" and row[4] == [
        {"key": MAC_HEADER, "value": sign(SECRET, b"g", row[2], stamp)},
        {"key": STAMP_HEADER, "value": stamp},
    ]
    # What the receiving partition's state function makes of the row: genuine, with its stamp.
    mac, st = row[4][0]["value"].decode(), row[4][1]["value"].decode()
    records, forged = records_from_frames(iter([channel_frame(("g", row[2], 1, 0, 0, mac, st))]), TRUSTED, 0)
    assert not forged and records[0].stamp == ("partition-3", 7, 4) and records[0].internal


def test_the_key_is_not_pickled_into_the_state_function():
    """The function Spark ships to the workers (and keeps in its plan) names the key's file only."""
    from pyspark import cloudpickle

    blob = cloudpickle.dumps(make_step(TRUSTED))
    assert SECRET not in blob and SECRET.hex().encode() not in blob
    assert str(key_path(_KEY_DIR)).encode() in blob


def test_hostile_strings_never_reach_a_sink_column_unencodable():
    from coordinator.messages import Event, Outputs, ReplyTo, Response, StateRecord
    from streaming.step import output_rows

    bad = "a\ud800b"
    out = Outputs(
        responses=[Response(ReplyTo("X", 0, 1, bad), {"errorCode": 0})],
        events=[Event(bad, {"event": "E", "x": bad})],
        records=[StateRecord(bad, {"v": bad})],
    )
    rows = output_rows(out, 0, TRUSTED)
    for _topic, key, value, _, _ in rows:
        key.encode("utf-8")  # what Arrow needs
        json.loads(value)


def test_answers_never_go_to_the_services_own_topics_and_quarantined_topics_become_dead_letters():
    from coordinator.messages import DataRecord, Outputs, ReplyTo, Response
    from streaming.step import output_rows

    quarantined = StepSettings(**{**TRUSTED.__dict__, "quarantined_topics": ("resp.gone", "orders")})
    out = Outputs(
        responses=[
            Response(ReplyTo("X", 0, 1, "c", "log"), {"errorCode": 0}),
            Response(ReplyTo("X", 0, 2, "c", "resp.gone"), {"errorCode": 0}),
            Response(ReplyTo("X", 0, 3, "c", "resp.team-a"), {"errorCode": 0}),
        ],
        data=[DataRecord("orders", 0, None, b"marker")],
    )
    rows = output_rows(out, 0, quarantined)
    assert [(r[0], json.loads(r[2]).get("correlationId")) for r in rows if r[0] != "dlq"] == [("resp.team-a", 3)]
    letters = [json.loads(r[2]) for r in rows if r[0] == "dlq"]
    assert [(d["what"], d.get("correlationId")) for d in letters] == [
        ("response", 1),
        ("response", 2),
        ("transaction marker", None),
    ]


def test_a_record_that_breaks_the_runtime_itself_becomes_a_dead_letter(monkeypatch):
    """The backstop behind the core's own isolation: if applying a batch raises anyway, the records
    that fail on their own are left out and dead-lettered, the rest applied, the same on replay."""
    import coordinator.batch as batch

    real = batch.parse_record

    def parse(raw, *args):
        if raw and b"poison" in raw:
            raise SystemError("runtime bug")  # a bug in parsing: isolated per item
        return real(raw, *args)

    monkeypatch.setattr(batch, "parse_record", parse)
    monkeypatch.setattr(batch, "_answer_crashed", lambda *a: (_ for _ in ()).throw(SystemError("also broken")))
    step = make_step(TRUSTED)
    frames = [
        frame(
            ("g", env("FindCoordinator", 3, 1, {"key": "g", "keyType": 0}), 20, 1, 0, 0),
            ("g", b'{"poison": 1}', 13, 2, 0, 1),
        )
    ]
    outs = [run(step, 0, frames, GroupStateStandIn()) for _ in range(2)]
    assert outs[0].equals(outs[1])
    assert json.loads(outs[0][outs[0].topic == "resp"].iloc[0]["value"])["response"]["errorCode"] == 0
    [letter] = [json.loads(v) for v in outs[0][outs[0].topic == "dlq"]["value"]]
    assert letter["requestOffset"] == 1 and "SystemError" in letter["reason"]


def test_an_answer_larger_than_its_reply_topic_takes_is_replaced_by_an_error():
    from coordinator.messages import Outputs, ReplyTo, Response
    from streaming.step import output_rows

    big = {"errorCode": 0, "coordinators": [{"key": "k" * 100, "nodeId": i} for i in range(100)]}
    out = Outputs(
        responses=[
            Response(ReplyTo("FindCoordinator", 4, 1, "c", "resp.small"), big),
            Response(ReplyTo("FindCoordinator", 4, 2, "c", None), big),
        ]
    )
    rows = output_rows(out, 0, TRUSTED, {"resp.small": 4096})
    by_cid = {json.loads(r[2])["correlationId"]: (r[0], json.loads(r[2])["response"]) for r in rows if r[0] != "ev"}
    assert by_cid[1][0] == "resp.small" and by_cid[1][1]["errorCode"] == Errors.UNKNOWN_SERVER_ERROR.code
    assert "larger than 3584 bytes" in by_cid[1][1]["errorMessage"]
    assert by_cid[2][1]["errorCode"] == 0  # the service's own topic takes max_record_bytes
    assert [json.loads(r[2])["event"] for r in rows if r[0] == "ev"] == ["RecordTooLarge"]


def test_a_metrics_row_per_batch_that_did_something_identical_when_replayed():
    step = make_step(SETTINGS)
    commit = {
        "groupId": "my-group",
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partitionIndex": 0, "committedOffset": 5, "committedLeaderEpoch": -1, "committedMetadata": ""}
                ],
            }
        ],
    }
    frames = [frame(("my-group", env("OffsetCommit", 9, 1, commit), 100, 9_000, 0, 0))]
    rows = []
    for _ in range(2):  # the same batch on the same state, as a replay after a crash runs it
        g = GroupStateStandIn()
        out = run(step, 12, frames, g)
        rows.append(out[out["topic"] == "coordinator-metrics"])
    assert [len(r) for r in rows] == [1, 1]
    first, again = (json.loads(r.iloc[0]["value"]) for r in rows)
    assert rows[0].iloc[0]["key"] == "12" and pd.isna(rows[0].iloc[0]["partition"])
    assert first["coordinatorPartition"] == 12 and first["seq"] == 1 and first["batchTimeMs"] == 10_000
    assert first["counters"]["group_offset_commit_total"] == 1
    assert first["stateBytes"] == len(g.value[1])
    assert first == again
    # A batch with nothing to do (a timeout with no timer due) writes no metrics row.
    idle = run(step, 12, [], GroupStateStandIn(value=g.value, now=10_001))
    assert "coordinator-metrics" not in set(idle["topic"])
