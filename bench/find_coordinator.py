#!/usr/bin/env python3
"""Request→response latency and throughput of the FindCoordinator path, next to the same pipeline
with an identity state function, measured in one run on one broker.

    .venv/bin/python bench/find_coordinator.py [--latency-requests 200] [--burst 5000]

Latency: requests sent one at a time (each waits for its response), p50/p99 of the round trip.
Throughput: a burst of requests sent as fast as the client can, requests per second until the last
response arrived. The jobs run one after the other, never together (the machine has 2 cores).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from deploy.kafka_local import LocalKafka, free_port  # noqa: E402
from tests.integration.harness import StreamJob  # noqa: E402


def percentile(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def measure(job: StreamJob, latency_requests: int, burst: int) -> dict:
    client = job.client(f"bench-{job.prefix}")
    try:
        for _ in range(10):  # warm up: Python workers, JIT, connections
            client.request("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["warm"]}, timeout=120)
        lat = []
        for i in range(latency_requests):
            t = time.perf_counter()
            client.request("FindCoordinator", 3, {"key": f"group-{i}", "keyType": 0}, timeout=60)
            lat.append((time.perf_counter() - t) * 1000)
        t0 = time.perf_counter()
        cids = [
            client.send("FindCoordinator", 3, {"key": f"burst-{i}", "keyType": 0}, flush=False) for i in range(burst)
        ]
        client.flush()
        sent = time.perf_counter() - t0
        for cid in cids:
            client.wait(cid, timeout=600)
        elapsed = time.perf_counter() - t0
        return {
            "p50": statistics.median(lat),
            "p99": percentile(lat, 99),
            "mean": statistics.mean(lat),
            "throughput": burst / elapsed,
            "send_rate": burst / sent,
            "duplicates": client.duplicates,
        }
    finally:
        client.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency-requests", type=int, default=200)
    ap.add_argument("--burst", type=int, default=20000)
    ap.add_argument("--trigger", default="200 milliseconds")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-fc-"))
    broker = LocalKafka(work / "kafka", free_port(), free_port()).start()
    results = {}
    try:
        for mode in ("identity", "coordinator"):
            job = StreamJob(
                broker.bootstrap, work / mode, f"bench-{mode}", stream={"step": mode, "trigger_interval": args.trigger}
            ).start()
            try:
                results[mode] = measure(job, args.latency_requests, args.burst)
            finally:
                job.stop()
    finally:
        broker.stop(timeout=3)
    ident, coord = results["identity"], results["coordinator"]
    print(
        f"\nFindCoordinator path, local[2], trigger {args.trigger}, "
        f"{args.latency_requests} sequential requests, burst of {args.burst}"
    )
    print(f"{'':24}{'identity step':>16}{'coordinator':>16}{'ratio':>10}")
    for name, key, unit in (
        ("latency p50", "p50", "ms"),
        ("latency p99", "p99", "ms"),
        ("latency mean", "mean", "ms"),
        ("throughput", "throughput", "req/s"),
    ):
        print(f"{name + ' (' + unit + ')':24}{ident[key]:16.1f}{coord[key]:16.1f}{coord[key] / ident[key]:10.2f}")
    print(f"(the client produced the burst at {ident['send_rate']:.0f} / {coord['send_rate']:.0f} req/s)")
    print(f"duplicate responses seen: identity {ident['duplicates']}, coordinator {coord['duplicates']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
