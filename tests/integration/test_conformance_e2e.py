"""Issue 17's conformance points end to end, through the real broker and the real job: offsets for
topics the broker does not have (UNKNOWN_TOPIC_OR_PARTITION, nothing stored), OffsetCommit /
OffsetFetch v10 by topic id, ConsumerGroupDescribe's `subscribedTopicRegex` "", ListTransactions
v2's pattern, and KIP-890 verification of TxnOffsetCommit (INVALID_TXN_STATE without
AddOffsetsToTxn, the offsets partition and the transaction on different coordinator partitions),
per-group configs (IncrementalAlterConfigs / DescribeConfigs, applied by ConsumerGroupHeartbeat,
with Kafka 4.1.1's config set), a topic deleted and re-created under its name losing its KIP-848
assignment (ids, as Kafka), and the versions Kafka 4.1.1 still serves (JoinGroup v0, FindCoordinator
v0)."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

from client.consumer_group import uuid_to_kafka
from coordinator import coordinator_partition
from coordinator.group.classic.consumer_protocol import encode_subscription

from .harness import wait_topics_known

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("plain")]

PARTITIONS = 10  # the shared job's coordinator partitions: the ids below were chosen for it
WAIT = 120.0  # seconds, a bound for conditions that need the job's next metadata refresh
KNOWN = "conformance-known"  # 2 partitions, known to the job before the first test
NEVER = "conformance-never-created"
UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID, INVALID_TXN_STATE, INVALID_REGULAR_EXPRESSION = 3, 100, 48, 128
INVALID_CONFIG, GROUP_RESOURCE = 40, 32  # GROUP_RESOURCE: ConfigResource.Type.GROUP


@pytest.fixture(scope="module")
def known_topic_id(kafka, job):
    assert job.cfg.coordinator_partitions == PARTITIONS
    wait_topics_known(job, {KNOWN: 2})
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:

        def described_id():  # right after the creation the broker may not describe it yet
            [described] = admin.describe_topics([KNOWN])
            try:
                return None if described["error_code"] else uuid_to_kafka(described["topic_id"])
            except (ValueError, AttributeError):
                return None

        return poll("the topic's id", described_id)
    finally:
        admin.close()


@pytest.fixture(scope="module")
def client(job, known_topic_id):
    c = job.client("conformance-e2e")
    yield c
    c.close()


def errors(resp: dict) -> dict[tuple, int]:
    return {
        (t.get("name", t.get("topicId")), p["partitionIndex"]): p["errorCode"]
        for t in resp["topics"]
        for p in t["partitions"]
    }


def fetch(client, group: str, topics: list[dict] | None, version: int = 9) -> dict:
    resp = client.request(
        "OffsetFetch",
        version,
        {"groups": [{"groupId": group, "memberId": None, "memberEpoch": -1, "topics": topics}], "requireStable": False},
        key=group,
    )
    [g] = resp["groups"]
    assert g["errorCode"] == 0, g
    return {
        (t.get("name", t.get("topicId")), p["partitionIndex"]): (p["committedOffset"], p["errorCode"])
        for t in g["topics"]
        for p in t["partitions"]
    }


def test_offsets_for_topics_the_broker_does_not_have(client):
    group = "conformance-offsets"
    resp = client.request(
        "OffsetCommit",
        9,
        {
            "groupId": group,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "topics": [
                {
                    "name": KNOWN,
                    "partitions": [
                        {"partitionIndex": p, "committedOffset": 10 + p, "committedMetadata": None} for p in (0, 1, 2)
                    ],
                },
                {"name": NEVER, "partitions": [{"partitionIndex": 0, "committedOffset": 5, "committedMetadata": None}]},
            ],
        },
    )
    assert errors(resp) == {
        (KNOWN, 2): UNKNOWN_TOPIC_OR_PARTITION,
        (KNOWN, 0): 0,
        (KNOWN, 1): 0,
        (NEVER, 0): UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert fetch(
        client, group, [{"name": KNOWN, "partitionIndexes": [0, 1, 2]}, {"name": NEVER, "partitionIndexes": [0]}]
    ) == {(KNOWN, 0): (10, 0), (KNOWN, 1): (11, 0), (KNOWN, 2): (-1, 0), (NEVER, 0): (-1, 0)}
    # Only unknown topics: the group is not even created.
    lonely = "conformance-lonely"
    resp = client.request(
        "OffsetCommit",
        9,
        {
            "groupId": lonely,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "topics": [
                {"name": NEVER, "partitions": [{"partitionIndex": 0, "committedOffset": 5, "committedMetadata": None}]}
            ],
        },
    )
    assert errors(resp) == {(NEVER, 0): UNKNOWN_TOPIC_OR_PARTITION}
    described = client.request(
        "DescribeGroups", 5, {"groups": [lonely], "includeAuthorizedOperations": False}, key=lonely
    )
    assert described["groups"][0]["groupState"] == "Dead"  # no such group
    # OffsetDelete: the unknown topic first, the known partition deleted.
    resp = client.request(
        "OffsetDelete",
        0,
        {
            "groupId": group,
            "topics": [
                {"name": NEVER, "partitions": [{"partitionIndex": 0}]},
                {"name": KNOWN, "partitions": [{"partitionIndex": 1}]},
            ],
        },
    )
    assert resp["errorCode"] == 0 and errors(resp) == {(NEVER, 0): UNKNOWN_TOPIC_OR_PARTITION, (KNOWN, 1): 0}
    assert fetch(client, group, [{"name": KNOWN, "partitionIndexes": [1]}]) == {(KNOWN, 1): (-1, 0)}


def test_offset_commit_and_fetch_v10_by_topic_id(client, known_topic_id):
    group = "conformance-v10"
    unknown_id = "ZZZZZZZZZZZZZZZZZZZZZQ"
    resp = client.request(
        "OffsetCommit",
        10,
        {
            "groupId": group,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "topics": [
                {
                    "topicId": known_topic_id,
                    "partitions": [{"partitionIndex": 1, "committedOffset": 42, "committedMetadata": "m"}],
                },
                {
                    "topicId": unknown_id,
                    "partitions": [{"partitionIndex": 0, "committedOffset": 1, "committedMetadata": None}],
                },
            ],
        },
    )
    # Rejected topics first, then the coordinator's answer (OffsetCommitResponse.Builder.merge).
    assert resp["topics"] == [
        {"topicId": unknown_id, "partitions": [{"partitionIndex": 0, "errorCode": UNKNOWN_TOPIC_ID}]},
        {"topicId": known_topic_id, "partitions": [{"partitionIndex": 1, "errorCode": 0}]},
    ]
    assert fetch(
        client,
        group,
        [{"topicId": known_topic_id, "partitionIndexes": [1]}, {"topicId": unknown_id, "partitionIndexes": [0]}],
        version=10,
    ) == {(known_topic_id, 1): (42, 0), (unknown_id, 0): (-1, UNKNOWN_TOPIC_ID)}
    # The same offset, by name (v9) and for "all topics" by id (v10).
    assert fetch(client, group, [{"name": KNOWN, "partitionIndexes": [1]}]) == {(KNOWN, 1): (42, 0)}
    assert fetch(client, group, None, version=10) == {(known_topic_id, 1): (42, 0)}


def test_consumer_group_describe_member_without_regex(client):
    group = "conformance-cg"
    member = "conformance-member-0000"
    hb = client.request(
        "ConsumerGroupHeartbeat",
        1,
        {
            "groupId": group,
            "memberId": member,
            "memberEpoch": 0,
            "instanceId": None,
            "rackId": None,
            "rebalanceTimeoutMs": 60000,
            "subscribedTopicNames": [KNOWN],
            "subscribedTopicRegex": None,
            "serverAssignor": None,
            "topicPartitions": [],
        },
    )
    assert hb["errorCode"] == 0, hb
    [g] = client.request(
        "ConsumerGroupDescribe", 1, {"groupIds": [group], "includeAuthorizedOperations": False}, key=group
    )["groups"]
    assert g["errorCode"] == 0, g
    [m] = g["members"]
    assert (m["memberId"], m["subscribedTopicNames"], m["subscribedTopicRegex"], m["instanceId"]) == (
        member,
        [KNOWN],
        "",
        None,
    )
    client.request(
        "ConsumerGroupHeartbeat",
        1,
        {
            "groupId": group,
            "memberId": member,
            "memberEpoch": -1,
            "instanceId": None,
            "rackId": None,
            "rebalanceTimeoutMs": -1,
            "subscribedTopicNames": None,
            "subscribedTopicRegex": None,
            "serverAssignor": None,
            "topicPartitions": None,
        },
    )


def test_list_transactions_v2_pattern(client):
    tids = ["conformance-tx-a", "conformance-tx-b"]
    for tid in tids:
        resp = client.request(
            "InitProducerId",
            5,
            {"transactionalId": tid, "transactionTimeoutMs": 60000, "producerId": -1, "producerEpoch": -1},
        )
        assert resp["errorCode"] == 0, resp

    def listed(tid: str, pattern) -> tuple[int, list[str]]:
        resp = client.request(
            "ListTransactions",
            2,
            {"stateFilters": [], "producerIdFilters": [], "durationFilter": -1, "transactionalIdPattern": pattern},
            key=tid,
        )
        return resp["errorCode"], [s["transactionalId"] for s in resp["transactionStates"]]

    for tid in tids:  # each lists the transactions of its own coordinator partition
        assert listed(tid, "conformance-tx-.*") == (
            0,
            [t for t in tids if coordinator_partition(t, PARTITIONS) == coordinator_partition(tid, PARTITIONS)],
        )
        assert listed(tid, "conformance-tx-") == (0, [])  # the whole id must match
    assert listed(tids[0], "conformance-tx-(") == (INVALID_REGULAR_EXPRESSION, [])


def test_txn_offset_commit_is_verified_with_the_transaction_coordinator(client):
    """KIP-890 across coordinator partitions: the group's partition asks the transaction's partition
    over the internal channel and answers when the answer comes back."""
    import time

    tid, group = "conformance-verify-tx", "conformance-verify-group"
    assert coordinator_partition(tid, PARTITIONS) != coordinator_partition(group, PARTITIONS)
    init = client.request(
        "InitProducerId",
        5,
        {"transactionalId": tid, "transactionTimeoutMs": 60000, "producerId": -1, "producerEpoch": -1},
    )
    assert init["errorCode"] == 0, init
    pid, epoch = init["producerId"], init["producerEpoch"]

    def txn_commit(version: int, offset: int, epoch: int) -> set[int]:
        resp = client.request(
            "TxnOffsetCommit",
            version,
            {
                "transactionalId": tid,
                "groupId": group,
                "producerId": pid,
                "producerEpoch": epoch,
                "generationIdOrMemberEpoch": -1,
                "memberId": "",
                "groupInstanceId": None,
                "topics": [
                    {
                        "name": KNOWN,
                        "partitions": [
                            {
                                "partitionIndex": 0,
                                "committedOffset": offset,
                                "committedLeaderEpoch": -1,
                                "committedMetadata": "",
                            }
                        ],
                    }
                ],
            },
            timeout=90,
        )
        return {p["errorCode"] for t in resp["topics"] for p in t["partitions"]}

    def committed() -> int:
        return fetch(client, group, [{"name": KNOWN, "partitionIndexes": [0]}])[(KNOWN, 0)][0]

    def until(condition, what: str, timeout: float = 90):
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            assert time.monotonic() < deadline, what
            time.sleep(0.2)  # polling a condition, not waiting for time to pass

    # Without AddOffsetsToTxn (v3: a client that predates TRANSACTION_ABORTABLE): INVALID_TXN_STATE.
    assert txn_commit(3, 7, epoch) == {INVALID_TXN_STATE}
    assert committed() == -1
    add = client.request(
        "AddOffsetsToTxn",
        4,
        {"transactionalId": tid, "producerId": pid, "producerEpoch": epoch, "groupId": group},
        key=tid,
    )
    assert add["errorCode"] == 0, add
    assert txn_commit(3, 7, epoch) == {0}
    end = client.request(
        "EndTxn", 4, {"transactionalId": tid, "producerId": pid, "producerEpoch": epoch, "committed": True}
    )
    assert end["errorCode"] == 0, end
    until(lambda: committed() == 7, "the first transaction's offset was never committed")
    # v5 (KIP-890 part 2): no AddOffsetsToTxn; the group coordinator adds its partition. The first
    # transaction may still be completing (CONCURRENT_TRANSACTIONS, retriable).
    assert until(lambda: txn_commit(5, 8, epoch) - {51} or None, "v5 was never answered") == {0}
    end = client.request(
        "EndTxn", 5, {"transactionalId": tid, "producerId": pid, "producerEpoch": epoch, "committed": True}
    )
    assert end["errorCode"] == 0, end
    until(lambda: committed() == 8, "the v5 transaction's offset was never committed")


def test_group_configs_apply_to_the_consumer_group_heartbeat(client, job):
    """KIP-848 group configs: IncrementalAlterConfigs on a GROUP resource, DescribeConfigs shows
    the override and the defaults, and the group's next ConsumerGroupHeartbeat answer carries the
    group's heartbeat interval."""
    group = "conformance-configs"

    def alter(*configs):
        resp = client.request(
            "IncrementalAlterConfigs",
            1,
            {
                "resources": [{"resourceType": GROUP_RESOURCE, "resourceName": group, "configs": list(configs)}],
                "validateOnly": False,
            },
            key=group,
        )
        [result] = resp["responses"]
        return result["errorCode"], result["errorMessage"]

    defaults = job.cfg.coordinator_config()
    assert alter({"name": "consumer.session.timeout.ms", "configOperation": 0, "value": "1"}) == (
        INVALID_CONFIG,
        f"consumer.session.timeout.ms must be in the range {defaults['group.consumer.min.session.timeout.ms']} to "
        f"{defaults['group.consumer.max.session.timeout.ms']} inclusive.",
    )
    assert alter(
        {"name": "consumer.session.timeout.ms", "configOperation": 0, "value": "50000"},
        {"name": "consumer.heartbeat.interval.ms", "configOperation": 0, "value": "7000"},
    ) == (0, None)
    described = client.request(
        "DescribeConfigs",
        4,
        {
            "resources": [{"resourceType": GROUP_RESOURCE, "resourceName": group, "configurationKeys": None}],
            "includeSynonyms": False,
            "includeDocumentation": False,
        },
        key=group,
    )
    [result] = described["results"]
    assert result["errorCode"] == 0, result

    # The rest are the coordinator's settings (the shared job's,
    # tests/integration/conftest.py), streams.* included (Kafka 4.4's extractGroupConfigMap);
    # GroupConfig's own for those without one; internal configs left out.
    def source(setting: str) -> int:
        # Kafka 4.4: STATIC_BROKER_CONFIG for a setting the broker's file (the job's config) names.
        return 4 if setting in defaults.static_configs else 5

    assert defaults["group.streams.session.timeout.ms"] != 45000  # so the line below tells them apart
    assert {c["name"]: (c["value"], c["configSource"]) for c in result["configs"]} == {
        "consumer.session.timeout.ms": ("50000", 8),
        "consumer.heartbeat.interval.ms": ("7000", 8),
        "consumer.assignment.interval.ms": (
            str(defaults["group.consumer.assignment.interval.ms"]),
            source("group.consumer.assignment.interval.ms"),
        ),
        "share.session.timeout.ms": (
            str(defaults["group.share.session.timeout.ms"]),
            source("group.share.session.timeout.ms"),
        ),
        "share.heartbeat.interval.ms": (
            str(defaults["group.share.heartbeat.interval.ms"]),
            source("group.share.heartbeat.interval.ms"),
        ),
        "share.record.lock.duration.ms": (
            str(defaults["group.share.record.lock.duration.ms"]),
            source("group.share.record.lock.duration.ms"),
        ),
        "share.delivery.count.limit": (
            str(defaults["group.share.delivery.count.limit"]),
            source("group.share.delivery.count.limit"),
        ),
        "share.partition.max.record.locks": (
            str(defaults["group.share.partition.max.record.locks"]),
            source("group.share.partition.max.record.locks"),
        ),
        "share.auto.offset.reset": ("latest", 5),
        "share.isolation.level": ("read_uncommitted", 5),
        "share.renew.acknowledge.enable": ("true", 5),
        "share.assignment.interval.ms": (
            str(defaults["group.share.assignment.interval.ms"]),
            source("group.share.assignment.interval.ms"),
        ),
        "streams.session.timeout.ms": (
            str(defaults["group.streams.session.timeout.ms"]),
            source("group.streams.session.timeout.ms"),
        ),
        "streams.heartbeat.interval.ms": (
            str(defaults["group.streams.heartbeat.interval.ms"]),
            source("group.streams.heartbeat.interval.ms"),
        ),
        "streams.num.standby.replicas": (
            str(defaults["group.streams.num.standby.replicas"]),
            source("group.streams.num.standby.replicas"),
        ),
        "streams.initial.rebalance.delay.ms": (
            str(defaults["group.streams.initial.rebalance.delay.ms"]),
            source("group.streams.initial.rebalance.delay.ms"),
        ),
        "streams.assignment.interval.ms": (
            str(defaults["group.streams.assignment.interval.ms"]),
            source("group.streams.assignment.interval.ms"),
        ),
        "streams.rack.aware.assignment.tags": (
            ",".join(defaults["group.streams.rack.aware.assignment.tags"]),
            source("group.streams.rack.aware.assignment.tags"),
        ),
        "streams.assignor.name": (defaults["group.streams.assignors"][0], source("group.streams.assignors")),
        "errors.deadletterqueue.topic.name": ("", 5),
        "errors.deadletterqueue.copy.record.enable": ("false", 5),
    }
    assert alter({"name": "share.isolation.level", "configOperation": 0, "value": "READ_COMMITTED"}) == (
        INVALID_CONFIG,
        "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be "
        "one of: read_committed, read_uncommitted",
    )
    hb = client.request(
        "ConsumerGroupHeartbeat",
        1,
        {
            "groupId": group,
            "memberId": "conformance-configs-member",
            "memberEpoch": 0,
            "instanceId": None,
            "rackId": None,
            "rebalanceTimeoutMs": 60000,
            "subscribedTopicNames": [KNOWN],
            "subscribedTopicRegex": None,
            "serverAssignor": None,
            "topicPartitions": [],
        },
    )
    assert (hb["errorCode"], hb["heartbeatIntervalMs"]) == (0, 7000), hb


def heartbeat(client, group: str, member: str, epoch: int, owned: list[dict] | None, topics=None) -> dict:
    resp = client.request(
        "ConsumerGroupHeartbeat",
        1,
        {
            "groupId": group,
            "memberId": member,
            "memberEpoch": epoch,
            "instanceId": None,
            "rackId": None,
            "rebalanceTimeoutMs": 60000 if epoch == 0 else -1,
            "subscribedTopicNames": topics,
            "subscribedTopicRegex": None,
            "serverAssignor": None,
            "topicPartitions": owned,
        },
    )
    assert resp["errorCode"] == 0, resp
    return resp


def wire(resp: dict) -> list | None:
    a = resp["assignment"]
    return None if a is None else [(tp["topicId"], sorted(tp["partitions"])) for tp in a["topicPartitions"]]


def poll(what: str, attempt):
    """attempt() until it returns something truthy (each call is a request answered by the job)."""
    deadline = time.monotonic() + WAIT
    while True:
        result = attempt()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_recreated_topic_loses_its_assignment(client, kafka):
    """Kafka keys assignments by topic id: a topic deleted and re-created under its name is a new
    topic. The member must revoke the old topic's partitions (it still owns them while it reports
    the old id) before it gets the new topic's, under the new id, at a new epoch."""
    topic, group, member = "conformance-recreated", "conformance-recreated-group", "conformance-recreated-m"
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:

        def topic_id():
            [described] = admin.describe_topics([topic])
            try:
                return None if described["error_code"] else uuid_to_kafka(described["topic_id"])
            except (ValueError, AttributeError):
                return None

        admin.create_topics([NewTopic(topic, 1, 1)])
        old_id = poll("the topic's id", topic_id)
        state = {"epoch": heartbeat(client, group, member, 0, [], topics=[topic])["memberEpoch"]}

        def assigned(owned, expected):
            """One heartbeat at the member's epoch; its response if it carries `expected`."""
            resp = heartbeat(client, group, member, state["epoch"], owned)
            state["epoch"] = resp["memberEpoch"]
            return resp if wire(resp) == expected else None

        # The job learns the topic at its next metadata refresh; then the member gets it.
        poll("the first assignment", lambda: assigned([], [(old_id, [0])]))
        owned = [{"topicId": old_id, "partitions": [0]}]
        heartbeat(client, group, member, state["epoch"], owned)

        admin.delete_topics([topic])

        def recreate():
            try:
                admin.create_topics([NewTopic(topic, 1, 1)])
            except TopicAlreadyExistsError:  # still being deleted
                return None
            return True

        poll("the topic re-created", recreate)
        new_id = poll("the new topic id", lambda: (tid := topic_id()) != old_id and tid)

        # Once the job has seen the old topic go: an empty assignment at the same epoch while the
        # old partition is still reported owned; then, the old one revoked, the new topic's
        # partition under the new id at a new epoch.
        epoch = state["epoch"]
        poll("the old partition revoked", lambda: assigned(owned, []))
        assert state["epoch"] == epoch
        assert heartbeat(client, group, member, epoch, owned)["memberEpoch"] == epoch  # still owned
        poll("the new topic's partition", lambda: assigned([], [(new_id, [0])]))
        assert state["epoch"] > epoch
    finally:
        admin.close()


def test_versions_kafka_41_still_serves(client):
    """JoinGroup v0 (the session timeout is the rebalance timeout) and FindCoordinator v0."""
    group = "conformance-join-v0"
    found = client.request("FindCoordinator", 0, {"key": group}, key=group)
    assert found == {
        "errorCode": 0,
        "nodeId": coordinator_partition(group, PARTITIONS),
        "host": found["host"],
        "port": found["port"],
    }
    joined = client.request(
        "JoinGroup",
        0,
        {
            "groupId": group,
            "sessionTimeoutMs": 30000,
            "memberId": "",
            "protocolType": "consumer",
            "protocols": [{"name": "range", "metadata": encode_subscription([KNOWN])}],
        },
        key=group,
    )
    assert joined["errorCode"] == 0 and "throttleTimeMs" not in joined, joined
    assert joined["leader"] == joined["memberId"] and joined["generationId"] == 1
