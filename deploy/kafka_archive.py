"""The Kafka broker's class-data archive (JDK CDS): the classes a broker loads, parsed and verified
once here instead of at every start.

    python -m deploy.kafka_archive

deploy/setup.sh runs it when the Kafka jars, the JDK or the broker's launch (deploy/kafka_local.py)
change. It formats a broker's storage in a temporary directory, starts the broker with
`-XX:ArchiveClassesAtExit`, gives it the kinds of requests the service and its tests send (topics
created and described, configs, produce, fetch, a consumer group's commits, a transaction) and
stops it: the JVM writes the archive when it exits. deploy/kafka_local.py then starts every broker
and its storage tool with `-XX:SharedArchiveFile` (docs/operations.md, *Latency and start-up*). A JVM
that cannot use the archive (other jars, another JDK) runs without it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deploy.class_archive import write_archive
from deploy.kafka_local import KAFKA_ARCHIVE, KAFKA_JARS, QUIET_CDS, LocalKafka, free_port


def workload(bootstrap: str) -> None:
    """What a broker of the service serves, briefly: the classes of those paths get archived."""
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(f"archive-{i}", 10, 1) for i in range(3)])
        admin.describe_topics()
        admin.describe_cluster()
        admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "archive-0")])
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        for i in range(1000):
            producer.send(f"archive-{i % 3}", key=str(i).encode(), value=b"x" * 100)
        producer.flush()
        producer.close()
        txn = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="archive-txn")
        txn.init_transactions()
        txn.begin_transaction()
        txn.send("archive-1", b"in a transaction")
        txn.commit_transaction()
        txn.close()
        consumer = KafkaConsumer(
            "archive-0",
            "archive-1",
            bootstrap_servers=bootstrap,
            group_id="archive-group",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            isolation_level="read_committed",
        )
        read, deadline = 0, time.monotonic() + 30
        while read < 600 and time.monotonic() < deadline:
            read += sum(len(records) for records in consumer.poll(timeout_ms=1000).values())
        consumer.commit()
        consumer.close()
    finally:
        admin.close()


def train(archive: Path) -> None:
    """A broker that writes the classes it loaded to `archive` when it exits; returns once it has."""
    with tempfile.TemporaryDirectory(prefix="kafka-archive-") as work:
        port, controller_port = free_port(), free_port()
        # The storage tool first, without the option: only the broker's JVM writes the archive.
        LocalKafka(Path(work) / "kafka", port, controller_port, jvm_options=[]).format()
        dump = [f"-XX:ArchiveClassesAtExit={archive}", *QUIET_CDS]
        broker = LocalKafka(Path(work) / "kafka", port, controller_port, jvm_options=dump).start()
        try:
            workload(broker.bootstrap)
        finally:
            broker.stop()  # SIGTERM: Kafka's clean shutdown, then the JVM exits and writes the archive


def usable(archive: Path) -> bool:
    """Whether a JVM with the brokers' class path maps `archive` (-Xshare:on refuses to start
    otherwise; the brokers themselves run with the default, which would go on without it)."""
    command = ["java", f"-XX:SharedArchiveFile={archive}", "-Xshare:on", *QUIET_CDS]
    command += ["-cp", str(KAFKA_JARS / "*"), "kafka.tools.StorageTool", "random-uuid"]
    return subprocess.run(command, capture_output=True).returncode == 0


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    return write_archive(KAFKA_ARCHIVE, train, "kafka_archive", "brokers", usable)


if __name__ == "__main__":
    sys.exit(main())
