"""`Metrics.finish_batch` as it was before its state-log records and applied requests were counted
per batch in C (commit 30b7f34), verbatim: the reference test_metrics_batch_counts.py holds the
current one to (the same record, the same stored metrics, counter for counter and in order)."""

from __future__ import annotations

from coordinator.messages import Outputs
from coordinator.metrics import HEARTBEAT_APIS, Metrics


def finish_batch(self: Metrics, out: Outputs, batch_time_ms: int) -> dict | None:
    """Account for the batch's outputs; the metrics record, or None if the batch did nothing."""
    if not (out.events or out.records or out.responses or out.applied or out.requests or out.data):
        return None
    data = self.data
    gauges_from_scan = not self._initialized
    self._groups_touched, self._last_event_ms = {}, {}
    self._protocols = self._event_protocols(out.events)
    for i, event in enumerate(out.events):
        self._event_index = i
        self._on_event(event.body, gauges_from_scan)
    # Counted per batch, then added once per series (in the order each series first appears, as
    # adding them one request at a time would: the record's counters keep that order).
    commits: dict[str, int] = {}
    for record in out.records:
        name = _on_record(record)
        if name is not None:
            commits[name] = commits.get(name, 0) + 1
    for name, n in commits.items():
        self._add(name, n)
    per_api: dict[str, list[int]] = {}
    for api, time_ms in out.applied:
        wait = max(0, batch_time_ms - time_ms)
        totals = per_api.get(api)
        if totals is None:
            totals = per_api[api] = [0, 0]
        totals[0] += 1
        totals[1] += wait
        if api in HEARTBEAT_APIS:
            self._observe("group_heartbeat_latency_ms", wait, api=api)
    for api, (n, waited) in per_api.items():
        self._add("requests_total", n, api=api)
        self._add("request_queue_time_ms_sum", waited, api=api)
    self._settle_consumer_rebalances()
    if gauges_from_scan:
        self._count_by_scan()
        self._initialized = True
    data["seq"] += 1
    return {
        "coordinatorPartition": self.p.partition_id,
        "seq": data["seq"],
        "batchTimeMs": batch_time_ms,
        "counters": dict(data["counters"]),
        "gauges": dict(data["gauges"]),
        "histograms": {
            k: {"buckets": list(v["buckets"]), "sum": v["sum"], "count": v["count"]}
            for k, v in data["histograms"].items()
        },
    }


def _on_record(record) -> str | None:
    """The counter a state-log record adds one to, if any."""
    if not record.key.startswith('["OffsetCommit"') or record.value is None:
        return None
    if record.value.get("producerId", -1) >= 0:
        return "group_txn_offset_commit_total"
    return "group_offset_commit_total"
