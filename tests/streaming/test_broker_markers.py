"""[txn] markers ("auto", "json", "broker"): which markers the state function hands to the broker,
which the sink writes as JSON records, and the config."""

from __future__ import annotations

import pytest

from coordinator.messages import DataRecord, Outputs
from coordinator.txn.markers import marker_record
from streaming import txn_markers
from streaming.config import StreamConfig
from streaming.step import StepSettings, output_rows, write_broker_markers
from streaming.txn_markers import _group, markers_of


def _marker(topic, partition, commit, pid=1000, epoch=3, kind="json"):
    return marker_record(
        topic,
        partition,
        committed=commit,
        transactional_id="t",
        producer_id=pid,
        producer_epoch=epoch,
        coordinator_partition=0,
        transaction_version=0,
        client_kind=kind,
    )


def test_markers_of_reads_the_decisions_and_skips_other_data():
    data = [
        _marker("a", 0, True),
        _marker("a", 1, True),
        _marker("b", 0, False, pid=2000),
        DataRecord("c", 0, "k", b"{}", []),
    ]
    ms = markers_of(data)
    assert [(m["topic"], m["partition"], m["producerId"], m["producerEpoch"], m["commit"]) for m in ms] == [
        ("a", 0, 1000, 3, True),
        ("a", 1, 1000, 3, True),
        ("b", 0, 2000, 3, False),
    ]
    # One WritableTxnMarker per producer, epoch and result, its partitions grouped by topic.
    assert _group(ms) == {(1000, 3, True): {"a": [0, 1]}, (2000, 3, False): {"b": [0]}}


def _settings(mode):
    return StepSettings(
        coordinator={}, responses_topic="r", events_topic="e", state_log_topic="s", requests_topic="q", txn_markers=mode
    )


def test_broker_mode_writes_no_json_marker_records():
    out = Outputs()
    out.data.append(_marker("a", 0, True))
    assert [r[0] for r in output_rows(out, 0, _settings("json"))] == ["a"]
    assert output_rows(out, 0, _settings("broker")) == []


class RecordingWriter:
    """Stands in for the broker connection: records what it is asked to write, answers NONE."""

    def __init__(self):
        self.written = []

    def write(self, markers):
        self.written += markers
        return [{**m, "errorCode": 0, "outcome": "written"} for m in markers]


def _mixed_batch():
    out = Outputs()
    out.data += [
        _marker("json-out", 0, True, pid=1),
        _marker("kafka-out", 0, True, pid=2, kind="kafka"),
        _marker("kafka-out", 1, True, pid=2, kind="kafka"),
        _marker("json-out", 1, False, pid=3),
    ]
    return out


@pytest.mark.parametrize(
    "mode, to_sink, to_broker",
    [
        ("auto", [("json-out", 0), ("json-out", 1)], [("kafka-out", 0), ("kafka-out", 1)]),
        ("json", [("json-out", 0), ("kafka-out", 0), ("kafka-out", 1), ("json-out", 1)], []),
        ("broker", [], [("json-out", 0), ("kafka-out", 0), ("kafka-out", 1), ("json-out", 1)]),
    ],
)
def test_markers_are_routed_by_the_kind_of_client_in_auto_mode(monkeypatch, mode, to_sink, to_broker):
    writer = RecordingWriter()
    monkeypatch.setitem(txn_markers._writers, "broker:9092", writer)
    s = StepSettings(
        coordinator={},
        responses_topic="r",
        events_topic="e",
        state_log_topic="s",
        requests_topic="q",
        txn_markers=mode,
        bootstrap="broker:9092",
    )
    out = _mixed_batch()
    rows = output_rows(out, 0, s)
    assert [(r[0], r[3]) for r in rows] == to_sink
    assert all(r[4] and r[4][0]["key"] == "__txn_marker" for r in rows)
    events = write_broker_markers(out, 0, s, 123) if mode != "json" else []
    assert [(m["topic"], m["partition"]) for m in writer.written] == to_broker
    assert len(events) == len(to_broker) and {r[0] for r in events} <= {"e"}


def test_marker_mode_is_validated(tmp_path):
    assert StreamConfig.load(environ={}).txn_markers == "auto"
    assert StreamConfig.load(environ={"COORD_TXN_MARKERS": "json"}).txn_markers == "json"
    assert StreamConfig.load(environ={"COORD_TXN_MARKERS": "broker"}).txn_markers == "broker"
    with pytest.raises(ValueError, match="markers"):
        StreamConfig.load(environ={"COORD_TXN_MARKERS": "kafka"})
