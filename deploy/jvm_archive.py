"""The Spark driver's class-data archive (JDK CDS): the classes a coordinator job loads, parsed and
verified once here instead of at every start.

    python -m deploy.jvm_archive

deploy/setup.sh runs it when Spark's jars, the connector jars, the JDK or this file change. It starts
a Spark session with `-XX:ArchiveClassesAtExit` and runs a stand-in for the coordinator query that
needs no broker: a rate source, the same routing and MAC expressions, the real state function
(`applyInPandasWithState`, RocksDB state store) into a `foreachBatch` sink, a few micro-batches;
it also plans the Kafka source and sink and creates (never connects) a Kafka producer and consumer,
so that the connector's classes are loaded too. The JVM writes the archive when it exits;
streaming/session.py then starts every driver with `-XX:SharedArchiveFile` (docs/operations.md,
*Start-up*). A JVM that cannot use the archive (other jars, another JDK) runs without it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from deploy.class_archive import write_archive
from streaming.config import StreamConfig
from streaming.session import JVM_ARCHIVE, build_session


def train(cfg: StreamConfig, archive: Path, seconds: float = 120) -> None:
    """Load the classes a coordinator job loads, in a driver JVM that writes them to `archive`
    when it exits; returns once it has exited."""
    from pyspark.sql import functions as F

    from streaming.query import coordinator_outputs, group_state_timeout, step_settings
    from streaming.routing import with_coordinator_partition
    from streaming.step import OUTPUT_SCHEMA, STATE_SCHEMA, make_step
    from streaming.trust import STAMP_HEADER, header_sql

    spark = build_session(cfg, archive_at_exit=archive)
    settings = step_settings(cfg)
    with tempfile.TemporaryDirectory(prefix="jvm-archive-") as work:
        rows = spark.readStream.format("rate").option("rowsPerSecond", 20).load()
        records = rows.select(
            F.concat(F.lit("group-"), (F.col("value") % 7).cast("string")).alias("key"),
            F.lit(True).alias("key_valid"),
            F.encode(F.to_json(F.struct(F.col("value").alias("correlationId"))), "UTF-8").alias("value"),
            F.lit(20).alias("value_size"),
            F.expr("unix_millis(timestamp)").alias("ts_ms"),
            F.lit(0).alias("src_partition"),
            F.col("value").alias("src_offset"),
            F.lit(False).alias("internal"),
            F.lit(None).cast("array<struct<key:string,value:binary>>").alias("headers"),
        )
        records = (
            records.withColumn("mac", F.expr(header_sql()))
            .withColumn("stamp", F.expr(header_sql(STAMP_HEADER)))
            .drop("headers")
        )
        routed = with_coordinator_partition(records, "key", cfg.coordinator_partitions)
        out = routed.groupBy("cp").applyInPandasWithState(
            make_step(settings), OUTPUT_SCHEMA, STATE_SCHEMA, "append", group_state_timeout(settings)
        )

        def count(df, _batch_id: int) -> None:
            df.count()

        query = (
            out.writeStream.foreachBatch(count)
            .option("checkpointLocation", str(Path(work) / "checkpoint"))
            .trigger(processingTime="200 milliseconds")
            .start()
        )
        deadline = time.monotonic() + seconds
        progress: Any = query.lastProgress
        while time.monotonic() < deadline and (progress is None or progress["batchId"] < 3):
            time.sleep(0.5)
            progress = query.lastProgress
        query.stop()
        # The connector: the real query's plan (not run: there is no broker), and Kafka clients
        # created without connecting.
        coordinator_outputs(spark, cfg, settings)._jdf.queryExecution().analyzed()
        jvm: Any = spark.sparkContext._jvm
        props = jvm.java.util.Properties()
        for k, v in {
            "bootstrap.servers": "127.0.0.1:1",
            "key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
            "value.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
            "key.deserializer": "org.apache.kafka.common.serialization.ByteArrayDeserializer",
            "value.deserializer": "org.apache.kafka.common.serialization.ByteArrayDeserializer",
        }.items():
            props.setProperty(k, v)
        for cls in (
            jvm.org.apache.kafka.clients.producer.KafkaProducer,
            jvm.org.apache.kafka.clients.consumer.KafkaConsumer,
        ):
            cls(props).close()
    gateway: Any = spark.sparkContext._gateway
    spark.stop()
    # The JVM exits when its standard input closes (as when Python exits), writing the archive.
    gateway.proc.stdin.close()
    gateway.proc.wait(timeout=300)


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)

    def run(partial: Path) -> None:
        with tempfile.TemporaryDirectory(prefix="jvm-archive-run-") as work:
            train(StreamConfig.load(None, {"stream": {"checkpoint": str(Path(work) / "checkpoint")}}), partial)

    return write_archive(JVM_ARCHIVE, run, "jvm_archive", "drivers")


if __name__ == "__main__":
    sys.exit(main())
