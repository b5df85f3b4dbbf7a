"""The exporter's arithmetic and text (streaming/metrics_exporter.py): the newest record of each
partition counts, a replayed record changes nothing, and the text is Prometheus'."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from coordinator.metrics import BUCKETS_MS, series
from streaming.metrics_exporter import MetricsExporter, StreamHealth


def record(cp: int, seq: int, commits: int, stable: int, durations: list[int] = (), wall_ns: int = 0) -> dict:
    buckets = [0] * (len(BUCKETS_MS) + 1)
    for d in durations:
        buckets[next((i for i, b in enumerate(BUCKETS_MS) if d <= b), len(BUCKETS_MS))] += 1
    r = {
        "coordinatorPartition": cp,
        "seq": seq,
        "batchTimeMs": 1000 * seq,
        "stateBytes": 100 * cp + seq,
        "counters": {
            series("group_offset_commit_total"): commits,
            series("requests_total", api="Heartbeat"): seq,
            series("request_queue_time_ms_sum", api="Heartbeat"): 10 * seq,
        },
        "gauges": {series("classic_group_count", state="Stable"): stable},
        "histograms": {
            series("group_rebalance_duration_ms", protocol="classic"): {
                "buckets": buckets,
                "sum": sum(durations),
                "count": len(durations),
            }
        },
    }
    if wall_ns:
        r["wallClock"] = {"assignment": {"count": 1, "totalNs": wall_ns}}
    return r


def scrape(exporter: MetricsExporter) -> dict:
    text = generate_latest(exporter.registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


def test_the_newest_record_of_each_partition_is_summed_and_a_replay_counts_once():
    ex = MetricsExporter("unused:9092", "coordinator-metrics", 0)
    assert ex.store.apply(record(1, 1, commits=2, stable=1, durations=[3000], wall_ns=5_000_000))
    assert ex.store.apply(record(7, 1, commits=5, stable=2, durations=[40]))
    assert ex.store.apply(record(1, 2, commits=3, stable=1, durations=[3000, 200], wall_ns=1_000_000))
    # The same batch replayed: its record again (but for the wall clock): nothing changes.
    assert not ex.store.apply(record(1, 2, commits=3, stable=1, durations=[3000, 200], wall_ns=9_000_000))
    m = scrape(ex)
    assert m[("kafka_coordinator_group_offset_commit_total", ())] == 8
    assert m[("kafka_coordinator_classic_group_count", (("state", "Stable"),))] == 3
    assert m[("kafka_coordinator_group_rebalance_duration_ms_count", (("protocol", "classic"),))] == 3
    assert m[("kafka_coordinator_group_rebalance_duration_ms_bucket", (("le", "50"), ("protocol", "classic")))] == 1
    assert m[("kafka_coordinator_group_rebalance_duration_ms_bucket", (("le", "+Inf"), ("protocol", "classic")))] == 3
    assert m[("kafka_coordinator_group_rebalance_duration_ms_sum", (("protocol", "classic"),))] == 3240
    assert m[("kafka_coordinator_request_queue_time_ms_count", (("api", "Heartbeat"),))] == 3
    assert m[("kafka_coordinator_request_queue_time_ms_sum", (("api", "Heartbeat"),))] == 30
    assert m[("kafka_coordinator_state_bytes", (("partition", "1"),))] == 102
    assert m[("kafka_coordinator_partitions_reporting", ())] == 2
    # Wall-clock measurements of the records seen first (the replay's are not added).
    assert m[("kafka_coordinator_assignment_compute_seconds_sum", ())] == 0.006
    assert m[("kafka_coordinator_assignment_compute_seconds_count", ())] == 2
    # A new checkpoint: partition 1 starts again from sequence 1; its counters start again.
    assert ex.store.apply(record(1, 1, commits=1, stable=0))
    m = scrape(ex)
    assert m[("kafka_coordinator_group_offset_commit_total", ())] == 6


def test_stream_health_from_the_status_document(tmp_path):
    ex = MetricsExporter("unused:9092", "coordinator-metrics", 0, status_file=tmp_path / "none.json")
    doc = {
        "state": "ready",
        "batches": [
            {"batchId": 4, "numInputRows": 3, "durationMs": {"triggerExecution": 250}, "offsetsBehindLatest": 0},
            {"batchId": 5, "numInputRows": 7, "durationMs": {"triggerExecution": 310}, "offsetsBehindLatest": 2},
        ],
    }
    ex.health.observe(doc)
    ex.health.observe(doc)  # the same batches again are not counted twice
    ex.health.request_lag = 9
    m = scrape(ex)
    assert m[("kafka_coordinator_stream_batches_total", ())] == 2
    assert m[("kafka_coordinator_stream_input_rows_total", ())] == 10
    assert m[("kafka_coordinator_stream_batch_duration_ms", ())] == 310
    assert m[("kafka_coordinator_stream_offsets_behind_latest", ())] == 2
    assert m[("kafka_coordinator_stream_request_lag", ())] == 9
    assert m[("kafka_coordinator_stream_up", ())] == 1
    assert isinstance(ex.health, StreamHealth)
