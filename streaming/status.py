"""The service's status: what the running job reports, and the `status` command that reads it.

    .venv/bin/python -m streaming.status [--config override.toml] [--json] [--wait-ready SECONDS]

The job (run_stream.py) keeps a status file next to its checkpoint, `<checkpoint>.status.json`,
rewritten atomically about once a second: its lifecycle state (starting, running, ready, restarting,
stopped, failed), its pid, when it became ready, and its recent micro-batches (Spark's progress
reports, compacted). The command adds the request topics' lag, asked from the broker, and says
whether the service is up: the job is alive, it wrote the file recently, and it answered its
self-check round trip. Exit code 0 when up, 1 when down.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .config import StreamConfig
from .progress import newest_report, progress_since, ran_a_batch

RECENT_BATCHES = 120  # kept in the file (about a minute of batches at the micro-batch floor)
STALE_AFTER_S = 10.0  # a file not rewritten for this long belongs to a job that is not running
HEARTBEAT_S = 1.0  # the file is rewritten this often by a thread of its own, whatever Spark does
QUERY_SILENT_AFTER_S = 60.0  # a running query the driver has not been able to ask for this long is hung


def status_path(checkpoint: Path) -> Path:
    return Path(str(checkpoint).rstrip("/") + ".status.json")


def compact_progress(p: dict) -> dict:
    """The parts of a StreamingQueryProgress the status and the latency bench use."""
    ops = p.get("stateOperators") or [{}]
    op = ops[0]
    behind = [s.get("metrics", {}) for s in p.get("sources", [])]
    return {
        "batchId": p["batchId"],
        "timestamp": p["timestamp"],
        "durationMs": p.get("durationMs", {}),
        "numInputRows": p.get("numInputRows", 0),
        "state": {
            k: op.get(k)
            for k in (
                "numRowsTotal",
                "numRowsUpdated",
                "allUpdatesTimeMs",
                "allRemovalsTimeMs",
                "commitTimeMs",
                "memoryUsedBytes",
            )
        },
        "endOffsets": [s.get("endOffset") for s in p.get("sources", [])],
        "offsetsBehindLatest": max((int(float(m.get("maxOffsetsBehindLatest", 0) or 0)) for m in behind), default=0),
    }


def _idle(batch: dict | None, absent: bool = False) -> bool:
    """Whether a (compact) progress report is an idle trigger's: no batch ran (no addBatch)."""
    return absent if batch is None else not ran_a_batch(batch)


def iso_ms(timestamp: str) -> int:
    """Spark's progress timestamp ("2026-11-25T06:01:02.345Z") as epoch milliseconds."""
    from datetime import datetime

    return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000)


class StatusReporter:
    """Kept by the job's driver; `on_tick` is called by the supervisor about once a second.

    The file's freshness says the driver is alive: a heartbeat thread rewrites it every second
    without asking Spark anything (a batch, a JVM pause or the Spark session starting up does
    not hold it back). `polledAt` says when the supervisor last heard from the query itself."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.state, self.detail = "starting", ""
        self.started_at = time.time()
        self.ready_at: float | None = None
        self.query_id: str | None = None
        self.query = None
        self.polled_at: float | None = None
        self.batches: dict[int, dict] = {}
        self._seen = -1  # the newest batch of the attached query already collected
        self._newest: tuple[int, str] | None = None  # newest_report() of the last report collected
        # Whether the attached query's newest batch read everything there was (the timer waker
        # holds its wakes until then: streaming/timer_waker.py).
        self._caught_up = False
        self._lock = threading.Lock()  # the supervisor, the self-check and the heartbeat all write
        self.write()

    def start_heartbeat(
        self, stopping: threading.Event | None = None, every_s: float = HEARTBEAT_S
    ) -> threading.Thread:
        """Rewrites the file every `every_s` until `stopping` is set (by default: for the process's life)."""
        stopping = stopping or threading.Event()

        def beat():
            while not stopping.wait(every_s):
                with self._lock:
                    self._write()

        thread = threading.Thread(target=beat, name="status-heartbeat", daemon=True)
        thread.start()
        return thread

    def attach(self, query) -> None:
        """The running query, whose progress every write includes."""
        with self._lock:
            self.query, self.query_id, self._seen, self._newest = query, str(query.id), -1, None
            self._caught_up = False
            self.polled_at = time.time()

    def caught_up(self) -> bool:
        """True once the running query's newest batch ended at the sources' latest offsets: not in a
        catch-up read over several batches (`[stream] max_offsets_per_trigger`), nor before a new
        query's first batch."""
        return self._caught_up

    def lifecycle(self, state: str, detail: str = "") -> None:
        if state == "ready" and self.ready_at is None:
            self.ready_at = time.time()
        if state == "running" and self.ready_at is not None:
            state = "ready"  # a restarted query is back to answering once it runs
        self.state, self.detail = state, detail
        self.write()

    def on_tick(self, query) -> None:
        if query is not self.query:
            self.attach(query)
        if self._collect():
            self.polled_at = time.time()
        with self._lock:
            self._write()

    def _collect(self) -> bool:
        """Adds the query's new progress reports; False when the query could not be asked. Spark
        is asked outside the lock, so that a slow answer never holds the heartbeat back. Which
        report is the newest is asked first: when it is the one read last (an idle query, or a
        tick between two batches), nothing more is asked."""
        query, seen, known = self.query, self._seen, self._newest
        if query is None:
            return False
        try:
            head = newest_report(query)
            if head is None or head == known:
                return True
            if _idle(self.batches.get(seen)):
                seen -= 1  # the batch an idle trigger reported under the next id may have run since
            new = progress_since(query, seen, after_report=known)
        except Exception:  # noqa: BLE001 - the query may be stopping under us; try again next time
            return False
        with self._lock:
            if query is not self.query:
                return True  # a restarted query was attached meanwhile: its reports come next time
            for p in new:
                # A trigger that found no data reports the id of the batch that runs next (every
                # noDataProgressEventInterval while idle): that batch's own report replaces it.
                if _idle(self.batches.get(p["batchId"]), True):
                    self.batches[p["batchId"]] = compact_progress(p)
            if new:
                self._caught_up = self.batches[new[-1]["batchId"]]["offsetsBehindLatest"] == 0
                self._seen = max(self._seen, p["batchId"])
            self._newest = (new[-1]["batchId"], new[-1]["timestamp"]) if new else head
            for old in sorted(self.batches)[:-RECENT_BATCHES]:
                del self.batches[old]
        return True

    def write(self) -> None:
        self._collect()
        with self._lock:
            self._write()

    def _write(self) -> None:
        doc = {
            "state": self.state,
            "detail": self.detail,
            "pid": os.getpid(),
            "updatedAt": time.time(),
            "startedAt": self.started_at,
            "readyAt": self.ready_at,
            "queryId": self.query_id,
            "polledAt": self.polled_at,
            "batches": [self.batches[b] for b in sorted(self.batches)],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, self.path)


def read_status(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _bootstrap_timeout() -> dict:
    """Fail fast when the broker is down (kafka-python 3 names the setting bootstrap_timeout_ms)."""
    from kafka import KafkaConsumer

    return {"bootstrap_timeout_ms": 5000} if "bootstrap_timeout_ms" in KafkaConsumer.DEFAULT_CONFIG else {}


def request_lag(cfg: StreamConfig) -> int | None:
    """Records in the request topic and the internal channel that no committed micro-batch has
    covered yet; None when the broker cannot be asked. One look: a consumer made and closed."""
    lag = RequestLag(cfg)
    try:
        return lag()
    finally:
        lag.close()


class RequestLag:
    """`request_lag` asked again and again (the job's metrics exporter: every 10 s) over one
    consumer, made on the first call and again after a failure: a consumer made for each look
    cost a broker connection, its metadata and ~9 ms of the driver's CPU (~0.001 core at 10 s).
    Called from one thread at a time."""

    def __init__(self, cfg: StreamConfig):
        self.cfg = cfg
        self._consumer: Any = None

    def __call__(self) -> int | None:
        from kafka import KafkaConsumer, TopicPartition

        from .inspect_state import committed_progress

        try:
            if self._consumer is None:
                self._consumer = KafkaConsumer(
                    bootstrap_servers=self.cfg.bootstrap,
                    group_id=None,
                    enable_auto_commit=False,
                    request_timeout_ms=5000,
                    **_bootstrap_timeout(),
                )
            topics = [self.cfg.topics["requests"], self.cfg.topics["internal"]]
            # From the consumer's metadata (asked again when it is older than metadata.max.age.ms).
            tps = [TopicPartition(t, p) for t in topics for p in (self._consumer.partitions_for_topic(t) or ())]
            end = self._consumer.end_offsets(tps)
        except Exception:  # noqa: BLE001 - broker down: a new consumer next time
            self.close()
            return None
        progress = committed_progress(str(self.cfg.checkpoint))
        done = progress[1] if progress else {}
        return sum(max(0, o - done.get(tp.topic, {}).get(tp.partition, 0)) for tp, o in end.items())

    def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            try:
                consumer.close()
            except Exception:  # noqa: BLE001 - closing a broken consumer
                pass


def summarize(doc: dict | None, now: float | None = None) -> dict:
    """Up or down, and the figures the command prints, from a status document."""
    now = time.time() if now is None else now
    if doc is None:
        return {"up": False, "reason": "no status file: the job has not run with this checkpoint"}
    alive = pid_alive(int(doc["pid"]))
    age = now - float(doc["updatedAt"])
    batches = doc.get("batches") or []
    recent = [b for b in batches if iso_ms(b["timestamp"]) >= (now - 60) * 1000]
    out = {
        "state": doc["state"],
        "pid": doc["pid"],
        "statusAgeS": round(age, 1),
        "readyAfterS": None if doc.get("readyAt") is None else round(doc["readyAt"] - doc["startedAt"], 1),
        "batchesPerS": round(len(recent) / 60, 2) if recent else 0.0,
        "lastBatchId": batches[-1]["batchId"] if batches else None,
        "lastBatchMs": batches[-1]["durationMs"].get("triggerExecution") if batches else None,
        "detail": doc.get("detail", ""),
    }
    if not alive:
        out.update(up=False, reason=f"the job (pid {doc['pid']}) is not running")
    elif age > STALE_AFTER_S:
        out.update(up=False, reason=f"the job has not reported for {age:.0f} s")
    elif doc["state"] in ("running", "ready") and now - float(doc.get("polledAt") or now) > QUERY_SILENT_AFTER_S:
        silent = now - float(doc["polledAt"])
        out.update(up=False, reason=f"the driver has not heard from the query for {silent:.0f} s (is it hung?)")
    elif doc["state"] != "ready":
        out.update(up=False, reason=f"the job is {doc['state']}" + (f": {doc['detail']}" if doc.get("detail") else ""))
    else:
        out.update(up=True, reason="answering requests")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", help="TOML file overriding conf/defaults.toml")
    ap.add_argument("--json", action="store_true", help="print the status as one JSON object")
    ap.add_argument(
        "--wait-ready",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="wait up to SECONDS for the service to be up before answering",
    )
    args = ap.parse_args(argv)
    cfg = StreamConfig.load(args.config)
    path = status_path(cfg.checkpoint)
    deadline = time.time() + args.wait_ready
    while True:
        s = summarize(read_status(path))
        if s["up"] or time.time() >= deadline:
            break
        time.sleep(0.5)
    s["requestLag"] = request_lag(cfg)
    if args.json:
        print(json.dumps(s))
    else:
        print(f"coordinator service: {'UP' if s['up'] else 'DOWN'} ({s['reason']})")
        if "state" in s:
            lag = "unknown (broker unreachable)" if s["requestLag"] is None else f"{s['requestLag']} records"
            print(f"  state {s['state']}, pid {s['pid']}, status written {s['statusAgeS']} s ago")
            print(
                f"  micro-batches: {s['batchesPerS']}/s over the last minute, last batch "
                f"{s['lastBatchId']} took {s['lastBatchMs']} ms"
            )
            print(f"  request lag: {lag}")
            if s["readyAfterS"] is not None:
                print(f"  ready {s['readyAfterS']} s after the job started")
    return 0 if s["up"] else 1


if __name__ == "__main__":
    sys.exit(main())
