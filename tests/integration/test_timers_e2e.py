"""Timers fire with no traffic at all, and an idle job runs no micro-batch (streaming/timer_waker.py):
a classic member's session expires, a transaction left open is aborted by its timeout and offsets
committed with a retention expire, while the test sends nothing; every micro-batch of that window
read at least one new record (a wake record or a metadata broadcast), i.e. Spark ran no no-data
batch. How late the timers fire is measured by bench/idle_cost.py, not asserted here."""

from __future__ import annotations

import json
import uuid

import pytest

from client.topic_reader import end_offsets, read_records
from coordinator import Errors
from streaming.timer_waker import WAKE_KEY_PREFIX

from .harness import new_member_join, simple_commit, wait_topics_known

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("observed")]


def committed_batch_ids(job) -> list[int]:
    commits = job.cfg.checkpoint / "commits"
    return sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit())


def timers_topic(job) -> dict[str, dict]:
    """The newest deadline each coordinator partition reported (for a failure's message)."""
    return {r.key.decode(): json.loads(r.value) for r in read_records(job.bootstrap, job.topics["timers"], timeout_s=5)}


def test_timers_fire_without_traffic_and_no_batch_runs_without_a_record(job):
    tag = uuid.uuid4().hex[:8]
    group, offsets_group, tid, topic = f"timers-{tag}", f"timers-offsets-{tag}", f"timers-tx-{tag}", f"timers-{tag}"
    wait_topics_known(job, {topic: 1})
    events_start = end_offsets(job.bootstrap, job.topics["events"])
    client = job.client(f"timers-client-{tag}")
    try:
        # A classic member that never completes its join: JoinGroup without a member id is answered
        # MEMBER_ID_REQUIRED and the member stays pending until its session (6 s) expires. The group
        # gets an offset first: a pending member does not make a group non-empty, and the retention
        # check (every 2 s on this job) deletes an empty group without offsets, as Kafka does.
        kept = client.request("OffsetCommit", 9, simple_commit(group, {topic: {0: 1}}))
        assert kept["topics"][0]["partitions"][0]["errorCode"] == 0, kept
        joined = client.request(
            "JoinGroup",
            9,
            new_member_join(group),
            timeout=60,
        )
        assert joined["errorCode"] == Errors.MEMBER_ID_REQUIRED.code, joined
        # A transaction left open (1 s timeout).
        init = client.request(
            "InitProducerId",
            5,
            {"transactionalId": tid, "transactionTimeoutMs": 1000, "producerId": -1, "producerEpoch": -1},
            key=tid,
        )
        assert init["errorCode"] == 0, init
        added = client.request(
            "AddPartitionsToTxn",
            3,
            {
                "v3AndBelowTransactionalId": tid,
                "v3AndBelowProducerId": init["producerId"],
                "v3AndBelowProducerEpoch": init["producerEpoch"],
                "v3AndBelowTopics": [{"name": topic, "partitions": [0]}],
            },
            key=tid,
        )
        [topic_result] = added["resultsByTopicV3AndBelow"]
        assert topic_result["resultsByPartition"][0]["partitionErrorCode"] == 0, added
        # Offsets kept for one second (OffsetCommit v4's retentionTimeMs).
        committed = client.request(
            "OffsetCommit", 4, {**simple_commit(offsets_group, {topic: {0: 7}}), "retentionTimeMs": 1000}
        )
        assert committed["topics"][0]["partitions"][0]["errorCode"] == 0, committed
    finally:
        client.close()
    # From here on the test sends nothing.
    job.wait_caught_up()
    inputs = [job.topics["requests"], job.topics["internal"]]
    window_start = {t: end_offsets(job.bootstrap, t) for t in inputs}
    batches_before = committed_batch_ids(job)

    wanted = {
        (group, "MemberSessionExpired"),
        (tid, "TransactionAbortedByTimeout"),
        (offsets_group, "OffsetsExpired"),
    }

    def seen(recs) -> set[tuple[str, str]]:
        got = set()
        for r in recs:
            key = (r.key or b"").decode("utf-8", "replace")
            if r.value and (key, json.loads(r.value).get("event")) in wanted:
                got.add((key, json.loads(r.value)["event"]))
        return got

    recs = read_records(
        job.bootstrap, job.topics["events"], timeout_s=90, start=events_start, until=lambda recs: seen(recs) == wanted
    )
    if seen(recs) != wanted:  # say what the waker knew and did about the missing ones
        from coordinator.routing import coordinator_partition

        n = job.cfg.coordinator_partitions
        missing = wanted - seen(recs)
        parts = {str(coordinator_partition(key, n)) for key, _ in missing}
        keys = {key for key, _ in missing}
        wakes = [
            (r.timestamp, r.key, r.value)
            for r in read_records(job.bootstrap, job.topics["internal"], timeout_s=5)
            if (r.key or b"").startswith(WAKE_KEY_PREFIX.encode())
        ]
        theirs = [(r.timestamp, r.value) for r in recs if (r.key or b"").decode() in keys]
        deadlines = {p: d for p, d in timers_topic(job).items() if p in parts}
        raise AssertionError(f"missing {missing}: their events {theirs}; deadlines {deadlines}; wakes {wakes}")

    # Every micro-batch of the quiet window read a new record: wake records (and metadata broadcasts
    # of other modules' topics), never an empty trigger.
    job.wait_caught_up()
    new_batches = [b for b in committed_batch_ids(job) if not batches_before or b > batches_before[-1]]
    arrived, wakes = 0, 0
    for t in inputs:
        for r in read_records(job.bootstrap, t, timeout_s=5, start=window_start[t]):
            arrived += 1
            wakes += (r.key or b"").startswith(WAKE_KEY_PREFIX.encode())
    assert wakes >= 1  # the timers were started by the waker: nothing else arrived for them
    assert 1 <= len(new_batches) <= arrived, (len(new_batches), arrived)
