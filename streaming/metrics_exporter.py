"""Serve the coordinators' metrics in Prometheus text format.

    .venv/bin/python -m streaming.metrics_exporter [--config my.toml] [--bootstrap-server H:P] [--port 9464]

The job runs this in its driver (`[metrics] port`, 0 = off); it also runs on its own, anywhere the
broker can be reached (with the job's checkpoint directory at hand for the stream's health). It
reads the `coordinator-metrics` topic from its start with a background consumer and keeps the
newest record of every coordinator partition (a replayed batch's record, identical to the one
already read, changes nothing); `/metrics` serves their sum over partitions,
so a restarted exporter rebuilds the same totals from the (compacted) topic. The stream's health
(batches, batch duration, input rows, request-topic lag) comes from the job's status file.
Every series is documented in docs/operations.md, "Metrics". The same HTTP server serves the
dashboard (streaming/dashboard.py: `/`, `/group/<id>`, `/api/...`; docs/operations.md, "Dashboard").
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

from prometheus_client.registry import Collector

from coordinator.metrics import BUCKETS_MS

PREFIX = "kafka_coordinator_"
_SERIES = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"')
log = logging.getLogger("metrics_exporter")


def parse_series(key: str) -> tuple[str, dict]:
    m = _SERIES.match(key)
    if m is None:
        raise ValueError(f"not a series: {key!r}")
    return m.group(1), dict(_LABEL.findall(m.group(2) or ""))


class MetricsStore:
    """The newest metrics record of each coordinator partition, and their sums."""

    def __init__(self):
        self._lock = threading.Lock()
        self.latest: dict[int, dict] = {}
        # Wall-clock measurements (assignment compute time): summed over the records this exporter
        # saw for the first time; per exporter process (docs/operations.md).
        self.wall: dict[str, list[float]] = {}

    def apply(self, record: dict) -> bool:
        """`record`, read in topic order, is now its partition's newest; whether it is another
        batch's (False: the same batch written again by a replay, which changes nothing).

        Topic order is batch order: a batch's records are written before the next batch starts,
        and a replay rewrites the batch's record unchanged. A sequence number lower than the last
        one is a new checkpoint's partition starting again: its counters reset, as Prometheus
        counters may."""
        cp = int(record["coordinatorPartition"])
        with self._lock:
            old = self.latest.get(cp)
            self.latest[cp] = record
            if old is not None and int(record["seq"]) == int(old["seq"]):
                return False
            for name, w in (record.get("wallClock") or {}).items():
                total = self.wall.setdefault(name, [0, 0])
                total[0] += w["count"]
                total[1] += w["totalNs"]
            return True

    def totals(self) -> dict:
        counters: dict[str, float] = {}
        gauges: dict[str, float] = {}
        histograms: dict[str, dict] = {}
        with self._lock:
            records = list(self.latest.values())
            wall = {k: list(v) for k, v in self.wall.items()}
        for r in records:
            for k, v in r.get("counters", {}).items():
                counters[k] = counters.get(k, 0) + v
            for k, v in r.get("gauges", {}).items():
                gauges[k] = gauges.get(k, 0) + v
            for k, h in r.get("histograms", {}).items():
                total = histograms.setdefault(k, {"buckets": [0] * len(h["buckets"]), "sum": 0, "count": 0})
                # strict=False: a worker of another version may report other buckets (summed as far as both go)
                total["buckets"] = [a + b for a, b in zip(total["buckets"], h["buckets"], strict=False)]
                total["sum"] += h["sum"]
                total["count"] += h["count"]
        return {
            "counters": counters,
            "gauges": gauges,
            "histograms": histograms,
            "wall": wall,
            "stateBytes": {r["coordinatorPartition"]: r.get("stateBytes", 0) for r in records},
        }


class StreamHealth:
    """The stream's micro-batches as the job's status file lists them (streaming/status.py)."""

    def __init__(self, status_file: Path | None):
        self.status_file = status_file
        self._lock = threading.Lock()
        self.last_batch: dict | None = None
        self.batches = 0  # batches this exporter saw complete
        self.input_rows = 0
        self.state: str | None = None
        self.request_lag: int | None = None

    def observe(self, doc: dict | None) -> None:
        if doc is None:
            return
        with self._lock:
            self.state = doc.get("state")
            seen = self.last_batch["batchId"] if self.last_batch else -1
            for b in doc.get("batches") or []:
                if b["batchId"] > seen:
                    self.batches += 1
                    self.input_rows += int(b.get("numInputRows", 0))
                    self.last_batch = b

    def refresh(self) -> None:
        if self.status_file is not None:
            from .status import read_status

            self.observe(read_status(self.status_file))


def _families(store: MetricsStore, health: StreamHealth | None):
    """The metric families to serve (prometheus_client's custom-collector types)."""
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
        SummaryMetricFamily,
    )

    t = store.totals()
    out: dict[str, object] = {}

    def family(kind, name: str, labels: list[str], doc: str):
        key = PREFIX + name
        if key not in out:
            out[key] = kind(key, doc, labels=labels)
        return out[key]

    for key, value in sorted(t["counters"].items()):
        name, labels = parse_series(key)
        if name == "request_queue_time_ms_sum":
            continue  # served with the request counts, as a summary (below)
        family(CounterMetricFamily, name.removesuffix("_total"), sorted(labels), HELP.get(name, name)).add_metric(
            [labels[k] for k in sorted(labels)], value
        )
    for key, value in sorted(t["counters"].items()):
        name, labels = parse_series(key)
        if name == "requests_total":
            total = t["counters"].get(key.replace("requests_total", "request_queue_time_ms_sum"), 0)
            family(SummaryMetricFamily, "request_queue_time_ms", ["api"], HELP["request_queue_time_ms"]).add_metric(
                [labels["api"]], count_value=value, sum_value=total
            )
    for key, value in sorted(t["gauges"].items()):
        name, labels = parse_series(key)
        family(GaugeMetricFamily, name, sorted(labels), HELP.get(name, name)).add_metric(
            [labels[k] for k in sorted(labels)], value
        )
    for key, h in sorted(t["histograms"].items()):
        name, labels = parse_series(key)
        cumulative, running = [], 0
        # strict=False: buckets reported by a worker of another version are cut to this one's bounds
        for bound, count in zip([*map(str, BUCKETS_MS), "+Inf"], h["buckets"], strict=False):
            running += count
            cumulative.append((bound, running))
        family(HistogramMetricFamily, name, sorted(labels), HELP.get(name, name)).add_metric(
            [labels[k] for k in sorted(labels)], cumulative, sum_value=h["sum"]
        )
    for name, (count, ns) in sorted(t["wall"].items()):
        family(
            SummaryMetricFamily, f"{name}_compute_seconds", [], HELP.get(f"{name}_compute_seconds", name)
        ).add_metric([], count_value=count, sum_value=ns / 1e9)
    states = family(GaugeMetricFamily, "state_bytes", ["partition"], HELP["state_bytes"])
    for cp, size in sorted(t["stateBytes"].items()):
        states.add_metric([str(cp)], size)
    family(GaugeMetricFamily, "partitions_reporting", [], HELP["partitions_reporting"]).add_metric(
        [], len(t["stateBytes"])
    )
    if health is not None:
        health.refresh()
        last = health.last_batch or {}
        family(CounterMetricFamily, "stream_batches", [], HELP["stream_batches"]).add_metric([], health.batches)
        family(CounterMetricFamily, "stream_input_rows", [], HELP["stream_input_rows"]).add_metric(
            [], health.input_rows
        )
        if last:
            family(GaugeMetricFamily, "stream_last_batch_id", [], HELP["stream_last_batch_id"]).add_metric(
                [], last["batchId"]
            )
            family(GaugeMetricFamily, "stream_batch_duration_ms", [], HELP["stream_batch_duration_ms"]).add_metric(
                [], last.get("durationMs", {}).get("triggerExecution", 0)
            )
            family(GaugeMetricFamily, "stream_batch_input_rows", [], HELP["stream_batch_input_rows"]).add_metric(
                [], last.get("numInputRows", 0)
            )
            family(
                GaugeMetricFamily, "stream_offsets_behind_latest", [], HELP["stream_offsets_behind_latest"]
            ).add_metric([], last.get("offsetsBehindLatest", 0))
        if health.request_lag is not None:
            family(GaugeMetricFamily, "stream_request_lag", [], HELP["stream_request_lag"]).add_metric(
                [], health.request_lag
            )
        family(GaugeMetricFamily, "stream_up", [], HELP["stream_up"]).add_metric(
            [], 1 if health.state == "ready" else 0
        )
    return list(out.values())


class _Collector(Collector):
    def __init__(self, store: MetricsStore, health: StreamHealth | None):
        self.store, self.health = store, health

    def collect(self):
        return _families(self.store, self.health)


class MetricsExporter:
    """The consumer thread and the HTTP endpoint (`/metrics` and the dashboard). `port` 0 picks a
    free port (see `.port`). `dashboard` is the page's settings ([dashboard] table plus `events_topic`,
    `redis_url`, `redis_prefix`); None serves `/metrics` only."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        port: int,
        host: str = "0.0.0.0",
        status_file: Path | None = None,
        lag=None,
        lag_every_s: float = 10.0,
        dashboard: dict | None = None,
    ):
        from prometheus_client import CollectorRegistry

        self.bootstrap, self.topic = bootstrap, topic
        self.store = MetricsStore()
        self.health = StreamHealth(status_file) if status_file is not None else None
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Collector(self.store, self.health))
        self._host, self._port = host, port
        self._lag, self._lag_every_s = lag, lag_every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._server: ThreadingHTTPServer | None = None
        self._server_thread: threading.Thread | None = None
        self.port: int | None = None
        self.dashboard = None
        if dashboard is not None:
            from .dashboard import Dashboard

            settings = dict(dashboard)
            self.dashboard = Dashboard(
                bootstrap,
                events_topic=settings.pop("events_topic"),
                metrics_topic=topic,
                store=self.store,
                health=self.health,
                status_file=status_file,
                redis_url=settings.pop("redis_url", None),
                redis_prefix=settings.pop("redis_prefix", "coord"),
                settings=settings,
            )

    def start(self) -> MetricsExporter:
        server = self._server = ThreadingHTTPServer((self._host, self._port), _handler(self))
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server_thread = threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True)
        self._server_thread.start()
        self._thread = threading.Thread(target=self._consume, name="metrics-consumer", daemon=True)
        self._thread.start()
        if self.dashboard is not None:
            self.dashboard.start()
        return self

    def stop(self, timeout: float = 10) -> None:
        """Stop serving; wait up to `timeout` s for the consumer threads (daemons) to end."""
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
        close_lag = getattr(self._lag, "close", None)  # a RequestLag's consumer, once its thread is done
        if close_lag is not None and (self._thread is None or not self._thread.is_alive()):
            close_lag()
        if self.dashboard is not None:
            self.dashboard.stop(timeout)

    def _consume(self) -> None:
        from .topic_follower import follow_topic

        next_lag = [0.0]

        def apply(r) -> None:
            if r.value is None:
                return
            try:
                self.store.apply(json.loads(r.value))
            except (ValueError, KeyError, TypeError) as e:
                log.warning("metrics record at offset %s skipped: %s", r.offset, e)

        def refresh_lag() -> None:
            if self._lag is not None and self.health is not None and time.monotonic() >= next_lag[0]:
                next_lag[0] = time.monotonic() + self._lag_every_s
                self.health.request_lag = self._lag()

        follow_topic(
            self.bootstrap,
            self.topic,
            self._stop,
            lambda consumer, _: consumer.seek_to_beginning(),
            apply,
            after_poll=refresh_lag,
            on_error=lambda e: log.warning("metrics consumer: %s; reconnecting", e),
        )


def _handler(exporter: MetricsExporter):
    """The request handler: `/metrics` (Prometheus text) and the dashboard's page and JSON."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            path = self.path.split("?", 1)[0]
            try:
                if path == "/metrics":
                    return self._send(200, CONTENT_TYPE_LATEST, generate_latest(exporter.registry))
                board = exporter.dashboard
                if board is None:
                    return self._send(404, "text/plain; charset=utf-8", b"only /metrics is served here\n")
                if path == "/api/overview":
                    return self._json(board.overview())
                if path.startswith("/api/group/"):
                    return self._json(board.group(unquote(path[len("/api/group/") :])))
                if path in ("/", "/index.html"):
                    return self._page(board.overview())
                if path.startswith("/group/"):
                    return self._page(board.group(unquote(path[len("/group/") :])))
                return self._send(404, "text/plain; charset=utf-8", b"not found\n")
            except Exception as e:  # noqa: BLE001 - one failed request, never the server
                log.warning("GET %s: %s", path, e, exc_info=True)
                return self._send(500, "text/plain; charset=utf-8", f"error: {e}\n".encode())

        def _json(self, data: dict):
            self._send(200, "application/json", json.dumps(data).encode())

        def _page(self, data: dict):
            from .dashboard import PAGE, render_page

            self._send(200, "text/html; charset=utf-8", render_page(PAGE.read_text(), data).encode())

        def _send(self, code: int, content_type: str, body: bytes):
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):  # scrapes and polls every few seconds: not worth a log line
            pass

    return Handler


def dashboard_settings(cfg, redis_url: str | None = None) -> dict:
    """The dashboard's settings from the config: [dashboard], the events topic and the read model
    (`redis_url` overrides [redis] url; None and [redis] enabled = false: no read model)."""
    url = redis_url or (cfg.redis.get("url") if cfg.redis.get("enabled") else None)
    return {
        **cfg.dashboard,
        "events_topic": cfg.topics["events"],
        "redis_url": url,
        "redis_prefix": cfg.redis.get("prefix", "coord"),
    }


def start_for_job(cfg, status_file: Path | None) -> MetricsExporter | None:
    """The exporter the job runs in its driver, or None when `[metrics] port` is 0."""
    port = int(cfg.metrics.get("port", 0) or 0)
    if port == 0:
        return None
    from .status import RequestLag

    return MetricsExporter(
        cfg.bootstrap,
        cfg.topics["metrics"],
        port,
        str(cfg.metrics.get("host", "0.0.0.0")),
        status_file=status_file,
        lag=RequestLag(cfg),
        dashboard=dashboard_settings(cfg) if cfg.dashboard.get("enabled", True) else None,
    ).start()


HELP = {
    "group_created_total": "Groups created (Kafka has no such metric; see group_count).",
    "group_deleted_total": "Groups deleted (DeleteGroups, expiry, conversion to another type).",
    "group_count": "Groups by protocol (Kafka: group-count{protocol}).",
    "classic_group_count": "Classic groups by state (Kafka: classic-group-count{state}, NumGroups<State>).",
    "consumer_group_count": "Consumer groups by state (Kafka: consumer-group-count{state}).",
    "streams_group_count": "Streams groups by state (Kafka: streams-group-count{state}).",
    "share_group_count": "Share groups by state (Kafka: share-group-count{state}).",
    "group_member_joined_total": "Members that joined a group.",
    "group_member_left_total": "Members that left a group, by reason (left, expired, fenced, removed).",
    "group_rebalance_started_total": "Rebalances started (Kafka: consumer-group-rebalance-count for consumer groups).",
    "group_rebalance_completed_total": "Rebalances that reached Stable "
    "(Kafka: group-completed-rebalance-count for classic groups).",
    "group_rebalance_failed_total": "Rebalances that ended without reaching Stable.",
    "group_rebalance_duration_ms": "Logical time from a rebalance's start to Stable.",
    "group_heartbeat_latency_ms": "Heartbeats: batch time less the request's append time.",
    "group_assignment_changes_total": "Member assignments changed "
    "(KIP-848: per member; classic: per member of a completed SyncGroup).",
    "group_offset_commit_total": "Offsets committed (Kafka: offset-commit-count).",
    "group_txn_offset_commit_total": "Transactional offsets written (TxnOffsetCommit).",
    "group_offset_expiration_total": "Offsets expired (Kafka: offset-expiration-count).",
    "group_offset_deletion_total": "Offsets deleted by OffsetDelete (Kafka: offset-deletion-count).",
    "txn_started_total": "Transactions started (first partition added).",
    "txn_prepared_total": "Transactions prepared, by result (PrepareCommit / PrepareAbort written).",
    "txn_completed_total": "Transactions completed, by result (Kafka's aborts: result=ABORT).",
    "txn_timed_out_total": "Transactions aborted by their timeout.",
    "txn_producer_fenced_total": "Producers fenced (epoch bumped by another InitProducerId or a timeout).",
    "txn_init_producer_id_total": "InitProducerId successes by reason (new id, epoch bump, retry, rotation).",
    "txn_transactional_id_expired_total": "Transactional ids expired.",
    "txn_producer_id_block_allocated_total": "Producer-id blocks allocated.",
    "txn_count": "Transactions by state (Ongoing, PrepareCommit, PrepareAbort).",
    "txn_transactional_id_count": "Transactional ids held.",
    "requests_total": "Requests applied, by API.",
    "request_queue_time_ms": "Requests: batch time less append time (count: requests applied), by API.",
    "assignment_compute_seconds": "Wall-clock time of KIP-848 target assignment computations (per exporter process).",
    "state_bytes": "Encoded state of each coordinator partition, as its last batch wrote it.",
    "partitions_reporting": "Coordinator partitions that have written metrics.",
    "stream_batches": "Micro-batches completed (seen by this exporter).",
    "stream_input_rows": "Input rows of the micro-batches this exporter saw.",
    "stream_last_batch_id": "The last completed micro-batch's id.",
    "stream_batch_duration_ms": "The last micro-batch's duration (Spark's triggerExecution).",
    "stream_batch_input_rows": "The last micro-batch's input rows.",
    "stream_offsets_behind_latest": "Spark's maxOffsetsBehindLatest of the last micro-batch.",
    "stream_request_lag": "Request-topic and internal-channel records no committed micro-batch covered yet.",
    "stream_up": "1 when the job is ready (answered its self-check).",
}


def main(argv: list[str] | None = None) -> int:
    from .config import StreamConfig
    from .status import RequestLag, status_path

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", help="TOML file overriding conf/defaults.toml")
    ap.add_argument("--bootstrap-server", help="Kafka bootstrap servers (overrides [kafka] bootstrap_servers)")
    ap.add_argument("--port", type=int, help="HTTP port (overrides [metrics] port)")
    ap.add_argument("--host", help="address to listen on (overrides [metrics] host)")
    ap.add_argument("--redis", help="the read model's Redis URL for the dashboard (overrides [redis] url)")
    args = ap.parse_args(argv)
    overrides: dict = {}
    if args.bootstrap_server:
        overrides["kafka"] = {"bootstrap_servers": args.bootstrap_server}
    cfg = StreamConfig.load(args.config, overrides)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)
    port = args.port if args.port is not None else int(cfg.metrics.get("port", 9464) or 9464)
    host = args.host or cfg.metrics.get("host", "0.0.0.0")
    # The stream's health needs the job's status file and checkpoint (on this machine).
    status_file = status_path(cfg.checkpoint)
    local = status_file.exists()
    exporter = MetricsExporter(
        cfg.bootstrap,
        cfg.topics["metrics"],
        port,
        host,
        status_file=status_file if local else None,
        lag=RequestLag(cfg) if local else None,
        dashboard=dashboard_settings(cfg, args.redis) if cfg.dashboard.get("enabled", True) else None,
    ).start()
    log.info(
        "serving http://%s:%d/metrics (and the dashboard at /) from %s%s",
        host,
        exporter.port,
        cfg.topics["metrics"],
        "" if local else f" (no status file at {status_file}: without the stream's health)",
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        exporter.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
