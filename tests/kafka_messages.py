"""Kafka 4.4.0's message JSON files, read from the kafka-clients jar that deploy/setup.sh resolves
from Maven Central into .cache/jars/kafka (the jar carries them as `common/message/*.json`), so
the tests that compare against Kafka's own schemas run on every machine the project sets up."""

from __future__ import annotations

import zipfile
from functools import cache

from deploy.kafka_local import KAFKA_JARS

KAFKA_CLIENTS_VERSION = "4.4.0"
KAFKA_CLIENTS_JAR = KAFKA_JARS / f"kafka-clients-{KAFKA_CLIENTS_VERSION}.jar"


def available() -> bool:
    return KAFKA_CLIENTS_JAR.is_file()


@cache
def message_bytes(name: str) -> bytes:
    """The bytes of Kafka's `common/message/<name>` (e.g. "JoinGroupRequest.json")."""
    with zipfile.ZipFile(KAFKA_CLIENTS_JAR) as jar:
        return jar.read(f"common/message/{name}")
