#!/usr/bin/env python3
"""Start the coordinator streaming job and run until stopped.

    python run_stream.py [--config override.toml] [--checkpoint DIR] [--bootstrap HOST:PORT]

Kafka and the topics must exist (deploy/run-local.sh starts both for the local setup).
SIGTERM/SIGINT stop the query cleanly; SIGKILL is safe too: a restart resumes from the checkpoint.
A query that fails (broker unavailable, sink failure) is restarted on the same checkpoint with
backoff (streaming/supervisor.py, `[stream] restart_*`); the checkpoint is checked before every
start (streaming/checkpoint_guard.py, `[stream] checkpoint_repair`).
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from streaming.config import StreamConfig


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", help="TOML file overriding conf/defaults.toml")
    ap.add_argument("--checkpoint", help="checkpoint directory (overrides [stream] checkpoint)")
    ap.add_argument("--bootstrap", help="Kafka bootstrap servers (overrides [kafka] bootstrap_servers)")
    args = ap.parse_args(argv)

    overrides: dict = {}
    if args.checkpoint:
        overrides.setdefault("stream", {})["checkpoint"] = args.checkpoint
    if args.bootstrap:
        overrides.setdefault("kafka", {})["bootstrap_servers"] = args.bootstrap
    cfg = StreamConfig.load(args.config, overrides)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("run_stream")

    from streaming.checkpoint_guard import CheckpointDamaged, check_before_start
    from streaming.metadata_publisher import MetadataPublisher
    from streaming.query import start, step_settings
    from streaming.session import build_session
    from streaming.supervisor import PermanentFailure, RestartPolicy, Supervisor
    from streaming.trust import load_or_create_key

    internal_key = load_or_create_key(cfg.checkpoint)
    publisher = MetadataPublisher(cfg.bootstrap, cfg.topics["internal"], int(cfg.stream["metadata_refresh_ms"]),
                                  internal_key, reply_topic_prefix=cfg.topics["responses"] + ".")
    publisher.publish_if_changed()  # before the query starts, so that its first batch has metadata
    publisher.start()
    spark = build_session(cfg)
    quarantined: list[str] = []  # output topics the sink failed on that do not exist

    def start_query():
        try:
            check_before_start(cfg.checkpoint, repair_damage=bool(cfg.stream["checkpoint_repair"]))
        except CheckpointDamaged as e:
            raise PermanentFailure(str(e)) from e  # restarting cannot help: an operator must act
        query = start(spark, cfg, step_settings(cfg, internal_key, tuple(quarantined)))
        log.info("coordinator query %s started: requests=%s checkpoint=%s quarantined topics=%s", query.id,
                 cfg.topics["requests"], cfg.checkpoint, quarantined or "none")
        print("COORDINATOR-STREAM-STARTED", flush=True)  # tests and scripts wait for this line
        return query

    stopping = threading.Event()

    def stop(signum, _frame):
        log.info("signal %s: stopping the query", signum)
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    progress = ProgressLog(log, every_s=60.0)
    supervisor = Supervisor(start_query, RestartPolicy.from_config(cfg.stream), stopping=stopping,
                            on_tick=progress.maybe_log, stop_query=stop_between_batches,
                            failure_handlers=[quarantine_missing_topics(cfg, quarantined, log)])
    code = supervisor.run()
    publisher.stop()
    spark.stop()
    return code


def quarantine_missing_topics(cfg: StreamConfig, quarantined: list[str], log):
    """A supervisor failure handler: when the sink failed because an output topic does not exist
    (a client's reply topic or a transaction's data topic deleted after the coordinators last saw
    the topic metadata, on a broker that does not auto-create topics), the replayed batch would fail
    the same way forever. Such a topic is quarantined: the next query writes what it would have
    written there to the dead-letter topic. Only when the broker answers and confirms that the topic
    is gone, never for the service's own topics: a broker outage is waited out, not quarantined."""
    import re

    from streaming.supervisor import Decision

    own = {cfg.topics[t] for t in ("requests", "responses", "events", "state_log", "internal", "dead_letters")}
    missing = re.compile(r"Topic (\S+?)\.? not present in metadata|InvalidTopicException: .*?([A-Za-z0-9._-]+)$",
                         re.M)

    def handle(text: str):
        names = [a or b for a, b in missing.findall(text)]
        for topic in names:
            if topic in own or topic in quarantined or topic_exists(cfg.bootstrap, topic) is not False:
                continue
            quarantined.append(topic)
            log.warning("output topic %s does not exist: quarantined (its records go to %s)", topic,
                        cfg.topics["dead_letters"])
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
    last line (from Spark's progress reports)."""

    def __init__(self, log, every_s: float):
        import time

        self.log, self.every_s, self._time = log, every_s, time.monotonic
        self.last_at, self.last_batch = self._time(), -1

    def maybe_log(self, query) -> None:
        if self._time() - self.last_at < self.every_s:
            return
        self.last_at = self._time()
        new = [p for p in query.recentProgress if p["batchId"] > self.last_batch]
        if not new:
            return
        self.last_batch = new[-1]["batchId"]
        durations = sorted(p["durationMs"].get("triggerExecution", 0) for p in new)
        rows = sum(p["numInputRows"] for p in new)
        self.log.info("progress: batches %d-%d, %d input rows, batch ms p50 %d max %d",
                      new[0]["batchId"], new[-1]["batchId"], rows, durations[len(durations) // 2],
                      durations[-1])


def stop_between_batches(query, wait_s: float = 30.0) -> None:
    """Stop when no micro-batch is running, so that a clean stop leaves no batch to re-run (a
    stop in mid-batch is safe too, just slower to recover). When batches run back to back (each
    longer than the trigger interval) there is no idle moment: stop as soon as one completes."""
    import time

    def last_batch():
        progress = query.lastProgress
        return progress["batchId"] if progress else None

    deadline, running = time.time() + wait_s, last_batch()
    while time.time() < deadline and query.isActive and query.status.get("isTriggerActive") \
            and last_batch() == running:
        time.sleep(0.02)
    query.stop()


if __name__ == "__main__":
    sys.exit(main())
