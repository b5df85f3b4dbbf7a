"""The Redis read model end to end: the real broker, the test run's shared `observed` job with its
projector query, a real redis-server. Classic members join and sync, a KIP-848 group converges,
offsets are committed (by a member, by a simple group and by a committed transaction), and one
transaction stays open. Once the projector has caught up with the state log, the read model says
what the coordinators answer to DescribeGroups, ConsumerGroupDescribe, OffsetFetch and
DescribeTransactions; after a FLUSHALL it is rebuilt from the state log and says it again.

Other modules' groups and transactions are in the same read model: every check is about this
module's own ids (all `rm-`). The FLUSHALL empties the shared Redis for every module of the observed
job; the projector rebuilds all of it (what the test proves), and no other module runs meanwhile."""

from __future__ import annotations

import threading
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

from .harness import wait_topics_known

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("observed")]

TOPIC = "rm-e2e-orders"
CLASSIC, CONSUMER, SIMPLE = "rm-classic", "rm-consumer", "rm-simple"
TX_DONE, TX_OPEN = "rm-tx-committed", "rm-tx-open"
GROUPS, TXNS = {CLASSIC, CONSUMER, SIMPLE}, {TX_DONE, TX_OPEN}
WAIT = 180


@pytest.fixture(scope="module")
def client(job):
    wait_topics_known(job, {TOPIC: 4})
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


def own(rows: list[dict], key: str) -> list[dict]:
    """This module's groups (key "groupId") or transactions ("transactionalId") of a listing, by id:
    any id of ours (`rm-`), so that one the read model should not have is seen too."""
    return sorted((r for r in rows if r[key].startswith("rm-")), key=lambda r: r[key])


def own_model(rm: ReadModel) -> dict:
    return {
        "groups": own(rm.groups(), "groupId"),
        "txns": own(rm.transactions(), "transactionalId"),
        "offsets": {g: rm.offsets(g) for g in sorted(GROUPS)},
    }


def differences(job, client, rm: ReadModel) -> list[str]:
    """Everything the read model says about this module's ids that the coordinators do not."""
    diffs = []
    described = GroupAdmin(client, job.cfg.coordinator_partitions).describe_groups([CLASSIC, SIMPLE])
    for g in (CLASSIC, SIMPLE):
        diffs += [f"{g}: {d}" for d in classic_differences(rm.group(g), described[g])]
    diffs += [f"{CONSUMER}: {d}" for d in consumer_differences(rm.group(CONSUMER), consumer_group(client))]
    for g in (CLASSIC, CONSUMER, SIMPLE):
        diffs += [f"{g}: {d}" for d in offsets_differences(rm.offsets(g), fetched_offsets(client, g))]
    for tid in (TX_DONE, TX_OPEN):
        diffs += [f"{tid}: {d}" for d in txn_differences(rm.transaction(tid), transaction(client, tid))]
    if {g["groupId"] for g in own(rm.groups(), "groupId")} != GROUPS:
        diffs.append(f"groups: {[g['groupId'] for g in own(rm.groups(), 'groupId')]}")
    if {t["transactionalId"] for t in own(rm.transactions(), "transactionalId")} != TXNS:
        diffs.append(f"transactions: {[t['transactionalId'] for t in own(rm.transactions(), 'transactionalId')]}")
    return diffs


def test_read_model_matches_the_coordinators_and_survives_a_flush(job, client, redis):
    rm = ReadModel(redis.url, job.cfg.redis["prefix"])
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
        assert differences(job, client, rm) == []
        g = rm.group(CLASSIC)
        assert g["state"] == "Stable" and len(g["members"]) == 2
        assert g["stateLogPartition"] < job.cfg.coordinator_partitions
        assert rm.offsets(SIMPLE)[(TOPIC, 0)]["committedOffset"] == 41
        assert rm.transaction(TX_OPEN)["partitions"] == [{"topic": TOPIC, "partitions": [1]}]
        before = own_model(rm)
        # At least one rebuild already: the projector found no model at the job's start.
        rebuilds = job.log_file.read_text().count("read model rebuilt from the state log")
        assert rebuilds >= 1

        # Redis loses everything (every module's model): the projector notices and rebuilds all of
        # it from the state log.
        flushed_at = int(time.time() * 1000)
        rm.redis.flushall()
        assert own(rm.groups(), "groupId") == [] and rm.freshness()["offsets"] == {}
        wait_caught_up(job, rm, rebuilt_after_ms=flushed_at)
        assert differences(job, client, rm) == []
        # The same model: compaction keeps each key's newest record, which each key reflects.
        assert own_model(rm) == before
        # A rebuild after the flush.
        assert job.log_file.read_text().count("read model rebuilt from the state log") > rebuilds
    finally:
        # The job goes on with other modules: members leave (no session expiries, no rebalances
        # later) and the open transaction is aborted (not left open on the job).
        for m in made:
            try:
                if isinstance(m, ClassicGroupMember):
                    m.close(leave=True)
                elif isinstance(m, ConsumerGroupMember):
                    m.stop()
                else:
                    try:
                        if m.transactional_id == TX_OPEN:
                            m.abort_transaction()
                    finally:
                        m.close()
            except Exception:  # noqa: BLE001 - best effort
                pass


SHARE, STREAMS = "rmx-share", "rmx-streams"  # not `rm-`: the test above checks that set exactly
SHARE_MEMBER, STREAMS_MEMBER = "rmx-share-member-000000", "rmx-streams-member-00000"


class KeepAlive:
    """Heartbeats of the share and the streams member every 500 ms from a thread of its own (the
    shared job's sessions are 6 s), at the epochs and with the tasks their last answers gave.

    The first beat is sent before the constructor returns: it comes from another client id, and a
    streams member's new client id is new member metadata, which bumps the group epoch (Kafka's
    hasStreamsMemberMetadataChanged). Sent later, that bump could land between the read model
    catching up and the describe it is compared with."""

    def __init__(self, client, share_epoch: int, streams: dict):
        self.client, self.stop = client, threading.Event()
        self.share_epoch, self.streams_epoch, self.tasks = share_epoch, streams["memberEpoch"], streams["activeTasks"]
        self._beat()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(0.5):
            try:
                self._beat()
            except Exception:  # noqa: BLE001 - a slow answer: the next beat tries again
                pass

    def _beat(self) -> None:
        r = self.client.request(
            "ShareGroupHeartbeat",
            1,
            {"groupId": SHARE, "memberId": SHARE_MEMBER, "memberEpoch": self.share_epoch, "rackId": None},
            key=SHARE,
            timeout=30,
        )
        self.share_epoch = r["memberEpoch"] if r["errorCode"] == 0 else self.share_epoch
        r = self.client.request(
            "StreamsGroupHeartbeat",
            0,
            {
                "groupId": STREAMS,
                "memberId": STREAMS_MEMBER,
                "memberEpoch": self.streams_epoch,
                "endpointInformationEpoch": 0,
                "activeTasks": self.tasks,
                "standbyTasks": [],
                "warmupTasks": [],
            },
            key=STREAMS,
            timeout=30,
        )
        if r["errorCode"] == 0:
            self.streams_epoch = r["memberEpoch"]
            self.tasks = self.tasks if r["activeTasks"] is None else r["activeTasks"]

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=60)


def test_share_and_streams_groups_in_the_read_model(job, client, redis):
    """A share group and a streams group with one member each, kept alive, through the real job and
    projector: the read model has their type, state, epochs and members as ShareGroupDescribe /
    StreamsGroupDescribe give them, the share group's share-partitions as DescribeShareGroupOffsets
    lists them, and the streams group's state as a coordinator that loaded the log has it (the
    live one: Kafka 4.2+ keeps the validated topology epoch in the group's record)."""
    rm = ReadModel(redis.url, job.cfg.redis["prefix"])
    share_member = {"groupId": SHARE, "memberId": SHARE_MEMBER, "rackId": None}
    joined = client.request(
        "ShareGroupHeartbeat",
        1,
        {**share_member, "memberEpoch": 0, "subscribedTopicNames": [TOPIC]},
        key=SHARE,
        timeout=60,
    )
    assert joined["errorCode"] == 0, joined
    # The share-partitions are initialized over the internal channel: a later heartbeat gets them.
    assigned = until(
        "the share member gets its share-partitions",
        lambda: (lambda r: r if r["assignment"] and r["assignment"]["topicPartitions"] else None)(
            client.request(
                "ShareGroupHeartbeat",
                1,
                {**share_member, "memberEpoch": joined["memberEpoch"], "subscribedTopicNames": [TOPIC]},
                key=SHARE,
                timeout=60,
            )
        ),
    )
    subtopology = {
        "subtopologyId": "0",
        "sourceTopics": [TOPIC],
        "sourceTopicRegex": [],
        "stateChangelogTopics": [],
        "repartitionSinkTopics": [],
        "repartitionSourceTopics": [],
        "copartitionGroups": [],
    }
    streams = client.request(
        "StreamsGroupHeartbeat",
        0,
        {
            "groupId": STREAMS,
            "memberId": STREAMS_MEMBER,
            "memberEpoch": 0,
            "endpointInformationEpoch": 0,
            "rebalanceTimeoutMs": 30000,
            "processId": "rmx-process",
            "activeTasks": [],
            "standbyTasks": [],
            "warmupTasks": [],
            "topology": {"epoch": 5, "subtopologies": [subtopology]},
        },
        key=STREAMS,
        timeout=60,
    )
    assert streams["errorCode"] == 0 and streams["activeTasks"], streams
    alive = KeepAlive(job.client("rmx-keepalive"), assigned["memberEpoch"], streams)
    try:
        wait_caught_up(job, rm)
        share_described = client.request(
            "ShareGroupDescribe", 1, {"groupIds": [SHARE], "includeAuthorizedOperations": False}, key=SHARE, timeout=60
        )["groups"][0]
        share = rm.group(SHARE)
        assert share_described["groupState"] == "Stable"
        assert (share["type"], share["state"], share["generation"], share["assignmentEpoch"]) == (
            "share",
            share_described["groupState"],
            share_described["groupEpoch"],
            share_described["assignmentEpoch"],
        )
        assert [(m["memberId"], m["memberEpoch"], m["assignment"]) for m in share["members"]] == [
            (
                m["memberId"],
                m["memberEpoch"],
                [
                    {"topic": t["topicName"], "partitions": sorted(t["partitions"])}
                    for t in m["assignment"]["topicPartitions"]
                ],
            )
            for m in share_described["members"]
        ]
        offsets = client.request(
            "DescribeShareGroupOffsets", 0, {"groups": [{"groupId": SHARE, "topics": None}]}, key=SHARE, timeout=60
        )["groups"][0]
        assert (
            set(rm.share_offsets(SHARE))
            == {(t["topicName"], p["partitionIndex"]) for t in offsets["topics"] for p in t["partitions"]}
            and len(rm.share_offsets(SHARE)) == 4
        )
        streams_described = client.request(
            "StreamsGroupDescribe",
            0,
            {"groupIds": [STREAMS], "includeAuthorizedOperations": False},
            key=STREAMS,
            timeout=60,
        )["groups"][0]
        model = rm.group(STREAMS)
        assert (model["type"], model["generation"], model["assignmentEpoch"], model["topologyEpoch"]) == (
            "streams",
            streams_described["groupEpoch"],
            streams_described["assignmentEpoch"],
            5,
        )
        assert (streams_described["groupState"], model["state"]) == ("Stable", "Stable")
        [m] = model["members"]
        assert (m["memberId"], m["processId"], m["tasks"]) == (
            STREAMS_MEMBER,
            "rmx-process",
            streams_described["members"][0]["assignment"],
        )
    finally:  # the members leave: nothing expires later on the shared job
        alive.close()
        alive.client.close()
        client.request(
            "ShareGroupHeartbeat",
            1,
            {**share_member, "memberEpoch": -1, "subscribedTopicNames": None},
            key=SHARE,
            timeout=60,
        )
        client.request(
            "StreamsGroupHeartbeat",
            0,
            {"groupId": STREAMS, "memberId": STREAMS_MEMBER, "memberEpoch": -1, "endpointInformationEpoch": 0},
            key=STREAMS,
            timeout=60,
        )
