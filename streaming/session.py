"""The SparkSession for the coordinator query: connector jars, state store, shuffle partitions."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from .config import ROOT, StreamConfig

SPARK_JARS_DIR = ROOT / ".cache" / "jars" / "spark"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
LOG4J_CONFIG = ROOT / "conf" / "log4j2.properties"
# deploy/java, compiled by deploy/setup.sh against the installed Spark's Hadoop.
OWN_JAR = ROOT / ".cache" / "jars" / "own" / "coordinator-jvm.jar"
NO_FORK_LOCAL_FS = "coordinator.hadoop.NoForkLocalFileSystem"
# The driver JVM's class-data archive (deploy/jvm_archive.py, made by deploy/setup.sh): the classes
# a job loads, already parsed and verified. Measured: a driver's CPU until its first micro-batch
# ~40 % lower (docs/operations.md, *Start-up*).
JVM_ARCHIVE = ROOT / ".cache" / "jvm" / "spark-driver.jsa"


def connector_jars(jars_dir: Path = SPARK_JARS_DIR) -> list[str]:
    jars = sorted(str(p) for p in jars_dir.glob("*.jar"))
    if not any("spark-sql-kafka" in j for j in jars):
        raise RuntimeError(f"Spark Kafka connector jars missing in {jars_dir}: run deploy/setup.sh")
    return jars


def local_session(app_name: str, **conf: str) -> SparkSession:
    """A small in-process Spark session (local[1], no UI) for tools and checks: the state reader,
    the drills' verifier. It carries the Kafka connector even when it does not read Kafka: the
    first session of a process starts its JVM, whose classpath later sessions of the process keep,
    so one without the connector would leave a later one unable to find the `kafka` source."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[1]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # The service's own jar too when built (Kafka's routing as a Java function: streaming/routing.py).
        .config("spark.jars", ",".join(connector_jars() + ([str(OWN_JAR)] if OWN_JAR.exists() else [])))
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def driver_java_options(archive_at_exit: Path | None = None, extra: str = "") -> str:
    """The driver JVM's options: the log4j configuration, and the class-data archive to use (when
    deploy/setup.sh made one) or to write at exit (deploy/jvm_archive.py), then `extra` (`[spark]
    driver_java_options`). A JVM whose jars or JDK differ from the archive's ignores it; its
    messages about that are off (-Xlog:cds)."""
    options = [f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG}"]
    if archive_at_exit is not None:
        options += [f"-XX:ArchiveClassesAtExit={archive_at_exit}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    elif JVM_ARCHIVE.exists():
        options += [f"-XX:SharedArchiveFile={JVM_ARCHIVE}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    return " ".join(options + ([extra.strip()] if extra.strip() else []))  # Spark splits them, quotes kept


def session_conf(cfg: StreamConfig, archive_at_exit: Path | None = None) -> dict[str, str]:
    """The coordinator job's Spark settings, `[spark.conf]` last (a user's setting wins)."""
    stream, spark = cfg.stream, cfg.spark
    provider = {"rocksdb": ROCKSDB_PROVIDER, "hdfs": HDFS_PROVIDER}[stream["state_store"]]
    jars = connector_jars()
    if OWN_JAR.exists():
        jars.append(str(OWN_JAR))
    conf = {
        "spark.master": spark["master"],
        "spark.app.name": spark["app_name"],
        "spark.jars": ",".join(jars),
        "spark.driver.memory": spark["driver_memory"],
        "spark.sql.shuffle.partitions": str(stream["shuffle_partitions"]),
        "spark.sql.streaming.stateStore.providerClass": provider,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.streaming.minBatchesToRetain": "20",
        # No micro-batch without a new record: processing-time timeouts would otherwise make Spark
        # run one at every trigger (~1 core when idle). Timers are started by the driver's timer
        # waker instead (streaming/timer_waker.py).
        "spark.sql.streaming.noDataMicroBatches.enabled": "false" if stream["timer_wakeups"] else "true",
        "spark.sql.adaptive.enabled": "false",
        # No whole-stage code generation: Spark plans every micro-batch anew and writes the Java
        # source of each of its stages again on the driver, every batch (WholeStageCodegenExec's
        # doCodeGen, the largest part of the stream thread's samples with one request per batch),
        # and a new job compiles them in its first batches. The JVM's per-row work is small next
        # to the Python step here. Measured: READY 1-3 s sooner, a lightly loaded batch 6-35 ms
        # shorter, bursts at the same rate (docs/operations.md, *Whole-stage code generation, off*).
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        # Hadoop's local file system forks `readlink` on every rename through FileContext (no native
        # Hadoop library here), and a micro-batch renames several checkpoint files: the FileSystem
        # API renames without forking. Same atomic temp-file-then-rename protocol.
        "spark.sql.streaming.checkpointFileManagerClass": (
            "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
        ),
        # The Python workers' daemon: no re-reading of pyspark.zip on every task, warm imports
        # (streaming/worker_daemon.py).
        "spark.python.daemon.module": "streaming.worker_daemon",
        # Quiet by default: no console progress bar, the JVM's log level WARN from its first line.
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": driver_java_options(
            archive_at_exit, str(spark.get("driver_java_options", ""))
        ),
        # Also on the driver's class path (local mode runs the tasks there): classes loaded by the
        # application class loader can be archived, those of spark.jars' loader cannot.
        "spark.driver.extraClassPath": ":".join(jars),
    }
    if OWN_JAR.exists():
        # Local checkpoints without a chmod process per file (deploy/java); the jar is on the
        # driver's class path because Hadoop resolves file systems with its own loader.
        conf["spark.hadoop.fs.file.impl"] = NO_FORK_LOCAL_FS
    if cfg.raw.get("redis", {}).get("enabled"):
        # The read-model projector runs its jobs in a pool of its own (streaming/projector.py):
        # pools share the executors' slots, so neither query's jobs wait for all of the other's.
        conf["spark.scheduler.mode"] = "FAIR"
    conf.update({key: str(value) for key, value in spark.get("conf", {}).items()})
    return conf


def build_session(cfg: StreamConfig, archive_at_exit: Path | None = None) -> SparkSession:
    # Spark's Python workers must use this interpreter (and its packages), not the system one.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder
    for key, value in session_conf(cfg, archive_at_exit).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(cfg.spark.get("log_level", "WARN"))
    warm_up(session)
    return session


def warm_up(session: SparkSession) -> threading.Thread:
    """In the background, what a new job's first micro-batch would otherwise wait for: the Python
    worker daemon (its imports: pandas, pyarrow, the coordinator core) and one worker per shuffle
    partition, forked and left idle for the query's tasks (Spark reuses them), and RocksDB's native
    library. Runs while the driver waits for the broker, creates the topics and starts the query."""

    def run() -> None:
        try:
            jvm: Any = session.sparkContext._jvm
            jvm.org.rocksdb.RocksDB.loadLibrary()
            frame = session.range(64).selectExpr("id % 64 as k")
            frame.groupBy("k").applyInPandas(lambda pdf: pdf, "k long").collect()
        except Exception:  # noqa: BLE001 - only a head start: the query does the same when it needs it
            pass

    thread = threading.Thread(target=run, name="spark-warm-up", daemon=True)
    thread.start()
    return thread
