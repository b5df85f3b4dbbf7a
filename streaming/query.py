"""The coordinator query: Kafka source → routing → applyInPandasWithState → one Kafka sink."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.state import GroupStateTimeout

from coordinator.group.share.offsets_admin import END_OFFSETS_KEY_PREFIX
from coordinator.metadata import BROADCAST_KEY

from .config import StreamConfig
from .routing import with_coordinator_partition
from .state_timeouts import spark_timeouts
from .step import OUTPUT_SCHEMA, STATE_SCHEMA, StepSettings, make_identity_step, make_step
from .trust import MAC_HEADER, PRINCIPAL_MAC_HEADER, STAMP_HEADER, header_sql, key_path


def step_settings(cfg: StreamConfig, quarantined_topics: tuple = ()) -> StepSettings:
    t = cfg.topics
    timeouts = spark_timeouts(cfg.checkpoint, bool(cfg.stream["timer_wakeups"]))
    coordinator = cfg.coordinator_config().to_json()
    if timeouts:  # no wake records: a due timer waits for a batch time past its deadline + grace
        coordinator["coordinator.timer.read.margin.ms"] = coordinator["coordinator.timer.grace.ms"]
    else:  # timers fire by what a batch read (a wake record at the latest): coordinator/batch.py
        coordinator["coordinator.timer.batch.time.horizon"] = False
    return StepSettings(
        coordinator=coordinator,
        responses_topic=t["responses"],
        events_topic=t["events"],
        state_log_topic=t["state_log"],
        requests_topic=t["requests"],
        internal_topic=t["internal"],
        dead_letters_topic=t["dead_letters"],
        metrics_topic=t["metrics"],
        timers_topic=t["timers"],
        internal_key_file=str(key_path(cfg.checkpoint).resolve()),  # absolute: executors have their own cwd
        principal_key_file=_principal_key_file(cfg),
        max_record_bytes=int(cfg.stream["max_record_bytes"]),
        quarantined_topics=tuple(quarantined_topics),
        txn_markers=cfg.txn_markers,
        bootstrap=cfg.bootstrap,
        spark_timeouts=timeouts,
    )


def _principal_key_file(cfg: StreamConfig) -> str:
    """The gateway's key ([gateway] principal_key_file), absolute ("": no request carries a principal)."""
    from pathlib import Path

    path = str(cfg.raw.get("gateway", {}).get("principal_key_file") or "")
    return str(Path(path).resolve()) if path else ""


def request_records(spark: SparkSession, cfg: StreamConfig) -> DataFrame:
    """The request topic and the internal channel as rows ready for the state function, with their
    coordinator partition. Everything client-controlled is made safe here, in the JVM, before it
    reaches Python: keys of any bytes, values of any size. An internal record's MAC and stamp
    headers go along; the state function verifies them (streaming/trust.py: the key stays out of
    the plan)."""
    max_bytes = int(cfg.coordinator_config()["coordinator.request.max.bytes"])
    internal_topic = cfg.topics["internal"]
    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", cfg.bootstrap)
        .option("subscribe", f"{cfg.topics['requests']},{internal_topic}")
        .option("includeHeaders", "true")
        .option("startingOffsets", cfg.stream["starting_offsets"])
        .option("maxOffsetsPerTrigger", int(cfg.stream["max_offsets_per_trigger"]))
        .option("failOnDataLoss", "true")
        # A task reads its offset range with a cached consumer that has usually pre-fetched past
        # the range's end: that fetch waits at the broker for new data up to fetch.max.wait.ms
        # (500 ms by default) and the next micro-batch's read waits for it. Measured: a one-record
        # source task took ~550 ms, of which 14 ms on a CPU (docs/operations.md, *Latency*).
        .option("kafka.fetch.max.wait.ms", str(int(cfg.stream["source_fetch_max_wait_ms"])))
        # (An admin client refuses a request.timeout.ms, Kafka's 30 s, above it.)
        .option("kafka.default.api.timeout.ms", str(cfg.source_api_timeout_ms))
        .option("kafka.request.timeout.ms", str(cfg.source_api_timeout_ms))
        .load()
    )
    from_internal = F.col("topic") == F.lit(internal_topic)
    rows = raw.select(
        # Record keys are bytes; Arrow (and so the state function) needs valid UTF-8. Invalid
        # sequences become U+FFFD and the request is rejected with INVALID_REQUEST (key_valid).
        # A routing key is a group or transactional id: at most 32767 UTF-8 bytes (a Kafka string),
        # so cutting longer keys changes no valid request's routing and bounds the hashing work.
        F.substring(F.expr("make_valid_utf8(cast(key as string))"), 1, 32767).alias("key"),
        F.coalesce(F.expr("is_valid_utf8(cast(key as string))"), F.lit(True)).alias("key_valid"),
        # Oversized values are cut here, in the JVM, so they never cross into Python whole; the
        # core answers them with INVALID_REQUEST using the full size.
        F.expr(f"substring(value, 1, {max_bytes + 1})").alias("value"),
        F.octet_length("value").alias("value_size"),
        F.expr("unix_millis(timestamp)").alias("ts_ms"),
        F.col("partition").alias("src_partition"),
        F.col("offset").alias("src_offset"),
        from_internal.alias("internal"),
        # Only the internal channel's records carry these (null for a client's record).
        F.when(from_internal, F.expr(header_sql(MAC_HEADER))).alias("mac"),
        F.when(from_internal, F.expr(header_sql(STAMP_HEADER))).alias("stamp"),
        # A gateway's request record signs its envelope's principal (null for anyone else's).
        F.when(~from_internal, F.expr(header_sql(PRINCIPAL_MAC_HEADER))).alias("principal_mac"),
    )
    rows = without_responder_queries(rows)
    n = cfg.coordinator_partitions
    routed = with_coordinator_partition(rows, "key", n, out_col="owner")
    # A broadcast on the internal channel (the metadata publisher's UpdateMetadata) goes to every
    # partition, each of which verifies it (only its key's owner reports a forged one); a client
    # record with the broadcast key goes where its key hashes, to be rejected there.
    return routed.withColumn(
        "cp",
        F.explode(
            F.when(F.col("internal") & (F.col("key") == BROADCAST_KEY), F.sequence(F.lit(0), F.lit(n - 1))).otherwise(
                F.array(F.col("owner"))
            )
        ),
    ).drop("owner")


def without_responder_queries(rows: DataFrame) -> DataFrame:
    """The coordinator partitions' end-offsets queries on the internal channel are for the driver's
    responder (streaming/end_offsets.py), not for a coordinator partition: dropped here, in the JVM,
    so that they cost no state-function work. A client's record with such a key is not `internal`:
    it goes on, to be answered as any request."""
    for_responder = F.col("internal") & F.coalesce(F.col("key").startswith(END_OFFSETS_KEY_PREFIX), F.lit(False))
    return rows.where(~for_responder)


def group_state_timeout(settings: StepSettings) -> str:
    """The query's GroupStateTimeout: part of the state schema, so the checkpoint chose it."""
    return GroupStateTimeout.ProcessingTimeTimeout if settings.spark_timeouts else GroupStateTimeout.NoTimeout


def coordinator_outputs(spark: SparkSession, cfg: StreamConfig, settings: StepSettings) -> DataFrame:
    factory = {"coordinator": make_step, "identity": make_identity_step}[cfg.stream.get("step", "coordinator")]
    return (
        request_records(spark, cfg)
        .groupBy("cp")
        .applyInPandasWithState(factory(settings), OUTPUT_SCHEMA, STATE_SCHEMA, "append", group_state_timeout(settings))
    )


def sink_batching(cfg: StreamConfig) -> dict[str, str]:
    """The sink producer's batching. A task's rows are written one `send` at a time and flushed when
    the task commits, so `linger.ms` only decides how many records a batch gathers meanwhile, never
    how long an answer waits: with Kafka's old default of 0 every send was its own tiny batch, and a
    micro-batch's answers and state-log records (spread over 50 partitions) cost the broker one
    batch each (measured: 1.4-1.6x the identity pipeline's broker CPU per request before, 0.7-1.0x with batching)."""
    max_bytes = int(cfg.stream["max_record_bytes"])
    return {
        "kafka.linger.ms": str(int(cfg.stream.get("sink_linger_ms", 25))),
        "kafka.batch.size": str(min(int(cfg.stream.get("sink_batch_bytes", 1 << 20)), max_bytes)),
    }


def start(
    spark: SparkSession, cfg: StreamConfig, settings: StepSettings, query_name: str = "coordinator"
) -> StreamingQuery:
    return (
        coordinator_outputs(spark, cfg, settings)
        .writeStream.format("kafka")
        .queryName(query_name)
        .option("kafka.bootstrap.servers", cfg.bootstrap)
        .option("kafka.acks", "all")
        .option("kafka.max.request.size", str(int(cfg.stream["max_record_bytes"])))
        .options(**sink_batching(cfg))
        .option("checkpointLocation", str(cfg.checkpoint))
        .outputMode("append")
        .trigger(processingTime=cfg.stream["trigger_interval"])
        .start()
    )
