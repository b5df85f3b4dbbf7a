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

The broker and the first shared job start as soon as the tests are collected (`WarmUp`), in the
background: deploy/test.sh starts this run while lint and the unit tests run, on the core they
leave idle, and its tests wait for their outcome (`SUITE_GATE`).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

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
        # Target assignments at once (Kafka 4.3+ batches them, 1 s by default, and delays a new
        # streams group's first one by 3 s): the suite's rebalances take no longer than before;
        # the core tests cover the interval and the delay.
        "group.consumer.assignment.interval.ms": 0,
        "group.share.assignment.interval.ms": 0,
        "group.streams.assignment.interval.ms": 0,
        "group.streams.initial.rebalance.delay.ms": 0,
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


class WarmUp:
    """The run's broker and its first shared job, started in the background as soon as the tests are
    collected (`pytest_collection_finish`): deploy/test.sh starts the integration run while the unit
    tests run (SUITE_GATE below), so that these starts use the core the unit tests leave idle. The
    `kafka` fixture and `SharedJobs` take what it started, waiting for it if it is still starting."""

    def __init__(self, tmp_path_factory, first_job: str | None):
        self.broker = LocalKafka(tmp_path_factory.mktemp("kafka"), free_port(), free_port())
        self.job: StreamJob | None = None
        self.first_job = first_job
        self.job_dir = tmp_path_factory.mktemp(f"shared-{first_job}") if first_job else None
        self.broker_up, self.done = threading.Event(), threading.Event()
        self.broker_taken = False
        self.failed_job: str | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="integration-warm-up", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            # Both start beside lint and the unit tests: longer bounds than a start's usual ones.
            self.broker.start(timeout=300)
            self.broker_up.set()
            if self.first_job is not None:
                self.job = _shared_job(self.broker, self.job_dir, self.first_job, self.first_job)
                self.job.start(timeout=300)
        except BaseException as e:  # noqa: BLE001 - raised by whoever takes what failed
            self.error = e
            if self.job is not None:
                self.job.kill()
        finally:
            self.broker_up.set()
            self.done.set()

    def take_broker(self) -> LocalKafka | None:
        """The started broker; None if it did not start (the fixture starts one as usual)."""
        self.broker_up.wait()
        if self.error is not None and not self.broker.pid():
            return None
        self.broker_taken = True
        return self.broker

    def take_job(self, name: str) -> StreamJob | None:
        """The warm-up's started job if it is `name`'s (once); None otherwise, or if it did not start
        (then `SharedJobs` starts one as usual: a warm-up's failure costs time, not the run)."""
        if name != self.first_job:
            return None
        self.first_job = None
        self.done.wait()
        if self.error is not None:
            print(f"\nthe warm-up's {name} job did not start ({self.error}); starting another")
            self.failed_job = name
            return None
        return self.job

    def stop(self) -> None:
        """Whatever was started and never taken (the run stopped before its tests)."""
        untaken_job = self.first_job is not None
        if untaken_job and self.job is not None:
            self.job.kill()  # a job still starting fails its wait at once
        self.thread.join(timeout=150)
        if untaken_job and self.job is not None:
            self.job.kill()
        if not self.broker_taken:
            self.broker.stop(timeout=3)


_warm_up: WarmUp | None = None


def pytest_collection_finish(session):
    """Start the broker (and the first shared job) now if the collected tests take them; under
    deploy/test.sh, then wait for the unit tests' outcome before running any test (SUITE_GATE: a
    file the script writes `go` into, or why the integration tests must not run)."""
    global _warm_up
    items = [item for item in session.items if item.get_closest_marker("integration") is not None]
    if not items or session.config.option.collectonly:
        return
    gate = Path(os.environ["SUITE_GATE"]) if os.environ.get("SUITE_GATE") else None
    if gate is not None:
        # Started in the background by a script, which leaves SIGINT ignored: a Ctrl-C (or the
        # script's SIGINT when it stops) ends the run with its fixtures' tear-down, as in the foreground.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _stop_unless_go(_verdict(gate, wait=False))  # the unit tests failed already: start nothing
    if any("kafka" in item.fixturenames for item in items):
        marker = items[0].get_closest_marker("shared_job")
        first = marker.args[0] if marker is not None and "job" in items[0].fixturenames else None
        _warm_up = WarmUp(session.config._tmp_path_factory, first if first == "plain" else None)
        session.config.add_cleanup(_warm_up.stop)
    if gate is not None:
        _stop_unless_go(_verdict(gate, wait=True))


def _verdict(gate: Path, wait: bool) -> str:
    """The gate's word: `go` once the unit tests passed, else why not ("" while they run and not
    `wait`). The script gone (SUITE_GATE_PID) or its file gone is a `no`."""
    script = int(os.environ.get("SUITE_GATE_PID", "0"))
    while True:
        try:
            verdict = gate.read_text().strip()
        except FileNotFoundError:
            return "the gate file is gone"
        if verdict or not wait:
            return verdict
        if script:
            try:
                os.kill(script, 0)
            except ProcessLookupError:
                return "deploy/test.sh is gone"
        time.sleep(0.5)


def _stop_unless_go(verdict: str) -> None:
    if verdict not in ("", "go"):
        pytest.exit(f"integration tests not run: {verdict}", returncode=pytest.ExitCode.INTERRUPTED)


def _shared_job(kafka, workdir: Path, name: str, label: str, redis_url: str | None = None) -> StreamJob:
    """The shared job `name` (not started); `label` names its topics (a second start: `name-1`)."""
    kw = PLAIN if name == "plain" else _observed(redis_url, f"e2e-{label}")
    return StreamJob(kafka.bootstrap, workdir, f"shared-{label}", **kw)


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    broker = _warm_up.take_broker() if _warm_up is not None else None
    if broker is None:
        broker = LocalKafka(tmp_path_factory.mktemp("kafka"), free_port(), free_port()).start()
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
        job = _warm_up.take_job(name) if _warm_up is not None else None
        if job is None and _warm_up is not None and _warm_up.failed_job == name:
            self.started.append(name)  # another label: not the topics of the warm-up's failed start
        if job is None:
            label = name if name not in self.started else f"{name}-{self.started.count(name)}"
            redis_url = self.redis_factory().url if name != "plain" else None
            job = _shared_job(self.kafka, self.tmp.mktemp(f"shared-{label}"), name, label, redis_url)
            job.start()
        self.started.append(name)
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
