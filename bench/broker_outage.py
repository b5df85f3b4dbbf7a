#!/usr/bin/env python3
"""The broker outage drill at full length: a real broker and job started here, requests in flight
when the broker goes away, the broker down for --outage seconds, then back on the same ports with
the same data. The job must heal by itself: never exit, answer every request sent before and after,
keep every commit, publish topic metadata again.

    .venv/bin/python bench/broker_outage.py [--outage 30] [--rounds 1]

Prints, per round, how long the broker was down, how many requests were unanswered when it went
away, how often the job restarted its query and how long after the broker's return the job worked
again. The suite runs the same drill with a short outage (tests/integration/test_recovery_e2e.py).
Exits non-zero if a check failed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from tests.integration.harness import broker_and_job  # noqa: E402
from tests.integration.outage_drill import run_outage  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outage", type=float, default=30, help="seconds the broker stays down")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    failed = 0
    with broker_and_job("broker-outage", coordinator={"coordinator.partitions": 10}) as (broker, job):
        for n in range(args.rounds):
            try:
                figures = run_outage(broker, job, outage_s=args.outage, tag=f"-{n}")
                print(f"round {n + 1}: {figures}: the job healed, nothing lost", flush=True)
            except AssertionError as e:
                failed += 1
                print(f"round {n + 1}: FAILED {str(e)[:2000]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
