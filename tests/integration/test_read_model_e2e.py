"""The Redis read model end to end: the real broker, the real job with its projector query, a real
redis-server. Classic members join and sync, a KIP-848 group converges, offsets are committed (by a
member, by a simple group and by a committed transaction), and one transaction stays open. Once
the projector has caught up with the state log, the read model says what the coordinators answer
to DescribeGroups, ConsumerGroupDescribe, OffsetFetch and DescribeTransactions; after a FLUSHALL
it is rebuilt from the state log and says it again."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, TopicPartition

from client import ConsumerGroupMember
from client.admin import GroupAdmin
from client.classic_group import STABLE, ClassicGroupMember
from client.read_model import ReadModel
from client.transactional_producer import TransactionalProducer
from tests.client.read_model_compare import (
    classic_differences,
    consumer_differences,
    offsets_differences,
    txn_differences,
)

from .harness import create_data_topics

pytestmark = pytest.mark.integration

PARTITIONS = 4  # coordinator partitions (and state-log partitions): a lean job
TOPIC = "rm-e2e-orders"
CLASSIC, CONSUMER, SIMPLE = "rm-classic", "rm-consumer", "rm-simple"
TX_DONE, TX_OPEN = "rm-tx-committed", "rm-tx-open"
PREFIX = "rme2e"
WAIT = 180


@pytest.fixture(scope="module")
def job(job_factory, kafka, redis):
    create_data_topics(kafka.bootstrap, {TOPIC: 4})
    return job_factory(
        coordinator={
            "coordinator.partitions": PARTITIONS,
            "group.consumer.heartbeat.interval.ms": 1000,
            "group.consumer.min.heartbeat.interval.ms": 500,
        },
        stream={"metadata_refresh_ms": 1000},
        redis={"enabled": True, "url": redis.url, "prefix": PREFIX, "trigger_interval": "200 milliseconds"},
    )


@pytest.fixture(scope="module")
def client(job):
    c = job.client("rm-e2e-client")
    yield c
    c.close()


def until(what: str, check, timeout: float = WAIT, every: float = 0.5):
    """Poll `check()` until it returns something truthy; fail with the last value after `timeout`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"{what}: not reached in {timeout}s (last: {last!r})")


def state_log_ends(job) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=job.bootstrap, group_id=None)
    try:
        topic = job.topics["state_log"]
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
        return {tp.partition: o for tp, o in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def wait_caught_up(job, rm: ReadModel, rebuilt_after_ms: int | None = None) -> dict:
    """Until the projector's positions cover the state log's end offsets (read now)."""
    ends = state_log_ends(job)

    def fresh():
        f = rm.freshness()
        if rebuilt_after_ms is not None and (f["rebuiltAt"] or 0) < rebuilt_after_ms:
            return None
        return f if all(f["offsets"].get(p, 0) >= end for p, end in ends.items() if end > 0) else None

    return until(f"the projector covers the state log {ends}", fresh)


def transaction(client, tid: str) -> dict:
    return client.request("DescribeTransactions", 0, {"transactionalIds": [tid]}, key=tid, timeout=60)[
        "transactionStates"
    ][0]


def consumer_group(client) -> dict:
    return client.request(
        "ConsumerGroupDescribe",
        1,
        {"groupIds": [CONSUMER], "includeAuthorizedOperations": False},
        key=CONSUMER,
        timeout=60,
    )["groups"][0]


def fetched_offsets(client, group: str) -> list[dict]:
    resp = client.request(
        "OffsetFetch",
        9,
        {"groups": [{"groupId": group, "topics": None}], "requireStable": False},
        key=group,
        timeout=60,
    )
    return resp["groups"][0]["topics"]


def differences(client, rm: ReadModel) -> list[str]:
    """Everything the read model says that the coordinators do not."""
    diffs = []
    described = GroupAdmin(client, PARTITIONS).describe_groups([CLASSIC, SIMPLE])
    for g in (CLASSIC, SIMPLE):
        diffs += [f"{g}: {d}" for d in classic_differences(rm.group(g), described[g])]
    diffs += [f"{CONSUMER}: {d}" for d in consumer_differences(rm.group(CONSUMER), consumer_group(client))]
    for g in (CLASSIC, CONSUMER, SIMPLE):
        diffs += [f"{g}: {d}" for d in offsets_differences(rm.offsets(g), fetched_offsets(client, g))]
    for tid in (TX_DONE, TX_OPEN):
        diffs += [f"{tid}: {d}" for d in txn_differences(rm.transaction(tid), transaction(client, tid))]
    if {g["groupId"] for g in rm.groups()} != {CLASSIC, CONSUMER, SIMPLE}:
        diffs.append(f"groups: {[g['groupId'] for g in rm.groups()]}")
    if {t["transactionalId"] for t in rm.transactions()} != {TX_DONE, TX_OPEN}:
        diffs.append(f"transactions: {[t['transactionalId'] for t in rm.transactions()]}")
    return diffs


def test_read_model_matches_the_coordinators_and_survives_a_flush(job, client, redis):
    rm = ReadModel(redis.url, PREFIX)
    assert rm.ping()
    made: list = []
    try:
        # Classic: two members, one generation, the leader's range assignment; the leader commits.
        classic = [
            ClassicGroupMember(
                job.bootstrap,
                CLASSIC,
                [TOPIC],
                session_timeout_ms=30000,
                heartbeat_interval_ms=2000,
                rebalance_timeout_ms=60000,
                requests_topic=job.topics["requests"],
                responses_topic=job.topics["responses"],
            )
            for _ in range(2)
        ]
        made += classic
        for m in classic:
            m.start()
        until(
            "the classic members share one stable generation",
            lambda: (
                all(m.state == STABLE and not m._rejoin_needed for m in classic)
                and len({m.generation.generation_id for m in classic}) == 1
            ),
        )
        assert set(classic[0].commit({(TOPIC, 0): 11, (TOPIC, 1): 12}, metadata="classic").values()) == {"NONE"}

        # KIP-848: two members converge (Stable: every member reconciled at the target epoch).
        consumers = [ConsumerGroupMember(job.client(f"rm-e2e-member-{i}"), CONSUMER, [TOPIC]) for i in range(2)]
        made += consumers
        for m in consumers:
            m.start()
        until(
            "the consumer group is Stable with both members",
            lambda: (lambda d: d["groupState"] == "Stable" and len(d["members"]) == 2)(consumer_group(client)),
        )
        epoch = consumer_group(client)["members"][0]
        resp = client.request(
            "OffsetCommit",
            9,
            {
                "groupId": CONSUMER,
                "generationIdOrMemberEpoch": epoch["memberEpoch"],
                "memberId": epoch["memberId"],
                "groupInstanceId": None,
                "topics": [
                    {
                        "name": TOPIC,
                        "partitions": [
                            {
                                "partitionIndex": 2,
                                "committedOffset": 21,
                                "committedLeaderEpoch": 3,
                                "committedMetadata": "kip848",
                            }
                        ],
                    }
                ],
            },
            key=CONSUMER,
            timeout=60,
        )
        assert resp["topics"][0]["partitions"][0]["errorCode"] == 0, resp

        # A simple group: offsets without membership.
        resp = client.request(
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
                        "partitions": [{"partitionIndex": 3, "committedOffset": 31, "committedMetadata": None}],
                    }
                ],
            },
            key=SIMPLE,
            timeout=60,
        )
        assert resp["topics"][0]["partitions"][0]["errorCode"] == 0, resp

        # A committed transaction (with offsets for the simple group) and one left open.
        done = TransactionalProducer(
            job.bootstrap, TX_DONE, requests_topic=job.topics["requests"], responses_topic=job.topics["responses"]
        )
        made.append(done)
        done.init_transactions()
        done.begin_transaction()
        done.send(TOPIC, b"committed", partition=0)
        done.send_offsets_to_transaction({(TOPIC, 0): 41}, SIMPLE)
        done.commit_transaction()
        open_ = TransactionalProducer(
            job.bootstrap,
            TX_OPEN,
            requests_topic=job.topics["requests"],
            responses_topic=job.topics["responses"],
            transaction_timeout_ms=900000,
        )
        made.append(open_)
        open_.init_transactions()
        open_.begin_transaction()
        open_.send(TOPIC, b"open", partition=1)
        open_.flush()
        until(
            "the committed transaction is complete",
            lambda: transaction(client, TX_DONE)["transactionState"] == "CompleteCommit",
        )
        until("the open transaction is Ongoing", lambda: transaction(client, TX_OPEN)["transactionState"] == "Ongoing")
        until(
            "the transaction's offset is committed",
            lambda: any(p["committedOffset"] == 41 for t in fetched_offsets(client, SIMPLE) for p in t["partitions"]),
        )

        # The read model, once caught up, agrees with every Describe answer.
        wait_caught_up(job, rm)
        assert differences(client, rm) == []
        g = rm.group(CLASSIC)
        assert g["state"] == "Stable" and len(g["members"]) == 2 and g["stateLogPartition"] < PARTITIONS
        assert rm.offsets(SIMPLE)[(TOPIC, 0)]["committedOffset"] == 41
        assert rm.transaction(TX_OPEN)["partitions"] == [{"topic": TOPIC, "partitions": [1]}]
        before = {
            "groups": rm.groups(),
            "txns": rm.transactions(),
            "offsets": {g: rm.offsets(g) for g in (CLASSIC, CONSUMER, SIMPLE)},
        }

        # Redis loses everything: the projector notices and rebuilds from the state log.
        flushed_at = int(time.time() * 1000)
        rm.redis.flushall()
        assert rm.groups() == [] and rm.freshness()["offsets"] == {}
        wait_caught_up(job, rm, rebuilt_after_ms=flushed_at)
        assert differences(client, rm) == []
        # The same model: compaction keeps each key's newest record, which each key reflects.
        assert {
            "groups": rm.groups(),
            "txns": rm.transactions(),
            "offsets": {g: rm.offsets(g) for g in (CLASSIC, CONSUMER, SIMPLE)},
        } == before
        # One rebuild when the projector found no model at its start, one after the flush.
        assert job.log_file.read_text().count("read model rebuilt from the state log") >= 2
    finally:
        for m in made:
            try:
                (
                    m.abandon
                    if isinstance(m, ClassicGroupMember)
                    else m.kill
                    if isinstance(m, ConsumerGroupMember)
                    else m.close
                )()
            except Exception:  # noqa: BLE001 - best effort: the job is stopped with the module
                pass
