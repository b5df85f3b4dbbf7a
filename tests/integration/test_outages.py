"""Fault drills that the running job heals by itself, without exiting.

- The broker is unavailable for 30 s while requests are in flight (appended, not yet answered),
  then comes back on the same ports with the same data: the job never exits, every request sent
  before the outage and after it is answered, every commit is fetched back, the metadata
  publisher publishes again. Prints how long after the broker's return the job works again.
  (Requests a client tries to produce *while* the broker is down are its library's business:
  kafka-python 3.0.12's producer was seen to keep such records forever after the broker returned.)
- The query fails (its Python workers are killed): the supervisor restarts it on the same
  checkpoint and what was committed before is still there.
"""

from __future__ import annotations

import json
import time

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from client.topic_reader import read_records

from .drill import Load
from .harness import create_data_topics

pytestmark = pytest.mark.integration

OUTAGE_S = 30  # the fault being drilled, not a wait for a result
WAIT = 240  # seconds any answer may take: the query may be restarting with backoff
GROUPS = [f"outage-group-{g}" for g in range(5)]


@pytest.fixture(scope="module", autouse=True)
def orders_topic(kafka):
    """The data topic the commits name, before the job starts (its first metadata knows it)."""
    create_data_topics(kafka.bootstrap, {"orders": 4})


def make_request(i: int, group: str | None = None):
    group = group or GROUPS[i % len(GROUPS)]
    if i % 2:
        return "FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": [group]}, group
    return (
        "OffsetCommit",
        9,
        {
            "groupId": group,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {
                            "partitionIndex": 0,
                            "committedOffset": i,
                            "committedLeaderEpoch": -1,
                            "committedMetadata": None,
                        }
                    ],
                }
            ],
        },
        group,
    )


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.2)


def newest_commit_mtime(checkpoint) -> float:
    times = []
    for p in (checkpoint / "commits").iterdir():
        try:
            times.append(p.stat().st_mtime)
        except FileNotFoundError:  # Spark's log retention removed it meanwhile
            pass
    return max(times, default=0.0)


def responses_in_topic(job, client_id: str, cids: set[int]) -> dict[int, dict]:
    """The responses to `cids` written to the response topic, read with a fresh consumer (the
    client that sent them lived through the outage: its connections are not what is tested)."""
    found: dict[int, dict] = {}

    def collect(records) -> bool:
        for r in records:
            if r.key is not None and r.key.decode() == client_id and r.value:
                envelope = json.loads(r.value)
                if envelope["correlationId"] in cids:
                    found.setdefault(envelope["correlationId"], envelope)
        return set(found) >= cids

    read_records(job.bootstrap, job.topics["responses"], timeout_s=WAIT, until=collect)
    return found


def test_broker_unavailable_for_30_seconds(kafka, job_factory):
    job = job_factory("outage", coordinator={"coordinator.partitions": 10})
    before = job.client("outage-before")
    before.request("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["warm-up"]}, timeout=WAIT)
    load = Load(before, make_request, rate_per_s=5)
    load.start()
    wait_until(lambda: len(before.responses()) >= 10, WAIT, "no answers before the outage")
    load.stop()
    assert load.error is None, load.error
    sent = dict(load.sent)
    # A burst appended just before the broker goes away: the job is still working through it.
    for i in range(20):
        api, version, body, key = make_request(i, group=f"outage-burst-{i}")
        sent[before.send(api, version, body, key=key, flush=False)] = (api, version, body, key)
    before.flush()
    log_mark = len(job.log_file.read_text(errors="replace"))
    in_flight = sum(cid not in before.responses() for cid in sent)
    down_at = time.monotonic()
    kafka.stop(timeout=5)  # SIGTERM, then SIGKILL: a single-node KRaft broker takes ~30 s to stop
    try:
        stop_s = time.monotonic() - down_at
        time.sleep(OUTAGE_S)
        assert job.proc.poll() is None, job.tail()
    finally:
        starting_at = time.monotonic()
        kafka.start()  # the broker is shared with the other modules: always back
    up_at, up_wall = time.monotonic(), time.time()
    start_s = up_at - starting_at
    wait_until(
        lambda: newest_commit_mtime(job.cfg.checkpoint) > up_wall,
        WAIT,
        "no micro-batch committed after the broker came back",
    )
    first_commit_s = time.monotonic() - up_at
    after = job.client("outage-after")
    after.request("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["after"]}, timeout=WAIT)
    new_request_s = time.monotonic() - up_at
    load = Load(after, lambda i: make_request(i, group=f"outage-after-{i % 3}"), rate_per_s=5)
    load.start()
    wait_until(lambda: len(load.sent) >= 10, WAIT, "the load after the outage stalled")
    load.stop()
    assert load.error is None, load.error

    # Every request of before and during the outage, and after it, is answered, without error.
    answers = responses_in_topic(job, before.client_id, set(sent))
    assert set(answers) == set(sent), f"unanswered: {sorted(set(sent) - set(answers))}"
    for cid in load.sent:
        answers[cid] = after.wait(cid, timeout=WAIT)
    sent.update(load.sent)
    last_commit: dict[str, int] = {}
    for cid, (api, _, body, key) in sent.items():
        r = answers[cid]["response"]
        if api == "OffsetCommit":
            assert r["topics"][0]["partitions"][0]["errorCode"] == 0, r
            last_commit[key] = max(last_commit.get(key, -1), body["topics"][0]["partitions"][0]["committedOffset"])
        else:
            assert r["coordinators"][0]["errorCode"] == 0, r
    for group, offset in last_commit.items():
        fetched = after.request(
            "OffsetFetch",
            8,
            {
                "groups": [{"groupId": group, "topics": [{"name": "orders", "partitionIndexes": [0]}]}],
                "requireStable": False,
            },
            key=group,
            timeout=WAIT,
        )
        assert fetched["groups"][0]["topics"][0]["partitions"][0]["committedOffset"] == offset, (group, fetched)

    # The metadata publisher survived the outage: a topic created now is published.
    published = job.log_file.read_text(errors="replace").count("published topic metadata")
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        admin.create_topics([NewTopic("outage-created-after", 1, 1)])
    finally:
        admin.close()
    wait_until(
        lambda: job.log_file.read_text(errors="replace").count("published topic metadata") > published,
        60,
        "the metadata publisher did not publish after the outage",
    )
    before.close()
    after.close()

    assert job.proc.poll() is None, "the job exited"
    restarts = job.log_file.read_text(errors="replace")[log_mark:].count("restarting the query")
    print(
        f"\nbroker unavailable {up_at - down_at:.0f} s (stopping it took {stop_s:.0f} s, starting it "
        f"{start_s:.0f} s); {in_flight} requests unanswered when it went away; the job restarted its "
        f"query {restarts} time(s); after the broker was back: first micro-batch committed in "
        f"{first_commit_s:.1f} s, a new client's first request answered {new_request_s:.1f} s after"
    )


def python_workers(job) -> list[int]:
    """The job's Spark Python worker processes (the worker daemon and its forks), found by the
    session the harness started the job in."""
    import os

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


def test_a_failed_query_is_restarted_by_the_supervisor(job_factory):
    """SIGKILL the Spark Python workers until a micro-batch fails (a task whose worker dies fails
    the query in local mode): the supervisor logs the failure, restarts the query on the same
    checkpoint, and requests sent meanwhile are answered; the job process never exits."""
    import os
    import signal

    job = job_factory(
        "worker-crash", coordinator={"coordinator.partitions": 10}, stream={"restart_backoff_initial_ms": 500}
    )
    client = job.client("crash-client")
    client.request("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["warm-up"]}, timeout=WAIT)
    _, _, body, group = make_request(0, group="crash-group")
    client.request("OffsetCommit", 9, body, key=group, timeout=WAIT)
    deadline = time.monotonic() + WAIT
    while "restarting the query" not in job.log_file.read_text(errors="replace"):
        assert time.monotonic() < deadline, "no query failure after killing Python workers"
        for pid in python_workers(job):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.3)
    failed_at = time.monotonic()
    _, _, body, group = make_request(2, group="crash-group")
    client.request("OffsetCommit", 9, body, key=group, timeout=WAIT)
    answered_s = time.monotonic() - failed_at
    fetched = client.request(
        "OffsetFetch",
        8,
        {
            "groups": [{"groupId": "crash-group", "topics": [{"name": "orders", "partitionIndexes": [0]}]}],
            "requireStable": False,
        },
        key="crash-group",
        timeout=WAIT,
    )
    assert fetched["groups"][0]["topics"][0]["partitions"][0]["committedOffset"] == 2
    client.close()
    assert job.proc.poll() is None
    log = job.log_file.read_text(errors="replace")
    failure = next(line for line in log.splitlines() if "query failed (" in line)
    print(f"\nsupervisor: {failure[:200]}\n  a request sent after the failure was answered in {answered_s:.1f} s")
