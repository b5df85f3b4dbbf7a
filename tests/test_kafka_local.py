"""The local broker's JVM command lines (no broker is started here)."""

from __future__ import annotations

import subprocess

import deploy.kafka_local as kafka_local
from deploy.kafka_local import LocalKafka


def launched(tmp_path, monkeypatch, **kwargs) -> list[str]:
    """The command `launch` runs for a new (unformatted) broker directory."""
    seen: list[list[str]] = []

    class Proc:
        pid = 12345

    monkeypatch.setattr(LocalKafka, "_classpath", lambda self: "/jars/*")
    monkeypatch.setattr(kafka_local, "_port_open", lambda port: False)
    monkeypatch.setattr(subprocess, "Popen", lambda args, **kw: seen.append(args) or Proc())
    LocalKafka(tmp_path / "kafka", 40001, 40002, **kwargs).launch()
    return seen[0]


def test_brokers_and_their_storage_tool_start_with_the_class_data_archive_once_setup_made_it(tmp_path, monkeypatch):
    archive = tmp_path / "kafka-broker.jsa"
    monkeypatch.setattr(kafka_local, "KAFKA_ARCHIVE", archive)
    option = f"-XX:SharedArchiveFile={archive}"
    without = launched(tmp_path / "a", monkeypatch)
    assert not any("SharedArchiveFile" in a for a in without)
    archive.write_bytes(b"an archive")
    command = launched(tmp_path / "b", monkeypatch)
    # sh -c '<storage tool format> && exec "$@"' sh java <options> ... kafka.Kafka server.properties
    assert command[:2] == ["sh", "-c"] and "kafka.tools.StorageTool format" in command[2]
    assert option in command[2] and "-Xlog:cds=off" in command[2]
    broker = command[command.index("java") :]
    assert broker[1] == option and broker[-2] == "kafka.Kafka"
    assert not any("SharedArchiveFile" in a for a in launched(tmp_path / "c", monkeypatch, jvm_options=[]))
    training = launched(tmp_path / "d", monkeypatch, jvm_options=["-XX:ArchiveClassesAtExit=/x.jsa"])
    assert "-XX:ArchiveClassesAtExit=/x.jsa" in training and option not in training
