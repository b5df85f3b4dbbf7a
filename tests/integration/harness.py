"""Real services for integration tests: the Kafka broker and the coordinator job as a process.

One broker serves the whole test run, and so does a job per shared configuration
(tests/integration/conftest.py); a module that kills or reconfigures its job runs one of its own,
with its own topics and checkpoint, so that it disturbs no other test.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from client import CoordinatorClient
from client.drill.load import ensure_data_topics
from deploy.kafka_local import SINGLE_BROKER_TOPICS, LocalKafka, free_port
from deploy.topics import ensure_topics
from streaming.config import ROOT, SERVICE_TOPICS, StreamConfig

JVM_FRAME = re.compile(r"\s+(at |\.\.\. \d+ more)")


@contextmanager
def broker_and_job(prefix: str, **job_config) -> Iterator[tuple[LocalKafka, StreamJob]]:
    """A broker and a started job of their own in a temporary directory, for a bench's drill; both
    stopped and the directory removed afterwards."""
    work = Path(tempfile.mkdtemp(prefix=f"{prefix}-"))
    broker = LocalKafka(work / "kafka", free_port(), free_port())
    broker.start()
    try:
        job = StreamJob(broker.bootstrap, work / "job", prefix, service_topics=broker.service_topics, **job_config)
        job.start()
        try:
            yield broker, job
        finally:
            job.stop()
    finally:
        broker.stop(timeout=3)
        shutil.rmtree(work, ignore_errors=True)


def create_data_topics(bootstrap: str, partitions: dict[str, int]) -> None:
    """Create data topics (name -> partition count) a test's requests name; existing ones are kept.
    Offsets are only stored for topics that exist (Kafka answers UNKNOWN_TOPIC_OR_PARTITION)."""
    ensure_data_topics(bootstrap, partitions)


def simple_commit(group: str, offsets: dict[str, dict[int, int]], metadata: str | None = None) -> dict:
    """An OffsetCommit v9 body of a simple group (generation -1, no member: as an admin client or a
    standalone consumer commits): topic -> partition -> offset."""
    return {
        "groupId": group,
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partitionIndex": p,
                        "committedOffset": o,
                        "committedLeaderEpoch": -1,
                        "committedMetadata": metadata,
                    }
                    for p, o in sorted(parts.items())
                ],
            }
            for topic, parts in sorted(offsets.items())
        ],
    }


def new_member_join(group: str, session_timeout_ms: int = 6000) -> dict:
    """A JoinGroup v9 body of a classic consumer without a member id: answered MEMBER_ID_REQUIRED,
    the member then stays pending until it joins again or its session expires."""
    return {
        "groupId": group,
        "sessionTimeoutMs": session_timeout_ms,
        "rebalanceTimeoutMs": session_timeout_ms,
        "memberId": "",
        "groupInstanceId": None,
        "protocolType": "consumer",
        "protocols": [{"name": "range", "metadata": ""}],
        "reason": None,
    }


def probe_keys(partitions: int, prefix: str = "topic-probe") -> list[str]:
    """One group id per coordinator partition (the i-th lands on partition i)."""
    from coordinator import coordinator_partition

    keys: dict[int, str] = {}
    i = 0
    while len(keys) < partitions:
        key = f"{prefix}-{i}"
        keys.setdefault(coordinator_partition(key, partitions), key)
        i += 1
    return [keys[p] for p in range(partitions)]


def wait_topics_known(job: StreamJob, partitions: dict[str, int], timeout: float = 120) -> None:
    """Create the topics (name -> partition count) and wait until every coordinator partition of the
    running `job` knows all their partitions: the job learns a new topic at its next metadata refresh,
    and a request naming it before then is answered UNKNOWN_TOPIC_OR_PARTITION. The probe is an
    OffsetCommit of a probe group on every coordinator partition (generation -1, as an admin client
    commits), repeated until none of them answers an error."""
    create_data_topics(job.bootstrap, partitions)
    offsets = {name: dict.fromkeys(range(count), 0) for name, count in partitions.items()}
    client = job.client()
    try:
        deadline = time.monotonic() + timeout
        pending = probe_keys(job.cfg.coordinator_partitions)
        while pending:
            cids = {client.send("OffsetCommit", 9, simple_commit(key, offsets), key=key): key for key in pending}
            answers = {
                key: client.wait(cid, timeout=max(1.0, deadline - time.monotonic())) for cid, key in cids.items()
            }
            pending = [
                key
                for key, a in answers.items()
                if any(p["errorCode"] for t in a["response"]["topics"] for p in t["partitions"])
            ]
            if pending:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the job did not learn {sorted(partitions)} in {timeout}s:\n{job.tail()}")
                time.sleep(0.2)
    finally:
        client.close()


class StreamJob:
    """run_stream.py in a process group of its own (driver, JVM, Python workers)."""

    def __init__(
        self,
        bootstrap: str,
        workdir: Path,
        prefix: str,
        *,
        stream: dict | None = None,
        coordinator: dict | None = None,
        spark: dict | None = None,
        redis: dict | None = None,
        metrics: dict | None = None,
        dashboard: dict | None = None,
        txn: dict | None = None,
        service_topics: dict | None = None,
    ):
        """`service_topics`: the [topics] durability settings the broker at `bootstrap` needs
        (`LocalKafka.service_topics`, `KafkaCluster.service_topics`); by default a single broker's,
        as the test run's brokers are (tests/integration/conftest.py)."""
        self.bootstrap = bootstrap
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self.config_file = self.workdir / "job.toml"
        self.log_file = self.workdir / "job.log"
        overrides = {
            "kafka": {"bootstrap_servers": bootstrap},
            "topics": {
                **{name: f"{prefix}-coordinator-{name.replace('_', '-')}" for name in SERVICE_TOPICS},
                **(SINGLE_BROKER_TOPICS if service_topics is None else service_topics),
            },
            "stream": {"checkpoint": str(self.workdir / "checkpoint"), **(stream or {})},
            "coordinator": coordinator or {},
            "spark": spark or {},
            # The read model's projector only where a test asks for it (with its Redis fixture's url).
            "redis": redis or {"enabled": False},
            # The metrics endpoint is off unless a test asks for it (on a free port it picks).
            "metrics": {"port": 0, **(metrics or {})},
            "dashboard": dashboard or {},
            "txn": txn or {},
        }
        self.config_file.write_text(_to_toml(overrides))
        self.cfg = StreamConfig.load(self.config_file, environ={})
        ensure_topics(self.cfg)
        self.proc: subprocess.Popen | None = None
        self._reaped = False
        self.starts = 0

    @property
    def topics(self) -> dict:
        return self.cfg.topics

    def ensure_running(self) -> StreamJob:
        """Started, unless its process runs already."""
        return self if self.proc is not None and self.proc.poll() is None else self.start()

    def start(self, timeout: float = 120) -> StreamJob:
        return self.wait_for_line(self.launch(), b"COORDINATOR-STREAM-STARTED", timeout)

    def launch(self) -> int:
        """Start the job's process and return at once; the log offset where this start's output
        begins (for `wait_for_line`)."""
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONUNBUFFERED="1")
        log = open(self.log_file, "ab")
        log.write(f"\n===== start {self.starts} =====\n".encode())
        log.flush()
        # Only this start's output counts: an earlier start may have been refused (no line) or its
        # supervisor may have restarted the query (more lines).
        mark = self.log_file.stat().st_size
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "run_stream.py"), "--config", str(self.config_file)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._reaped = False
        self.starts += 1
        return mark

    def wait_for_line(self, mark: int, line: bytes, timeout: float = 120) -> StreamJob:
        """Wait until the job's output since `mark` contains `line` (COORDINATOR-STREAM-STARTED:
        the query runs; COORDINATOR-READY: it answered its self-check)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"job exited with {self.proc.returncode}:\n{self.tail()}")
            with open(self.log_file, "rb") as f:
                f.seek(mark)
                seen = line in f.read()
            if seen:
                return self
            time.sleep(0.3)
        raise RuntimeError(f"no {line.decode()} from the job in {timeout}s:\n{self.tail()}")

    def kill(self) -> None:
        """SIGKILL the whole job: driver, JVM and Python workers, mid-whatever-it-was-doing."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self._reap_group()

    def stop(self, timeout: float = 60) -> None:
        if self.proc and self.proc.poll() is None:
            # Only the driver: it stops the query and Spark itself (signalling the JVM too would
            # race its shutdown against the driver's py4j calls).
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        self._reap_group()

    def _reap_group(self) -> None:
        # Children (the JVM) may outlive the driver for a moment; make sure the group is gone so a
        # restart does not meet a RocksDB lock held by a dying JVM. Once it is gone, never signal
        # that group id again: the pid is free, and Spark spawns processes fast enough on a shared
        # machine that a new job (this project's or another's) may lead a group with that id.
        if self.proc is None or self._reaped:
            return
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                os.killpg(self.proc.pid, 0)
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                self._reaped = True
                return
            time.sleep(0.2)

    def wait_caught_up(self, timeout: float = 120) -> int:
        """Wait until a committed micro-batch covers every record now in the request topic;
        returns that batch's time."""
        from kafka import KafkaConsumer, TopicPartition

        from streaming.inspect_state import committed_progress

        topics = [self.topics["requests"], self.topics["internal"]]
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None)
        try:
            tps = [TopicPartition(t, p) for t in topics for p in consumer.partitions_for_topic(t)]
            end = {(tp.topic, tp.partition): o for tp, o in consumer.end_offsets(tps).items()}
        finally:
            consumer.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            progress = committed_progress(str(self.cfg.checkpoint))
            if progress is not None:
                done = progress[1]
                if all(done.get(t, {}).get(p, 0) >= o for (t, p), o in end.items()):
                    return progress[2]
            time.sleep(0.3)
        raise TimeoutError(f"the job did not catch up with {end} in {timeout}s:\n{self.tail()}")

    def tail(self, n: int = 60) -> str:
        """The log's last `n` lines but for JVM stack frames: a Spark being stopped prints pages of
        them (its tasks cancelled) after the line that says why the job stopped."""
        try:
            lines = self.log_file.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join([line for line in lines if not JVM_FRAME.match(line)][-n:])

    def client(self, client_id: str | None = None, **kw) -> CoordinatorClient:
        return CoordinatorClient(
            self.bootstrap,
            client_id,
            requests_topic=self.topics["requests"],
            responses_topic=self.topics["responses"],
            **kw,
        )


def _to_toml(d: dict, prefix: str = "") -> str:
    lines, tables = [], []
    for k, v in d.items():
        if isinstance(v, dict):
            tables.append((k, v))
        else:
            lines.append(f"{_key(k)} = {_value(v)}")
    out = "\n".join(lines) + ("\n" if lines else "")
    for k, v in tables:
        name = f"{prefix}.{_key(k)}" if prefix else _key(k)
        out += f"\n[{name}]\n" + _to_toml(v, name)
    return out


def _key(k: str) -> str:
    return k if k.replace("_", "").isalnum() else '"' + k + '"'


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'
