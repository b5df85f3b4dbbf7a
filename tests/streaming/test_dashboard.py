"""The dashboard's data builders (pure functions over read-model dicts and metric samples) and its
HTTP routes, without a broker: a Redis nobody listens on, a metrics store filled by hand."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

from deploy.kafka_local import free_port
from streaming.dashboard import (
    PAGE,
    History,
    group_page,
    overview,
    partition_lag,
    rebalance_buckets,
    rebalance_event,
    render_page,
    requests_applied,
    stream_problems,
    transactions_in_flight,
)
from streaming.metrics_exporter import MetricsExporter, MetricsStore

NOW = 1_800_000_000_000
T = "orders"


def classic_group(**kw) -> dict:
    return {
        "groupId": "billing",
        "type": "classic",
        "state": "Stable",
        "protocol": "range",
        "generation": 3,
        "assignmentEpoch": None,
        "coordinatorPartition": 7,
        "members": [
            {
                "memberId": "m1",
                "groupInstanceId": None,
                "clientId": "c1",
                "clientHost": "/10.0.0.1",
                "assignment": [{"topic": T, "partitions": [0, 1]}],
            },
            {
                "memberId": "m2",
                "groupInstanceId": "i2",
                "clientId": "c2",
                "clientHost": "/10.0.0.2",
                "assignment": [{"topic": T, "partitions": [2]}],
            },
        ],
        **kw,
    }


def txn(tid: str, state: str, start: int, **kw) -> dict:
    return {
        "transactionalId": tid,
        "state": state,
        "producerId": 5,
        "producerEpoch": 1,
        "timeoutMs": 60000,
        "startTimestamp": start,
        "partitions": [{"topic": T, "partitions": [0, 2]}],
        **kw,
    }


def test_lag_is_end_less_committed_and_unknown_where_the_broker_has_no_end():
    rows = partition_lag({(T, 1): 5, (T, 0): 3, ("gone", 0): 9}, {(T, 0): 10, (T, 1): 5})
    assert [(r["topic"], r["partition"], r["lag"]) for r in rows] == [("gone", 0, None), (T, 0, 7), (T, 1, 0)]
    # a committed offset past the end (the log was truncated) is no negative lag
    assert partition_lag({(T, 0): 12}, {(T, 0): 10})[0]["lag"] == 0


def test_overview_lists_groups_with_members_generation_and_total_lag():
    d = overview(
        groups=[classic_group()],
        offsets={"billing": {(T, 0): 3, (T, 1): 5, ("gone", 0): 1}},
        ends={(T, 0): 10, (T, 1): 10},
        txns=[],
        now_ms=NOW,
        hanging_ms=1000,
        rebalances=[],
        history={},
        stream={},
        problems=[],
        window_ms=600000,
    )
    assert d["groups"] == [
        {
            "groupId": "billing",
            "type": "classic",
            "state": "Stable",
            "protocol": "range",
            "members": 2,
            "generation": 3,
            "assignmentEpoch": None,
            "coordinatorPartition": 7,
            "totalLag": 12,
            "partitions": 3,
        }
    ]
    assert d["readModel"] and d["transactions"] == []


def test_without_the_read_model_groups_and_transactions_are_none_and_the_problem_is_said():
    d = overview(
        groups=None,
        offsets={},
        ends={},
        txns=None,
        now_ms=NOW,
        hanging_ms=1000,
        rebalances=[],
        history={},
        stream={},
        problems=["Redis at redis://x is not reachable: refused"],
        window_ms=600000,
    )
    assert d["readModel"] is False and d["groups"] == [] and d["transactions"] is None
    assert d["problems"] == ["Redis at redis://x is not reachable: refused"]


def test_transactions_in_flight_are_open_ones_oldest_first_hanging_past_the_threshold():
    txns = [
        txn("young", "Ongoing", NOW - 500),
        txn("old", "Ongoing", NOW - 20000),
        txn("preparing", "PrepareCommit", NOW - 3000),
        txn("done", "CompleteCommit", NOW - 90000),
        txn("idle", "Empty", -1),
        txn("fresh", "Ongoing", -1),
    ]
    out = transactions_in_flight(txns, NOW, hanging_ms=2000)
    assert [(t["transactionalId"], t["ageMs"], t["hanging"]) for t in out] == [
        ("old", 20000, True),
        ("preparing", 3000, True),
        ("young", 500, False),
        ("fresh", None, False),
    ]
    assert out[0]["partitions"] == [f"{T}-0", f"{T}-2"]
    # exactly at the threshold is not yet hanging (find-hanging: "longer than")
    assert not transactions_in_flight([txn("edge", "Ongoing", NOW - 2000)], NOW, 2000)[0]["hanging"]


def test_rebalance_events_are_kept_with_their_reasons_and_bucketed_by_type():
    classic = rebalance_event(
        {
            "event": "RebalanceStarted",
            "timeMs": NOW - 1000,
            "groupId": "g",
            "reason": "Adding new member m1",
            "generationId": 2,
            "coordinatorPartition": 1,
        }
    )
    consumer = rebalance_event(
        {
            "event": "GroupEpochBumped",
            "timeMs": NOW - 45000,
            "groupId": "k",
            "reason": "member m joined",
            "groupEpoch": 4,
        }
    )
    assert classic == {
        "timeMs": NOW - 1000,
        "groupId": "g",
        "type": "classic",
        "event": "RebalanceStarted",
        "reason": "Adding new member m1",
        "generation": 2,
    }
    assert consumer["type"] == "consumer" and consumer["generation"] == 4
    assert rebalance_event({"event": "MemberJoined", "groupId": "g", "timeMs": NOW}) is None
    assert rebalance_event({"event": "RebalanceCompleted", "groupId": "g", "timeMs": NOW}) is None
    old = dict(classic, timeMs=NOW - 700000)  # outside the window
    buckets = rebalance_buckets([classic, consumer, old], NOW, 120000, 30000)
    assert [(b["classic"], b["consumer"]) for b in buckets] == [(0, 0), (0, 0), (0, 1), (1, 0)]


def test_group_page_shows_members_with_assignments_and_partition_owners():
    rebalances = [
        rebalance_event({"event": "RebalanceStarted", "timeMs": NOW, "groupId": g, "reason": "r"})
        for g in ("billing", "other")
    ]
    d = group_page(
        group=classic_group(),
        group_id="billing",
        offsets={(T, 0): 3, (T, 2): 10, (T, 3): 1},
        ends={(T, 0): 10, (T, 2): 10, (T, 3): 4},
        now_ms=NOW,
        rebalances=rebalances,
        lag_history=[],
        problems=[],
    )
    assert [(m["memberId"], m["assignment"], m["lag"]) for m in d["members"]] == [
        ("m1", {T: [0, 1]}, 7),
        ("m2", {T: [2]}, 0),
    ]
    assert [(r["partition"], r["lag"], r["memberId"]) for r in d["partitions"]] == [
        (0, 7, "m1"),
        (2, 0, "m2"),
        (3, 3, None),
    ]
    assert d["group"]["totalLag"] == 10 and [e["groupId"] for e in d["rebalances"]] == ["billing"]
    missing = group_page(
        group=None, group_id="nope", offsets={}, ends={}, now_ms=NOW, rebalances=[], lag_history=[], problems=[]
    )
    assert missing["found"] is False and missing["members"] == []


def test_kip848_assignments_as_dicts_are_read_too():
    g = classic_group(type="consumer", members=[{"memberId": "x", "memberEpoch": 5, "assignment": {T: [1, 0]}}])
    d = group_page(
        group=g, group_id="billing", offsets={}, ends={}, now_ms=NOW, rebalances=[], lag_history=[], problems=[]
    )
    assert d["members"][0]["assignment"] == {T: [0, 1]} and d["members"][0]["memberEpoch"] == 5


def test_stream_problems_say_plainly_what_is_down():
    assert stream_problems({"up": True, "reason": "answering requests"}, 2, "m") == []
    assert stream_problems({"up": False, "reason": "the job (pid 4) is not running"}, 2, "m") == [
        "The stream is down: the job (pid 4) is not running."
    ]
    assert stream_problems(None, 0, "coordinator-metrics")[0].startswith("No metrics records in coordinator-metrics")
    assert stream_problems(None, 3, "m") == []  # no status file here (another machine): nothing claimed


def test_requests_applied_sums_every_api_and_history_keeps_a_window():
    assert (
        requests_applied(
            {'requests_total{api="Heartbeat"}': 5, 'requests_total{api="JoinGroup"}': 2, "txn_started_total": 9}
        )
        == 7
    )
    h = History(keep_s=10)
    for t in (0, 4000, 9000, 15000):
        h.add("x", t, t // 1000)
    assert h.get("x") == [[9000, 9], [15000, 15]]


def test_the_page_embeds_its_first_data_safely():
    page = render_page(PAGE.read_text(), {"problems": ["</script><!--<b>x</b>"]})
    assert "const INITIAL = {" in page and "</script><!--" not in page and "<b>" not in page
    blob = page.split("const INITIAL = ", 1)[1].split(";\n", 1)[0]
    assert json.loads(blob) == {"problems": ["</script><!--<b>x</b>"]}


def test_the_exporter_serves_metrics_the_page_and_json_and_says_redis_is_down():
    dead = f"redis://127.0.0.1:{free_port()}/0"
    # No broker behind the bootstrap either: the page still answers, with the problems said.
    e = MetricsExporter(
        f"127.0.0.1:{free_port()}",
        "m",
        0,
        "127.0.0.1",
        dashboard={"events_topic": "ev", "redis_url": dead, "sample_interval_ms": 60000},
    )
    e.start()
    try:
        base = f"http://127.0.0.1:{e.port}"
        e.store.apply(
            {
                "coordinatorPartition": 0,
                "seq": 1,
                "counters": {'requests_total{api="Heartbeat"}': 4},
                "gauges": {},
                "histograms": {},
                "stateBytes": 123,
            }
        )
        with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
            assert b'kafka_coordinator_requests_total{api="Heartbeat"} 4.0' in r.read()
        with urllib.request.urlopen(base + "/api/overview", timeout=10) as r:
            d = json.loads(r.read())
        assert d["readModel"] is False and d["stream"]["requestsApplied"] == 4 and d["stream"]["stateBytes"] == 123
        assert any(p.startswith(f"Redis at {dead} is not reachable: ") for p in d["problems"])
        with urllib.request.urlopen(base + "/group/a%20b", timeout=10) as r:
            page = r.read().decode()
        assert '"groupId":"a b"' in page and "Redis at" in page
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(base + "/nothing", timeout=10)
        assert err.value.code == 404
    finally:
        e.stop(timeout=0.1)  # its consumers still try to reach the absent broker: daemons, left to end


def test_without_the_dashboard_only_metrics_are_served():
    e = MetricsExporter("127.0.0.1:1", "m", 0, "127.0.0.1").start()
    try:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"http://127.0.0.1:{e.port}/", timeout=10)
        assert err.value.code == 404
        with urllib.request.urlopen(f"http://127.0.0.1:{e.port}/metrics", timeout=10) as r:
            assert r.status == 200
    finally:
        e.stop(timeout=0.1)  # its consumers still try to reach the absent broker: daemons, left to end


# ================================================================== share and streams groups
def test_streams_and_share_groups_of_the_read_model_on_the_pages():
    """Groups folded from a real coordinator's records (streaming/projection.py): a streams member's
    partitions are its active tasks' source-topic partitions (its lag follows), a share group shows
    its share-partitions' start offsets and no lag (it commits none; Kafka 4.1 has no share lag)."""
    from tests.streaming.test_projection_share_streams import fold, group_of, share_client, streams_client

    s, k = streams_client(), share_client()
    p = fold([s.d, k.d])
    streams, share = group_of(p, s.group_id), group_of(p, k.group_id)
    page = group_page(
        group=streams,
        group_id=s.group_id,
        offsets={("foo", 0): 4},
        ends={("foo", p_): 10 for p_ in range(4)},
        now_ms=NOW,
        rebalances=[],
        lag_history=[],
        problems=[],
    )
    by_member = {m["memberId"]: m for m in page["members"]}
    owned = {
        m: sorted(tp[1] for tp in [(t, q) for t, qs in r["assignment"].items() for q in qs])
        for m, r in by_member.items()
    }
    assert sorted(sum(owned.values(), [])) == [0, 1, 2, 3]  # the 4 tasks of subtopology 0 read foo-0..3
    owner_of_0 = next(m for m, ps in owned.items() if 0 in ps)
    assert by_member[owner_of_0]["lag"] == 6 and by_member[owner_of_0]["tasks"].startswith("ACTIVE: 0:[")
    assert [(r["partition"], r["memberId"]) for r in page["partitions"]] == [(0, owner_of_0)]
    ov = overview(
        groups=[streams, share],
        offsets={s.group_id: {("foo", 0): 4}},
        ends={("foo", 0): 10},
        txns=[],
        now_ms=NOW,
        hanging_ms=1000,
        rebalances=[],
        history={},
        stream={},
        problems=[],
        window_ms=60000,
    )
    rows = {g["groupId"]: g for g in ov["groups"]}
    assert (rows[s.group_id]["type"], rows[s.group_id]["members"], rows[s.group_id]["totalLag"]) == ("streams", 2, 6)
    assert (rows[k.group_id]["type"], rows[k.group_id]["state"], rows[k.group_id]["members"]) == ("share", "Stable", 2)
    assert rows[k.group_id]["totalLag"] is None
    share_page = group_page(
        group=share,
        group_id=k.group_id,
        offsets={},
        ends={("foo", 0): 10},
        now_ms=NOW,
        rebalances=[],
        lag_history=[],
        problems=[],
        share_offsets={
            ("foo", 0): {"startOffset": 7, "leaderEpoch": 1},
            ("foo", 1): {"startOffset": -1, "leaderEpoch": 0},
        },
    )
    assert share_page["sharePartitions"] == [
        {"topic": "foo", "partition": 0, "startOffset": 7, "end": 10},
        {"topic": "foo", "partition": 1, "startOffset": None, "end": None},
    ]
    assert all(m["lag"] is None for m in share_page["members"]) and {
        m["memberId"]: m["assignment"] for m in share_page["members"]
    } == {m["memberId"]: {a["topic"]: a["partitions"] for a in m["assignment"]} for m in share["members"]}


def test_rebalances_of_share_and_streams_groups_are_bucketed_by_their_type():
    events = [
        rebalance_event({"event": "GroupEpochBumped", "timeMs": NOW - 1, "groupId": "s", "groupType": "share"}),
        rebalance_event({"event": "GroupEpochBumped", "timeMs": NOW - 1, "groupId": "t", "groupType": "streams"}),
        rebalance_event({"event": "GroupEpochBumped", "timeMs": NOW - 1, "groupId": "c"}),
    ]
    assert [e["type"] for e in events] == ["share", "streams", "consumer"]
    [bucket] = rebalance_buckets(events, NOW, 30000, 30000)
    assert (bucket["share"], bucket["streams"], bucket["consumer"], bucket["classic"]) == (1, 1, 1, 0)


# ================================================================== the events follower runs while someone looks
class FakeEventsTopic:
    """Stands in for topic_follower.follow_topic: every follower it runs is positioned, then gets
    the topic's records once and polls (empty) until its stop is set."""

    def __init__(self, records: list[bytes]):
        self.records, self.started = records, 0

    def follow(self, bootstrap, topic, stop, position, on_record, *, after_poll=None, **_kw):
        self.started += 1
        position(FakeConsumer(), ["p0"])
        for value in self.records:
            on_record(type("Record", (), {"value": value})())
        while not stop.is_set():
            if after_poll is not None:
                after_poll()
            stop.wait(0.01)


class FakeConsumer:
    def offsets_for_times(self, times: dict) -> dict:
        return dict.fromkeys(times)

    def seek_to_end(self, tp) -> None:
        pass


def _follower(board) -> threading.Thread | None:
    t = board._events_thread
    return t if t is not None and t.is_alive() else None


def test_the_events_topic_is_followed_only_while_the_dashboard_is_viewed(monkeypatch):
    import time

    from streaming import topic_follower
    from streaming.dashboard import Dashboard

    now = int(time.time() * 1000)
    event = {"event": "RebalanceStarted", "timeMs": now, "groupId": "g", "reason": "r", "generationId": 1}
    topic = FakeEventsTopic([json.dumps(event).encode(), b'{"event": "MemberJoined"}'])
    monkeypatch.setattr(topic_follower, "follow_topic", topic.follow)
    board = Dashboard(
        "127.0.0.1:1", events_topic="ev", metrics_topic="m", store=MetricsStore(), settings={"events_idle_s": 0.3}
    ).start()
    try:
        assert _follower(board) is None and topic.started == 0  # nobody has looked: no consumer

        def until(what, check, timeout=10.0):
            deadline = time.monotonic() + timeout
            while not check():
                assert time.monotonic() < deadline, what
                time.sleep(0.01)

        until("a view starts the follower", lambda: [e["groupId"] for e in board.rebalance_list()] == ["g"])
        assert topic.started == 1
        board.rebalance_list()
        assert topic.started == 1  # one follower while viewed
        until("the follower stops once nobody looks", lambda: _follower(board) is None)
        # Viewed again: a new follower reads the window back, without keeping the old copy twice.
        until("it follows again", lambda: len(board.rebalance_list()) == 1 and topic.started == 2)
        assert [e["groupId"] for e in board.rebalance_list()] == ["g"]
    finally:
        board.stop(timeout=5)
    assert _follower(board) is None


def test_a_follower_that_cannot_reach_the_broker_stops_with_the_views_too(monkeypatch):
    import time

    from streaming import topic_follower
    from streaming.dashboard import Dashboard

    def unreachable(bootstrap, topic, stop, position, on_record, *, on_error=None, **_kw):
        while not stop.is_set():  # follow_topic's loop when every connection fails
            on_error(ConnectionError("refused"))
            stop.wait(0.01)

    monkeypatch.setattr(topic_follower, "follow_topic", unreachable)
    board = Dashboard(
        "127.0.0.1:1", events_topic="ev", metrics_topic="m", store=MetricsStore(), settings={"events_idle_s": 0.3}
    ).start()
    try:
        assert board.rebalance_list() == []
        deadline = time.monotonic() + 10
        while _follower(board) is not None:
            assert time.monotonic() < deadline, "the follower still retries with nobody looking"
            time.sleep(0.01)
        assert "is not reachable" in (board._events_error or "")
    finally:
        board.stop(timeout=5)
