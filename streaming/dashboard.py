"""The service's web page: groups, lag, rebalances, transactions in flight and the stream's health.

Served by the metrics exporter's HTTP server (streaming/metrics_exporter.py) next to `/metrics`:

    /                 the overview page          /api/overview     its data (JSON)
    /group/<id>       a group's page             /api/group/<id>   its data (JSON)

Where the data comes from: groups, members, assignments, committed offsets and transactions from
the Redis read model (client/read_model.py); log end offsets from the broker (lag = end − committed,
cached for a moment); rebalances from the events topic (a background consumer keeps the recent
RebalanceStarted / GroupEpochBumped events with their reasons, while someone looks: it starts with a
view, reading back `history_s`, and stops `events_idle_s` after the last one, so that an unwatched
service does not read every event it writes); the stream's figures from the metrics
records and the job's status file. A sampler thread keeps short in-memory histories (lag per
partition, batch duration, request rate, request lag, state bytes) for the charts: a restarted
exporter starts its charts again. The builders below are pure functions over read-model dicts and
metric samples; the page is one HTML file (plain JS, inline SVG) that renders the data embedded in
it at once (so a headless browser's first paint has it) and polls the JSON every 2 s.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from client.read_model import ReadModel

log = logging.getLogger("dashboard")

OPEN_TXN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")
REBALANCE_EVENTS = ("RebalanceStarted", "GroupEpochBumped")  # what group_rebalance_started_total counts
GROUP_TYPES = ("classic", "consumer", "share", "streams")
DEFAULTS = {
    "hanging_transaction_ms": 900000,
    "sample_interval_ms": 2000,
    "history_s": 600,
    "end_offsets_cache_ms": 2000,
    "events_idle_s": 300,
}
PAGE = Path(__file__).with_name("dashboard.html")


# ---------------------------------------------------------------------------------- pure builders
def partition_lag(offsets: dict, ends: dict) -> list[dict]:
    """One row per committed partition: {"topic", "partition", "committed", "end", "lag"}.
    `offsets` is {(topic, partition): committed offset}, `ends` {(topic, partition): log end offset};
    lag is None where the end is unknown (a topic the broker does not have), as Kafka's tool prints -."""
    rows = []
    for (topic, partition), committed in sorted(offsets.items()):
        end = ends.get((topic, partition))
        rows.append(
            {
                "topic": topic,
                "partition": partition,
                "committed": committed,
                "end": end,
                "lag": None if end is None else max(0, end - committed),
            }
        )
    return rows


def total_lag(rows: list[dict]) -> int | None:
    known = [r["lag"] for r in rows if r["lag"] is not None]
    return sum(known) if known else (None if rows else 0)


def assignment_pairs(assignment) -> list[tuple[str, int]]:
    """A member's assignment, `[{"topic", "partitions"}]` (read model) or {topic: [partitions]}."""
    if not assignment:
        return []
    if isinstance(assignment, dict):
        return [(t, p) for t, ps in assignment.items() for p in ps]
    return [(a["topic"], p) for a in assignment for p in a["partitions"]]


def member_partitions(group: dict, member: dict) -> list[tuple[str, int]]:
    """The partitions a member reads: its assignment (classic, consumer, share groups), or for a
    streams member the source topics' partitions of its active tasks (the group's subtopologies)."""
    if group.get("type") != "streams":
        return assignment_pairs(member.get("assignment"))
    sources = {s["subtopologyId"]: s.get("sourceTopics") or [] for s in group.get("subtopologies") or []}
    return sorted(
        {
            (topic, p)
            for task in (member.get("tasks") or {}).get("activeTasks") or []
            for topic in sources.get(task["subtopologyId"], [])
            for p in task["partitions"]
        }
    )


def group_row(group: dict, rows: list[dict]) -> dict:
    """A group of the read model as the overview lists it. A share group has no committed offsets
    and Kafka 4.1 no share lag: its lag is None (shown "-")."""
    return {
        "groupId": group["groupId"],
        "type": group.get("type"),
        "state": group.get("state"),
        "protocol": group.get("protocol") or "",
        "members": len(group.get("members") or []),
        "generation": group.get("generation"),
        "assignmentEpoch": group.get("assignmentEpoch"),
        "coordinatorPartition": group.get("coordinatorPartition"),
        "totalLag": None if group.get("type") == "share" else total_lag(rows),
        "partitions": len(rows),
    }


def member_rows(group: dict, rows: list[dict]) -> list[dict]:
    """Members with their assignments and the lag of the partitions they own."""
    lag = {(r["topic"], r["partition"]): r["lag"] for r in rows}
    out = []
    for m in group.get("members") or []:
        pairs = member_partitions(group, m)
        by_topic: dict[str, list[int]] = {}
        for t, p in pairs:
            by_topic.setdefault(t, []).append(p)
        out.append(
            {
                "memberId": m.get("memberId"),
                "groupInstanceId": m.get("groupInstanceId"),
                "clientId": m.get("clientId"),
                "clientHost": m.get("clientHost"),
                "memberEpoch": m.get("memberEpoch"),
                "memberState": m.get("memberState"),
                "assignment": {t: sorted(ps) for t, ps in by_topic.items()},
                "tasks": _tasks_text(m.get("tasks")),
                "lag": None if group.get("type") == "share" else sum(lag.get(tp) or 0 for tp in pairs),
            }
        )
    return out


def _tasks_text(tasks: dict | None) -> str:
    """A streams member's tasks as kafka-streams-groups.sh prints them ("ACTIVE: 0:[0,1]; ..."), "" for others."""
    out = ""
    for kind, name in (("ACTIVE", "activeTasks"), ("STANDBY", "standbyTasks"), ("WARMUP", "warmupTasks")):
        ts = (tasks or {}).get(name) or []
        if ts:
            out += f"{kind}: " + "".join(f"{t['subtopologyId']}:[{','.join(map(str, t['partitions']))}]; " for t in ts)
    return out.strip()


def share_partition_rows(share_offsets: dict, ends: dict) -> list[dict]:
    """A share group's share-partitions: {"topic", "partition", "startOffset", "end"} (start offset
    None where none is set yet, as kafka-share-groups.sh prints -)."""
    return [
        {
            "topic": t,
            "partition": p,
            "startOffset": v["startOffset"] if v["startOffset"] >= 0 else None,
            "end": ends.get((t, p)),
        }
        for (t, p), v in sorted(share_offsets.items())
    ]


def transactions_in_flight(txns: list[dict], now_ms: int, hanging_ms: int) -> list[dict]:
    """Open transactions (Ongoing, Prepare*), oldest first; `hanging` when open longer than
    `hanging_ms` (the admin CLI's find-hanging criterion)."""
    out = []
    for t in txns:
        if t.get("state") not in OPEN_TXN_STATES:
            continue
        start = t.get("startTimestamp")
        age = None if start is None or start < 0 else max(0, now_ms - start)
        out.append(
            {
                "transactionalId": t["transactionalId"],
                "state": t["state"],
                "producerId": t.get("producerId"),
                "producerEpoch": t.get("producerEpoch"),
                "timeoutMs": t.get("timeoutMs"),
                "startTimestamp": start,
                "ageMs": age,
                "partitions": [f"{p['topic']}-{q}" for p in t.get("partitions") or [] for q in p["partitions"]],
                "hanging": age is not None and age > hanging_ms,
            }
        )
    return sorted(out, key=lambda t: -(t["ageMs"] or 0))


def rebalance_event(value: dict) -> dict | None:
    """The part of an events-topic record the page shows, for a rebalance (None otherwise)."""
    if value.get("event") not in REBALANCE_EVENTS or "groupId" not in value:
        return None
    return {
        "timeMs": int(value.get("timeMs") or 0),
        "groupId": value["groupId"],
        "type": "classic" if value["event"] == "RebalanceStarted" else value.get("groupType") or "consumer",
        "event": value["event"],
        "reason": value.get("reason") or "",
        "generation": value.get("generationId", value.get("groupEpoch")),
    }


def rebalance_buckets(events: list[dict], now_ms: int, window_ms: int, bucket_ms: int) -> list[dict]:
    """Rebalances per time bucket over the window (oldest first), by group type."""
    n = max(1, window_ms // bucket_ms)
    start = now_ms - n * bucket_ms
    buckets = [{"t": start + i * bucket_ms, **dict.fromkeys(GROUP_TYPES, 0)} for i in range(n)]
    for e in events:
        i = (e["timeMs"] - start) // bucket_ms
        if 0 <= i < n and e["type"] in GROUP_TYPES:
            buckets[i][e["type"]] += 1
    return buckets


def requests_applied(counters: dict) -> float:
    """The sum of `requests_total{api=...}` over the APIs, from the exporter's counter totals."""
    return sum(v for k, v in counters.items() if k.startswith("requests_total"))


def stream_problems(status: dict | None, partitions_reporting: int, metrics_topic: str) -> list[str]:
    """Plain sentences on what is wrong with the stream. `status` is streaming.status.summarize's
    answer, or None where this exporter has no status file (another machine than the driver)."""
    out = []
    if status is not None and not status["up"]:
        out.append(f"The stream is down: {status['reason']}.")
    if partitions_reporting == 0:
        out.append(
            f"No metrics records in {metrics_topic} yet: the stream has not completed a batch "
            "that did anything, or it is not running."
        )
    return out


def overview(
    *,
    groups: list[dict] | None,
    offsets: dict,
    ends: dict,
    txns: list[dict] | None,
    now_ms: int,
    hanging_ms: int,
    rebalances: list[dict],
    history: dict,
    stream: dict,
    problems: list[str],
    window_ms: int,
    bucket_ms: int = 30000,
) -> dict:
    """The overview page's data. `groups` / `txns` None: the read model is not available
    (`problems` says why); `offsets` {groupId: {(topic, partition): committed}}."""
    rows = []
    for g in groups or []:
        rows.append(group_row(g, partition_lag(offsets.get(g["groupId"], {}), ends)))
    return {
        "nowMs": now_ms,
        "problems": problems,
        "readModel": groups is not None,
        "groups": rows,
        "transactions": None if txns is None else transactions_in_flight(txns, now_ms, hanging_ms),
        "hangingTransactionMs": hanging_ms,
        "rebalances": {
            "recent": sorted(rebalances, key=lambda e: -e["timeMs"])[:20],
            "buckets": rebalance_buckets(rebalances, now_ms, window_ms, bucket_ms),
            "bucketMs": bucket_ms,
        },
        "stream": stream,
        "history": history,
    }


def group_page(
    *,
    group: dict | None,
    group_id: str,
    offsets: dict,
    ends: dict,
    now_ms: int,
    rebalances: list[dict],
    lag_history: list,
    problems: list[str],
    share_offsets: dict | None = None,
) -> dict:
    rows = partition_lag(offsets, ends)
    owner = {
        tp: m.get("memberId") for m in (group or {}).get("members") or [] for tp in member_partitions(group or {}, m)
    }
    for r in rows:
        r["memberId"] = owner.get((r["topic"], r["partition"]))
    return {
        "nowMs": now_ms,
        "problems": problems,
        "groupId": group_id,
        "found": group is not None,
        "group": group_row(group, rows) if group else None,
        "members": member_rows(group, rows) if group else [],
        "partitions": rows,
        "sharePartitions": share_partition_rows(share_offsets or {}, ends),
        "lagHistory": lag_history,
        "rebalances": sorted([e for e in rebalances if e["groupId"] == group_id], key=lambda e: -e["timeMs"])[:20],
    }


def render_page(template: str, data: dict) -> str:
    """The page with its first data embedded (rendered before any fetch)."""
    blob = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")  # no </script> nor <!--
    return template.replace("/*INITIAL*/null", blob)


# ------------------------------------------------------------------------------ live sources
class History:
    """Time series kept for the last `keep_s` seconds: name -> deque of (ms, value)."""

    def __init__(self, keep_s: float):
        self.keep_ms = int(keep_s * 1000)
        self._series: dict[str, deque] = {}
        self._lock = threading.Lock()

    def add(self, name: str, t_ms: int, value) -> None:
        with self._lock:
            s = self._series.setdefault(name, deque())
            s.append((t_ms, value))
            while s and s[0][0] < t_ms - self.keep_ms:
                s.popleft()

    def get(self, name: str) -> list:
        with self._lock:
            return [list(p) for p in self._series.get(name, ())]

    def names(self, prefix: str) -> list[str]:
        with self._lock:
            return [n for n in self._series if n.startswith(prefix)]


class Dashboard:
    """The page's live sources; `start()` runs the events consumer and the sampler."""

    def __init__(
        self,
        bootstrap: str,
        *,
        events_topic: str,
        metrics_topic: str,
        store,
        health=None,
        status_file: Path | None = None,
        redis_url: str | None = None,
        redis_prefix: str = "coord",
        settings: dict | None = None,
    ):
        s = {**DEFAULTS, **(settings or {})}
        self.bootstrap, self.events_topic, self.metrics_topic = bootstrap, events_topic, metrics_topic
        self.store, self.health, self.status_file = store, health, status_file
        self.redis_url, self.redis_prefix = redis_url, redis_prefix
        self.hanging_ms = int(s["hanging_transaction_ms"])
        self.sample_s = int(s["sample_interval_ms"]) / 1000
        self.window_ms = int(s["history_s"]) * 1000
        self.ends_ttl_s = int(s["end_offsets_cache_ms"]) / 1000
        self.events_idle_s = float(s["events_idle_s"])
        self.history = History(int(s["history_s"]))
        self.rebalances: deque = deque(maxlen=5000)
        self._rebalance_lock = threading.Lock()
        self._model: ReadModel | None = None
        self._kafka: Any = None  # a KafkaConsumer once needed
        self._kafka_lock = threading.Lock()
        self._ends: dict = {}  # (topic, partition) -> (end offset, monotonic time read)
        self._last_batch_id = -1
        self._last_requests: tuple[float, float] | None = None
        self._events_error: str | None = None  # the events consumer's last failure (the broker away)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        # The events follower of the moment (None: not following) and what stops it; the last view.
        self._events_lock = threading.Lock()
        self._events_halt: threading.Event | None = None
        self._events_thread: threading.Thread | None = None
        self._last_view = 0.0

    def start(self) -> Dashboard:
        """The sampler; the events follower waits for a view (`_viewed`)."""
        t = threading.Thread(target=self._sample_loop, name="dashboard-sampler", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self, timeout: float = 10) -> None:
        self._stop.set()
        with self._events_lock:
            if self._events_halt is not None:
                self._events_halt.set()
            follower = self._events_thread
        for t in self._threads + ([follower] if follower is not None else []):
            t.join(timeout=timeout)
        with self._kafka_lock:
            if self._kafka is not None:
                self._kafka.close()
                self._kafka = None

    # ------------------------------------------------------------------ read model and broker
    def _read_model(self):
        if self.redis_url is None:
            return None
        if self._model is None:
            from client.read_model import ReadModel

            self._model = ReadModel(self.redis_url, self.redis_prefix, timeout=2.0)
        return self._model

    def read_model_state(self, group_id: str | None = None) -> tuple[dict, list[str]]:
        """{"groups", "offsets", "txns"} (or one group's) from Redis, and the problems met."""
        from client.read_model import ReadModelUnavailable

        model = self._read_model()
        if model is None:
            return {"groups": None, "txns": None, "offsets": {}}, [
                "The Redis read model is off ([redis] enabled = false, or no --redis): groups and "
                "transactions cannot be shown."
            ]
        try:
            if group_id is not None:
                g = model.group(group_id)
                offs = {tp: v["committedOffset"] for tp, v in model.offsets(group_id).items()}
                share = model.share_offsets(group_id) if g and g.get("type") == "share" else {}
                return {"group": g, "offsets": offs, "shareOffsets": share}, []
            groups = model.groups()
            offsets = {
                g: {tp: v["committedOffset"] for tp, v in offs.items()}
                for g, offs in model.offsets_of([g["groupId"] for g in groups]).items()
            }
            txns = model.transactions()
            problems = (
                []
                if model.freshness()["updatedAt"] is not None
                else [
                    f"Redis at {self.redis_url} holds no read model yet (prefix {self.redis_prefix!r}): "
                    "the projector has not written."
                ]
            )
            return {"groups": groups, "offsets": offsets, "txns": txns}, problems
        except ReadModelUnavailable as e:
            reason = str(e).split(": ", 1)[-1]
            empty: dict[str, Any] = (
                {"group": None, "offsets": {}, "shareOffsets": {}}
                if group_id is not None
                else {"groups": None, "txns": None, "offsets": {}}
            )
            return empty, [f"Redis at {self.redis_url} is not reachable: {reason}"]

    def end_offsets(self, tps: set) -> tuple[dict, list[str]]:
        """Log end offsets of `tps` (cached for `end_offsets_cache_ms`); unknown partitions left out."""
        from kafka import KafkaConsumer, TopicPartition

        with self._kafka_lock:  # the sampler and the page's requests share the consumer and the cache
            return self._end_offsets(set(tps), KafkaConsumer, TopicPartition)

    def _end_offsets(self, tps: set, KafkaConsumer, TopicPartition) -> tuple[dict, list[str]]:
        now = time.monotonic()
        out = {tp: v for tp, (v, at) in self._ends.items() if tp in tps and now - at < self.ends_ttl_s}
        missing = tps - set(out)
        if not missing:
            return out, []
        try:
            if self._kafka is None:
                self._kafka = KafkaConsumer(
                    bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False, request_timeout_ms=5000
                )
            known = []
            for topic in {t for t, _ in missing}:
                parts = self._kafka.partitions_for_topic(topic) or set()
                known += [TopicPartition(t, p) for t, p in missing if t == topic and p in parts]
            ends = self._kafka.end_offsets(known) if known else {}
        except Exception as e:  # noqa: BLE001 - broker away: say so, keep serving
            if self._kafka is not None:
                try:
                    self._kafka.close()
                except Exception:  # noqa: BLE001
                    pass
                self._kafka = None
            return out, [f"The broker at {self.bootstrap} is not reachable: {e}"]
        for tp, v in ends.items():
            self._ends[(tp.topic, tp.partition)] = (v, now)
            out[(tp.topic, tp.partition)] = v
        return out, []

    # ------------------------------------------------------------------ stream
    def _status(self) -> dict | None:
        if self.status_file is None:
            return None
        from .status import read_status, summarize

        return summarize(read_status(self.status_file))

    def stream_view(self) -> tuple[dict, list[str]]:
        t = self.store.totals()
        status = self._status()
        if self.health is not None:
            self.health.refresh()  # the last batch, also when nobody scrapes /metrics
        last = (self.health.last_batch if self.health is not None else None) or {}
        problems = stream_problems(status, len(t["stateBytes"]), self.metrics_topic)
        if self._events_error:
            problems.append(self._events_error + " (rebalances are not followed)")
        view = {
            "status": status,
            "statusFile": str(self.status_file) if self.status_file else None,
            "partitionsReporting": len(t["stateBytes"]),
            "stateBytes": sum(t["stateBytes"].values()),
            "requestsApplied": requests_applied(t["counters"]),
            "lastBatchId": last.get("batchId"),
            "lastBatchMs": (last.get("durationMs") or {}).get("triggerExecution"),
            "requestLag": self.health.request_lag if self.health is not None else None,
        }
        return view, problems

    def rebalance_list(self) -> list[dict]:
        self._viewed()
        cutoff = int(time.time() * 1000) - self.window_ms
        with self._rebalance_lock:
            return [e for e in self.rebalances if e["timeMs"] >= cutoff]

    # ------------------------------------------------------------------ page data
    def overview(self) -> dict:
        state, problems = self.read_model_state()
        tps = {tp for offs in state["offsets"].values() for tp in offs}
        ends, broker_problems = self.end_offsets(tps)
        stream, stream_problems_ = self.stream_view()
        history = {
            name: self.history.get(name)
            for name in ("batchDurationMs", "requestRate", "inputRowRate", "requestLag", "stateBytes")
        }
        return overview(
            groups=state["groups"],
            offsets=state["offsets"],
            ends=ends,
            txns=state["txns"],
            now_ms=int(time.time() * 1000),
            hanging_ms=self.hanging_ms,
            rebalances=self.rebalance_list(),
            history=history,
            stream=stream,
            problems=problems + broker_problems + stream_problems_,
            window_ms=self.window_ms,
        )

    def group(self, group_id: str) -> dict:
        state, problems = self.read_model_state(group_id)
        ends, broker_problems = self.end_offsets(set(state["offsets"]) | set(state["shareOffsets"]))
        prefix = f"lag:{group_id}\x00"
        lag_history = [
            {"partition": name[len(prefix) :], "points": self.history.get(name)}
            for name in sorted(self.history.names(prefix))
        ]
        return group_page(
            group=state["group"],
            group_id=group_id,
            offsets=state["offsets"],
            ends=ends,
            now_ms=int(time.time() * 1000),
            rebalances=self.rebalance_list(),
            lag_history=lag_history,
            problems=problems + broker_problems,
            share_offsets=state["shareOffsets"],
        )

    # ------------------------------------------------------------------ background
    def sample(self) -> None:
        """One sample of every chart's series."""
        now = int(time.time() * 1000)
        t = self.store.totals()
        requests = requests_applied(t["counters"])
        mono = time.monotonic()
        if self._last_requests is not None and requests >= self._last_requests[0]:
            dt = mono - self._last_requests[1]
            if dt > 0:
                self.history.add("requestRate", now, round((requests - self._last_requests[0]) / dt, 2))
        self._last_requests = (requests, mono)
        if t["stateBytes"]:
            self.history.add("stateBytes", now, sum(t["stateBytes"].values()))
        if self.health is not None and self.health.request_lag is not None:
            self.history.add("requestLag", now, self.health.request_lag)
        self._sample_batches()
        state, _ = self.read_model_state()
        if state["groups"]:
            ends, _ = self.end_offsets({tp for offs in state["offsets"].values() for tp in offs})
            for g in state["groups"]:
                for r in partition_lag(state["offsets"].get(g["groupId"], {}), ends):
                    if r["lag"] is not None:
                        self.history.add(f"lag:{g['groupId']}\x00{r['topic']}-{r['partition']}", now, r["lag"])

    def _sample_batches(self) -> None:
        """Every micro-batch the status file lists that was not seen yet: its duration and input rate."""
        if self.status_file is None:
            return
        from .status import iso_ms, read_status

        doc = read_status(self.status_file) or {}
        for b in doc.get("batches") or []:
            if b["batchId"] <= self._last_batch_id:
                continue
            self._last_batch_id = b["batchId"]
            ms = (b.get("durationMs") or {}).get("triggerExecution") or 0
            at = iso_ms(b["timestamp"]) + ms
            self.history.add("batchDurationMs", at, ms)
            if ms > 0:
                self.history.add("inputRowRate", at, round(int(b.get("numInputRows", 0)) * 1000 / ms, 1))

    def _sample_loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.sample()
            except Exception as e:  # noqa: BLE001 - a sample lost is a gap in a chart, never a dead thread
                log.warning("dashboard sample: %s", e)
            self._stop.wait(self.sample_s)

    def _viewed(self) -> None:
        """A page or its data was asked for: follow the events topic if no follower is running."""
        with self._events_lock:
            self._last_view = time.monotonic()
            if self._stop.is_set() or (self._events_halt is not None and not self._events_halt.is_set()):
                return
            halt = self._events_halt = threading.Event()
            self._events_thread = threading.Thread(
                target=self._consume_events, args=(halt,), name="dashboard-events", daemon=True
            )
            self._events_thread.start()

    def _unwatched(self, halt: threading.Event) -> None:
        """After each poll: stop following once nobody has looked for `events_idle_s`."""
        with self._events_lock:
            if time.monotonic() - self._last_view > self.events_idle_s:
                halt.set()

    def _consume_events(self, halt: threading.Event) -> None:
        """Rebalance events of the last `history_s` seconds and on, from the events topic, until
        `halt` is set (by `_unwatched` or `stop`)."""
        from .topic_follower import follow_topic

        def position(consumer, partitions) -> None:
            with self._rebalance_lock:  # read back again: what an earlier follower kept is re-read
                if halt is self._events_halt:
                    self.rebalances.clear()
            since = int(time.time() * 1000) - self.window_ms
            for tp, found in consumer.offsets_for_times({tp: since for tp in partitions}).items():
                if found is None:
                    consumer.seek_to_end(tp)
                else:
                    consumer.seek(tp, found.offset)

        def failed(e: Exception) -> None:
            self._events_error = f"The broker at {self.bootstrap} is not reachable: {e}"
            log.warning("dashboard events consumer: %s; reconnecting", e)
            self._unwatched(halt)  # a broker away: the retries stop with the views too

        def polled() -> None:
            self._events_error = None
            self._unwatched(halt)

        follow_topic(
            self.bootstrap,
            self.events_topic,
            halt,
            position,
            lambda r: self._on_event(r.value, halt),
            after_poll=polled,
            on_error=failed,
            missing_topic_wait_s=2.0,
        )

    def _on_event(self, raw: bytes | None, halt: threading.Event) -> None:
        if not raw or b"Rebalance" not in raw and b"GroupEpochBumped" not in raw:
            return  # most events are not rebalances: skip the parse
        try:
            e = rebalance_event(json.loads(raw))
        except (ValueError, TypeError, AttributeError):
            return
        if e is not None:
            with self._rebalance_lock:
                if halt is self._events_halt:  # not a follower that was replaced
                    self.rebalances.append(e)
