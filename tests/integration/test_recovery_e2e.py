"""Recovery end to end: the one module whose job is killed, damaged, cut off and stopped.

One job of its own (the shared jobs are never killed), taken through what an operator meets, in order:

1. A new user's first minute: the README's worked example, run the moment the service is launched,
   gets its answer; the job says when it is ready, on a quiet console; `streaming.status` reports it
   up with its batches and lag.
2. The product's drill (`coordinator-drill run`'s `run_drill`): a mixed load (simple commits, a
   classic group, a KIP-848 group, transactions) through the real topics while the job is SIGKILLed
   three times at seeded moments; every check passes (every request answered, every acknowledged
   commit fetched, committed transactions read exactly once, the checkpoint equal to an
   uninterrupted run and to the state-log replay). A checkpoint altered in one partition fails,
   naming the partition and the entity.
3. One SIGKILL with three flows in flight (wherever in a micro-batch it lands): a classic group
   whose JoinGroup answers are parked, a transaction whose EndTxn was just answered (PrepareCommit
   decided, markers on their way) and a KIP-848 group in the middle of a rebalance. After the
   restart the classic rebalance completes without retries or extra rebalances, the commit is
   never reversed (COMMIT markers, the records read once, the offsets committed), and the consumer
   group converges with no partition owned twice.
4. Checkpoint damage: the newest file of each kind is truncated or deleted after a SIGKILL; the
   guard rolls the damaged batch back, nothing committed is lost, and the re-run batch counts no
   metric twice; damage it cannot roll back is refused with a message and leaves the checkpoint
   untouched.
5. The query fails (its Python workers are killed): the supervisor restarts it without the job
   exiting. The broker goes away and comes back: the job heals by itself, every request is answered
   (`bench/broker_outage.py` drills a 30 s outage).
6. Stopped: `streaming.status` says so.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from client import (
    ClassicGroupMember,
    ConsumerGroupMember,
    CoordinatorClient,
    ReadCommittedConsumer,
    TopicNames,
    TransactionalProducer,
)
from client.classic_group import STABLE
from client.drill.cli import run_drill, wait_until
from client.drill.load import LoadSpec
from client.drill.verify import CheckpointStates, verify
from client.topic_reader import end_offsets, state_log
from coordinator import coordinator_partition
from deploy.kafka_local import free_port
from streaming.checkpoint_guard import store_partitions
from streaming.config import ROOT

from .flows import (
    Ownership,
    committed_offsets,
    converge,
    describe_consumer_group,
    group_events,
    markers_in,
    named,
    start_together,
    wait_converged,
)
from .harness import create_data_topics, simple_commit, wait_topics_known
from .outage_drill import run_outage

# Many Spark starts on a 2-core machine take minutes; every wait inside is bounded.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

WAIT = 180  # seconds: a bound for every wait on a job that may be restarting
CLASSIC_TOPIC, CG_TOPIC, TXN_IN, TXN_OUT, DAMAGE_TOPIC = (
    "rec-classic-in",
    "rec-cg-in",
    "rec-txn-in",
    "rec-txn-out",
    "rec-damage",
)
TOPICS = {CLASSIC_TOPIC: 4, CG_TOPIC: 6, TXN_IN: 1, TXN_OUT: 2, DAMAGE_TOPIC: 1}
P = "kafka_coordinator_"


@pytest.fixture(scope="module")
def job(job_factory, kafka):
    create_data_topics(kafka.bootstrap, TOPICS)  # before the job starts: its first metadata knows them
    return job_factory(
        "recovery",
        start=False,
        stream={"metadata_refresh_ms": 1000, "restart_backoff_initial_ms": 500},
        coordinator={
            "coordinator.partitions": 10,
            "group.consumer.session.timeout.ms": 30000,
            "group.consumer.min.session.timeout.ms": 6000,
            "group.consumer.heartbeat.interval.ms": 1000,
            "group.consumer.min.heartbeat.interval.ms": 500,
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
        },
        metrics={"port": free_port(), "host": "127.0.0.1"},
    )


@pytest.fixture
def running(job):
    """The job, started if it is not running (each test can also run on its own, `-k`)."""
    return job.ensure_running()


@pytest.fixture(scope="module")
def client(job):
    c = job.client("recovery-client")
    yield c
    c.close()


# ============================================================================ 1. the first minute


def readme_example() -> str:
    """The README's first Python block with a CoordinatorClient (the worked example), as written."""
    text = (ROOT / "README.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "CoordinatorClient" in b]
    assert blocks, "the README's worked example moved"
    return blocks[0]


def run_example(code: str, job) -> str:
    """Run the example's code as written, pointed at this test's broker and topics (the README's
    address and topic names are the local defaults)."""

    class Client(CoordinatorClient):
        def __init__(self, bootstrap_servers, *args, **kw):
            assert bootstrap_servers == "127.0.0.1:9092"
            super().__init__(
                job.bootstrap,
                *args,
                requests_topic=job.topics["requests"],
                responses_topic=job.topics["responses"],
                **kw,
            )

    code = code.replace("from client import CoordinatorClient\n", "")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"CoordinatorClient": Client})  # noqa: S102
    return out.getvalue()


def status(job, *extra: str) -> tuple[int, dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "streaming.status", "--config", str(job.config_file), "--json", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, json.loads(proc.stdout)


def test_readme_example_is_answered_when_run_right_after_the_service_starts(job):
    mark = job.launch()  # no waiting for the stream: the example runs while Spark is starting
    printed = run_example(readme_example(), job)
    answer = eval(printed, {})  # noqa: S307 - the example prints the response dict
    [coordinator] = answer["coordinators"]
    assert coordinator["key"] == "my-group" and coordinator["errorCode"] == 0
    assert coordinator["nodeId"] == coordinator_partition("my-group", job.cfg.coordinator_partitions)

    job.wait_for_line(mark, b"COORDINATOR-READY")
    console = job.log_file.read_text(errors="replace")[mark:]
    ready = [line for line in console.splitlines() if "READY:" in line]
    assert len(ready) == 1 and "answers requests on" in ready[0], console[-2000:]
    # Quiet by default: no library INFO lines, no progress bar, no warning per micro-batch.
    assert not re.search(r" INFO kafka\.", console), console[-2000:]
    assert "[Stage " not in console and "falling behind" not in console, console[-2000:]

    code, up = status(job, "--wait-ready", "180")
    assert code == 0 and up["up"] and up["state"] == "ready", up
    assert up["lastBatchId"] is not None and up["lastBatchMs"] is not None and up["batchesPerS"] > 0
    assert isinstance(up["requestLag"], int) and up["requestLag"] >= 0
    assert up["readyAfterS"] is not None and up["readyAfterS"] > 0


# ============================================================================ 2. the drill


class HarnessKiller:
    """The drill's killer for a job this test harness runs: SIGKILL its process group, launch it
    again on the same checkpoint (the drill itself waits for the first answer after the kill)."""

    def __init__(self, job):
        self.job = job

    def kill(self) -> str:
        pgid = self.job.proc.pid
        self.job.kill()
        return f"SIGKILL process group {pgid}"

    def restart(self) -> None:
        self.job.launch()

    def alive(self) -> bool:
        return self.job.proc is not None and self.job.proc.poll() is None


DRILL = LoadSpec(rate_per_s=8, prefix="rec-drill", wait_s=WAIT, run_id=uuid.uuid4().hex[:8])


@pytest.fixture(scope="module")
def drill_report(job):
    job.ensure_running()
    wait_topics_known(job, DRILL.topics)  # the job runs: the load's first commits must find them
    return run_drill(job.cfg, HarnessKiller(job), DRILL, kills=3, seed=11, max_delay_s=3.0).to_json()


def test_a_drill_with_three_kills_under_the_mixed_load_passes(job, drill_report):
    report = drill_report
    failed = [c for c in report["checks"] if not c["ok"]]
    assert report["passed"], json.dumps(failed, indent=1) + "\n" + job.tail()
    assert report["seed"] == 11 and [k["kill"] for k in report["kills"]] == [1, 2, 3]
    assert all(k["recoverySeconds"] > 0 for k in report["kills"])
    names = {c["name"] for c in report["checks"]}
    assert {
        "every request answered",
        "checkpoint equals an uninterrupted run",
        "every transaction in a final state",
        "state-log replay equals the checkpoint",
        "every acknowledged offset commit fetchable with its value",
        "committed transactions' records read exactly once (markers written)",
    } <= names
    assert report["info"]["requests"] > 50


class OneGroupAltered(CheckpointStates):
    """The checkpoint as read, with one group's generation changed in one coordinator partition."""

    def __init__(self, inner: CheckpointStates, group: str, partitions: int):
        super().__init__(inner.checkpoint, inner.state_store)
        self.group, self.partitions = group, partitions

    def read(self, batch_id: int) -> dict[int, dict]:
        states = super().read(batch_id)
        p = coordinator_partition(self.group, self.partitions)
        states = {**states, p: json.loads(json.dumps(states[p]))}  # a deep copy of that partition
        states[p]["components"]["groups"]["groups"][self.group]["generationId"] += 7
        return states


def test_an_altered_partition_fails_naming_the_partition_and_the_entity(job, drill_report):
    group = f"{DRILL.prefix}-classic"
    n = job.cfg.coordinator_partitions
    p = coordinator_partition(group, n)
    altered = verify(job.cfg, states=OneGroupAltered(CheckpointStates(str(job.cfg.checkpoint)), group, n))
    rendered = altered.render()
    assert not altered.passed, rendered
    failed = {c.name: c.failures for c in altered.checks if not c.ok}
    assert set(failed) == {"checkpoint equals an uninterrupted run", "state-log replay equals the checkpoint"}, rendered
    [line] = failed["checkpoint equals an uninterrupted run"]
    assert line.startswith(f"coordinator partition {p}: ") and f"GroupMetadata {group}: " in line, line
    assert "generationId" in line
    assert f"GroupMetadata {group}" in failed["state-log replay equals the checkpoint"][0]
    assert "FAIL" in rendered and f"coordinator partition {p}" in rendered
    # The same checkpoint, read as it is, passes.
    assert verify(job.cfg).passed


# ============================================================================ 3. one kill, three flows


def classic_member(job, group: str, **kw) -> ClassicGroupMember:
    kw.setdefault("session_timeout_ms", 10000)
    kw.setdefault("heartbeat_interval_ms", 2000)
    return ClassicGroupMember(
        job.bootstrap,
        group,
        [CLASSIC_TOPIC],
        requests_topic=job.topics["requests"],
        responses_topic=job.topics["responses"],
        **kw,
    )


def txn_statuses(job, tid: str, timeout_s: float = 20) -> list[int]:
    """transactionStatus of every state-log record of `tid`, in log order."""
    cp = coordinator_partition(tid, job.cfg.coordinator_partitions)
    key = json.dumps(["TransactionLog", tid], separators=(",", ":"))
    return [
        v["transactionStatus"]
        for k, v in state_log(job.bootstrap, job.topics["state_log"], cp, timeout_s=timeout_s)
        if k == key and v is not None
    ]


def test_one_kill_with_a_join_parked_a_commit_decided_and_a_consumer_group_rebalancing(running, job, client):
    """Where the kill lands is not up to the test; each flow's outcome must hold wherever it does."""
    classic_group, cg_group, tid, txn_group = "rec-classic-kill", "rec-cg", "rec-kill-tid", "rec-kill-group"
    events_since = end_offsets(job.bootstrap, job.topics["events"])
    names = TopicNames(job.bootstrap)
    ownership = Ownership()
    consumers: dict[str, ConsumerGroupMember] = {}
    kw = dict(rebalance_timeout_ms=180000)  # the classic rebalance waits through the restart
    a, b = classic_member(job, classic_group, **kw), classic_member(job, classic_group, **kw)
    c = classic_member(job, classic_group, **kw)
    producer = TransactionalProducer(
        job.bootstrap, tid, requests_topic=job.topics["requests"], responses_topic=job.topics["responses"]
    )

    def join_consumer(name: str) -> ConsumerGroupMember:
        m = ConsumerGroupMember(client, cg_group, [CG_TOPIC], response_timeout_s=4, **ownership.callbacks(name))
        consumers[name] = m
        return m.start()

    try:
        # A KIP-848 group of two, converged.
        for name in ("x", "y"):
            join_consumer(name)
        wait_converged(client, names, cg_group, CG_TOPIC, consumers, TOPICS[CG_TOPIC], timeout=WAIT)

        # A classic group of two; then b's poll loop stalls (heartbeats go on, it does not rejoin),
        # c joins and a rejoins on its next heartbeat: a's and c's JoinGroup answers are parked
        # until b rejoins, and the job has committed them in its state.
        start_together([a, b])
        assert converge([a, b], 1, {CLASSIC_TOPIC: TOPICS[CLASSIC_TOPIC]}) == 1
        b.stall()
        c.start()
        a.wait_for(lambda m: m.state != STABLE, timeout=WAIT)
        c.wait_for(lambda m: m.joins_sent == 2, timeout=WAIT)
        evs = group_events(job, classic_group, events_since, until=lambda es: len(named(es, "RebalanceStarted")) >= 2)
        assert named(evs, "RebalanceStarted")[1]["reason"].startswith(f"Adding new member {c.member_id}")
        job.wait_caught_up()  # both JoinGroups applied and committed: parked in the job's state
        joins = (a.joins_sent, c.joins_sent)
        assert a.state != STABLE and c.state != STABLE

        # A transaction committed: EndTxn answered, PrepareCommit decided, markers on their way.
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(TXN_OUT, b"kill-1", partition=0)
        producer.send(TXN_OUT, b"kill-2", partition=1)
        producer.send_offsets_to_transaction({(TXN_IN, 0): 3}, txn_group)
        producer.commit_transaction()
        pid, epoch = producer.producer_id, producer.producer_epoch  # after EndTxn (which may bump it)
        aim_until = time.monotonic() + 15  # aim between PrepareCommit and CompleteCommit
        while time.monotonic() < aim_until and not {2, 4} & set(txn_statuses(job, tid, timeout_s=2)):
            time.sleep(0.1)

        # A third KIP-848 member joins; SIGKILL while the group rebalances.
        join_consumer("z")
        wait_until(lambda: describe_consumer_group(client, cg_group)["groupState"] != "Stable", "no rebalance", WAIT)
        requests_at_kill = sum(end_offsets(job.bootstrap, job.topics["requests"]).values())
        job.kill()
    finally:
        producer.close()
    statuses = txn_statuses(job, tid)
    landed = {
        1: "before PrepareCommit was durable (the batch replays)",
        2: "between PrepareCommit and CompleteCommit",
        4: "after CompleteCommit",
    }.get(statuses[-1] if statuses else None, "elsewhere")
    print(f"\nstate log of {tid} when killed: {statuses}: the kill landed {landed}")
    assert statuses and 3 not in statuses and 5 not in statuses  # never an abort, wherever it landed

    try:
        # Requests (heartbeats of b and of the KIP-848 members) keep arriving while the job is down.
        wait_until(
            lambda: sum(end_offsets(job.bootstrap, job.topics["requests"]).values()) >= requests_at_kill + 3,
            "no requests while the job was down",
            WAIT,
        )
        job.start()
        b.resume()

        # The classic rebalance completes: a and c got the answers to the JoinGroups they sent before
        # the kill (no retry), no extra rebalance, nobody expired.
        assert converge([a, b, c], 2, {CLASSIC_TOPIC: TOPICS[CLASSIC_TOPIC]}) == 2
        assert (a.joins_sent, c.joins_sent) == joins
        evs = group_events(
            job,
            classic_group,
            events_since,
            until=lambda es: any(e["generationId"] == 2 for e in named(es, "RebalanceCompleted")),
        )
        assert len(named(evs, "RebalanceStarted")) == 2
        assert not named(evs, "MemberSessionExpired") and not named(evs, "MembersRemoved")

        # The commit decision stands: CompleteCommit, COMMIT markers only, records read once, offsets.
        def complete():
            r = client.request("DescribeTransactions", 0, {"transactionalIds": [tid]}, key=tid, timeout=WAIT)
            return r if r["transactionStates"][0]["transactionState"] == "CompleteCommit" else None

        described = wait_until(complete, "the transaction never completed", WAIT, every=0.5)
        state = described["transactionStates"][0]
        assert state["topics"] == [] and (state["producerId"], state["producerEpoch"]) == (pid, epoch), state
        after = txn_statuses(job, tid)
        assert after[-1] == 4 and 2 in after and 3 not in after and 5 not in after, after
        markers = markers_in(job.bootstrap, TXN_OUT)
        for partition in (0, 1):
            mine = [m for m in markers.get(partition, []) if m["producerId"] == pid]
            assert mine and {m["type"] for m in mine} == {"COMMIT"}, markers
        reader = ReadCommittedConsumer(job.bootstrap, [TXN_OUT])
        try:
            got: list[bytes] = []
            end = time.monotonic() + 60
            while len(got) < 2 and time.monotonic() < end:
                got += [r.value for r in reader.poll(timeout_ms=200)]
            assert sorted(got) == [b"kill-1", b"kill-2"]
        finally:
            reader.close()
        assert committed_offsets(client, txn_group, TXN_IN, [0], timeout=WAIT) == {0: 3}

        # The KIP-848 group converges on all three members; no partition was ever owned twice.
        wait_converged(client, names, cg_group, CG_TOPIC, consumers, TOPICS[CG_TOPIC], timeout=WAIT)
        assert describe_consumer_group(client, cg_group)["assignorName"] == "uniform"
        assert all(m.fatal is None for m in consumers.values())
        assert not ownership.violations, ownership.violations
    finally:
        for m in (a, b, c):
            m.close()
        for m in consumers.values():
            m.stop()
        names.close()


# ============================================================================ 4. checkpoint damage

DAMAGE_GROUPS = [f"rec-damage-group-{g}" for g in range(6)]
COMMITTED: dict[str, int] = {}  # group -> the last offset committed (and answered) so far


def commit_round(client, tag: int) -> None:
    """One OffsetCommit per group, all answered."""
    sent = {}
    for g, group in enumerate(DAMAGE_GROUPS):
        offset = 100 * tag + g
        body = simple_commit(group, {DAMAGE_TOPIC: {0: offset}})
        sent[client.send("OffsetCommit", 9, body, key=group, flush=False)] = (group, offset)
    client.flush()
    for cid, (group, offset) in sent.items():
        assert client.wait(cid, timeout=WAIT)["response"]["topics"][0]["partitions"][0]["errorCode"] == 0
        COMMITTED[group] = offset


def fetch_all(client) -> dict[str, int]:
    sent = {
        client.send(
            "OffsetFetch",
            8,
            {
                "groups": [{"groupId": group, "topics": [{"name": DAMAGE_TOPIC, "partitionIndexes": [0]}]}],
                "requireStable": False,
            },
            key=group,
            flush=False,
        ): group
        for group in DAMAGE_GROUPS
    }
    client.flush()
    return {
        group: client.wait(cid, timeout=WAIT)["response"]["groups"][0]["topics"][0]["partitions"][0]["committedOffset"]
        for cid, group in sent.items()
    }


def newest(directory: Path, suffix: str = "") -> Path:
    files = [
        p for p in directory.iterdir() if p.name.endswith(suffix) and p.name[: len(p.name) - len(suffix)].isdigit()
    ]
    return max(files, key=lambda p: int(p.name[: len(p.name) - len(suffix)]))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def newest_commit(ckpt: Path) -> Path:
    return newest(ckpt / "commits")


def kill_with_newest_batch_committed(job) -> int:
    """SIGKILL the job and leave a checkpoint whose newest batch N is committed (commits/N, nothing
    planned after it), so that the file damaged next is the committed batch's; returns N.

    A kill cannot be aimed there. When micro-batches run back to back (requests, wake records of
    timers), Spark writes offsets/N+1 some 15-200 ms after committing batch N, while
    `wait_caught_up` notices the commit only at its next poll: most kills land with batch N+1
    planned and not committed, some of them between the rename of offsets/N+1 and that of its .crc
    (then deleting offsets/N+1 leaves nothing to repair). So this establishes the situation
    instead: what a kill just before batch N+1 was planned would have left. The uncommitted batch's
    offset entry and the state versions its tasks may have written are moved out of the checkpoint
    (a temporary file a kill leaves in mid-write is ignored by Spark and the guard alike); Spark
    plans batch N+1 again at the next start, as after any such kill."""
    ckpt = job.cfg.checkpoint
    job.wait_caught_up()
    job.kill()
    planned, committed = int(newest(ckpt / "offsets").name), int(newest_commit(ckpt).name)
    if planned == committed:
        return committed
    assert planned == committed + 1, f"offsets up to {planned}, commits up to {committed}"
    lost = [ckpt / "offsets" / str(planned), ckpt / "offsets" / f".{planned}.crc"]
    for partition in store_partitions(ckpt):  # versions after committed + 1 are batch N+1's
        lost += [
            f
            for f in partition.iterdir()
            if re.fullmatch(r"\.?(\d+)\.(changelog|zip)(\.crc)?", f.name)
            and int(re.search(r"\d+", f.name).group()) > committed + 1
        ]
    aside = job.workdir / f"unplanned-batch-{planned}"
    for f in lost:
        if f.exists():
            target = aside / f.relative_to(ckpt)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(f), str(target))
    return committed


def damage_committed_state(ckpt: Path) -> None:
    """Truncate the state version the newest committed batch wrote, in every store partition."""
    version = int(newest_commit(ckpt).name) + 1
    damaged = 0
    for partition in store_partitions(ckpt):
        # The version is a changelog, or a snapshot when RocksDB's maintenance wrote one for it.
        for name in (f"{version}.changelog", f"{version}.zip"):
            if (partition / name).exists():
                truncate(partition / name)
                damaged += 1
    assert damaged, f"no file holds state version {version}"


DAMAGE = {
    "truncated newest commit": lambda ckpt: truncate(newest_commit(ckpt)),
    "deleted newest offsets": lambda ckpt: newest(ckpt / "offsets").unlink(),  # its .crc stays
    "truncated newest offsets": lambda ckpt: truncate(newest(ckpt / "offsets")),
    "truncated newest committed state version": damage_committed_state,
}

# What the guard must report for each, given the newest committed batch n: the damaged file, and
# which batch Spark runs next and how.
REPORTED = {
    "truncated newest commit": lambda n: [f"commits/{n} ", f"batch {n} is re-run exactly"],
    "deleted newest offsets": lambda n: [
        f"offsets/.{n}.crc is the checksum of a deleted file",
        f"batch {n} is planned again from the end offsets of batch {n - 1}",
    ],
    "truncated newest offsets": lambda n: [f"offsets/{n} ", f"batch {n} is planned again from the end offsets"],
    "truncated newest committed state version": lambda n: [f"/{n + 1}.", f"batch {n} is re-run exactly"],
}


def scrape(job) -> dict:
    url = f"http://127.0.0.1:{job.cfg.metrics['port']}/metrics"
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


def metric(m: dict, name: str, **labels) -> float:
    return m.get((P + name, tuple(sorted(labels.items()))), 0)


def counted(m: dict) -> dict:
    """The series computed from the metrics records alone (not the stream's health or the wall
    clock: a batch planned again after damage has a new batch time, so its requests' queue time is
    another), without those the job's own start moves (its self-check FindCoordinator, the topic
    metadata it publishes)."""
    return {
        k: v
        for k, v in m.items()
        if not k[0].startswith((P + "stream_", P + "assignment_compute", P + "request_queue_time_ms"))
        and "FindCoordinator" not in str(k[1])
        and "UpdateMetadata" not in str(k[1])
        and k[0] not in (P + "state_bytes", P + "partitions_reporting")
    }


def scrape_until(job, what: str, predicate) -> dict:
    def attempt():
        try:
            m = scrape(job)
        except OSError:  # the endpoint is not up yet
            return None
        return m if predicate(m) else None

    return wait_until(attempt, f"metrics never showed {what}", WAIT, every=0.5)


# The damages run end to end: one per way Spark resumes after the guard's repair (the batch re-run
# exactly from its offsets, or planned again from the previous batch's end offsets), each the case
# with the most to get wrong (a state version: store and commit rolled back together; deleted
# offsets: the checksum left behind). The guard's decision for every damage in DAMAGE, these two
# included, is tested in tests/streaming/test_checkpoint_guard.py.
# (In this order: run first on the module's fresh job, the deleted-offsets case fails, as Spark has
# no earlier batch to plan the damaged one again from; the first case's restart adds one.)
E2E_DAMAGE = ["truncated newest committed state version", "deleted newest offsets"]
# The case whose stopped job is first started without its offset log (refused; nothing touched) before
# its offset log is put back: one kill and one start for both (the refusal sees an empty offset log
# whatever the log held).
REFUSED_FIRST = "deleted newest offsets"


def refused_without_its_offset_log(job) -> None:
    """The stopped job's state without its offset log is refused, the checkpoint untouched; then its
    offset log is put back."""
    ckpt = job.cfg.checkpoint
    aside = ckpt.with_name("offsets-aside")
    shutil.move(str(ckpt / "offsets"), str(aside))
    (ckpt / "offsets").mkdir()
    before = sorted(str(p.relative_to(ckpt)) for p in ckpt.rglob("*"))
    try:
        with pytest.raises(RuntimeError) as refused:
            job.start()
        message = str(refused.value)
        assert "job exited with 1" in message and "cannot be repaired" in message and "empty state" in message
        assert sorted(str(p.relative_to(ckpt)) for p in ckpt.rglob("*")) == before  # nothing touched
    finally:  # also when it failed: the module's later tests start the job on this checkpoint
        shutil.rmtree(ckpt / "offsets")
        shutil.move(str(aside), str(ckpt / "offsets"))


@pytest.mark.parametrize("damage", E2E_DAMAGE)
def test_damaged_newest_file_is_rolled_back_nothing_committed_is_lost_nothing_counted_twice(
    running, job, client, damage
):
    commit_round(client, list(DAMAGE).index(damage) + 1)
    job.wait_caught_up()
    before = counted(scrape_until(job, "the commits", lambda m: metric(m, "stream_up") == 1))
    assert metric(before, "group_offset_commit_total") >= len(DAMAGE_GROUPS)
    # A committed batch holds the commits, and is the newest: it is the one damaged below.
    batch = kill_with_newest_batch_committed(job)
    DAMAGE[damage](job.cfg.checkpoint)
    if damage == REFUSED_FIRST:
        refused_without_its_offset_log(job)
    mark = len(job.log_file.read_text(errors="replace"))
    job.start()
    assert fetch_all(client) == COMMITTED
    log = job.log_file.read_text(errors="replace")[mark:]
    assert "REPAIRED" in log and "DAMAGED" in log, log[-3000:]
    report = log[log.index("DAMAGED") : log.index("REPAIRED")]
    for expected in REPORTED[damage](batch):
        assert expected in report, report
    assert "restarting the query" not in log  # repaired before the start, not by failing

    # The rolled-back batch ran again and wrote its metrics records again: nothing counts twice
    # (but for the fetches just sent and the restart's own requests).
    def comparable(m: dict) -> dict:
        return {k: v for k, v in counted(m).items() if "OffsetFetch" not in str(k[1])}

    def same() -> bool:
        try:
            return comparable(scrape(job)) == comparable(before)
        except OSError:  # the endpoint is not up yet
            return False

    wait_until(
        same, lambda: f"metrics differ after the restart: {diff(comparable(scrape(job)), comparable(before))}", WAIT
    )


def diff(after: dict, before: dict) -> dict:
    return {k: (before.get(k), after.get(k)) for k in set(after) | set(before) if after.get(k) != before.get(k)}


# ============================================================================ 5. faults it heals


def python_workers(job) -> list[int]:
    """The job's Spark Python worker processes (the worker daemon and its forks), found by the
    session the harness started the job in."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:  # the daemon has a process group of its own
                session = int(f.read().rsplit(")", 1)[1].split()[3])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if session == job.proc.pid and (b"-m\x00streaming.worker_daemon" in cmdline or b"pyspark.daemon" in cmdline):
            out.append(int(entry))
    return out


def test_a_failed_query_is_restarted_by_the_supervisor(running, job, client):
    """SIGKILL the Spark Python workers until a micro-batch fails (a task whose worker dies fails
    the query in local mode): the supervisor logs the failure, restarts the query on the same
    checkpoint, and requests sent meanwhile are answered; the job process never exits."""
    mark = len(job.log_file.read_text(errors="replace"))
    commit_round(client, 60)

    def failed() -> bool:
        if "restarting the query" in job.log_file.read_text(errors="replace")[mark:]:
            return True
        for pid in python_workers(job):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # A micro-batch runs only for a record (timer wake-ups): one per round, so that a task meets
        # a killed worker (a read-only request; answered after the restart if its batch failed).
        client.send("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": [DAMAGE_GROUPS[0]]}, key=DAMAGE_GROUPS[0])
        return False

    wait_until(failed, "no query failure after killing Python workers", WAIT, every=0.3)
    failed_at = time.monotonic()
    commit_round(client, 61)
    answered_s = time.monotonic() - failed_at
    assert fetch_all(client) == COMMITTED
    assert job.proc.poll() is None
    log = job.log_file.read_text(errors="replace")[mark:]
    failure = next(line for line in log.splitlines() if "query failed (" in line)
    print(f"\nsupervisor: {failure[:200]}\n  requests sent after the failure were answered in {answered_s:.1f} s")


def test_the_broker_goes_away_and_comes_back(running, job, kafka):
    """A short outage (the time the broker takes to stop and start again): the job never exits,
    every request sent before and after is answered, every commit fetched back, the metadata
    publisher publishes again. `bench/broker_outage.py` holds the broker down for 30 s."""
    figures = run_outage(kafka, job, outage_s=0, wait_s=WAIT)
    print(f"\n{figures}")


# ============================================================================ 6. stopped


def test_status_reports_down_after_stop(running, job):
    job.stop()
    code, down = status(job)
    assert code == 1 and not down["up"] and down["state"] == "stopped", down
    assert "not running" in down["reason"]
    assert Path(str(job.cfg.checkpoint) + ".status.json").exists()
