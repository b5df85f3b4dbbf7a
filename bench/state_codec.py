#!/usr/bin/env python3
"""Size and speed of the state payload formats (1 = JSON, 2 = zlib JSON, 3 = chunks) on realistic partitions.

    .venv/bin/python bench/state_codec.py

Builds coordinator partitions through the real core (simple-group offset commits: N groups × 20
partitions each), then times a full encode and decode of each format and prints bytes per format.
Format 3 (current) is not meant to be encoded or decoded whole: the stream reads and rewrites only
the chunks a batch touches (bench/state_scale.py measures that); its full figures here are what the
first batch after an upgrade, or `streaming.inspect_state`, pays.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import state  # noqa: E402
from coordinator import CoordinatorConfig, CoordinatorPartition, coordinator_partition  # noqa: E402
from coordinator.batch import InputRecord, run_batch  # noqa: E402
from state.codec import FORMAT_CHUNKED, FORMAT_JSON, FORMAT_ZLIB_JSON  # noqa: E402


def partition_with_offsets(groups: int, partitions_per_group: int = 20) -> CoordinatorPartition:
    cfg = CoordinatorConfig()
    pid = 7
    records, offset = [], 0
    g = 0
    while len({r.key for r in records}) < groups:
        group = f"orders-consumer-{g}"
        g += 1
        if coordinator_partition(group) != pid:
            continue
        body = {
            "groupId": group,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {
                            "partitionIndex": p,
                            "committedOffset": 1000 + p,
                            "committedLeaderEpoch": 3,
                            "committedMetadata": "",
                        }
                        for p in range(partitions_per_group)
                    ],
                }
            ],
        }
        env = {"apiKey": "OffsetCommit", "apiVersion": 9, "correlationId": offset, "clientId": "bench", "request": body}
        records.append(InputRecord(group, json.dumps(env).encode(), 1_000_000 + offset, 0, offset))
        offset += 1
    part, _ = run_batch(lambda: CoordinatorPartition(pid, cfg), records, 2_000_000)
    return part


def timed(fn, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1000


def main() -> int:
    print(
        f"{'groups':>7} {'json bytes':>12} {'zlib bytes':>11} {'chunks bytes':>12} "
        f"{'enc json ms':>11} {'enc zlib ms':>11} {'enc chunks ms':>13} {'dec json ms':>11} {'dec zlib ms':>11} "
        f"{'dec chunks ms':>13}"
    )
    for groups in (10, 100, 1000):
        snap = partition_with_offsets(groups).to_json()
        f1, p1 = state.encode(snap, FORMAT_JSON)
        f2, p2 = state.encode(snap, FORMAT_ZLIB_JSON)
        f3, p3 = state.encode(snap, FORMAT_CHUNKED)
        assert state.decode(f1, p1) == state.decode(f2, p2) == state.decode(f3, p3) == snap
        print(
            f"{groups:>7} {len(p1):>12} {len(p2):>11} {len(p3):>12} "
            f"{timed(lambda: state.encode(snap, FORMAT_JSON)):>11.2f} "
            f"{timed(lambda: state.encode(snap, FORMAT_ZLIB_JSON)):>11.2f} "
            f"{timed(lambda: state.encode(snap, FORMAT_CHUNKED)):>13.2f} "
            f"{timed(lambda: state.decode(f1, p1)):>11.2f} {timed(lambda: state.decode(f2, p2)):>11.2f} "
            f"{timed(lambda: state.decode(f3, p3)):>13.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
