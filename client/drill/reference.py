"""The state an uninterrupted run reaches from the request log (the source of truth).

Batch boundaries and batch times differ between a run that was killed and one that was not, so
the comparison is on the logical state (no clock, timers or metrics: `logical_state`), and the
reference applies the whole covered log as one batch at the checkpoint's last batch time.
"""

from __future__ import annotations

import functools

from coordinator import CoordinatorConfig, CoordinatorPartition, coordinator_partition
from coordinator.batch import InputRecord, run_batch
from coordinator.metadata import BROADCAST_KEY

SELF_CHECK_KEY = "coordinator-selfcheck"  # run_stream.SELF_CHECK_KEY (run_stream imports Spark)


def request_log(bootstrap: str, topic: str, internal_topic: str, timeout_s: float = 60) -> list[InputRecord]:
    """Every record of the request topic (and of the internal channel), as the stream saw them
    (key, value, append time, channel)."""
    from client.topic_reader import read_records

    def records(name: str, internal: bool) -> list[InputRecord]:
        return [
            InputRecord(
                r.key.decode("utf-8", "replace") if r.key is not None else None,
                r.value,
                r.timestamp,
                r.partition,
                r.offset,
                None,
                internal=internal,
            )
            for r in read_records(bootstrap, name, timeout_s=timeout_s)
        ]

    return records(topic, False) + records(internal_topic, True)


def covered(
    records: list[InputRecord], ends: dict[str, dict[int, int]], topic: str, internal_topic: str
) -> list[InputRecord]:
    """The records a checkpoint's batches have read: below the end offsets its offset log names
    for each topic partition (not everything now in the topics)."""

    def limit(r: InputRecord) -> int:
        return ends.get(internal_topic if r.internal else topic, {}).get(r.partition, 0)

    return [r for r in records if r.offset < limit(r)]


def client_requests(records: list[InputRecord]) -> list[InputRecord]:
    """The clients' requests: not the internal channel's, nor the job's own self-check (one
    FindCoordinator per query start)."""
    return [r for r in records if not r.internal and r.key != SELF_CHECK_KEY]


def reference_states(records: list[InputRecord], config: CoordinatorConfig, batch_time_ms: int) -> dict[int, dict]:
    """The logical state each coordinator partition has after applying `records` in one
    uninterrupted batch: what a run without kills ends with."""
    n = config["coordinator.partitions"]
    by_partition: dict[int, list[InputRecord]] = {}
    for r in records:
        broadcast = r.internal and r.key == BROADCAST_KEY
        targets = range(n) if broadcast else [coordinator_partition(r.key, n)]
        for p in targets:
            by_partition.setdefault(p, []).append(r)
    out = {}
    for p, recs in by_partition.items():
        part, _ = run_batch(functools.partial(CoordinatorPartition, p, config), recs, batch_time_ms)
        out[p] = part.logical_state()
    return out


# What a killed and restarted run legitimately has otherwise than an uninterrupted one (the same
# list as CoordinatorPartition.logical_state's): the metrics count batches, the internal channel's
# replay guard holds epochs that are batch times.
LEFT_OUT = ("metrics", "channel")


def logical(snapshot: dict) -> dict:
    """A checkpointed snapshot's logical state (as `CoordinatorPartition.logical_state`)."""
    components = dict(snapshot["components"])
    for name in LEFT_OUT:
        components.pop(name, None)
    return components
