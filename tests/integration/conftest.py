"""Fixtures that start the real parts: one Kafka broker per test run, one job per test module."""

from __future__ import annotations

import pytest

from deploy.kafka_local import LocalKafka, free_port
from deploy.redis_local import LocalRedis

from .harness import StreamJob


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    broker = LocalKafka(tmp_path_factory.mktemp("kafka"), free_port(), free_port())
    broker.start()
    yield broker
    broker.stop(timeout=3)  # its data is thrown away; no need for a controlled shutdown


@pytest.fixture(scope="session")
def redis(tmp_path_factory):
    """A real redis-server on a free port (for the read model); `.url` for clients and jobs."""
    server = LocalRedis(tmp_path_factory.mktemp("redis"), free_port())
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def job_factory(kafka, tmp_path_factory, request):
    """Start jobs for this module; every job is stopped when the module ends."""
    jobs: list[StreamJob] = []
    module = request.module.__name__.rsplit(".", 1)[-1].replace("_", "-")

    def make(name: str = "main", start: bool = True, **kw) -> StreamJob:
        job = StreamJob(kafka.bootstrap, tmp_path_factory.mktemp(f"{module}-{name}"), f"{module}-{name}", **kw)
        jobs.append(job)
        return job.start() if start else job

    yield make
    for job in jobs:
        job.stop()
