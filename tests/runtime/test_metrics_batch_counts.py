"""`Metrics.finish_batch`, which counts a batch's commit records and applied requests per batch,
against the version that counted them one by one (metrics_reference.py): randomized batches of
state-log records (commits, transactional commits, tombstones, other types) and applied requests
(one API or several, heartbeats, requests appended after the batch time, unusual times) give the
same records and the same stored metrics, byte for byte as JSON (the counters' order included)."""

from __future__ import annotations

import json
import random

import pytest

from coordinator import CoordinatorConfig, CoordinatorPartition
from coordinator.messages import Outputs, StateRecord
from coordinator.records import record_key
from tests.runtime.metrics_reference import finish_batch as reference_finish_batch

APIS = ["OffsetCommit", "OffsetFetch", "Heartbeat", "ConsumerGroupHeartbeat", "JoinGroup"]


def _record(rng: random.Random) -> StateRecord:
    roll = rng.random()
    if roll < 0.7:
        key = record_key("OffsetCommit", rng.choice(["g", "h"]), "t", rng.randint(0, 3))
        if rng.random() < 0.1:
            return StateRecord(key, None)
        value = {"type": "OffsetCommit", "offset": 1}
        if rng.random() < 0.3:
            value["producerId"] = rng.choice([-1, 0, 7, 2**40])
        return StateRecord(key, value)
    if roll < 0.85:
        return StateRecord(record_key("GroupMetadata", "g"), rng.choice([None, {"type": "GroupMetadata"}]))
    return StateRecord(record_key("TransactionLog", "tx"), {"type": "TransactionLog", "producerId": 3})


def _applied(rng: random.Random, batch_time: int) -> list[tuple]:
    apis = [rng.choice(APIS)] if rng.random() < 0.7 else rng.sample(APIS, rng.randint(1, 3))
    late = rng.random() < 0.15
    out = []
    for _ in range(rng.randint(0, 30)):
        time = batch_time - rng.randint(-50 if late else 0, 5000)
        if rng.random() < 0.02:
            time = float(time) + 0.5
        out.append((rng.choice(apis), time))
    return out


def _partition():
    p = CoordinatorPartition(0, CoordinatorConfig())
    return p.component("metrics")


@pytest.mark.parametrize("seed", range(5))
def test_batch_counts_are_the_per_request_counts(seed):
    rng = random.Random(seed)
    for _ in range(10):
        fast, reference = _partition(), _partition()
        batch_time = 1_000_000
        for _ in range(rng.randint(1, 8)):
            batch_time += rng.randint(1, 3000)
            records = [_record(rng) for _ in range(rng.randint(0, 30))]
            applied = _applied(rng, batch_time)
            got = fast.finish_batch(Outputs(records=list(records), applied=list(applied)), batch_time)
            expected = reference_finish_batch(reference, Outputs(records=records, applied=applied), batch_time)
            assert json.dumps(got) == json.dumps(expected)
            assert json.dumps(fast.data) == json.dumps(reference.data)


def test_a_batch_of_one_api_counts_its_requests_and_queue_time():
    m = _partition()
    records = [StateRecord(record_key("OffsetCommit", "g", "t", i), {"offset": i}) for i in range(3)]
    records.append(StateRecord(record_key("OffsetCommit", "g", "t", 9), {"offset": 1, "producerId": 5}))
    m.finish_batch(Outputs(records=records, applied=[("OffsetCommit", 900), ("OffsetCommit", 1000)]), 1000)
    assert m.data["counters"] == {
        "group_offset_commit_total": 3,
        "group_txn_offset_commit_total": 1,
        'requests_total{api="OffsetCommit"}': 2,
        'request_queue_time_ms_sum{api="OffsetCommit"}': 100,
    }
