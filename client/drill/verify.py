"""The drill's checks against a deployment: the job caught up, every request answered, the
checkpointed state equal to an uninterrupted run's, and to the state the state log rebuilds.

Run on its own (`coordinator-drill verify`) it kills nothing: a consistency check an operator can
run at any time. The checkpoint is read with streaming/inspect_state.py (any state format, running
or stopped job), at the batch the offset log says covers the requests (see `covered`).
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from typing import TYPE_CHECKING

from coordinator import CoordinatorPartition
from coordinator.messages import StateRecord

from .compare import Report, compare_partitions, durable_view, first_difference, unfinished_transactions
from .reference import client_requests, covered, logical, reference_states, request_log

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class CheckpointStates:
    """Where the verifier reads the checkpointed state of every coordinator partition: Spark's
    state reader over the checkpoint. A test may wrap it (e.g. to alter one entity) to see the
    verifier fail."""

    def __init__(self, checkpoint: str, state_store: str = "rocksdb"):
        self.checkpoint, self.state_store = checkpoint, state_store
        self._spark: SparkSession | None = None

    def open(self) -> None:
        """Start the local Spark session the reader needs (slow), so that a batch id taken just
        before `read` is still in a running job's offset log (it keeps only the latest ones)."""
        if self._spark is None:
            from streaming.session import HDFS_PROVIDER, ROCKSDB_PROVIDER, local_session

            provider = ROCKSDB_PROVIDER if self.state_store == "rocksdb" else HDFS_PROVIDER
            self._spark = local_session(
                "coordinator-drill-verify", **{"spark.sql.streaming.stateStore.providerClass": provider}
            )

    def read(self, batch_id: int) -> dict[int, dict]:
        from streaming.inspect_state import read_states

        self.open()
        return read_states(self.checkpoint, state_store=self.state_store, batch_id=batch_id, spark=self._spark)

    def close(self) -> None:
        if self._spark is not None:
            self._spark.stop()
            self._spark = None


def _without_state_time(group):
    if isinstance(group, dict) and group.get("type") == "classic":
        return {k: v for k, v in group.items() if k != "stateTimestamp"}
    return group


def end_offsets(bootstrap: str, topics: list[str]) -> dict[tuple[str, int], int]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    try:
        tps = [TopicPartition(t, p) for t in topics for p in (consumer.partitions_for_topic(t) or ())]
        return {(tp.topic, tp.partition): o for tp, o in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def wait_caught_up(cfg, timeout_s: float = 120) -> tuple[int, dict, int]:
    """Wait until a committed micro-batch has read every request now in the request topics;
    (batch id, its end offsets, its batch time)."""
    from streaming.inspect_state import committed_progress

    topics = [cfg.topics["requests"], cfg.topics["internal"]]
    end = end_offsets(cfg.bootstrap, topics)
    deadline = time.monotonic() + timeout_s
    while True:
        progress = committed_progress(str(cfg.checkpoint))
        if progress is not None and all(progress[1].get(t, {}).get(p, 0) >= o for (t, p), o in end.items()):
            return progress
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"the job did not catch up with the request topics {end} in {timeout_s:.0f}s "
                f"(last committed batch: {progress and progress[:2]})"
            )
        time.sleep(0.3)


def unanswered(cfg, requests) -> tuple[int, list[str]]:
    """(requests checked, those without a response): each client request (de-duplicated by client
    id and correlation id) against the response topic, or the topic its replyTo names."""
    from client.topic_reader import read_records

    wanted: dict[tuple[str, int], str | None] = {}
    for r in requests:
        try:
            env = json.loads(r.value)
            key = (env["clientId"], env["correlationId"])
        except (TypeError, ValueError, KeyError):
            continue  # no envelope to answer: the job reports it as a RequestRejected event
        if isinstance(key[0], str) and isinstance(key[1], int):
            wanted[key] = env.get("replyTo") or None
    answered: set[tuple[str, int]] = set()
    for topic in {cfg.topics["responses"]} | {t for t in wanted.values() if t}:
        for rec in read_records(cfg.bootstrap, topic, timeout_s=60):
            try:
                env = json.loads(rec.value)
                answered.add((env["clientId"], env["correlationId"]))
            except (TypeError, ValueError, KeyError):
                continue
    missing = [
        f"client {c} correlation id {cid} ({wanted[(c, cid)] or cfg.topics['responses']})"
        for c, cid in sorted(set(wanted) - answered)
    ]
    return len(wanted), missing


def state_log_partitions(cfg) -> dict[int, list[StateRecord]]:
    from client.topic_reader import read_records

    out: dict[int, list[StateRecord]] = defaultdict(list)
    for r in read_records(cfg.bootstrap, cfg.topics["state_log"], timeout_s=120):
        out[r.partition].append(StateRecord(r.key.decode("utf-8"), None if r.value is None else json.loads(r.value)))
    return out


def verify(
    cfg,
    report: Report | None = None,
    *,
    states: CheckpointStates | None = None,
    strict_transactions: bool = False,
    timeout_s: float = 120,
    attempts: int = 3,
) -> Report:
    """Add the consistency checks to `report` (a new 'verify' report by default) and return it.
    With live traffic, a check whose inputs moved on while it read them is taken again."""
    report = report or Report("verify")
    states = states or CheckpointStates(str(cfg.checkpoint), cfg.stream.get("state_store", "rocksdb"))
    config = cfg.coordinator_config()
    req_topic, internal = cfg.topics["requests"], cfg.topics["internal"]
    states.open()
    try:
        for attempt in range(attempts):
            batch, ends, batch_time = wait_caught_up(cfg, timeout_s)
            try:
                snapshots = states.read(batch)
            except Exception as e:  # noqa: BLE001 - a running job may have purged that batch meanwhile
                if attempt == attempts - 1 or "OFFSET_LOG_UNAVAILABLE" not in str(e):
                    raise
                continue
            log = state_log_partitions(cfg)
            after = wait_caught_up(cfg, timeout_s)
            if after[1] == ends or attempt == attempts - 1:
                break  # no new request was read while the state and its log were read
    finally:
        states.close()
    records = covered(request_log(cfg.bootstrap, req_topic, internal), ends, req_topic, internal)
    requests = client_requests(records)
    report.info.update(
        {
            "batchId": batch,
            "batchTimeMs": batch_time,
            "requests": len(requests),
            "coordinatorPartitions": len(snapshots),
            "stateLogRecords": sum(map(len, log.values())),
        }
    )

    checked, missing = unanswered(cfg, requests)
    report.add("every request answered", missing, f"{checked - len(missing)} of {checked} requests answered")

    actual = {p: logical(s) for p, s in snapshots.items()}
    expected = reference_states(records, config, batch_time)
    # The transaction coordinator completes a commit in the batch after its PrepareCommit (once
    # the markers are durable), which one reference batch never reaches: transactions are checked
    # by their final state and by the state-log replay instead.
    txn_partitions = [
        p
        for p in set(actual) | set(expected)
        if actual.get(p, {}).get("transactions", {}).get("transactions")
        or expected.get(p, {}).get("transactions", {}).get("transactions")
    ]
    for p in txn_partitions:
        for side in (actual, expected):
            side.get(p, {}).pop("transactions", None)
    # A classic group's state timestamp is when its last transition happened: a timer due within
    # coordinator.timer.grace.ms of a batch's end makes that transition at its deadline in one run
    # and at the group's next request in the other (the reference is one batch). Its members,
    # generation and assignments are still compared.
    for side in (actual, expected):
        for comps in side.values():
            groups = comps.get("groups")
            if groups and groups.get("groups"):  # copies: the snapshots are read again below
                comps["groups"] = {
                    **groups,
                    "groups": {gid: _without_state_time(g) for gid, g in groups["groups"].items()},
                }
    report.add(
        "checkpoint equals an uninterrupted run",
        compare_partitions(actual, expected, "the reference run"),
        f"{len(snapshots)} coordinator partitions, batch {batch}, {len(records)} request-log records",
    )

    unfinished = unfinished_transactions({p: logical(s) for p, s in snapshots.items()})
    if strict_transactions:
        report.add("every transaction in a final state", unfinished)
    else:
        report.add("transactions", [], f"{len(unfinished)} in progress" if unfinished else "all in a final state")

    failures = []
    for p, snap in sorted(snapshots.items()):
        live = CoordinatorPartition(p, config, snap)
        try:
            rebuilt = CoordinatorPartition.from_records(p, log.get(p, []), config=config, now_ms=live.clock_ms)
        except ValueError as e:
            failures.append(f"coordinator partition {p}: the state log does not replay: {e}")
            continue
        diff = first_difference(durable_view(live), durable_view(rebuilt))
        if diff is not None:
            failures.append(
                f"coordinator partition {p}: differs from its state-log replay: " + diff.replace("expected", "replayed")
            )
    report.add(
        "state-log replay equals the checkpoint",
        failures,
        f"{len(snapshots)} partitions rebuilt from {report.info['stateLogRecords']} records",
    )
    return report
