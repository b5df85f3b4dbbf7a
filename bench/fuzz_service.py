#!/usr/bin/env python3
"""The service fuzz drill, larger than CI runs it: hostile records of every kind mixed with
well-formed requests, sent to a real broker and job started here, several seeds.

    .venv/bin/python bench/fuzz_service.py [--seeds 1 2 3] [--hostile 3000] [--good 600]

For each seed it prints the records sent, the seconds until every well-formed request was answered,
and whether every property held (the query never stopped, right answers, committed offsets fetched
back, nothing written outside the service's answer topics, only the service's own records in the
state log, no dead letters). Exits non-zero if a property failed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from tests.integration.fuzz_drill import run_fuzz  # noqa: E402
from tests.integration.harness import broker_and_job  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--hostile", type=int, default=3000)
    ap.add_argument("--good", type=int, default=600)
    args = ap.parse_args()
    failed = 0
    with broker_and_job("fuzz-service", coordinator={"coordinator.request.max.bytes": 100_000}) as (_, job):
        for seed in args.seeds:
            try:
                figures = run_fuzz(job, seed=seed, hostile=args.hostile, good=args.good, timeout_s=900)
                print(f"seed {seed}: {figures} all properties held", flush=True)
            except AssertionError as e:
                failed += 1
                print(f"seed {seed}: FAILED {str(e)[:2000]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
