"""Fixtures that start the real parts: one Kafka broker, one Redis and, per job configuration, one
coordinator job for the whole test run.

Starting the Spark job costs some 40 s on the 2-core machine, so every module that neither kills the
job nor needs a configuration of its own runs against a *shared* job: it declares which one with
`pytestmark = pytest.mark.shared_job("plain")` and takes the `job` fixture. Tests isolate themselves
by their own group ids, transactional ids, topics and client ids, never by their own job.

- `plain`: the coordinator alone (no read model, no metrics endpoint);
- `observed`: the same plus the Redis read model, the Prometheus endpoint and the dashboard.

The modules are ordered so that each shared job starts once and is stopped before the next one (or a
module's own job) starts: an idle job costs most of a core, two at once would slow every test.
Modules that kill the job or need their own configuration use `job_factory` (one job per call,
stopped with the module).
"""

from __future__ import annotations

import pytest

from deploy.kafka_local import LocalKafka, free_port
from deploy.redis_local import LocalRedis

from .harness import StreamJob

# Kafka's defaults but for what a test run needs to be quick: sessions and heartbeats of seconds,
# a metadata refresh every second, ten coordinator partitions (fewer state rows per micro-batch).
# A test that needs another session timeout for its group sets the group's config
# (IncrementalAlterConfigs), as a Kafka user would.
PLAIN = {
    "stream": {"metadata_refresh_ms": 1000},
    "coordinator": {
        "coordinator.partitions": 10,
        # Oversized requests are refused with Kafka's errors (stream basics, the fuzz).
        "coordinator.request.max.bytes": 20_000,
        "group.consumer.session.timeout.ms": 30000,
        "group.consumer.min.session.timeout.ms": 6000,
        "group.consumer.heartbeat.interval.ms": 1000,
        "group.consumer.min.heartbeat.interval.ms": 500,
        "group.share.session.timeout.ms": 6000,
        "group.share.min.session.timeout.ms": 6000,
        "group.share.heartbeat.interval.ms": 1000,
        "group.share.min.heartbeat.interval.ms": 500,
        "group.streams.session.timeout.ms": 20000,
        "group.streams.min.session.timeout.ms": 6000,
        "group.streams.heartbeat.interval.ms": 1000,
        "group.streams.min.heartbeat.interval.ms": 500,
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
        # Target assignments at once (Kafka 4.3+ batches them, 1 s by default): the suite's
        # rebalances take no longer than before; the core tests cover the interval.
        "group.consumer.assignment.interval.ms": 0,
        "group.share.assignment.interval.ms": 0,
        "group.streams.assignment.interval.ms": 0,
    },
}


def _observed(redis_url: str, label: str) -> dict:
    return {
        "stream": PLAIN["stream"],
        "coordinator": {
            **PLAIN["coordinator"],
            # an Empty group without offsets is deleted at the next check (the metrics test sees it)
            "offsets.retention.check.interval.ms": 2000,
        },
        "redis": {"enabled": True, "url": redis_url, "prefix": label, "trigger_interval": "200 milliseconds"},
        "metrics": {"port": free_port(), "host": "127.0.0.1"},
        "dashboard": {"hanging_transaction_ms": 5000, "sample_interval_ms": 1000},
    }


# The order the shared jobs run in; modules without one (their own jobs) come after them.
SHARED_ORDER = ["plain", "observed"]


def pytest_collection_modifyitems(session, config, items):
    """Group the integration modules by shared job (stable within a group): each shared job is
    started once, and no two jobs run at the same time."""

    def rank(item) -> tuple[int, int]:
        """(which job, order within it): unit tests, then the shared jobs in SHARED_ORDER (a module
        that must run first or last on its job says so with `order`), then modules with their own."""
        if item.get_closest_marker("integration") is None:
            return (-1, 0)
        marker = item.get_closest_marker("shared_job")
        if marker is None:
            return (len(SHARED_ORDER), 0)
        if marker.args[0] not in SHARED_ORDER:
            raise pytest.UsageError(f"{item.nodeid}: unknown shared job {marker.args[0]!r}")
        return (SHARED_ORDER.index(marker.args[0]), marker.kwargs.get("order", 0))

    items[:] = [item for _, _, item in sorted((rank(item), i, item) for i, item in enumerate(items))]


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


class SharedJobs:
    """The shared jobs of this test run: at most one runs at a time."""

    def __init__(self, kafka, redis_factory, tmp_path_factory):
        self.kafka, self.redis_factory, self.tmp = kafka, redis_factory, tmp_path_factory
        self.running: tuple[str, StreamJob] | None = None
        self.started: list[str] = []

    def get(self, name: str) -> StreamJob:
        if self.running is not None and self.running[0] == name and self.running[1].proc.poll() is None:
            return self.running[1]
        self.stop_running()
        label = name if name not in self.started else f"{name}-{self.started.count(name)}"
        kw = PLAIN if name == "plain" else _observed(self.redis_factory().url, f"e2e-{label}")
        job = StreamJob(self.kafka.bootstrap, self.tmp.mktemp(f"shared-{label}"), f"shared-{label}", **kw)
        self.started.append(name)
        job.start()
        self.running = (name, job)
        return job

    def stop_running(self) -> None:
        """A SIGKILL: nothing reads a shared job's checkpoint once its modules are done."""
        if self.running is not None:
            self.running[1].kill()
            self.running = None


@pytest.fixture(scope="session")
def shared_jobs(kafka, tmp_path_factory, request):
    jobs = SharedJobs(kafka, lambda: request.getfixturevalue("redis"), tmp_path_factory)
    yield jobs
    jobs.stop_running()


@pytest.fixture(scope="module")
def job(shared_jobs, request):
    """The shared job this module declared with `pytest.mark.shared_job(name)`."""
    marker = request.node.get_closest_marker("shared_job")
    if marker is None:
        raise pytest.UsageError(f"{request.node.nodeid} takes `job` without a shared_job marker")
    return shared_jobs.get(marker.args[0])


@pytest.fixture(scope="module")
def job_factory(kafka, shared_jobs, tmp_path_factory, request):
    """Start jobs of this module's own (after stopping the shared one: one job at a time); every
    job is stopped when the module ends."""
    jobs: list[StreamJob] = []
    module = request.module.__name__.rsplit(".", 1)[-1].replace("_", "-")

    def make(name: str = "main", start: bool = True, **kw) -> StreamJob:
        shared_jobs.stop_running()
        job = StreamJob(kafka.bootstrap, tmp_path_factory.mktemp(f"{module}-{name}"), f"{module}-{name}", **kw)
        jobs.append(job)
        return job.start() if start else job

    yield make
    for job in jobs:
        job.stop()
