"""The SparkSession for the coordinator query: connector jars, state store, shuffle partitions."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from .config import ROOT, StreamConfig

SPARK_JARS_DIR = ROOT / ".cache" / "jars" / "spark"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"


def connector_jars(jars_dir: Path = SPARK_JARS_DIR) -> list[str]:
    jars = sorted(str(p) for p in jars_dir.glob("*.jar"))
    if not any("spark-sql-kafka" in j for j in jars):
        raise RuntimeError(f"Spark Kafka connector jars missing in {jars_dir}: run deploy/setup.sh")
    return jars


def build_session(cfg: StreamConfig) -> SparkSession:
    # Spark's Python workers must use this interpreter (and its packages), not the system one.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    stream, spark = cfg.stream, cfg.spark
    provider = {"rocksdb": ROCKSDB_PROVIDER, "hdfs": HDFS_PROVIDER}[stream["state_store"]]
    builder = (
        SparkSession.builder.master(spark["master"]).appName(spark["app_name"])
        .config("spark.jars", ",".join(connector_jars()))
        .config("spark.driver.memory", spark["driver_memory"])
        .config("spark.sql.shuffle.partitions", str(stream["shuffle_partitions"]))
        .config("spark.sql.streaming.stateStore.providerClass", provider)
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        .config("spark.sql.streaming.minBatchesToRetain", "20")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
    )
    for key, value in spark.get("conf", {}).items():
        builder = builder.config(key, str(value))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(spark.get("log_level", "WARN"))
    return session
