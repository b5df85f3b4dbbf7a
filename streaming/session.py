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
LOG4J_CONFIG = ROOT / "conf" / "log4j2.properties"
# deploy/java, compiled by deploy/setup.sh against the installed Spark's Hadoop.
OWN_JAR = ROOT / ".cache" / "jars" / "own" / "coordinator-jvm.jar"
NO_FORK_LOCAL_FS = "coordinator.hadoop.NoForkLocalFileSystem"


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
    jars = connector_jars()
    if OWN_JAR.exists():
        jars.append(str(OWN_JAR))
    builder = (
        SparkSession.builder.master(spark["master"])
        .appName(spark["app_name"])
        .config("spark.jars", ",".join(jars))
        .config("spark.driver.memory", spark["driver_memory"])
        .config("spark.sql.shuffle.partitions", str(stream["shuffle_partitions"]))
        .config("spark.sql.streaming.stateStore.providerClass", provider)
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        .config("spark.sql.streaming.minBatchesToRetain", "20")
        # No micro-batch without a new record: processing-time timeouts would otherwise make Spark
        # run one at every trigger (~1 core when idle). Timers are started by the driver's timer
        # waker instead (streaming/timer_waker.py).
        .config("spark.sql.streaming.noDataMicroBatches.enabled", "false" if stream["timer_wakeups"] else "true")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        # Hadoop's local file system forks `readlink` on every rename through FileContext (no native
        # Hadoop library here), and a micro-batch renames several checkpoint files: the FileSystem
        # API renames without forking. Same atomic temp-file-then-rename protocol.
        .config(
            "spark.sql.streaming.checkpointFileManagerClass",
            "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager",
        )
        # The Python workers' daemon: no re-reading of pyspark.zip on every task, warm imports
        # (streaming/worker_daemon.py).
        .config("spark.python.daemon.module", "streaming.worker_daemon")
        # Quiet by default: no console progress bar, the JVM's log level WARN from its first line.
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG}")
    )
    if OWN_JAR.exists():
        # Local checkpoints without a chmod process per file (deploy/java); the jar is also on
        # the driver's class path because Hadoop resolves file systems with its own loader.
        builder = builder.config("spark.hadoop.fs.file.impl", NO_FORK_LOCAL_FS).config(
            "spark.driver.extraClassPath", str(OWN_JAR)
        )
    if cfg.raw.get("redis", {}).get("enabled"):
        # The read-model projector runs its jobs in a pool of its own (streaming/projector.py):
        # pools share the executors' slots, so neither query's jobs wait for all of the other's.
        builder = builder.config("spark.scheduler.mode", "FAIR")
    for key, value in spark.get("conf", {}).items():
        builder = builder.config(key, str(value))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(spark.get("log_level", "WARN"))
    return session
