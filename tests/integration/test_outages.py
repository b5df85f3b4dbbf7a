"""Fault drills that the running job heals by itself, without exiting.

- The broker is unavailable for 30 s while requests are in flight, then comes back on the same
  ports with the same data: every request sent before, during and after the outage is answered,
  every commit is fetched back, the metadata publisher publishes again. Prints how long after the
  broker's return the first answers arrive.
- The query fails (its Python workers are killed): the supervisor restarts it on the same
  checkpoint and what was committed before is still there.
"""
from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from .drill import Load

pytestmark = pytest.mark.integration

OUTAGE_S = 30  # the fault being drilled, not a wait for a result
WAIT = 240  # seconds any answer may take: the query may be restarting with backoff
GROUPS = [f"outage-group-{g}" for g in range(5)]


def make_request(i: int, group: str | None = None):
    group = group or GROUPS[i % len(GROUPS)]
    if i % 2:
        return "FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": [group]}, group
    return "OffsetCommit", 9, {
        "groupId": group, "generationIdOrMemberEpoch": -1, "memberId": "", "groupInstanceId": None,
        "topics": [{"name": "orders", "partitions": [
            {"partitionIndex": 0, "committedOffset": i, "committedLeaderEpoch": -1,
             "committedMetadata": None}]}]}, group


def answered(client, cids) -> int:
    got = client.responses()
    return sum(cid in got for cid in cids)


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.2)


def test_broker_unavailable_for_30_seconds(kafka, job_factory):
    job = job_factory("outage", coordinator={"coordinator.partitions": 10})
    client = job.client("outage-client")
    client.request("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["warm-up"]}, timeout=WAIT)
    load = Load(client, make_request, rate_per_s=5)
    load.start()
    stopped = False
    try:
        wait_until(lambda: answered(client, list(load.sent)) >= 10, WAIT, "no answers before the outage")
        log_mark = len(job.log_file.read_text(errors="replace"))
        down_at = time.monotonic()
        kafka.stop()
        stopped = True
        stop_s = time.monotonic() - down_at
        # Requests handed over while the broker is down wait in the producer's buffer.
        during: dict[int, tuple] = {}
        for i in range(OUTAGE_S // 5):
            api, version, body, key = make_request(i, group=f"outage-during-{i}")
            during[client.send(api, version, body, key=key, flush=False)] = (api, version, body, key)
            time.sleep(5)
        assert job.proc.poll() is None, job.tail()
        starting_at = time.monotonic()
        kafka.start()
        stopped = False
        up_at = time.monotonic()
        start_s = up_at - starting_at
        up_wall = time.time()
        commits = job.cfg.checkpoint / "commits"
        wait_until(lambda: max(p.stat().st_mtime for p in commits.iterdir()) > up_wall, WAIT,
                   "no micro-batch committed after the broker came back")
        first_commit_s = time.monotonic() - up_at
        client.wait(min(during), timeout=WAIT)
        buffered_answer_s = time.monotonic() - up_at
        t = time.monotonic()
        client.request("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["after"]}, timeout=WAIT)
        new_request_s = time.monotonic() - t
        after_up = time.monotonic() - up_at
        sent_before = len(load.sent)
        wait_until(lambda: len(load.sent) >= sent_before + 10, WAIT, "the load stalled after the outage")
    finally:
        load.stop()
        if stopped:
            kafka.start()  # the broker is shared with the other modules
    assert load.error is None, load.error

    sent = {**load.sent, **during}
    missing = []
    for cid in sent:
        try:
            client.wait(cid, timeout=WAIT if not missing else 5)
        except TimeoutError:
            missing.append(cid)
    assert not missing, f"{len(missing)} of {len(sent)} requests unanswered"
    answers = client.responses()
    last_commit: dict[str, int] = {}
    for cid, (api, _, body, key) in sent.items():
        r = answers[cid]["response"]
        if api == "OffsetCommit":
            assert r["topics"][0]["partitions"][0]["errorCode"] == 0, r
            last_commit[key] = max(last_commit.get(key, -1), body["topics"][0]["partitions"][0]["committedOffset"])
        else:
            assert r["coordinators"][0]["errorCode"] == 0, r
    for group, offset in last_commit.items():
        fetched = client.request("OffsetFetch", 8, {"groups": [{"groupId": group, "topics": [
            {"name": "orders", "partitionIndexes": [0]}]}], "requireStable": False}, key=group, timeout=WAIT)
        assert fetched["groups"][0]["topics"][0]["partitions"][0]["committedOffset"] == offset, (group, fetched)

    # The metadata publisher survived the outage: a topic created now is published.
    published = job.log_file.read_text(errors="replace").count("published topic metadata")
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        admin.create_topics([NewTopic("outage-created-after", 1, 1)])
    finally:
        admin.close()
    wait_until(lambda: job.log_file.read_text(errors="replace").count("published topic metadata") > published,
               60, "the metadata publisher did not publish after the outage")
    client.close()

    assert job.proc.poll() is None, "the job exited"
    log = job.log_file.read_text(errors="replace")[log_mark:]
    restarts = log.count("restarting the query")
    print(f"\nbroker unavailable {up_at - down_at:.0f} s (stopping it took {stop_s:.0f} s, starting it "
          f"{start_s:.0f} s): {len(during)} requests handed over during the outage; the job "
          f"restarted its query {restarts} time(s); after the broker was back: first micro-batch "
          f"committed in {first_commit_s:.1f} s, first buffered request "
          f"answered in {buffered_answer_s:.1f} s, a new request answered {after_up:.1f} s after "
          f"(round trip {new_request_s:.1f} s)")


def python_workers(job) -> list[int]:
    """The job's Spark Python worker processes (pyspark.daemon and its forks), found by the
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
        if session == job.proc.pid and b"pyspark.daemon" in cmdline:
            out.append(int(entry))
    return out


def test_a_failed_query_is_restarted_by_the_supervisor(job_factory):
    """SIGKILL the Spark Python workers until a micro-batch fails (a task whose worker dies fails
    the query in local mode): the supervisor logs the failure, restarts the query on the same
    checkpoint, and requests sent meanwhile are answered; the job process never exits."""
    import os
    import signal

    job = job_factory("worker-crash", coordinator={"coordinator.partitions": 10},
                      stream={"restart_backoff_initial_ms": 500})
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
    fetched = client.request("OffsetFetch", 8, {"groups": [{"groupId": "crash-group", "topics": [
        {"name": "orders", "partitionIndexes": [0]}]}], "requireStable": False}, key="crash-group", timeout=WAIT)
    assert fetched["groups"][0]["topics"][0]["partitions"][0]["committedOffset"] == 2
    client.close()
    assert job.proc.poll() is None
    log = job.log_file.read_text(errors="replace")
    failure = next(line for line in log.splitlines() if "query failed (" in line)
    print(f"\nsupervisor: {failure[:200]}\n  a request sent after the failure was answered in {answered_s:.1f} s")
