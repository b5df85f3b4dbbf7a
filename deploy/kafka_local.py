"""A real single-node KRaft Kafka broker on 127.0.0.1, run from the Maven-resolved jars.

    python -m deploy.kafka_local start [--dir .run/kafka] [--port 9092]
    python -m deploy.kafka_local stop  [--dir .run/kafka]

The jars come from deploy/setup.sh (.cache/jars/kafka). The broker's data, log and pid file live
in --dir; `start` formats the storage the first time and returns once the broker answers.
"""

from __future__ import annotations

import base64
import os
import shlex
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from deploy.pidfile import running_pid, server_cli, terminate

ROOT = Path(__file__).resolve().parent.parent
KAFKA_JARS = ROOT / ".cache" / "jars" / "kafka"
# The broker's class-data archive (JDK CDS, deploy/kafka_archive.py, made by deploy/setup.sh).
KAFKA_ARCHIVE = ROOT / ".cache" / "jvm" / "kafka-broker.jsa"
# The JVM's CDS messages stay out of the broker's log (an archive it cannot use is skipped).
QUIET_CDS = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off"]


def archive_options() -> list[str]:
    """The broker's and the storage tool's JVM options for the class-data archive, when setup made
    one: the classes a broker loads come parsed and verified (a formatted start to a broker that
    answers took 3.8–4.6 CPU s instead of 6.6–7.2 here). A JVM that cannot use it (other jars,
    another JDK) runs without it."""
    return [f"-XX:SharedArchiveFile={KAFKA_ARCHIVE}", *QUIET_CDS] if KAFKA_ARCHIVE.exists() else []


LOG4J2 = """\
appender.console.type=Console
appender.console.name=STDOUT
appender.console.layout.type=PatternLayout
appender.console.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=warn
rootLogger.appenderRef.stdout.ref=STDOUT
logger.kafka.name=kafka.server.KafkaServer
logger.kafka.level=info
"""


# The service's transaction coordinator writes the markers of real clients' transactions with
# WriteTxnMarkers ([txn] markers = "auto" or "broker", docs/protocol.md). Verification would ask the broker's
# own transaction coordinator, which does not know those transactions, whether the partition was
# added (AddPartitionsToTxn verifyOnly) and fail the produce.
SERVICE_BROKER_CONFIG = "transaction.partition.verification.enable=false\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def new_cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def broker_answers(bootstrap: str, **client_config) -> bool:
    """Whether a broker of `bootstrap` serves a metadata request now (listening is not enough)."""
    from kafka import KafkaAdminClient

    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000, **client_config)
        try:
            admin.list_topics()
            return True
        finally:
            admin.close()
    except Exception:  # noqa: BLE001 - not ready yet
        return False


# What a single broker tells the service about its topics ([topics] replication_factor and
# min_insync_replicas), as its server.properties tells Kafka's own coordinators: one replica.
SINGLE_BROKER_TOPICS = {"replication_factor": 1, "min_insync_replicas": 1}


class LocalKafka:
    """One KRaft node, broker and controller. Alone (the defaults) it is its own one-voter quorum
    with replication 1; deploy/kafka_cluster.py runs three of them as one cluster (`node_id`,
    `quorum`, `cluster_id`, `replication`)."""

    def __init__(
        self,
        workdir: str | os.PathLike,
        port: int = 9092,
        controller_port: int | None = None,
        heap: str = "512m",
        extra_config: dict | None = None,
        features: dict[str, int] | None = None,
        release_version: str | None = None,
        service_broker: bool = True,
        format_args: list[str] | None = None,
        *,
        node_id: int = 1,
        quorum: str | None = None,
        cluster_id: str | None = None,
        replication: int = 1,
        jvm_options: list[str] | None = None,
    ):
        self.dir = Path(workdir).resolve()
        self.port = port
        self.controller_port = controller_port or port + 1
        self.heap = heap
        self.extra_config = extra_config or {}  # more server.properties (e.g. group timeouts for a bench)
        # The features finalized at format (`--feature name=level`) and the metadata version
        # (`--release-version`, None: the storage tool's default for the jars).
        self.features = {"transaction.version": 1} if features is None else features
        self.release_version = release_version
        # The broker the service runs on (True) turns off what the service's transaction markers need
        # off; a reference broker (bench/differential.py) keeps Kafka's defaults.
        self.service_broker = service_broker
        # more arguments of the storage tool's format (e.g. --add-scram 'SCRAM-SHA-256=[name=..,password=..]')
        self.format_args = list(format_args or [])
        self.node_id = node_id
        self.quorum = quorum or f"{node_id}@127.0.0.1:{self.controller_port}"  # controller.quorum.voters
        self.cluster_id = cluster_id
        self.replication = replication  # of the broker's own topics; min.insync.replicas: one less (at least 1)
        # More JVM options of the broker and its storage tool; None: the class-data archive's, if any.
        self.jvm_options = jvm_options

    @property
    def service_topics(self) -> dict:
        """The [topics] durability settings the service needs on this broker alone."""
        return dict(SINGLE_BROKER_TOPICS)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pidfile(self) -> Path:
        return self.dir / "broker.pid"

    @property
    def logfile(self) -> Path:
        return self.dir / "broker.log"

    def _jvm_options(self) -> list[str]:
        return archive_options() if self.jvm_options is None else list(self.jvm_options)

    def _classpath(self) -> str:
        if not any(KAFKA_JARS.glob("kafka_2.13-*.jar")):
            raise RuntimeError(f"Kafka jars missing in {KAFKA_JARS}: run deploy/setup.sh")
        return str(KAFKA_JARS / "*")

    def _write_config(self) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        props = self.dir / "server.properties"
        props.write_text(
            f"""\
process.roles=broker,controller
node.id={self.node_id}
controller.quorum.voters={self.quorum}
listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={self.dir / "data"}
num.partitions=1
offsets.topic.replication.factor={self.replication}
offsets.topic.num.partitions=4
transaction.state.log.replication.factor={self.replication}
transaction.state.log.min.isr={max(1, self.replication - 1)}
default.replication.factor={self.replication}
min.insync.replicas={max(1, self.replication - 1)}
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
log.cleaner.backoff.ms=5000
"""
            + (SERVICE_BROKER_CONFIG if self.service_broker else "")
            + "".join(f"{k}={v}\n" for k, v in self.extra_config.items())
        )
        (self.dir / "log4j2.properties").write_text(LOG4J2)
        return props

    def _format_command(self, props: Path) -> list[str] | None:
        """The storage tool's command that formats a new data directory (None: formatted)."""
        if (self.dir / "data" / "meta.properties").exists():
            return None
        cluster_id = self.cluster_id or new_cluster_id()
        # "--cluster-id=ID": a random id starting with "-" (one in 64) would be read as an option.
        # transaction.version=1: a Kafka 4.1 broker verifies every transactional Produce v12+ (what
        # clients send once transaction.version 2 is finalized) with its own transaction coordinator,
        # whatever transaction.partition.verification.enable says; at level 1 clients use
        # AddPartitionsToTxn and Produce <= v11, which the service's coordinator serves.
        return [
            "java",
            *self._jvm_options(),
            "-cp",
            self._classpath(),
            "kafka.tools.StorageTool",
            "format",
            f"--cluster-id={cluster_id}",
            "-c",
            str(props),
            *(["--release-version", self.release_version] if self.release_version else []),
            *(arg for name, level in self.features.items() for arg in ("--feature", f"{name}={level}")),
            *self.format_args,
        ]

    def format(self) -> None:
        """Format the data directory now, if it is new (`launch` does it otherwise, right before the
        broker, in the broker's process)."""
        command = self._format_command(self._write_config())
        if command is not None:
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)

    def pid(self) -> int | None:
        return running_pid(self.pidfile)

    def start(self, timeout: float = 90) -> LocalKafka:
        return self.launch().wait_ready(timeout)

    def launch(self) -> LocalKafka:
        """Start the broker process without waiting for it to answer (see `wait_ready`)."""
        self._proc = None
        if self.pid() is not None and _port_open(self.port):
            return self
        props = self._write_config()
        broker = [
            "java",
            *self._jvm_options(),
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.dir}",
            "-cp",
            self._classpath(),
            "kafka.Kafka",
            str(props),
        ]
        format_command = self._format_command(props)
        if format_command is not None:
            # Formatting (a JVM of its own, seconds) happens in the background too, right before the
            # broker, in the same process: nothing waits for it but `wait_ready`.
            broker = ["sh", "-c", f'{shlex.join(format_command)} >/dev/null && exec "$@"', "sh", *broker]
        log = open(self.logfile, "ab")
        self._proc = subprocess.Popen(
            broker,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.pidfile.write_text(str(self._proc.pid))
        return self

    def wait_ready(self, timeout: float = 90) -> LocalKafka:
        proc = getattr(self, "_proc", None)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"Kafka broker exited with {proc.returncode}; see {self.logfile}")
            if _port_open(self.port) and self._answers():
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"Kafka broker did not come up within {timeout}s; see {self.logfile}")

    def _answers(self) -> bool:
        return broker_answers(self.bootstrap)

    def stop(self, timeout: float = 30) -> None:
        terminate(self.pidfile, timeout, poll_s=0.2)


def main(argv: list[str] | None = None) -> int:
    return server_cli(
        argv,
        "Run a local single-node KRaft Kafka broker",
        "Kafka broker",
        ROOT / ".run" / "kafka",
        9092,
        LocalKafka,
        lambda broker: broker.bootstrap,
    )


if __name__ == "__main__":
    sys.exit(main())
