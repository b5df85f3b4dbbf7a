"""[txn] markers = "broker": which markers the state function hands to the broker, and the config."""
from __future__ import annotations

import pytest

from coordinator.messages import DataRecord
from coordinator.txn.markers import marker_record
from streaming.config import StreamConfig
from streaming.step import StepSettings, output_rows
from streaming.txn_markers import _group, markers_of
from coordinator.messages import Outputs


def _marker(topic, partition, commit, pid=1000, epoch=3):
    return marker_record(topic, partition, committed=commit, transactional_id="t", producer_id=pid,
                         producer_epoch=epoch, coordinator_partition=0, transaction_version=0)


def test_markers_of_reads_the_decisions_and_skips_other_data():
    data = [_marker("a", 0, True), _marker("a", 1, True), _marker("b", 0, False, pid=2000),
            DataRecord("c", 0, "k", b"{}", [])]
    ms = markers_of(data)
    assert [(m["topic"], m["partition"], m["producerId"], m["producerEpoch"], m["commit"]) for m in ms] == [
        ("a", 0, 1000, 3, True), ("a", 1, 1000, 3, True), ("b", 0, 2000, 3, False)]
    # One WritableTxnMarker per producer, epoch and result, its partitions grouped by topic.
    assert _group(ms) == {(1000, 3, True): {"a": [0, 1]}, (2000, 3, False): {"b": [0]}}


def _settings(mode):
    return StepSettings(coordinator={}, responses_topic="r", events_topic="e", state_log_topic="s",
                        requests_topic="q", txn_markers=mode)


def test_broker_mode_writes_no_json_marker_records():
    out = Outputs()
    out.data.append(_marker("a", 0, True))
    assert [r[0] for r in output_rows(out, 0, _settings("json"))] == ["a"]
    assert output_rows(out, 0, _settings("broker")) == []


def test_marker_mode_is_validated(tmp_path):
    assert StreamConfig.load(environ={}).txn_markers == "json"
    assert StreamConfig.load(environ={"COORD_TXN_MARKERS": "broker"}).txn_markers == "broker"
    with pytest.raises(ValueError, match="markers"):
        StreamConfig.load(environ={"COORD_TXN_MARKERS": "kafka"})
