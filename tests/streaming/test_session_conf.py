"""The coordinator job's Spark settings (streaming/session.py `session_conf`)."""

from __future__ import annotations

from streaming import session
from streaming.config import StreamConfig


def conf(monkeypatch, overrides: dict | None = None) -> dict[str, str]:
    monkeypatch.setattr(session, "connector_jars", lambda: ["/jars/spark-sql-kafka.jar"])
    return session.session_conf(StreamConfig.load(None, overrides or {}, environ={}))


def test_no_whole_stage_code_generation_unless_the_configuration_asks_for_it(monkeypatch):
    assert conf(monkeypatch)["spark.sql.codegen.wholeStage"] == "false"
    asked = conf(monkeypatch, {"spark": {"conf": {"spark.sql.codegen.wholeStage": True}}})
    assert asked["spark.sql.codegen.wholeStage"] == "True"


def test_the_settings_the_checkpoint_and_the_state_depend_on(monkeypatch):
    c = conf(monkeypatch, {"stream": {"shuffle_partitions": 3, "state_store": "hdfs"}})
    assert c["spark.master"] == "local[2]" and c["spark.app.name"] == "kafka-coordinator"
    assert c["spark.sql.shuffle.partitions"] == "3"
    assert c["spark.sql.streaming.stateStore.providerClass"] == session.HDFS_PROVIDER
    assert c["spark.jars"].startswith("/jars/spark-sql-kafka.jar")
    assert c["spark.driver.extraClassPath"].split(":")[0] == "/jars/spark-sql-kafka.jar"
