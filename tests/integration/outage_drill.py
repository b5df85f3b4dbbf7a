"""The broker outage drill: the broker goes away while requests are in flight (appended, not yet
answered) and comes back on the same ports with the same data; the running job heals by itself.
Shared by tests/integration/test_recovery_e2e.py (a short outage: the time the broker takes to stop
and start again) and bench/broker_outage.py (30 s, as an operator's maintenance window).

Requests a client tries to produce *while* the broker is down are its library's business
(kafka-python 3.0.12's producer was seen to keep such records forever after the broker returned):
the drill sends before and after the outage."""

from __future__ import annotations

import json
import time

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from client.drill.cli import wait_until
from client.drill.load import Load
from client.topic_reader import read_records

from .harness import simple_commit, wait_topics_known

TOPIC = "outage-orders"
GROUPS = [f"outage-group-{g}" for g in range(5)]


def make_request(i: int, group: str | None = None):
    group = group or GROUPS[i % len(GROUPS)]
    if i % 2:
        return "FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": [group]}, group
    return "OffsetCommit", 9, simple_commit(group, {TOPIC: {0: i}}), group


def newest_commit_mtime(checkpoint) -> float:
    times = []
    for p in (checkpoint / "commits").iterdir():
        try:
            times.append(p.stat().st_mtime)
        except FileNotFoundError:  # Spark's log retention removed it meanwhile
            pass
    return max(times, default=0.0)


def responses_in_topic(job, client_id: str, cids: set[int], wait_s: float) -> dict[int, dict]:
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

    read_records(job.bootstrap, job.topics["responses"], timeout_s=wait_s, until=collect)
    return found


def run_outage(kafka, job, *, outage_s: float, wait_s: float = 240, tag: str = "") -> dict:
    """Drive requests, stop the broker with some of them unanswered, keep it down `outage_s` (the
    fault being drilled, not a wait for a result), start it again; raises AssertionError unless the
    job healed and nothing was lost. Returns the timings."""
    wait_topics_known(job, {TOPIC: 1})
    before = job.client(f"outage-before{tag}")
    before.request("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["warm-up"]}, timeout=wait_s)
    load = Load(before, make_request, rate_per_s=5)
    load.start()
    wait_until(lambda: len(before.responses()) >= 10, "no answers before the outage", wait_s)
    load.stop()
    assert load.error is None, load.error
    sent = dict(load.sent)
    # A burst appended just before the broker goes away: the job is still working through it.
    for i in range(20):
        api, version, body, key = make_request(i, group=f"outage-burst{tag}-{i}")
        sent[before.send(api, version, body, key=key, flush=False)] = (api, version, body, key)
    before.flush()
    log_mark = len(job.log_file.read_text(errors="replace"))
    in_flight = sum(cid not in before.responses() for cid in sent)
    down_at = time.monotonic()
    kafka.stop(timeout=5)  # SIGTERM, then SIGKILL: a single-node KRaft broker takes ~30 s to stop
    try:
        stop_s = time.monotonic() - down_at
        if outage_s > 0:
            time.sleep(outage_s)
        assert job.proc.poll() is None, job.tail()
    finally:
        starting_at = time.monotonic()
        kafka.start()  # the broker is shared with the other modules: always back
    up_at, up_wall = time.monotonic(), time.time()
    start_s = up_at - starting_at
    wait_until(lambda: newest_commit_mtime(job.cfg.checkpoint) > up_wall, "no micro-batch after the outage", wait_s)
    first_commit_s = time.monotonic() - up_at
    after = job.client(f"outage-after{tag}")
    after.request("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["after"]}, timeout=wait_s)
    new_request_s = time.monotonic() - up_at
    load = Load(after, lambda i: make_request(i, group=f"outage-after{tag}-{i % 3}"), rate_per_s=5)
    load.start()
    wait_until(lambda: len(load.sent) >= 10, "the load after the outage stalled", wait_s)
    load.stop()
    assert load.error is None, load.error

    # Every request of before and during the outage, and after it, is answered, without error.
    answers = responses_in_topic(job, before.client_id, set(sent), wait_s)
    assert set(answers) == set(sent), f"unanswered: {sorted(set(sent) - set(answers))}"
    for cid in load.sent:
        answers[cid] = after.wait(cid, timeout=wait_s)
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
                "groups": [{"groupId": group, "topics": [{"name": TOPIC, "partitionIndexes": [0]}]}],
                "requireStable": False,
            },
            key=group,
            timeout=wait_s,
        )
        assert fetched["groups"][0]["topics"][0]["partitions"][0]["committedOffset"] == offset, (group, fetched)

    # The metadata publisher survived the outage: a topic created now is published.
    published = job.log_file.read_text(errors="replace").count("published topic metadata")
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        admin.create_topics([NewTopic(f"outage-created-after{tag}", 1, 1)])
    finally:
        admin.close()
    wait_until(
        lambda: job.log_file.read_text(errors="replace").count("published topic metadata") > published,
        "the metadata publisher did not publish after the outage",
        60,
    )
    before.close()
    after.close()

    assert job.proc.poll() is None, "the job exited"
    restarts = job.log_file.read_text(errors="replace")[log_mark:].count("restarting the query")
    return {
        "brokerDownSeconds": round(up_at - down_at, 1),
        "stopSeconds": round(stop_s, 1),
        "startSeconds": round(start_s, 1),
        "unansweredWhenItWentAway": in_flight,
        "queryRestarts": restarts,
        "firstBatchAfterReturnSeconds": round(first_commit_s, 1),
        "newClientAnsweredAfterReturnSeconds": round(new_request_s, 1),
    }
