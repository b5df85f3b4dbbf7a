"""Single hostile records through the real broker and job (issue 8's table): each one used to stop
the query, or cross the trust boundary. Each is answered or reported; the query keeps running; no
client record reaches the service's own topics, Kafka's internal ones or the coordinators' metadata.
"""

from __future__ import annotations

import json

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

from client.topic_reader import events, read_records
from coordinator import Errors, coordinator_partition
from coordinator.envelope import BROADCAST_KEY
from streaming.trust import MAC_HEADER

from .topic_audit import TopicAudit, service_records_only

pytestmark = pytest.mark.integration

INVALID_REQUEST = Errors.INVALID_REQUEST.code


@pytest.fixture(scope="module")
def job(job_factory):
    j = job_factory(start=False)
    admin = KafkaAdminClient(bootstrap_servers=j.bootstrap)
    try:  # reply topics a client may use (they match the pattern and exist), one of them small
        admin.create_topics(
            [
                NewTopic(j.topics["responses"] + ".team-a", 1, 1),
                NewTopic(j.topics["responses"] + ".small", 1, 1, topic_configs={"max.message.bytes": "3000"}),
            ]
        )
    finally:
        admin.close()
    return j.start()


@pytest.fixture(scope="module")
def producer(job):
    p = KafkaProducer(bootstrap_servers=job.bootstrap, acks="all")
    yield p
    p.close()


@pytest.fixture(scope="module")
def audit(job):
    """What every topic holds before the hostile records (checked at the end of the module)."""
    return TopicAudit(job.bootstrap)


def envelope(cid: int, api: str, version: int, body: dict, client_id: str = "hostile", **extra) -> bytes:
    return json.dumps(
        {"apiKey": api, "apiVersion": version, "correlationId": cid, "clientId": client_id, "request": body, **extra}
    ).encode()


def send(job, producer, key: bytes | None, value: bytes | None, topic: str | None = None, headers=None) -> None:
    producer.send(topic or job.topics["requests"], key=key, value=value, headers=headers or [])
    producer.flush()


def answers(job, cids: set[int], timeout_s: float = 90) -> dict[int, tuple[str, dict]]:
    """correlationId -> (topic it was written to, envelope), for every id in `cids`, from every
    response topic a client could be answered on."""
    found: dict[int, tuple[str, dict]] = {}

    def collect(topic):
        def until(recs):
            for r in recs:
                try:
                    env = json.loads(r.value)
                except (TypeError, ValueError):
                    continue
                if isinstance(env, dict) and env.get("correlationId") in cids:
                    found[env["correlationId"]] = (topic, env)
            return cids <= set(found)

        return until

    for topic in (job.topics["responses"], job.topics["responses"] + ".team-a", job.topics["responses"] + ".small"):
        read_records(
            job.bootstrap, topic, timeout_s=timeout_s if topic == job.topics["responses"] else 5, until=collect(topic)
        )
    return found


def assert_alive(job) -> None:
    c = job.client("liveness")
    try:
        r = c.request("FindCoordinator", 3, {"key": "alive", "keyType": 0}, timeout=90)
        assert r["errorCode"] == 0 and r["nodeId"] == coordinator_partition("alive")
    finally:
        c.close()
    assert job.proc.poll() is None, job.tail()


def test_a_record_key_that_is_not_utf8(job, producer, audit):
    send(job, producer, b"\xff\xfe", envelope(1001, "FindCoordinator", 3, {"key": "g", "keyType": 0}))
    [(topic, env)] = answers(job, {1001}).values()
    assert env["response"]["errorCode"] == INVALID_REQUEST and "UTF-8" in env["response"]["errorMessage"]
    assert_alive(job)


def test_damaged_json_with_a_lone_surrogate_client_id(job, producer, audit):
    send(
        job, producer, b"g", b'{"correlationId": 1002, "clientId": "\\ud800", "apiKey": "FindCoordinator", "request": {'
    )
    [(topic, env)] = answers(job, {1002}).values()
    assert env["clientId"] == "" and env["response"]["errorCode"] == INVALID_REQUEST
    assert_alive(job)


@pytest.mark.parametrize(
    "cid, reply_to, reason",
    [
        (1003, "bad topic!", "matching"),
        (1004, "__consumer_offsets", "matching"),
        (1005, "no-such-topic", "matching"),
        (1006, "{responses}.nowhere", "does not exist"),
        (1007, "{state_log}", "matching"),
    ],
)
def test_reply_to_of_an_unknown_api_is_checked(job, producer, audit, cid, reply_to, reason):
    reply_to = reply_to.format(**job.topics)
    send(job, producer, b"g", envelope(cid, "NoSuchApi", 0, {}, replyTo=reply_to))
    [(topic, env)] = answers(job, {cid}).values()
    assert topic == job.topics["responses"]
    assert env["response"]["errorCode"] == INVALID_REQUEST and reason in env["response"]["errorMessage"]
    assert_alive(job)


def test_an_unsupported_version_answer_never_lands_in_the_state_log(job, producer, audit):
    send(job, producer, b"g", envelope(1008, "FindCoordinator", 99, {}, replyTo=job.topics["state_log"]))
    [(topic, env)] = answers(job, {1008}).values()
    assert topic == job.topics["responses"] and env["response"]["errorCode"] == INVALID_REQUEST
    assert service_records_only(job)


def test_the_broadcast_key_on_a_client_record(job, producer, audit):
    send(job, producer, BROADCAST_KEY.encode(), envelope(1009, "FindCoordinator", 3, {"key": "g", "keyType": 0}))
    [(topic, env)] = answers(job, {1009}).values()
    assert env["response"]["errorCode"] == INVALID_REQUEST and "reserved" in env["response"]["errorMessage"]
    assert_alive(job)


def test_forged_metadata_from_a_client_or_on_the_internal_topic_is_not_applied(job, producer, audit):
    empty = {"topicStates": []}
    send(job, producer, BROADCAST_KEY.encode(), envelope(1010, "UpdateMetadata", 0, empty))
    for cid, headers in ((1011, []), (1012, [(MAC_HEADER, b"0" * 64)])):
        send(
            job,
            producer,
            BROADCAST_KEY.encode(),
            envelope(cid, "UpdateMetadata", 0, empty),
            topic=job.topics["internal"],
            headers=headers,
        )
    [(_, env)] = answers(job, {1010}).values()
    assert env["response"]["errorCode"] == INVALID_REQUEST
    found = events(
        job.bootstrap,
        job.topics["events"],
        timeout_s=90,
        until=lambda recs: sum(b"ForgedInternalRecord" in (r.value or b"") for r in recs) >= 2,
    )
    assert sum(e["event"] == "ForgedInternalRecord" for e in found) == 2
    # Had any of them been applied, the coordinators would believe no topic exists, and this
    # reply topic would be refused.
    send(
        job,
        producer,
        b"g",
        envelope(1013, "FindCoordinator", 3, {"key": "g", "keyType": 0}, replyTo=job.topics["responses"] + ".team-a"),
    )
    [(topic, env)] = answers(job, {1013}).values()
    assert topic == job.topics["responses"] + ".team-a" and env["response"]["errorCode"] == 0


def test_an_answer_larger_than_the_reply_topic_takes(job, producer, audit):
    """The sink would fail on it (RecordTooLargeException), and again on every replay."""
    small = job.topics["responses"] + ".small"
    send(
        job,
        producer,
        b"g",
        envelope(
            1014,
            "FindCoordinator",
            4,
            {"keyType": 0, "coordinatorKeys": [f"key-{i}" * 10 for i in range(100)]},
            replyTo=small,
        ),
    )
    [(topic, env)] = answers(job, {1014}).values()
    assert topic == small and env["response"]["errorCode"] == Errors.UNKNOWN_SERVER_ERROR.code
    assert "larger than" in env["response"]["errorMessage"]
    assert_alive(job)


def test_150_joins_listing_a_protocol_twice_in_one_partition(job, producer, audit):
    groups = [g for g in (f"dup-proto-{i}" for i in range(50_000)) if coordinator_partition(g) == 7][:150]
    for i, g in enumerate(groups):
        producer.send(
            job.topics["requests"],
            key=g.encode(),
            value=envelope(
                2000 + i,
                "JoinGroup",
                9,
                {
                    "groupId": g,
                    "sessionTimeoutMs": 10_000,
                    "rebalanceTimeoutMs": 5_000,
                    "memberId": "",
                    "groupInstanceId": None,
                    "protocolType": "consumer",
                    "reason": None,
                    "protocols": [{"name": "range", "metadata": ""}, {"name": "range", "metadata": ""}],
                },
            ),
        )
    producer.flush()
    got = answers(job, set(range(2000, 2150)))
    assert {env["response"]["errorCode"] for _, env in got.values()} == {Errors.INCONSISTENT_GROUP_PROTOCOL.code}
    assert_alive(job)


def test_nothing_was_written_outside_the_services_answer_topics(job, audit):
    """Last in the module: the audit of every topic against what it held at the start."""
    job.wait_caught_up()
    allowed = {
        job.topics[t] for t in ("requests", "internal", "responses", "events", "state_log", "dead_letters", "metrics")
    }
    allowed |= {job.topics["responses"] + ".team-a", job.topics["responses"] + ".small"}
    assert audit.grown_topics() <= allowed, audit.grown_topics() - allowed
    assert service_records_only(job)
