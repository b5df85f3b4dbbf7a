#!/usr/bin/env python3
"""The broker-loss drill at full length: a local three-broker KRaft cluster (deploy/kafka_cluster.py),
a job and a gateway started here against it, a mixed load through the JSON path and the gateway;
the broker leading the most partitions of the service's topics is SIGKILLed, stays down --down
seconds, and comes back (tests/integration/broker_loss_drill.py).

    .venv/bin/python bench/broker_loss.py [--down 60] [--keep]

Prints the answer gap during the failover (the longest time without an answer) of the service,
on the JSON path and through the gateway, side by side with the brokers' own group coordinator
under the same kill, then every check. The suite runs the same drill with a short outage
(tests/integration/test_broker_loss_e2e.py). Exits non-zero if a check failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from deploy.kafka_cluster import KafkaCluster  # noqa: E402
from deploy.kafka_local import free_port  # noqa: E402
from tests.integration.broker_loss_drill import run_broker_loss  # noqa: E402
from tests.integration.gateway_process import Gateway  # noqa: E402
from tests.integration.harness import StreamJob  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--down", type=float, default=60, help="seconds the killed broker stays down")
    ap.add_argument("--rate", type=float, default=10, help="simple JSON-path requests per second")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs) afterwards")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="broker-loss-"))
    started = time.monotonic()
    cluster = KafkaCluster(
        work / "kafka", ports=[free_port() for _ in range(3)], controller_ports=[free_port() for _ in range(3)]
    )
    passed = False
    try:
        cluster.start()
        print(f"cluster up at {cluster.bootstrap} ({time.monotonic() - started:.0f} s)", flush=True)
        job = StreamJob(
            cluster.bootstrap,
            work / "job",
            "bl",
            coordinator={"coordinator.partitions": 10},
            service_topics=cluster.service_topics,
        ).start()
        try:
            gateway = Gateway(job.config_file, work / "gateway", client_id="bl-gateway")
            try:
                print(f"job and gateway up ({time.monotonic() - started:.0f} s); drilling", flush=True)
                report, figures = run_broker_loss(
                    cluster,
                    job,
                    gateway.bootstrap,
                    f"{job.topics['responses']}.gateway",
                    down_s=args.down,
                    rate_per_s=args.rate,
                )
            finally:
                gateway.stop()
        finally:
            job.stop()
        print("\n".join(figures.lines()), flush=True)
        print(report.render(), flush=True)
        passed = report.passed
    finally:
        cluster.stop(timeout=10)
        print(f"work directory: {work}" if args.keep or not passed else "", flush=True)
        if not (args.keep or not passed):
            shutil.rmtree(work, ignore_errors=True)
    print(f"elapsed {time.monotonic() - started:.0f} s", flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
