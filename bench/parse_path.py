#!/usr/bin/env python3
"""The Python cost of parsing a request record into a `Request` (issue 24): OffsetCommit v9 records
as the throughput bench sends them, through `coordinator/batch.py`'s `_parse` (envelope, body
validation, trust checks), for comparing two source trees in one run.

    .venv/bin/python bench/parse_path.py                          # this tree
    .venv/bin/python bench/parse_path.py --trees ../old . [--rounds 3]

Printed per tree: the Python bytecodes per request (deterministic), and the CPU µs per request
(median of 7 blocks, then of the rounds; the trees alternate round by round, so that the machine's
load falls on both), each with its ratio to the first tree. `every field`: bodies with every field
of the version, as the gateway and this project's clients send them; `defaults left out`: the same
commits without the fields that have a default (`groupInstanceId`, `committedLeaderEpoch`,
`committedMetadata`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

KINDS = ["every field", "defaults left out"]


def records(kind: str, n: int) -> list:
    from coordinator.batch import InputRecord

    out = []
    for i in range(n):
        group = f"throughput-group-{i % 20}"
        partition = {
            "partitionIndex": i % 8,
            "committedOffset": i,
            "committedLeaderEpoch": -1,
            "committedMetadata": None,
        }
        body = {"groupId": group, "generationIdOrMemberEpoch": -1, "memberId": "", "groupInstanceId": None}
        if kind != "every field":
            del body["groupInstanceId"]
            partition = {"partitionIndex": i % 8, "committedOffset": i}
        body["topics"] = [{"name": "bench-throughput-orders", "partitions": [partition]}]
        envelope = {"apiKey": "OffsetCommit", "apiVersion": 9, "correlationId": i, "clientId": "bench", "request": body}
        value = json.dumps(envelope).encode()
        out.append(InputRecord(group, value, 1000, 0, i, len(value)))
    return out


def measure(kind: str) -> tuple[float, float]:
    """(bytecodes, CPU µs) per request of this tree's parse path."""
    from coordinator import batch
    from coordinator.messages import Request

    recs = records(kind, 2000)
    for r in recs[:10]:  # warm up (the validators are compiled on first use)
        assert isinstance(batch._parse(r, 1000, 1 << 20), Request)
    # (bench/core_cpu.py counts bytecodes the same way; this file cannot import it: it runs with an
    # older tree's packages first on the path, to measure that tree.)
    ops = [0]

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            ops[0] += 1
        return tracer

    for r in recs[:200]:
        sys.settrace(tracer)
        batch._parse(r, 1000, 1 << 20)
        sys.settrace(None)
    blocks = []
    for _ in range(7):
        t = time.process_time()
        for r in recs:
            batch._parse(r, 1000, 1 << 20)
        blocks.append((time.process_time() - t) / len(recs) * 1e6)
    return ops[0] / 200, statistics.median(blocks)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trees", nargs="*", help="source trees to compare (default: this one)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one kind here, print JSON
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(args.one)))
        return 0
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = [os.path.abspath(t) for t in (args.trees or [here])]
    results: dict[str, dict[str, list]] = {t: {k: [] for k in KINDS} for t in trees}
    for _ in range(args.rounds):
        for kind in KINDS:
            for tree in trees:
                out = subprocess.run(
                    [sys.executable, os.path.join(here, "bench", "parse_path.py"), "--one", kind],
                    cwd=tree,
                    env=dict(os.environ, PYTHONPATH=tree),
                    capture_output=True,
                    text=True,
                    check=True,
                )
                results[tree][kind].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(
        f"parse path of an OffsetCommit v9 record, per request; median of {args.rounds} rounds; ratio to the first tree"
    )
    print(f"{'':28}" + "".join(f"{os.path.basename(t):>22}" for t in trees))
    for kind in KINDS:
        for i, what in enumerate(("bytecodes", "CPU us")):
            first = statistics.median(r[i] for r in results[trees[0]][kind])
            cells = []
            for tree in trees:
                value = statistics.median(r[i] for r in results[tree][kind])
                cells.append(f"{value:.0f} ({value / first:.2f}x)" if i == 0 else f"{value:.2f} ({value / first:.2f}x)")
            print(f"{kind + ', ' + what:28}" + "".join(f"{c:>22}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
