"""The coordinator query: Kafka source → routing → applyInPandasWithState → one Kafka sink."""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.state import GroupStateTimeout

from coordinator.metadata import BROADCAST_KEY

from .config import StreamConfig
from .routing import with_coordinator_partition
from .step import OUTPUT_SCHEMA, STATE_SCHEMA, StepSettings, make_identity_step, make_step


def step_settings(cfg: StreamConfig) -> StepSettings:
    t = cfg.topics
    return StepSettings(coordinator=cfg.coordinator_config().to_json(), responses_topic=t["responses"],
                        events_topic=t["events"], state_log_topic=t["state_log"],
                        requests_topic=t["requests"], max_record_bytes=int(cfg.stream["max_record_bytes"]))


def request_records(spark: SparkSession, cfg: StreamConfig) -> DataFrame:
    """The request topic as rows ready for the state function, with their coordinator partition."""
    max_bytes = int(cfg.coordinator_config()["coordinator.request.max.bytes"])
    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", cfg.bootstrap)
        .option("subscribe", cfg.topics["requests"])
        .option("startingOffsets", cfg.stream["starting_offsets"])
        .option("maxOffsetsPerTrigger", int(cfg.stream["max_offsets_per_trigger"]))
        .option("failOnDataLoss", "true")
        .load()
    )
    rows = raw.select(
        # A routing key is a group or transactional id: at most 32767 UTF-8 bytes (a Kafka string),
        # so cutting longer keys changes no valid request's routing and bounds the hashing work.
        F.substring(F.col("key").cast("string"), 1, 32767).alias("key"),
        # Oversized values are cut here, in the JVM, so they never cross into Python whole; the
        # core answers them with INVALID_REQUEST using the full size.
        F.expr(f"substring(value, 1, {max_bytes + 1})").alias("value"),
        F.octet_length("value").alias("value_size"),
        F.expr("unix_millis(timestamp)").alias("ts_ms"),
        F.col("partition").alias("src_partition"),
        F.col("offset").alias("src_offset"),
    )
    n = cfg.coordinator_partitions
    routed = with_coordinator_partition(rows, "key", n, out_col="owner")
    # A broadcast record (the metadata publisher's UpdateMetadata) goes to every partition.
    return routed.withColumn("cp", F.explode(
        F.when(F.col("key") == BROADCAST_KEY, F.sequence(F.lit(0), F.lit(n - 1)))
        .otherwise(F.array(F.col("owner"))))).drop("owner")


def coordinator_outputs(spark: SparkSession, cfg: StreamConfig) -> DataFrame:
    factory = {"coordinator": make_step, "identity": make_identity_step}[cfg.stream.get("step", "coordinator")]
    return request_records(spark, cfg).groupBy("cp").applyInPandasWithState(
        factory(step_settings(cfg)), OUTPUT_SCHEMA, STATE_SCHEMA, "append",
        GroupStateTimeout.ProcessingTimeTimeout)


def start(spark: SparkSession, cfg: StreamConfig, query_name: str = "coordinator") -> StreamingQuery:
    return (
        coordinator_outputs(spark, cfg).writeStream.format("kafka")
        .queryName(query_name)
        .option("kafka.bootstrap.servers", cfg.bootstrap)
        .option("kafka.acks", "all")
        .option("kafka.max.request.size", str(int(cfg.stream["max_record_bytes"])))
        .option("checkpointLocation", str(cfg.checkpoint))
        .outputMode("append")
        .trigger(processingTime=cfg.stream["trigger_interval"])
        .start()
    )
