"""The job's status file and the verdict `python -m streaming.status` prints from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from streaming.status import RECENT_BATCHES, StatusReporter, compact_progress, read_status, summarize


def progress(batch_id: int, ms: int = 300, at: str = "2026-11-25T06:00:00.000Z") -> dict:
    return {
        "batchId": batch_id,
        "timestamp": at,
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
        self.lastProgress = batches[-1] if batches else None


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
