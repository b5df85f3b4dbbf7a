"""Single hostile records through the real broker and job (issue 8's table): each one used to stop
the query, or cross the trust boundary. Each is answered or reported; the query keeps running; no
client record reaches the service's own topics, Kafka's internal ones or the coordinators' metadata.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from client.topic_reader import end_offsets, events, read_records
from coordinator import Errors, coordinator_partition
from coordinator.envelope import BROADCAST_KEY
from streaming.config import SERVICE_TOPICS
from streaming.trust import MAC_HEADER, STAMP_HEADER, key_path, read_key

from .harness import probe_keys, simple_commit, wait_topics_known
from .topic_audit import TopicAudit, service_records_only

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("plain")]

INVALID_REQUEST = Errors.INVALID_REQUEST.code
REPLAY_TOPIC = f"hostile-replayed-after-{uuid.uuid4().hex[:8]}"  # created after the broadcast replayed
CLIENT_ID = "hostile"  # every answer this module looks for is to this client (or to "", see 1002)


@pytest.fixture(scope="module", autouse=True)
def reply_topics(job):
    """Reply topics a client may use (they match the pattern and exist), one of them small; the
    job knows them before the first test (it checks a reply topic against its topic metadata)."""
    admin = KafkaAdminClient(bootstrap_servers=job.bootstrap)
    try:
        admin.create_topics(
            [
                NewTopic(job.topics["responses"] + ".team-a", 1, 1),
                NewTopic(job.topics["responses"] + ".small", 1, 1, topic_configs={"max.message.bytes": "3000"}),
            ]
        )
    finally:
        admin.close()
    wait_topics_known(job, {job.topics["responses"] + ".team-a": 1, job.topics["responses"] + ".small": 1})


@pytest.fixture(scope="module")
def since(job, reply_topics):
    """Where the answer and event topics ended before this module's records: the job is shared,
    and other clients' answers may carry the same correlation ids."""
    topics = [job.topics["responses"], job.topics["events"]]
    topics += [job.topics["responses"] + ".team-a", job.topics["responses"] + ".small"]
    return {t: end_offsets(job.bootstrap, t) for t in topics}


@pytest.fixture(scope="module")
def producer(job):
    p = KafkaProducer(bootstrap_servers=job.bootstrap, acks="all")
    yield p
    p.close()


@pytest.fixture(scope="module")
def audit(job, since):
    """What every topic holds before the hostile records (checked at the end of the module)."""
    return TopicAudit(job.bootstrap)


def envelope(cid: int, api: str, version: int, body: dict, client_id: str = CLIENT_ID, **extra) -> bytes:
    return json.dumps(
        {"apiKey": api, "apiVersion": version, "correlationId": cid, "clientId": client_id, "request": body, **extra}
    ).encode()


def send(job, producer, key: bytes | None, value: bytes | None, topic: str | None = None, headers=None) -> None:
    producer.send(topic or job.topics["requests"], key=key, value=value, headers=headers or [])
    producer.flush()


def answers(job, since, cids: set[int], timeout_s: float = 90) -> dict[int, tuple[str, dict]]:
    """correlationId -> (topic it was written to, envelope), for every id in `cids`, from every
    response topic a client could be answered on (this module's client's answers since it began):
    the three topics read at once until every id is found, then to their ends (no id may be answered
    on two topics)."""
    topics = [job.topics["responses"], job.topics["responses"] + ".team-a", job.topics["responses"] + ".small"]
    found: dict[int, tuple[str, dict]] = {}
    consumer = KafkaConsumer(bootstrap_servers=job.bootstrap, group_id=None, enable_auto_commit=False)
    try:
        tps = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, since[tp.topic].get(tp.partition, 0))
        deadline, ends = time.monotonic() + timeout_s, None
        while time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=200).items():
                for r in records:
                    try:
                        env = json.loads(r.value)
                    except (TypeError, ValueError):
                        continue
                    if (
                        isinstance(env, dict)
                        and env.get("correlationId") in cids
                        and env.get("clientId") in (CLIENT_ID, "")
                    ):
                        cid = env["correlationId"]
                        assert found.get(cid, (tp.topic,))[0] == tp.topic, f"{cid} answered on two topics"
                        found[cid] = (tp.topic, env)
            if ends is None and cids <= set(found):
                ends = consumer.end_offsets(tps)
            if ends is not None and all(consumer.position(tp) >= end for tp, end in ends.items()):
                break
    finally:
        consumer.close()
    return found


def assert_alive(job) -> None:
    c = job.client("liveness")
    try:
        r = c.request("FindCoordinator", 3, {"key": "alive", "keyType": 0}, timeout=90)
        assert r["errorCode"] == 0 and r["nodeId"] == coordinator_partition("alive", job.cfg.coordinator_partitions)
    finally:
        c.close()
    assert job.proc.poll() is None, job.tail()


def test_a_record_key_that_is_not_utf8(job, producer, since, audit):
    send(job, producer, b"\xff\xfe", envelope(1001, "FindCoordinator", 3, {"key": "g", "keyType": 0}))
    [(topic, env)] = answers(job, since, {1001}).values()
    assert env["response"]["errorCode"] == INVALID_REQUEST and "UTF-8" in env["response"]["errorMessage"]
    assert_alive(job)


def test_damaged_json_with_a_lone_surrogate_client_id(job, producer, since, audit):
    send(
        job, producer, b"g", b'{"correlationId": 1002, "clientId": "\\ud800", "apiKey": "FindCoordinator", "request": {'
    )
    [(topic, env)] = answers(job, since, {1002}).values()
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
def test_reply_to_of_an_unknown_api_is_checked(job, producer, since, audit, cid, reply_to, reason):
    reply_to = reply_to.format(**job.topics)
    send(job, producer, b"g", envelope(cid, "NoSuchApi", 0, {}, replyTo=reply_to))
    [(topic, env)] = answers(job, since, {cid}).values()
    assert topic == job.topics["responses"]
    assert env["response"]["errorCode"] == INVALID_REQUEST and reason in env["response"]["errorMessage"]
    assert_alive(job)


def test_an_unsupported_version_answer_never_lands_in_the_state_log(job, producer, since, audit):
    send(job, producer, b"g", envelope(1008, "FindCoordinator", 99, {}, replyTo=job.topics["state_log"]))
    [(topic, env)] = answers(job, since, {1008}).values()
    assert topic == job.topics["responses"] and env["response"]["errorCode"] == INVALID_REQUEST
    assert service_records_only(job)


def test_the_broadcast_key_on_a_client_record(job, producer, since, audit):
    send(job, producer, BROADCAST_KEY.encode(), envelope(1009, "FindCoordinator", 3, {"key": "g", "keyType": 0}))
    [(topic, env)] = answers(job, since, {1009}).values()
    assert env["response"]["errorCode"] == INVALID_REQUEST and "reserved" in env["response"]["errorMessage"]
    assert_alive(job)


def test_forged_metadata_from_a_client_or_on_the_internal_topic_is_not_applied(job, producer, since, audit):
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
    [(_, env)] = answers(job, since, {1010}).values()
    assert env["response"]["errorCode"] == INVALID_REQUEST
    found = events(
        job.bootstrap,
        job.topics["events"],
        timeout_s=90,
        start=since[job.topics["events"]],
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
    [(topic, env)] = answers(job, since, {1013}).values()
    assert topic == job.topics["responses"] + ".team-a" and env["response"]["errorCode"] == 0


def test_a_replayed_genuine_metadata_broadcast_is_refused_and_reported(job, producer, since, audit):
    """A genuine broadcast, copied from the internal topic and written again after a new topic was
    created, once rolled the coordinators' metadata back (the new topic unknown for 30 s and more)."""
    internal = job.topics["internal"]
    captured = [
        r
        for r in read_records(job.bootstrap, internal, timeout_s=30)
        if r.key == BROADCAST_KEY.encode() and STAMP_HEADER in dict(r.headers)  # (not the forged ones above)
    ][-1]  # the newest genuine broadcast so far, as an attacker with read access copies it
    topic = REPLAY_TOPIC
    assert topic not in {t["topicName"] for t in json.loads(captured.value)["request"]["topicStates"]}
    wait_topics_known(job, {topic: 2})  # every coordinator partition knows the new topic
    send(job, producer, captured.key, captured.value, topic=internal, headers=list(captured.headers))
    found = events(
        job.bootstrap,
        job.topics["events"],
        timeout_s=90,
        start=since[job.topics["events"]],
        until=lambda recs: any(b"ReplayedInternalRecord" in (r.value or b"") for r in recs),
    )
    [replayed] = [e for e in found if e["event"] == "ReplayedInternalRecord"]  # one, by the key's owner
    assert replayed["publisher"] == "metadata-publisher"
    assert (replayed["epoch"], replayed["sequence"]) <= (replayed["lastEpoch"], replayed["lastSequence"])
    # Every coordinator partition still knows the topic: the batch that refused the copy is over,
    # and an OffsetCommit naming the topic is accepted everywhere (UNKNOWN_TOPIC_OR_PARTITION if not).
    client = job.client()
    try:
        keys = probe_keys(job.cfg.coordinator_partitions, prefix="replay-probe")
        cids = {client.send("OffsetCommit", 9, simple_commit(k, {topic: {0: 1, 1: 1}}), key=k): k for k in keys}
        errors = {
            cids[cid]: [p["errorCode"] for t in a["response"]["topics"] for p in t["partitions"]]
            for cid in cids
            for a in [client.wait(cid, timeout=60)]
        }
    finally:
        client.close()
    assert all(codes == [0, 0] for codes in errors.values()), errors


def test_the_internal_key_is_not_in_the_jobs_log(job):
    key = read_key(key_path(job.cfg.checkpoint))
    padded = key.ljust(64, b"\0")
    log = job.log_file.read_bytes().lower()
    for secret in (key.hex(), bytes(b ^ 0x36 for b in padded).hex(), bytes(b ^ 0x5C for b in padded).hex()):
        assert secret.encode() not in log


def test_an_answer_larger_than_the_reply_topic_takes(job, producer, since, audit):
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
    [(topic, env)] = answers(job, since, {1014}).values()
    assert topic == small and env["response"]["errorCode"] == Errors.UNKNOWN_SERVER_ERROR.code
    assert "larger than" in env["response"]["errorMessage"]
    assert_alive(job)


def test_150_joins_listing_a_protocol_twice_in_one_partition(job, producer, since, audit):
    partitions = job.cfg.coordinator_partitions
    groups = [g for g in (f"dup-proto-{i}" for i in range(50_000)) if coordinator_partition(g, partitions) == 7][:150]
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
    got = answers(job, since, set(range(2000, 2150)))
    assert {env["response"]["errorCode"] for _, env in got.values()} == {Errors.INCONSISTENT_GROUP_PROTOCOL.code}
    assert_alive(job)


def test_nothing_was_written_outside_the_services_answer_topics(job, audit):
    """Last in the module: the audit of every topic against what it held at the start."""
    job.wait_caught_up()
    allowed = {job.topics[t] for t in SERVICE_TOPICS}
    allowed |= {job.topics["responses"] + ".team-a", job.topics["responses"] + ".small", REPLAY_TOPIC}
    assert audit.grown_topics() <= allowed, audit.grown_topics() - allowed
    assert service_records_only(job)
