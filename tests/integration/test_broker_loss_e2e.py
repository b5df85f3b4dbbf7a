"""A broker lost under load on a three-broker cluster: the short smoke of bench/broker_loss.py.

A local three-node KRaft cluster (deploy/kafka_cluster.py) of its own, a job of its own with the
service's topics replicated three ways (min.insync.replicas 2) and a gateway. Under a small mixed
load (JSON path: simple commits, a classic group, a KIP-848 group, transactions; gateway: a
confluent-kafka group committing), the broker leading the most service partitions is SIGKILLed;
once answers resume on every path (leadership moved) it is started again, and every check of the
drill passes: every request answered, every acknowledged commit fetched back, committed
transactions read exactly once, the checkpoint equal to an uninterrupted run and to the state-log
replay. The cluster fails over faster than Kafka's defaults (broker.session.timeout.ms 3 s), to keep
the smoke short; bench/broker_loss.py drills a minute's loss with the defaults.
"""

from __future__ import annotations

import threading
import time

import pytest

from deploy.kafka_cluster import KafkaCluster
from deploy.kafka_local import free_port

from .broker_loss_drill import run_broker_loss
from .conftest import PLAIN
from .gateway_process import Gateway
from .harness import StreamJob

pytestmark = pytest.mark.integration

FAST_FAILOVER = {"broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500}


def test_the_broker_leading_most_service_partitions_is_lost_under_load_and_nothing_is(shared_jobs, tmp_path):
    shared_jobs.stop_running()  # one job at a time (conftest.py)
    started = time.monotonic()
    cluster = KafkaCluster(
        tmp_path / "kafka",
        ports=[free_port() for _ in range(3)],
        controller_ports=[free_port() for _ in range(3)],
        extra_config=FAST_FAILOVER,
    )
    cluster.start()
    try:
        job = StreamJob(
            cluster.bootstrap,
            tmp_path / "job",
            "blsmoke",
            # The suite's quick timings (sessions and heartbeats of seconds, metadata every second) and
            # no initial rebalance delay: the load gets going in seconds.
            stream=PLAIN["stream"],
            coordinator={**PLAIN["coordinator"], "coordinator.partitions": 4, "group.initial.rebalance.delay.ms": 0},
            service_topics=cluster.service_topics,
        )
        # The gateway starts alongside the job: it is ready once the job answers it.
        gateways: list[Gateway] = []
        errors: list[BaseException] = []

        def start_gateway() -> None:
            try:
                gateways.append(Gateway(job.config_file, tmp_path / "gateway", client_id="blsmoke-gateway"))
            except BaseException as e:  # noqa: BLE001 - raised below
                errors.append(e)

        starter = threading.Thread(target=start_gateway)
        starter.start()
        try:
            job.start()
        finally:
            starter.join()
        print(f"cluster, job and gateway up in {time.monotonic() - started:.0f} s")
        try:
            assert not errors, errors
            report, figures = run_broker_loss(
                cluster,
                job,
                gateways[0].bootstrap,
                f"{job.topics['responses']}.gateway",
                down_s=0,
                wait_s=120,
                prefix="blsmoke",
                members=1,
                settle=False,
            )
        finally:
            for g in gateways:
                g.stop()
            job.stop()
        print("\n".join(figures.lines()))
        assert report.passed, report.render()
        assert figures.gap_json_s > 0 and figures.victim in figures.leaders_before
    finally:
        cluster.stop(timeout=10)
