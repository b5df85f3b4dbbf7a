"""Metrics end to end: the real broker and the test run's shared `observed` job, scraped from the
job's Prometheus endpoint.

A classic group forms, rebalances when a second member joins, loses that member to its session
timeout and empties when the first leaves; a KIP-848 group forms, loses its member to its session
timeout and, with no offsets, is expired (the two groups' flows at once: their session expiries
overlap); then a simple group commits offsets. Each step is seen in the scraped series,
as a change from a scrape taken when the test starts (this module runs first on a fresh job,
`order=-1`, but counts nothing another module may have left). Then an exporter of our
own, started on the metrics topic, rebuilds the same totals as the job's (the newest record of every
coordinator partition counts, whatever was written twice): `python -m streaming.metrics_exporter`,
as an operator runs it.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from client.classic_group import ClassicGroupMember
from client.consumer_group import ConsumerGroupMember
from deploy.kafka_local import free_port
from streaming.config import ROOT

from .gateway_process import run_concurrently
from .harness import create_data_topics

# First on the observed job (fresh counts): the histogram of a job that has not rebalanced yet.
pytestmark = [pytest.mark.integration, pytest.mark.shared_job("observed", order=-1)]

TOPIC = "metrics-e2e-data"
CLASSIC, CONSUMER, SIMPLE = "metrics-e2e-classic", "metrics-e2e-consumer", "metrics-e2e-simple"
CONSUMER_SESSION_MS = 8000  # the consumer group's own session timeout (the job's default is 30 s)
WAIT = 120  # seconds: the machine is shared; conditions are polled, never timed
P = "kafka_coordinator_"
UNKNOWN_TOPIC_OR_PARTITION, GROUP_RESOURCE = 3, 32  # GROUP_RESOURCE: ConfigResource.Type.GROUP


def metrics_url(job) -> str:
    return f"http://127.0.0.1:{job.cfg.metrics['port']}/metrics"


@pytest.fixture(scope="module")
def topic(job):
    """The data topic, known to the coordinator partitions of this module's groups.

    The probe is an OffsetCommit with generation 1 for a group that does not exist yet: a topic the
    coordinator does not know is answered UNKNOWN_TOPIC_OR_PARTITION, a known one GROUP_ID_NOT_FOUND,
    and nothing is stored or counted (harness.wait_topics_known commits offsets of probe groups,
    which would move this module's totals)."""
    create_data_topics(job.bootstrap, {TOPIC: 4})
    client = job.client("metrics-e2e-probe")
    try:
        deadline = time.monotonic() + WAIT
        for group in (CONSUMER, SIMPLE):
            while True:
                resp = client.request(
                    "OffsetCommit",
                    9,
                    {
                        "groupId": group,
                        "generationIdOrMemberEpoch": 1,
                        "memberId": "metrics-e2e-probe",
                        "groupInstanceId": None,
                        "topics": [
                            {
                                "name": TOPIC,
                                "partitions": [
                                    {
                                        "partitionIndex": p,
                                        "committedOffset": 0,
                                        "committedLeaderEpoch": -1,
                                        "committedMetadata": None,
                                    }
                                    for p in range(4)
                                ],
                            }
                        ],
                    },
                    key=group,
                    timeout=WAIT,
                )
                codes = {p["errorCode"] for t in resp["topics"] for p in t["partitions"]}
                if UNKNOWN_TOPIC_OR_PARTITION not in codes:
                    assert 0 not in codes, f"the probe committed offsets of {group}: {resp}"
                    break
                assert time.monotonic() < deadline, f"the job never learnt {TOPIC}:\n{job.tail()}"
                time.sleep(0.2)
        # The KIP-848 group's own session timeout, set before its member joins (as a Kafka user does).
        resp = client.request(
            "IncrementalAlterConfigs",
            1,
            {
                "resources": [
                    {
                        "resourceType": GROUP_RESOURCE,
                        "resourceName": CONSUMER,
                        "configs": [
                            {
                                "name": "consumer.session.timeout.ms",
                                "configOperation": 0,
                                "value": str(CONSUMER_SESSION_MS),
                            }
                        ],
                    }
                ],
                "validateOnly": False,
            },
            key=CONSUMER,
            timeout=WAIT,
        )
        assert [(r["errorCode"], r["errorMessage"]) for r in resp["responses"]] == [(0, None)], resp
    finally:
        client.close()
    return TOPIC


def scrape_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def parse(text: str) -> dict:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


def scrape(job) -> dict:
    return parse(scrape_text(metrics_url(job)))


def value(m: dict, name: str, **labels) -> float:
    return m.get((P + name, tuple(sorted(labels.items()))), 0)


def wait_until(job, what: str, predicate, timeout: float = WAIT) -> dict:
    """Scrape until `predicate(metrics)` holds; the last scrape."""
    deadline = time.monotonic() + timeout
    last: dict = {}
    while time.monotonic() < deadline:
        try:
            last = scrape(job)
        except OSError:  # the endpoint is not up yet
            last = {}
        if last and predicate(last):
            return last
        time.sleep(0.5)
    shown = {k: v for k, v in last.items() if "group" in k[0] or "txn" in k[0]}
    raise AssertionError(f"metrics never showed {what}: {shown}\n{job.tail()}")


def test_metrics_follow_groups_forming_rebalancing_and_expiring(job, topic):
    m = wait_until(
        job,
        "the job's first batches",
        lambda m: value(m, "stream_up") == 1 and value(m, "requests_total", api="FindCoordinator") >= 1,
    )
    assert value(m, "stream_batches_total") >= 1 and value(m, "partitions_reporting") >= 1
    assert value(m, "state_bytes", partition=str(next(iter(_partitions(m))))) > 0
    # Every count below is a change from this scrape (nothing else runs on the job meanwhile).
    base = m

    def d(m: dict, name: str, **labels) -> float:
        return value(m, name, **labels) - value(base, name, **labels)

    if not any(k[0] == P + "group_rebalance_started_total" for k in base):  # a fresh job (order=-1)
        text = scrape_text(metrics_url(job))
        assert f"# TYPE {P}group_rebalance_duration_ms histogram" not in text  # nothing rebalanced yet

    # The classic group's flow and the KIP-848 group's run at once, so that their members' session
    # expiries are waited for together; each counts only the series of its own protocol.
    def classic_flow() -> None:
        # ---- a classic group forms
        kw = dict(
            requests_topic=job.topics["requests"],
            responses_topic=job.topics["responses"],
            session_timeout_ms=10000,
            heartbeat_interval_ms=1000,
            rebalance_timeout_ms=30000,
        )
        a = ClassicGroupMember(job.bootstrap, CLASSIC, [TOPIC], **kw).start()
        b = ClassicGroupMember(job.bootstrap, CLASSIC, [TOPIC], **kw)
        try:
            a.wait_stable(1, timeout=WAIT)
            m = wait_until(
                job,
                "a Stable classic group",
                lambda m: (
                    d(m, "classic_group_count", state="Stable") == 1
                    and d(m, "group_rebalance_completed_total", protocol="classic") == 1
                    and d(m, "requests_total", api="Heartbeat") >= 1
                ),
            )
            # (A JoinGroup without a member id creates the group, as in Kafka; the expiry check, every
            # 2 s here, may delete it again, Empty, before the member's second JoinGroup.)
            assert d(m, "group_count", protocol="classic") == 1
            assert (
                d(m, "group_created_total", protocol="classic") - d(m, "group_deleted_total", protocol="classic") == 1
            )
            assert d(m, "group_member_joined_total", protocol="classic") == 1
            # The initial rebalance waits group.initial.rebalance.delay.ms (3 s) of logical time.
            assert d(m, "group_rebalance_duration_ms_count", protocol="classic") == 1
            assert d(m, "group_rebalance_duration_ms_sum", protocol="classic") >= 3000
            assert d(m, "group_heartbeat_latency_ms_count", api="Heartbeat") >= 1

            # ---- a second member: a rebalance
            b.start()
            b.wait_stable(2, timeout=WAIT)
            m = wait_until(
                job, "the second rebalance", lambda m: d(m, "group_rebalance_completed_total", protocol="classic") >= 2
            )
            assert d(m, "group_rebalance_started_total", protocol="classic") >= 2
            assert d(m, "group_member_joined_total", protocol="classic") == 2

            # ---- the second member dies: its session expires, the group rebalances without it
            b.abandon()
            m = wait_until(
                job,
                "the member's session expiry",
                lambda m: (
                    d(m, "group_member_left_total", protocol="classic", reason="expired") >= 1
                    and d(m, "group_rebalance_completed_total", protocol="classic") >= 3
                ),
            )
            assert d(m, "classic_group_count", state="Stable") == 1
            deleted = value(m, "group_deleted_total", protocol="classic")
        finally:
            b.abandon()
            a.close(leave=True)
        # ---- the last member leaves: the group is Empty, then (no offsets) expired and deleted
        m = wait_until(
            job,
            "the classic group leaving and expiring",
            lambda m: (
                d(m, "group_member_left_total", protocol="classic", reason="left") >= 1
                and value(m, "group_deleted_total", protocol="classic") == deleted + 1
            ),
        )
        assert d(m, "group_count", protocol="classic") == 0
        assert (
            sum(
                d(m, "classic_group_count", state=s)
                for s in ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable")
            )
            == 0
        )

    def consumer_flow() -> None:
        # ---- a KIP-848 group forms; its member dies; the group expires (its session: 8 s, the
        # group's config set by the `topic` fixture)
        cc = job.client("metrics-e2e-cg")
        member = ConsumerGroupMember(cc, CONSUMER, [TOPIC], response_timeout_s=4).start()
        try:
            m = wait_until(
                job,
                "a Stable consumer group",
                lambda m: (
                    d(m, "consumer_group_count", state="Stable") == 1
                    and d(m, "group_rebalance_completed_total", protocol="consumer") >= 1
                ),
            )
            assert d(m, "group_created_total", protocol="consumer") == 1
            assert d(m, "group_rebalance_started_total", protocol="consumer") >= 1
            assert d(m, "group_assignment_changes_total", protocol="consumer") >= 1
            assert d(m, "requests_total", api="ConsumerGroupHeartbeat") >= 1
            assert d(m, "assignment_compute_seconds_count") >= 1  # wall clock, from the step
            member.kill()
            m = wait_until(
                job,
                "the consumer member's session expiry and the group's expiry",
                lambda m: (
                    d(m, "group_member_left_total", protocol="consumer", reason="expired") == 1
                    and d(m, "group_deleted_total", protocol="consumer") == 1
                ),
            )
            assert d(m, "group_count", protocol="consumer") == 0
        finally:
            member.kill()
            cc.close()

    run_concurrently({"classic": classic_flow, "consumer": consumer_flow})

    # After both: a simple group is a classic group (the classic flow counts those).
    simple = job.client("metrics-e2e-simple")
    try:
        # ---- offsets committed by a simple group
        resp = simple.request(
            "OffsetCommit",
            9,
            {
                "groupId": SIMPLE,
                "generationIdOrMemberEpoch": -1,
                "memberId": "",
                "groupInstanceId": None,
                "topics": [
                    {
                        "name": TOPIC,
                        "partitions": [
                            {
                                "partitionIndex": p,
                                "committedOffset": 10 + p,
                                "committedLeaderEpoch": -1,
                                "committedMetadata": "",
                            }
                            for p in range(3)
                        ],
                    }
                ],
            },
            key=SIMPLE,
            timeout=WAIT,
        )
        assert all(p["errorCode"] == 0 for t in resp["topics"] for p in t["partitions"])
        m = wait_until(job, "the offset commits", lambda m: d(m, "group_offset_commit_total") == 3)
    finally:
        simple.close()

    # ---- the standalone exporter, started afresh on the metrics topic, rebuilds the same totals
    port = free_port()
    own = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streaming.metrics_exporter",
            "--config",
            str(job.config_file),
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + WAIT
        theirs = mine = {}
        while True:
            try:
                theirs, mine = _deterministic(scrape(job)), _deterministic(parse(scrape_text(url)))
            except OSError:  # not listening yet
                assert own.poll() is None, "the standalone exporter exited"
            if mine and theirs == mine and d(mine, "group_offset_commit_total") == 3:
                break
            assert time.monotonic() < deadline, {
                k: (theirs.get(k), mine.get(k)) for k in set(theirs) | set(mine) if theirs.get(k) != mine.get(k)
            }
            time.sleep(0.5)
        # It finds the job's status file (same machine): the stream's health too.
        assert value(parse(scrape_text(url)), "stream_up") == 1
    finally:
        own.terminate()
        own.wait(timeout=30)


def _partitions(m: dict) -> list[int]:
    return sorted(int(dict(labels)["partition"]) for (name, labels) in m if name == P + "state_bytes")


def _deterministic(m: dict) -> dict:
    """The series computed from the metrics records alone (not the stream's health or wall clock),
    without the ones the job's own self-check requests keep moving."""
    return {
        k: v
        for k, v in m.items()
        if not k[0].startswith((P + "stream_", P + "assignment_compute"))
        and "FindCoordinator" not in str(k[1])
        and k[0] not in (P + "state_bytes",)
    }
