"""The read-model projector: a second streaming query that folds the state log into Redis.

    state log (Kafka source, from earliest) -> foreachBatch -> one MULTI/EXEC per batch in Redis

It runs in the coordinator job's Spark session, on a checkpoint of its own (`[redis] checkpoint`,
default `<stream checkpoint>.projector`), under its own supervisor: a failed projector (Redis down)
is restarted with backoff and never stops the coordinator query. The fold is streaming/projection.py.

Idempotence: the batch's writes and the new state-log positions (`p:projector`, `offset:<partition>`)
are one Redis transaction, and records below a partition's position are skipped: a replayed batch
(Spark re-runs a batch whose commit it did not record) changes nothing.

Rebuild: Spark's checkpoint may say records were applied that Redis no longer has (FLUSHALL, a
restart without persistence). The projector hash missing means exactly that; then the projector
reads the whole state log (a batch Kafka read up to its end offsets, compacted: one record per
entity), folds it into an empty model and records the positions and `rebuiltAt`. Later batches
skip what the rebuild covered. This is checked before every batch and once a second between
batches (a flush is repaired even when the service is idle).
"""

from __future__ import annotations

import logging
import threading
import time

import redis

from .progress import progress_since
from .projection import Projection, StateRecord

log = logging.getLogger("projector")
MAX_WATCH_RETRIES = 20
SCHEDULER_POOL = "read-model"


class RedisProjector:
    """Applies state-log records to the read model in Redis (the driver side of foreachBatch)."""

    def __init__(self, url: str, prefix: str, default_assignor: str | None, read_state_log=None):
        self.redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=30, socket_connect_timeout=10)
        self.prefix = prefix
        self.default_assignor = default_assignor
        self.read_state_log = read_state_log  # () -> list[StateRecord], the whole log (for rebuilds)
        self.lock = threading.Lock()  # batches and the idle check run in different driver threads
        self.projector_key = f"{prefix}:projector"
        self.rebuilds = 0
        self.batches: list[tuple[int, float]] = []  # (records, seconds in Redis and the fold) since the last report

    # ------------------------------------------------------------------ entry points
    def on_batch(self, records: list[StateRecord]) -> None:
        with self.lock:
            t0 = time.monotonic()
            if not self.redis.exists(self.projector_key):
                self._rebuild("the read model is empty")
            self._apply(records)
            self.batches.append((len(records), time.monotonic() - t0))

    def report(self) -> str | None:
        """A line on the batches since the last report (None without any)."""
        with self.lock:
            done, self.batches = self.batches, []
        if not done:
            return None
        seconds = sorted(s for _, s in done)
        return (
            f"{len(done)} batches, {sum(n for n, _ in done)} state-log records, fold and Redis ms per "
            f"batch p50 {seconds[len(seconds) // 2] * 1000:.0f} max {seconds[-1] * 1000:.0f}"
        )

    def check_idle(self) -> None:
        """Between batches: rebuild if the read model is gone."""
        with self.lock:
            if not self.redis.exists(self.projector_key):
                self._rebuild("the read model is empty (checked between batches)")

    # ------------------------------------------------------------------ folding
    def _apply(self, records: list[StateRecord], *, rebuild: bool = False) -> int:
        """Fold `records` (any order; sorted here) in one MULTI/EXEC; returns how many were new.
        WATCHes the projector hash: a flush between the reads and the EXEC aborts it, and the
        caller's next check rebuilds."""
        records = sorted(records, key=lambda r: (r.partition, r.offset))
        for _ in range(MAX_WATCH_RETRIES):
            with self.redis.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(self.projector_key)
                    positions = {} if rebuild else _positions(pipe.hgetall(self.projector_key))
                    if not rebuild and not positions and pipe.exists(self.projector_key) == 0:
                        return 0  # flushed since the check: the next check rebuilds
                    fresh = [r for r in records if r.offset >= positions.get(r.partition, 0)]
                    projection = Projection(self.prefix, self.default_assignor)
                    projection.positions = dict(positions)
                    if not rebuild:
                        self._load(projection, fresh)
                    for r in fresh:
                        projection.apply(r)
                    now = int(time.time() * 1000)
                    pipe.multi()
                    if rebuild:
                        for key in self._model_keys():
                            pipe.unlink(key)
                    for cmd in projection.writes(now):
                        pipe.execute_command(*cmd)
                    pipe.hset(self.projector_key, "updatedAt", now)
                    if rebuild:
                        pipe.hset(self.projector_key, "rebuiltAt", now)
                    pipe.execute()
                    return len(fresh)
                except redis.WatchError:
                    continue
        raise RuntimeError(f"the read model changed under the projector {MAX_WATCH_RETRIES} times in a row")

    def _load(self, projection: Projection, records: list[StateRecord]) -> None:
        """Read what the fold needs of the groups the records touch, in one round trip."""
        groups, offset_fields = Projection.touched(records)
        if not groups:
            return
        order = sorted(groups)
        pipe = self.redis.pipeline(transaction=False)
        for g in order:
            pipe.hgetall(f"{self.prefix}:aux:group:{g}")
            pipe.hlen(f"{self.prefix}:offsets:{g}")
            fields = sorted(offset_fields.get(g, ()))
            if fields:
                pipe.hmget(f"{self.prefix}:offsets:{g}", fields)
        answers = iter(pipe.execute())
        for g in order:
            aux, count = next(answers), next(answers)
            fields = sorted(offset_fields.get(g, ()))
            existing = dict(zip(fields, (v is not None for v in next(answers)), strict=True)) if fields else {}
            projection.load_group(g, aux, count, existing)

    def _model_keys(self) -> list[str]:
        return list(self.redis.scan_iter(match=_glob_escape(self.prefix) + ":*", count=1000))

    def _rebuild(self, reason: str) -> None:
        t0 = time.monotonic()
        records = self.read_state_log()
        n = self._apply(records, rebuild=True)
        self.rebuilds += 1
        log.info("read model rebuilt from the state log (%s): %d records in %.1f s", reason, n, time.monotonic() - t0)


def _positions(projector_hash: dict) -> dict[int, int]:
    return {int(k.split(":", 1)[1]): int(v) for k, v in projector_hash.items() if k.startswith("offset:")}


def _glob_escape(s: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in s)


# ====================================================================== the Spark query
def _records(rows) -> list[StateRecord]:
    out = []
    for row in rows:
        r = StateRecord.of(row["partition"], row["offset"], row["key"], row["value"])
        if r is not None:
            out.append(r)
    return out


def _source_options(cfg) -> dict:
    return {
        "kafka.bootstrap.servers": cfg.bootstrap,
        "subscribe": cfg.topics["state_log"],
        "startingOffsets": "earliest",
        # As for the coordinator query (streaming/query.py): a consumer's idle pre-fetch must not
        # hold up the next batch's read, here once per state-log partition (Kafka's default
        # fetch.max.wait.ms, 500 ms; bench/projector_lag.py measured 8 s batches with it).
        "kafka.fetch.max.wait.ms": str(int(cfg.stream["source_fetch_max_wait_ms"])),
        # A broker lost does not hold up its batches a minute (StreamConfig.source_api_timeout_ms).
        "kafka.default.api.timeout.ms": str(cfg.source_api_timeout_ms),
        "kafka.request.timeout.ms": str(cfg.source_api_timeout_ms),  # an admin client wants it no larger
        # Compaction leaves gaps in the offsets and may delete records before they are read:
        # expected here, the latest value of every key is still read.
        "failOnDataLoss": "false",
    }


def make_projector(spark, cfg) -> RedisProjector:
    options = _source_options(cfg)

    def read_state_log() -> list[StateRecord]:
        reader = spark.read.format("kafka")
        for k, v in options.items():
            if k != "failOnDataLoss":
                reader = reader.option(k, v)
        df = reader.option("endingOffsets", "latest").option("failOnDataLoss", "false").load()
        return _records(
            df.selectExpr("partition", "offset", "cast(key as string) as key", "cast(value as string) as value")
            .coalesce(1)
            .collect()
        )

    assignors = cfg.coordinator_config()["group.consumer.assignors"]
    return RedisProjector(cfg.redis["url"], cfg.redis["prefix"], assignors[0] if assignors else None, read_state_log)


def start_projector(spark, cfg, projector: RedisProjector, query_name: str = "read-model-projector"):
    reader = spark.readStream.format("kafka")
    for k, v in _source_options(cfg).items():
        reader = reader.option(k, v)
    rows = reader.load().selectExpr(
        "partition", "offset", "cast(key as string) as key", "cast(value as string) as value"
    )

    def fold(batch_df, batch_id: int) -> None:
        # One task reads every state-log partition's range (one per coordinator partition, 50 by
        # default): the projector then holds at most one of the executors' slots at a time.
        projector.on_batch(_records(batch_df.coalesce(1).collect()))

    # Its jobs run in a scheduler pool of their own (FAIR mode, streaming/session.py): they share
    # the slots with the coordinator query's jobs instead of queueing behind them or ahead of them.
    sc = spark.sparkContext
    previous = sc.getLocalProperty("spark.scheduler.pool")
    sc.setLocalProperty("spark.scheduler.pool", SCHEDULER_POOL)
    try:
        return (
            rows.writeStream.foreachBatch(fold)
            .queryName(query_name)
            .option("checkpointLocation", str(cfg.projector_checkpoint))
            .trigger(processingTime=cfg.redis.get("trigger_interval", "1 second"))
            .start()
        )
    finally:
        sc.setLocalProperty("spark.scheduler.pool", previous)


def run_projector(spark, cfg, stopping: threading.Event) -> threading.Thread:
    """Start the projector under a supervisor of its own in a daemon thread: restarted with
    backoff whatever its failure (it never gives up and never stops the coordinator query)."""
    from .supervisor import Decision, RestartPolicy, Supervisor

    projector = make_projector(spark, cfg)

    def start():
        query = start_projector(spark, cfg, projector)
        log.info(
            "read-model projector %s started: %s -> %s (prefix %s), checkpoint %s",
            query.id,
            cfg.topics["state_log"],
            cfg.redis["url"],
            cfg.redis["prefix"],
            cfg.projector_checkpoint,
        )
        return query

    failing = [False]
    last_report = [time.monotonic()]

    def tick(query) -> None:
        if time.monotonic() - last_report[0] >= 60:
            last_report[0] = time.monotonic()
            line = projector.report()
            if line:
                recent = progress_since(query, -1, limit=20)
                durations = sorted(p["durationMs"].get("triggerExecution", 0) for p in recent)
                log.info(
                    "projector progress: %s; last %d Spark batches ms p50 %d max %d",
                    line,
                    len(durations),
                    durations[len(durations) // 2] if durations else 0,
                    durations[-1] if durations else 0,
                )
        try:
            projector.check_idle()
            failing[0] = False
        except Exception as e:  # noqa: BLE001 - Redis away: the next batch fails and is retried
            if not failing[0]:
                log.warning("read model check failed: %s", e)
            failing[0] = True

    policy = RestartPolicy.from_config(cfg.stream)
    supervisor = Supervisor(
        start,
        RestartPolicy(policy.initial_backoff_s, policy.max_backoff_s, policy.healthy_after_s, max_attempts=0),
        stopping=stopping,
        on_tick=tick,
        failure_handlers=[lambda text: Decision.restart("read-model projector failed")],
    )
    thread = threading.Thread(target=supervisor.run, name="read-model-projector", daemon=True)
    thread.start()
    return thread
