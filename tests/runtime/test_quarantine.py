"""The supervisor's handler for sink failures on missing output topics (run_stream.py)."""

from __future__ import annotations

import logging

import pytest

import run_stream
from streaming.config import StreamConfig

FAILURE = (
    "org.apache.spark.SparkException: Job aborted.\nCaused by: org.apache.kafka.common.errors."
    "TimeoutException: Topic {topic} not present in metadata after 60000 ms."
)


@pytest.fixture
def handler():
    quarantined: list[str] = []
    cfg = StreamConfig.load(environ={})
    return run_stream.quarantine_missing_topics(cfg, quarantined, logging.getLogger("test")), quarantined


def test_a_topic_the_broker_confirms_missing_is_quarantined_once(handler, monkeypatch):
    handle, quarantined = handler
    monkeypatch.setattr(run_stream, "topic_exists", lambda bootstrap, topic: False)
    decision = handle(FAILURE.format(topic="coordinator-responses.gone"))
    assert decision is not None and not decision.gives_up and decision.immediately
    assert quarantined == ["coordinator-responses.gone"]
    assert handle(FAILURE.format(topic="coordinator-responses.gone")) is None  # nothing new to do


@pytest.mark.parametrize("exists", [True, None])  # the topic is there, or the broker cannot be asked
def test_no_quarantine_unless_the_broker_confirms_the_topic_is_gone(handler, monkeypatch, exists):
    handle, quarantined = handler
    monkeypatch.setattr(run_stream, "topic_exists", lambda bootstrap, topic: exists)
    assert handle(FAILURE.format(topic="orders")) is None and quarantined == []


def test_the_services_own_topics_are_never_quarantined(handler, monkeypatch):
    handle, quarantined = handler
    monkeypatch.setattr(run_stream, "topic_exists", lambda bootstrap, topic: False)
    assert handle(FAILURE.format(topic="coordinator-responses")) is None
    assert handle(FAILURE.format(topic="coordinator-state-log")) is None and quarantined == []
