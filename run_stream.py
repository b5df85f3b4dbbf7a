#!/usr/bin/env python3
"""Start the coordinator streaming job and run until stopped.

    python run_stream.py [--config override.toml] [--checkpoint DIR] [--bootstrap HOST:PORT] [--verbose]

Kafka and the topics must exist (deploy/run-local.sh starts both for the local setup).
SIGTERM/SIGINT stop the query cleanly; SIGKILL is safe too: a restart resumes from the checkpoint.
A query that fails (broker unavailable, sink failure) is restarted on the same checkpoint with
backoff (streaming/supervisor.py, `[stream] restart_*`); the checkpoint is checked before every
start (streaming/checkpoint_guard.py, `[stream] checkpoint_repair`).

Once a query runs, a self-check request makes a round trip through the real topics; when it is
answered the job logs "READY" (and prints COORDINATOR-READY for scripts). The job's status (state,
recent micro-batches) is kept in `<checkpoint>.status.json`: `python -m streaming.status` reads it.
The service logs its own lifecycle at INFO and libraries at WARNING; --verbose shows theirs too.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time

from streaming.config import StreamConfig

SELF_CHECK_KEY = "coordinator-selfcheck"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", help="TOML file overriding conf/defaults.toml")
    ap.add_argument("--checkpoint", help="checkpoint directory (overrides [stream] checkpoint)")
    ap.add_argument("--bootstrap", help="Kafka bootstrap servers (overrides [kafka] bootstrap_servers)")
    ap.add_argument("--verbose", action="store_true", help="log libraries (Kafka clients, Spark) at INFO")
    ap.add_argument(
        "--ensure-topics",
        action="store_true",
        help="wait for the broker and create missing topics (after starting Spark, so the two "
        "overlap); deploy/run-local.sh uses it",
    )
    args = ap.parse_args(argv)

    overrides: dict = {}
    if args.checkpoint:
        overrides.setdefault("stream", {})["checkpoint"] = args.checkpoint
    if args.bootstrap:
        overrides.setdefault("kafka", {})["bootstrap_servers"] = args.bootstrap
    if args.verbose:
        overrides.setdefault("spark", {})["log_level"] = "INFO"
    cfg = StreamConfig.load(args.config, overrides)

    configure_logging(args.verbose)
    log = logging.getLogger("run_stream")

    from streaming.acl_publisher import AclPublisher
    from streaming.checkpoint_guard import CheckpointDamaged, check_before_start
    from streaming.end_offsets import EndOffsetsResponder
    from streaming.metadata_publisher import MetadataPublisher
    from streaming.query import start, step_settings
    from streaming.session import build_session
    from streaming.state_timeouts import CheckpointTimeoutMismatch
    from streaming.status import StatusReporter, status_path
    from streaming.supervisor import PermanentFailure, RestartPolicy, Supervisor, summary
    from streaming.timer_waker import TimerWaker
    from streaming.trust import load_or_create_key, next_epoch

    status = StatusReporter(status_path(cfg.checkpoint))
    status.start_heartbeat()
    log.info("starting: checkpoint %s, broker %s, status file %s", cfg.checkpoint, cfg.bootstrap, status.path)
    # The guard first, before anything writes into the checkpoint or starts Spark: a checkpoint it
    # refuses is left untouched and the job exits at once, its reason the last thing it logged
    # (start_query checks again before every start of the query).
    try:
        check_before_start(cfg.checkpoint, repair_damage=bool(cfg.stream["checkpoint_repair"]))
    except CheckpointDamaged as e:
        log.error("cannot start the query: %s", e)
        status.lifecycle("failed", str(e)[:500])
        return 1
    internal_key = load_or_create_key(cfg.checkpoint)
    # This driver's publishers stamp their internal records with a new epoch (streaming/trust.py).
    publisher_epoch = next_epoch(cfg.checkpoint)
    spark = build_session(cfg)  # needs no broker: started first, while a local broker may be starting
    log.info("Spark session up (%s, %.1f s after start)", cfg.spark["master"], time.time() - status.started_at)
    if args.ensure_topics:
        from deploy.topics import ensure_topics, wait_for_broker

        wait_for_broker(cfg.bootstrap, timeout_s=120)
        try:
            ensure_topics(cfg)
        except RuntimeError as e:  # too few brokers, or topics less durable than configured: an operator acts
            log.error("cannot start: %s", e)
            status.lifecycle("failed", str(e)[:500])
            spark.stop()
            return 2
        log.info(
            "broker %s answers and the topics exist (%.1f s after start)",
            cfg.bootstrap,
            time.time() - status.started_at,
        )
    publisher = MetadataPublisher(
        cfg.bootstrap,
        cfg.topics["internal"],
        int(cfg.stream["metadata_refresh_ms"]),
        internal_key,
        reply_topic_prefix=cfg.topics["responses"] + ".",
        epoch=publisher_epoch,
    )
    publisher.publish_if_changed()  # before the query starts, so that its first batch has metadata
    publisher.start()
    acl_publisher = AclPublisher.from_config(cfg, internal_key, publisher_epoch)  # None: [security] acls_enabled off
    if acl_publisher is not None:
        try:
            acl_publisher.publish_if_changed()  # the first batch authorises with the broker's ACLs
        except Exception as e:  # noqa: BLE001 - e.g. a broker still starting, no DESCRIBE on the cluster: retried
            log.warning("ACL refresh failed (retried every %.1f s): %s", acl_publisher.interval, e)
        acl_publisher.start()
    waker = None
    if cfg.stream["timer_wakeups"]:  # micro-batches run only for records: this starts the ones timers need
        waker = TimerWaker(
            cfg.bootstrap,
            cfg.topics["timers"],
            cfg.topics["internal"],
            cfg.coordinator_partitions,
            internal_key,
            caught_up=status.caught_up,
        )
        waker.start()
    # DescribeShareGroupOffsets v1's lag: answers the coordinator partitions' end-offsets queries
    # with ListOffsets (streaming/end_offsets.py).
    end_offsets = EndOffsetsResponder(
        cfg.bootstrap, cfg.topics["internal"], cfg.coordinator_partitions, internal_key, epoch=publisher_epoch
    )
    end_offsets.start()
    exporter = start_metrics_exporter(cfg, status, log)
    quarantined: list[str] = []  # output topics the sink failed on that do not exist

    def start_query():
        try:
            check_before_start(cfg.checkpoint, repair_damage=bool(cfg.stream["checkpoint_repair"]))
        except CheckpointDamaged as e:
            raise PermanentFailure(str(e)) from e  # restarting cannot help: an operator must act
        try:
            settings = step_settings(cfg, tuple(quarantined))
        except CheckpointTimeoutMismatch as e:
            raise PermanentFailure(str(e)) from e  # the configuration contradicts the checkpoint
        query = start(spark, cfg, settings)
        log.info(
            "coordinator query %s started: requests=%s checkpoint=%s quarantined topics=%s",
            query.id,
            cfg.topics["requests"],
            cfg.checkpoint,
            quarantined or "none",
        )
        print("COORDINATOR-STREAM-STARTED", flush=True)  # tests and scripts wait for this line
        status.attach(query)
        status.lifecycle("running")
        threading.Thread(target=self_check, args=(cfg, status, log, stopping), name="self-check", daemon=True).start()
        return query

    stopping = threading.Event()

    def stop(signum, _frame):
        log.info("signal %s: stopping the query", signum)
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    progress = ProgressLog(log, every_s=60.0)

    def on_tick(query) -> None:
        status.on_tick(query)
        progress.maybe_log(query)

    def note_failure(text: str):
        status.lifecycle("restarting", summary(text, 0))
        return None  # only records it; the handlers after this one decide

    supervisor = Supervisor(
        start_query,
        RestartPolicy.from_config(cfg.stream),
        stopping=stopping,
        on_tick=on_tick,
        stop_query=stop_between_batches,
        failure_handlers=[note_failure, quarantine_missing_topics(cfg, quarantined, log)],
    )
    projector = None
    if cfg.redis.get("enabled"):  # the Redis read model: a second query, supervised on its own
        from streaming.projector import run_projector

        # Once the coordinator answers: the projector's start and first batch (the rebuild of an
        # empty read model reads every state-log partition) would take the cores from the
        # coordinator's first micro-batch (docs/operations.md, *Start-up*).
        projector = after_ready(status, stopping, lambda: run_projector(spark, cfg, stopping))
    code = supervisor.run()
    if projector is not None:
        stopping.set()  # also when the coordinator query gave up
        projector.join(timeout=60)
    status.lifecycle("stopped" if code == 0 else "failed")
    publisher.stop()
    if acl_publisher is not None:
        acl_publisher.stop()
    if waker is not None:
        waker.stop()
    end_offsets.stop()
    if exporter is not None:
        exporter.stop()
    spark.stop()
    log.info("stopped (exit code %d)", code)
    return code


def after_ready(status, stopping: threading.Event, start, max_wait_s: float = 120.0) -> threading.Thread:
    """A thread that calls `start` (which returns a thread) once the job is READY, or after
    `max_wait_s` whatever the coordinator query does, and then waits for what it started."""

    def run() -> None:
        deadline = time.monotonic() + max_wait_s
        while status.state != "ready" and time.monotonic() < deadline:
            if stopping.wait(0.1):
                return
        start().join()

    thread = threading.Thread(target=run, name="after-ready", daemon=True)
    thread.start()
    return thread


def start_metrics_exporter(cfg: StreamConfig, status, log):
    """The Prometheus endpoint (`[metrics] port`, 0 = off): the metrics topic and the stream's health.
    A port that is taken costs the endpoint, not the job."""
    from streaming.metrics_exporter import start_for_job

    try:
        exporter = start_for_job(cfg, status.path)
    except OSError as e:
        log.warning("metrics endpoint not started on port %s: %s", cfg.metrics.get("port"), e)
        return None
    if exporter is not None:
        log.info("metrics: http://%s:%d/metrics", cfg.metrics.get("host", "0.0.0.0"), exporter.port)
        print(f"COORDINATOR-METRICS-PORT {exporter.port}", flush=True)
    return exporter


def configure_logging(verbose: bool) -> None:
    """The service's own lines at INFO; libraries (kafka-python's connection and metadata lines,
    py4j) at WARNING unless --verbose."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in ("kafka", "py4j"):
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)


def self_check(cfg: StreamConfig, status, log, stopping: threading.Event) -> None:
    """A FindCoordinator round trip through the real request and response topics: the service is
    ready when it is answered (its first micro-batches also warm the pipeline: Python workers,
    state stores, the Kafka source and sink). Logs READY and prints COORDINATOR-READY."""
    from client import CoordinatorClient, ResponseTimeout
    from streaming.progress import last_batch_id

    t0 = time.monotonic()
    try:
        client = CoordinatorClient(
            cfg.bootstrap,
            f"{SELF_CHECK_KEY}-{os.getpid()}-{int(time.time() * 1000)}",
            requests_topic=cfg.topics["requests"],
            responses_topic=cfg.topics["responses"],
        )
    except Exception as e:  # noqa: BLE001 - the broker went away; the supervisor deals with the query
        log.warning("self-check: cannot reach the broker: %s", e)
        return
    try:
        cid = client.send("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": [SELF_CHECK_KEY]}, key=SELF_CHECK_KEY)
        waited_s = 0
        while not stopping.is_set():
            try:
                answer = client.wait(cid, timeout=5.0)["response"]
                break
            except ResponseTimeout:
                waited_s += 5
                if waited_s % 60 == 0:
                    log.warning(
                        "self-check: no answer after %d s (is the query making progress? python -m streaming.status)",
                        waited_s,
                    )
        else:
            return
        # The batch that answered is still finishing (its progress comes after its sink): ready
        # once it is done, so that the status shows a batch from the start.
        settle = time.monotonic() + 30
        while status.query is not None and last_batch_id(status.query) is None and time.monotonic() < settle:
            time.sleep(0.05)
        status.lifecycle("ready")
        log.info(
            "READY: the coordinator service answers requests on %s (self-check round trip %.2f s, "
            "%.1f s after the job started; error code %s)",
            cfg.topics["requests"],
            time.monotonic() - t0,
            time.time() - status.started_at,
            (answer.get("coordinators") or [answer])[0].get("errorCode"),
        )
        print("COORDINATOR-READY", flush=True)
    finally:
        client.close()


def quarantine_missing_topics(cfg: StreamConfig, quarantined: list[str], log):
    """A supervisor failure handler: when the sink failed because an output topic does not exist
    (a client's reply topic or a transaction's data topic deleted after the coordinators last saw
    the topic metadata, on a broker that does not auto-create topics), the replayed batch would fail
    the same way forever. Such a topic is quarantined: the next query writes what it would have
    written there to the dead-letter topic. Only when the broker answers and confirms that the topic
    is gone, never for the service's own topics: a broker outage is waited out, not quarantined."""
    import re

    from streaming.config import SERVICE_TOPICS
    from streaming.supervisor import Decision

    own = {cfg.topics[t] for t in SERVICE_TOPICS}
    missing = re.compile(r"Topic (\S+?)\.? not present in metadata|InvalidTopicException: .*?([A-Za-z0-9._-]+)$", re.M)

    def handle(text: str):
        names = [a or b for a, b in missing.findall(text)]
        for topic in names:
            if topic in own or topic in quarantined or topic_exists(cfg.bootstrap, topic) is not False:
                continue
            quarantined.append(topic)
            log.warning(
                "output topic %s does not exist: quarantined (its records go to %s)", topic, cfg.topics["dead_letters"]
            )
            return Decision.restart(f"quarantined the missing output topic {topic}", immediately=True)
        return None

    return handle


def topic_exists(bootstrap: str, topic: str) -> bool | None:
    """Whether the broker has `topic`; None if the broker cannot be asked."""
    from kafka import KafkaAdminClient

    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    except Exception:  # noqa: BLE001 - unreachable broker: no verdict
        return None
    try:
        return topic in set(admin.list_topics())
    except Exception:  # noqa: BLE001
        return None
    finally:
        admin.close()


class ProgressLog:
    """A line every `every_s` seconds: micro-batches, input rows and batch durations since the
    last line (from Spark's progress reports). While idle, Spark files a report every 10 s under
    the id of the batch that runs next, with no batch run (no `addBatch`): those are neither
    logged nor taken as seen, so that batch's own report is logged when it runs."""

    def __init__(self, log, every_s: float):
        import time

        self.log, self.every_s, self._time = log, every_s, time.monotonic
        self.last_at, self.last_batch = self._time(), -1
        self.last_report: tuple[int, str] | None = None  # the newest report read (`newest_report`)

    def maybe_log(self, query) -> None:
        if self._time() - self.last_at < self.every_s:
            return
        self.last_at = self._time()
        from streaming.progress import newest_report, progress_since, ran_a_batch

        head = newest_report(query)
        if head is None or head == self.last_report:
            return  # nothing new: an idle query's reports are not read again
        new = progress_since(query, self.last_batch, after_report=self.last_report)
        self.last_report = (new[-1]["batchId"], new[-1]["timestamp"]) if new else head
        ran = [p for p in new if ran_a_batch(p)]
        if not ran:
            return
        self.last_batch = ran[-1]["batchId"]
        durations = sorted(p["durationMs"].get("triggerExecution", 0) for p in ran)
        rows = sum(p["numInputRows"] for p in ran)
        self.log.info(
            "progress: batches %d-%d, %d input rows, batch ms p50 %d max %d",
            ran[0]["batchId"],
            ran[-1]["batchId"],
            rows,
            durations[len(durations) // 2],
            durations[-1],
        )


def stop_between_batches(query, wait_s: float = 30.0) -> None:
    """Stop when no micro-batch is running, so that a clean stop leaves no batch to re-run (a
    stop in mid-batch is safe too, just slower to recover). When batches run back to back (each
    longer than the trigger interval) there is no idle moment: stop as soon as one completes."""
    import time

    from streaming.progress import last_batch_id

    deadline, running = time.time() + wait_s, last_batch_id(query)
    while (
        time.time() < deadline
        and query.isActive
        and query.status.get("isTriggerActive")
        and last_batch_id(query) == running
    ):
        time.sleep(0.02)
    query.stop()


if __name__ == "__main__":
    sys.exit(main())
