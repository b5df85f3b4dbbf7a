#!/usr/bin/env python3
"""The output path of a batch of OffsetCommits, part by part, next to the code each part replaced,
in one run.

    .venv/bin/python bench/output_path.py [--batch 400] [--runs 15]

The parts are the sink rows of the responses and of the state-log records (`output_rows`), shaping
the response (`shape`), and the metrics (`Metrics.finish_batch`). The references are the previous
versions: `output_rows` and `finish_batch` as kept in tests/streaming/output_rows_reference.py and
tests/runtime/metrics_reference.py, and for shaping the plan walk (`loader._shape`). Their
equivalence tests hold each part equal to its reference.

Printed per part: the CPU µs per request of the reference and of the current code, and the ratio.
The times are process time, the minimum over `--runs` runs, so other work on the machine moves
them little.
"""

from __future__ import annotations

import argparse
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coordinator import CoordinatorConfig, CoordinatorPartition  # noqa: E402
from coordinator.messages import Outputs, ReplyTo, Response, StateRecord  # noqa: E402
from coordinator.protocol.loader import _shape, plan, shape  # noqa: E402
from coordinator.records import record_key  # noqa: E402
from streaming.step import StepSettings, output_rows  # noqa: E402
from tests.runtime.metrics_reference import finish_batch as reference_finish_batch  # noqa: E402
from tests.streaming.output_rows_reference import output_rows as reference_rows  # noqa: E402

SETTINGS = StepSettings(coordinator={}, responses_topic="r", events_topic="e", state_log_topic="s", requests_topic="q")
NOW = 1_000_000


def _response_body(i: int) -> dict:
    return {
        "throttleTimeMs": 0,
        "topics": [{"name": "orders", "partitions": [{"partitionIndex": i % 8, "errorCode": 0}]}],
    }


def _record(i: int) -> StateRecord:
    value = {"type": "OffsetCommit", "offset": i, "leaderEpoch": -1, "metadata": "", "commitTimestamp": NOW}
    return StateRecord(record_key("OffsetCommit", "group-7", "orders", i % 8), value)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=400)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    n = args.batch
    responses = Outputs(
        responses=[Response(ReplyTo("OffsetCommit", 9, i, "client-1"), _response_body(i)) for i in range(n)]
    )
    records = Outputs(records=[_record(i) for i in range(n)])
    counted = Outputs(records=records.records, applied=[("OffsetCommit", NOW - i) for i in range(n)])
    body = _response_body(1)
    walk_plan = plan("OffsetCommitResponse", 9)
    metrics = [CoordinatorPartition(0, CoordinatorConfig()).component("metrics") for _ in range(2)]

    def per_request(f, calls: int, requests_per_call: int) -> float:
        runs = timeit.repeat(f, number=calls, repeat=args.runs, timer=time.process_time)
        return min(runs) / calls / requests_per_call * 1e6

    parts = [
        (
            "sink rows of the responses",
            lambda: reference_rows(responses, 7, SETTINGS, None),
            lambda: output_rows(responses, 7, SETTINGS, None),
        ),
        (
            "sink rows of the state records",
            lambda: reference_rows(records, 7, SETTINGS, None),
            lambda: output_rows(records, 7, SETTINGS, None),
        ),
        (
            "metrics (finish_batch)",
            lambda: reference_finish_batch(metrics[0], counted, NOW),
            lambda: metrics[1].finish_batch(counted, NOW),
        ),
    ]
    print(
        f"batches of {n} OffsetCommits, CPU µs per request (min of {args.runs} runs): reference, now, now / reference"
    )
    for name, reference, current in parts:
        before, after = per_request(reference, 20, n), per_request(current, 20, n)
        print(f"{name:32s} {before:6.3f} {after:6.3f} {after / before:5.2f}")
    before = per_request(lambda: _shape(walk_plan, body), 20 * n, 1)
    after = per_request(lambda: shape("OffsetCommitResponse", 9, body), 20 * n, 1)
    print(
        f"{'shaping the response':32s} {before:6.3f} {after:6.3f} {after / before:5.2f}  (reference: the plan walk alone)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
