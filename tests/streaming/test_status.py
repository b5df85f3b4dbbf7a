"""The job's status file and the verdict `python -m streaming.status` prints from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

from streaming.progress import last_batch_id, last_progress, progress_since
from streaming.status import (
    QUERY_SILENT_AFTER_S,
    RECENT_BATCHES,
    StatusReporter,
    compact_progress,
    read_status,
    summarize,
)


def progress(batch_id: int, ms: int = 300, at: str | None = None) -> dict:
    """A report as Spark's JSON has it; by default each (id, duration) gets a timestamp of its own."""
    return {
        "batchId": batch_id,
        "timestamp": at or f"2026-11-25T06:{batch_id // 60 % 60:02d}:{batch_id % 60:02d}.{ms % 1000:03d}Z",
        "numInputRows": 3,
        "durationMs": {"triggerExecution": ms, "addBatch": ms - 50, "latestOffset": 10},
        "stateOperators": [
            {
                "numRowsTotal": 50,
                "allUpdatesTimeMs": 120,
                "allRemovalsTimeMs": 40,
                "commitTimeMs": 3,
                "memoryUsedBytes": 1000,
                "customMetrics": {},
            }
        ],
        "sources": [
            {
                "endOffset": '{"requests":{"0":7}}',
                "metrics": {"maxOffsetsBehindLatest": "4", "avgOffsetsBehindLatest": "2.0"},
            }
        ],
    }


class FakeQuery:
    def __init__(self, batches):
        self.id, self.recentProgress = "q-1", batches

    @property
    def lastProgress(self):
        return self.recentProgress[-1] if self.recentProgress else None


def test_compact_progress_keeps_phases_state_times_offsets_and_lag():
    c = compact_progress(progress(5))
    assert c["batchId"] == 5 and c["durationMs"]["triggerExecution"] == 300
    assert c["state"]["allUpdatesTimeMs"] == 120 and c["state"]["commitTimeMs"] == 3
    assert c["offsetsBehindLatest"] == 4 and c["endOffsets"] == ['{"requests":{"0":7}}']


def test_reporter_keeps_the_recent_batches_and_stays_ready_across_a_restart(tmp_path):
    r = StatusReporter(tmp_path / "cp.status.json")
    assert read_status(r.path)["state"] == "starting"
    r.attach(FakeQuery([progress(i) for i in range(RECENT_BATCHES + 30)]))
    r.lifecycle("running")
    r.lifecycle("ready")
    doc = read_status(r.path)
    assert doc["state"] == "ready" and doc["readyAt"] is not None and doc["pid"] == os.getpid()
    ids = [b["batchId"] for b in doc["batches"]]
    assert ids == list(range(30, RECENT_BATCHES + 30))
    r.lifecycle("restarting", "broker unavailable")
    assert read_status(r.path)["state"] == "restarting"
    r.lifecycle("running")  # a restarted query of a job that was ready answers again
    assert read_status(r.path)["state"] == "ready"
    assert not list(tmp_path.glob("*.tmp"))  # written by rename, never half a file


def test_summary_is_up_only_for_a_live_fresh_ready_job(tmp_path):
    now = 1_800_000_000.0
    doc = {
        "state": "ready",
        "pid": os.getpid(),
        "updatedAt": now - 1,
        "startedAt": now - 20,
        "readyAt": now - 8,
        "batches": [compact_progress(progress(7, 280, "2057-01-15T08:00:00.000Z"))],
    }
    s = summarize(doc, now)
    assert s["up"] and s["lastBatchId"] == 7 and s["lastBatchMs"] == 280 and s["readyAfterS"] == 12.0
    assert not summarize(None, now)["up"]
    assert "not reported" in summarize(dict(doc, updatedAt=now - 60), now)["reason"]
    assert "is starting" in summarize(dict(doc, state="starting"), now)["reason"]
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    assert "not running" in summarize(dict(doc, pid=int(dead.stdout)), now)["reason"]


def test_status_command_says_down_without_a_status_file(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[kafka]\nbootstrap_servers = "127.0.0.1:1"\n[stream]\ncheckpoint = "{tmp_path / "cp"}"\n')
    proc = subprocess.run(
        [sys.executable, "-m", "streaming.status", "--config", str(cfg), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = json.loads(proc.stdout)
    assert proc.returncode == 1 and not out["up"] and "no status file" in out["reason"]
    assert out["requestLag"] is None  # no broker to ask


def test_a_query_silent_past_the_limit_is_down_though_the_driver_beats(tmp_path):
    now = 1_800_000_000.0
    doc = {"state": "ready", "pid": os.getpid(), "updatedAt": now - 1, "startedAt": now - 200, "readyAt": now - 150}
    assert summarize(dict(doc, polledAt=now - 5), now)["up"]
    s = summarize(dict(doc, polledAt=now - QUERY_SILENT_AFTER_S - 5), now)
    assert not s["up"] and "has not heard from the query" in s["reason"]
    # restarting: the supervisor does not ask a query it is replacing
    assert "is restarting" in summarize(dict(doc, state="restarting", polledAt=now - 500), now)["reason"]


def test_the_heartbeat_keeps_the_file_fresh_while_the_query_is_slow_to_answer(tmp_path):
    class SlowQuery(FakeQuery):
        @property
        def recentProgress(self):
            entered.set()
            release.wait(10)
            return [progress(1)]

        @recentProgress.setter
        def recentProgress(self, _):
            pass

    entered, release, stop = threading.Event(), threading.Event(), threading.Event()
    r = StatusReporter(tmp_path / "cp.status.json")
    r.attach(SlowQuery([]))
    r.start_heartbeat(stop, every_s=0.05)
    ticking = threading.Thread(target=r.on_tick, args=(r.query,))
    ticking.start()
    assert entered.wait(10)
    before = read_status(r.path)["updatedAt"]
    deadline = time.time() + 10
    while read_status(r.path)["updatedAt"] == before and time.time() < deadline:
        time.sleep(0.02)
    assert read_status(r.path)["updatedAt"] > before  # rewritten while the tick waits on the query
    release.set()
    ticking.join(10)
    stop.set()
    doc = read_status(r.path)
    assert [b["batchId"] for b in doc["batches"]] == [1] and doc["polledAt"] is not None


class JavaReport:
    """A py4j StreamingQueryProgress stand-in that counts the round trips made to it."""

    calls = 0

    def __init__(self, batch_id: int, doc: dict | None = None):
        self.doc = doc or progress(batch_id)

    def batchId(self):
        JavaReport.calls += 1
        return self.doc["batchId"]

    def timestamp(self):
        JavaReport.calls += 1
        return self.doc["timestamp"]

    def json(self):
        JavaReport.calls += 1
        return json.dumps(self.doc)


class JavaQuery:
    def __init__(self, ids):
        self._reports = [JavaReport(i) for i in ids]

    def recentProgress(self):
        JavaReport.calls += 1
        return self._reports

    def lastProgress(self):
        JavaReport.calls += 1
        return self._reports[-1] if self._reports else None


def test_progress_reads_only_the_new_reports_one_json_each():
    q = type("Q", (), {})()
    q._jsq = JavaQuery(range(100))
    JavaReport.calls = 0
    new = progress_since(q, 96)
    assert [p["batchId"] for p in new] == [97, 98, 99] and new[0]["durationMs"]["triggerExecution"] == 300
    assert JavaReport.calls == 1 + 3 * 2 + 1  # the buffer, each new report's id and JSON, the first seen one's id
    assert [p["batchId"] for p in progress_since(q, -1, limit=20)] == list(range(80, 100))
    assert last_batch_id(q) == 99 and last_progress(q)["batchId"] == 99
    q._jsq = JavaQuery([])
    assert progress_since(q, -1) == [] and last_batch_id(q) is None and last_progress(q) is None


def test_caught_up_once_the_running_query_s_newest_batch_read_all_there_was(tmp_path):
    r = StatusReporter(tmp_path / "cp.status.json")
    assert not r.caught_up()  # no batch yet
    behind = progress(1)  # maxOffsetsBehindLatest 4: a catch-up read over several batches
    level = progress(2)
    level["sources"][0]["metrics"] = {"maxOffsetsBehindLatest": "0"}
    r.on_tick(FakeQuery([behind]))
    assert not r.caught_up()
    q = FakeQuery([behind, level])
    r.attach(q)
    r.on_tick(q)
    assert r.caught_up()
    r.attach(FakeQuery([]))  # a restarted query: not until its own first batch
    assert not r.caught_up()


def test_a_batch_s_report_replaces_the_idle_trigger_s_report_spark_gave_its_id(tmp_path):
    """While idle, Spark reports a trigger that found no data under the id of the batch that runs
    next: that batch's own report, read later, is the one kept."""
    r = StatusReporter(tmp_path / "cp.status.json")
    idle = progress(8, ms=6)
    idle["numInputRows"], idle["durationMs"] = 0, {"latestOffset": 5, "triggerExecution": 6}
    q = FakeQuery([progress(7), idle])
    r.attach(q)
    r.on_tick(q)
    assert [b["durationMs"] for b in read_status(r.path)["batches"]][-1] == idle["durationMs"]
    ran = progress(8, ms=900)
    q.recentProgress = [progress(7), idle, idle, ran]
    r.on_tick(q)
    batches = read_status(r.path)["batches"]
    assert [b["batchId"] for b in batches] == [7, 8]
    assert batches[-1]["durationMs"]["triggerExecution"] == 900 and batches[-1]["numInputRows"] == 3
    q.recentProgress = [progress(7), idle, idle, ran, idle]  # a late idle report does not undo it
    r.on_tick(q)
    assert read_status(r.path)["batches"][-1]["durationMs"]["triggerExecution"] == 900


def idle_report(batch_id: int, n: int) -> dict:
    """The nth report of an idle trigger (no data, no batch): Spark gives it the next batch's id."""
    doc = progress(batch_id, at=f"2026-11-25T07:{n // 60 % 60:02d}:{n % 60:02d}.000Z")
    doc["numInputRows"], doc["durationMs"] = 0, {"latestOffset": 2, "triggerExecution": 3}
    return doc


def test_an_idle_query_costs_a_tick_three_round_trips_however_many_idle_reports_spark_keeps(tmp_path):
    """Idle, Spark adds a report under the next batch's id every 10 s, up to the 100 it keeps. The
    status used to read all of them again at every tick (their id is above the last real batch):
    300 round trips and 100 JSON reports a second after a quarter of an hour idle."""
    q = type("Q", (), {"id": "q-1"})()
    jq = q._jsq = JavaQuery([])
    jq._reports = [JavaReport(7)] + [JavaReport(8, idle_report(8, n)) for n in range(99)]
    r = StatusReporter(tmp_path / "cp.status.json")
    r.attach(q)
    r.on_tick(q)
    assert [b["batchId"] for b in read_status(r.path)["batches"]] == [7, 8]
    JavaReport.calls = 0
    for _ in range(5):
        r.on_tick(q)
    assert JavaReport.calls == 5 * 3  # the newest report, its id and its timestamp: nothing read
    jq._reports = jq._reports[1:] + [JavaReport(8, idle_report(8, 99))]  # 10 s later, still idle
    JavaReport.calls = 0
    r.on_tick(q)
    # The newest's key; the buffer; the new report's id, timestamp (its id is the known one's) and
    # JSON; the one read before: its id and timestamp, where reading stops.
    assert JavaReport.calls == 3 + 1 + 3 + 2
    ran = JavaReport(8)  # batch 8 runs at last
    jq._reports = jq._reports[1:] + [ran]
    JavaReport.calls = 0
    r.on_tick(q)
    assert JavaReport.calls == 3 + 1 + 3 + 2
    batches = read_status(r.path)["batches"]
    assert [b["batchId"] for b in batches] == [7, 8] and batches[-1]["durationMs"]["triggerExecution"] == 300
    assert r.caught_up() is False  # the batch's report says 4 records behind


def test_a_restarted_query_s_reports_are_read_from_its_first(tmp_path):
    r = StatusReporter(tmp_path / "cp.status.json")
    first = FakeQuery([progress(1), progress(2)])
    r.attach(first)
    r.on_tick(first)
    again = FakeQuery([progress(2)])  # the same checkpoint: its first batch may reuse the last id and time
    r.attach(again)
    r.on_tick(again)
    assert [b["batchId"] for b in read_status(r.path)["batches"]] == [1, 2]
    again.recentProgress = [progress(2), progress(3)]
    r.on_tick(again)
    assert [b["batchId"] for b in read_status(r.path)["batches"]] == [1, 2, 3]


def test_the_exporter_s_request_lag_keeps_one_consumer_and_makes_a_new_one_after_a_failure(tmp_path, monkeypatch):
    """A consumer made for each look (every 10 s) cost a broker connection and ~9 ms of CPU."""
    import kafka

    from streaming.config import StreamConfig
    from streaming.status import RequestLag

    made, fail = [], [False]

    class Consumer:
        DEFAULT_CONFIG = kafka.KafkaConsumer.DEFAULT_CONFIG

        def __init__(self, **config):
            self.closed = False
            made.append(self)

        def partitions_for_topic(self, topic):
            return {0, 1} if topic == cfg.topics["requests"] else {0}

        def end_offsets(self, tps):
            if fail[0]:
                raise kafka.errors.KafkaTimeoutError("broker away")
            return {tp: 10 for tp in tps}

        def close(self):
            self.closed = True

    monkeypatch.setattr(kafka, "KafkaConsumer", Consumer)
    cfg = StreamConfig.load(None, {"stream": {"checkpoint": str(tmp_path / "cp")}})
    lag = RequestLag(cfg)
    assert lag() == 30 and lag() == 30 and len(made) == 1  # nothing committed yet: everything is lag
    fail[0] = True
    assert lag() is None and made[0].closed
    fail[0] = False
    assert lag() == 30 and len(made) == 2 and not made[1].closed
    lag.close()
    assert made[1].closed
