"""The differential test's request sequences (bench/differential.py): every API the service serves,
streams and share groups in depth. Group, transactional and topic names carry the run's id, so a
run against a job that served earlier runs (the suite's shared job) starts from nothing.

A step's `deviation` maps an answer path to the section of docs/protocol.md that says why the
service answers otherwise; every other difference fails the run.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from coordinator.group.classic.consumer_protocol import encode_subscription

from .diff_model import Scenario, Side, Step, only_groups, only_transactions, retried, saved
from .diff_versions import versions

DOC_STREAMS_COMMITTED = "docs/protocol.md#streams-groups-deviations-from-kafka (describe reads the latest state)"
DOC_SHARE_ALTER = "docs/protocol.md#share-coordinator-deviations-from-kafka (AlterShareGroupOffsets in Kafka 4.1.1)"
DOC_KAFKA_44 = "docs/protocol.md#open-differences-with-kafka-440 (not yet followed)"
DOC_GATEWAY_SHARE_KEY = "docs/protocol.md#share-coordinator-kip-932 (Routing: keyType 2 is unknown to the gateway)"
# Where the Kafka 4.4.0 reference answers otherwise for a cause the service does not follow yet
# (docs/protocol.md, *Open differences with Kafka 4.4.0*): these fields, on every step of the API.
KAFKA_44_OPEN: dict[str, tuple[str, ...]] = {}
DOC_TOPIC_ID_ORDER = "docs/protocol.md#the-differential-test (a share assignment follows the topic id's hash)"
# Which partitions the share groups' simple assignor hands a member follows the hash order of the
# topic's id (Kafka's HashMaps of TopicIdPartition), and the two clusters' ids of a topic differ:
# these fields may differ as the ids do (tests/share/test_share_simple_assignor.py checks the
# service against Kafka's own assignor for given ids).
TOPIC_ID_ORDER: dict[str, tuple[str, ...]] = {
    "ShareGroupHeartbeat": ("assignment",),
    "ShareGroupDescribe": ("groups[*].members[*].assignment",),
}

# The share coordinator's updates between snapshots on both sides of a run (Kafka's
# share.coordinator.snapshot.update.records.per.snapshot, 500 by default): few, so that the
# share-coordinator scenario writes several snapshots (bench/differential.py sets it).
SNAPSHOT_EVERY = 3

# Errors
MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID, NON_EMPTY_GROUP = 79, 25, 68
MISSING_INTERNAL_TOPICS = 3


# ------------------------------------------------------------------ classic groups and offsets
def classic(run: str) -> Scenario:
    group, topic = f"diff-classic-{run}", f"diff-classic-{run}"
    subscription = encode_subscription([topic])
    join = {
        "groupId": group,
        "sessionTimeoutMs": 10000,
        "rebalanceTimeoutMs": 10000,
        "groupInstanceId": None,
        "protocolType": "consumer",
        "protocols": [{"name": "range", "metadata": subscription}],
        "reason": None,
    }

    def member(side: Side) -> str:
        return side.saved["join1"]["memberId"]

    def commit(side: Side) -> dict:
        return {
            "groupId": group,
            "generationIdOrMemberEpoch": side.saved["join2"]["generationId"],
            "memberId": member(side),
            "groupInstanceId": None,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partitionIndex": p,
                            "committedOffset": 5 + p,
                            "committedLeaderEpoch": -1,
                            "committedMetadata": "m",
                        }
                        for p in (0, 1)
                    ],
                }
            ],
        }

    fetch = {
        "groups": [
            {
                "groupId": group,
                "memberId": None,
                "memberEpoch": -1,
                "topics": [{"name": topic, "partitionIndexes": [0, 1]}],
            }
        ],
        "requireStable": True,
    }
    return Scenario(
        f"classic-{run}",
        {topic: 2},
        [
            Step("find coordinator", "FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": [group]}),
            Step("join without member id", "JoinGroup", 9, {**join, "memberId": ""}, save=saved("join1")),
            Step("join with member id", "JoinGroup", 9, lambda s: {**join, "memberId": member(s)}, save=saved("join2")),
            Step(
                "sync as leader",
                "SyncGroup",
                5,
                lambda s: {
                    "groupId": group,
                    "generationId": s.saved["join2"]["generationId"],
                    "memberId": member(s),
                    "groupInstanceId": None,
                    "protocolType": "consumer",
                    "protocolName": "range",
                    "assignments": [{"memberId": member(s), "assignment": ""}],
                },
            ),
            Step(
                "heartbeat",
                "Heartbeat",
                4,
                lambda s: {
                    "groupId": group,
                    "generationId": s.saved["join2"]["generationId"],
                    "memberId": member(s),
                    "groupInstanceId": None,
                },
            ),
            Step(
                "describe",
                "DescribeGroups",
                5,
                {"groups": [group, f"{group}-none"], "includeAuthorizedOperations": False},
            ),
            Step("commit as member", "OffsetCommit", 9, commit),
            Step("fetch stable", "OffsetFetch", 9, fetch),
            Step("list groups", "ListGroups", 5, {"statesFilter": [], "typesFilter": []}, view=only_groups(group)),
            Step(
                "leave",
                "LeaveGroup",
                5,
                lambda s: {
                    "groupId": group,
                    "members": [{"memberId": member(s), "groupInstanceId": None, "reason": "bye"}],
                },
            ),
            Step("describe empty", "DescribeGroups", 5, {"groups": [group], "includeAuthorizedOperations": True}),
            Step(
                "offset delete",
                "OffsetDelete",
                0,
                {"groupId": group, "topics": [{"name": topic, "partitions": [{"partitionIndex": 0}]}]},
            ),
            Step("fetch after delete", "OffsetFetch", 9, fetch),
            Step("delete group", "DeleteGroups", 2, {"groupsNames": [group, f"{group}-none"]}),
            Step(
                "fetch v1 after group deleted",
                "OffsetFetch",
                1,
                {"groupId": group, "topics": [{"name": topic, "partitionIndexes": [1]}]},
            ),
        ],
    )


# ------------------------------------------------------------------ KIP-848 consumer groups, configs
def _save_consumer_member(member: str) -> Callable[[dict, Side], None]:
    """Keeps a KIP-848 member's epoch and the last assignment it was sent (null: unchanged)."""

    def save(answer: dict, side: Side) -> None:
        if answer["errorCode"] == 0:
            side.saved[f"{member}-epoch"] = answer["memberEpoch"]
            if answer["assignment"] is not None:
                side.saved[f"{member}-assigned"] = answer["assignment"]["topicPartitions"]

    return save


def _partitions(side: Side, member: str) -> list[int]:
    return sorted(p for t in side.saved.get(f"{member}-assigned") or [] for p in t["partitions"])


def consumer(run: str) -> Scenario:
    group, topic = f"diff-consumer-{run}", f"diff-consumer-{run}"
    member = "diffconsumermember000001"
    second = "diffconsumermember000002"
    txn = f"diff-consumer-txn-{run}"

    def heartbeat(epoch: int, **extra) -> Callable[[Side], dict]:
        def body(side: Side) -> dict:
            return {
                "groupId": group,
                "memberId": member,
                "memberEpoch": epoch if epoch <= 0 else side.saved["joined"]["memberEpoch"],
                "instanceId": None,
                "rackId": None,
                "rebalanceTimeoutMs": 10000 if epoch == 0 else -1,
                "subscribedTopicNames": [topic] if epoch == 0 else None,
                "subscribedTopicRegex": None,
                "serverAssignor": None,
                "topicPartitions": [] if epoch == 0 else None,
                **extra,
            }

        return body

    def member_heartbeat(who: str, epoch: int | None, owned: Callable[[Side], list] | None = None):
        """`who`'s heartbeat: a join (epoch 0), a leave (-1), else at its saved epoch."""

        def body(side: Side) -> dict:
            return {
                "groupId": group,
                "memberId": who,
                "memberEpoch": epoch if epoch is not None else side.saved[f"{who}-epoch"],
                "instanceId": None,
                "rackId": None,
                "rebalanceTimeoutMs": 10000 if epoch == 0 else -1,
                "subscribedTopicNames": [topic] if epoch == 0 else None,
                "subscribedTopicRegex": None,
                "serverAssignor": None,
                "topicPartitions": [] if epoch == 0 else (owned(side) if owned is not None else None),
            }

        return body

    # KIP-1251 (Kafka 4.3+): a commit at an older member epoch is accepted for the partitions
    # assigned to the member at or before it. `first_epoch` is the first member's epoch before the
    # second member joined: it keeps some partitions from then; the others are the second's.
    def first_epoch(side: Side) -> int:
        return side.saved["joined"]["memberEpoch"]

    def kept(side: Side) -> list[int]:
        return _partitions(side, member)

    def everything(side: Side) -> list[int]:
        return sorted(kept(side) + _partitions(side, second))

    def offset_commit(who: str, epoch: Callable[[Side], int], partitions: Callable[[Side], list[int]], version: int):
        def body(side: Side) -> dict:
            parts = [
                {"partitionIndex": p, "committedOffset": 5, "committedLeaderEpoch": -1, "committedMetadata": ""}
                for p in partitions(side)
            ]
            named = {"topicId": _topic_id(side, topic)} if version >= 10 else {"name": topic}
            return {
                "groupId": group,
                "generationIdOrMemberEpoch": epoch(side),
                "memberId": who,
                "groupInstanceId": None,
                "topics": [{**named, "partitions": parts}],
            }

        return body

    def txn_producer(side: Side) -> dict:
        a = side.saved["init"]
        return {"transactionalId": txn, "producerId": a["producerId"], "producerEpoch": a["producerEpoch"]}

    def txn_offset_commit(partitions: Callable[[Side], list[int]], version: int):
        def body(side: Side) -> dict:
            parts = [
                {"partitionIndex": p, "committedOffset": 7, "committedLeaderEpoch": -1, "committedMetadata": None}
                for p in partitions(side)
            ]
            named = {"topicId": _topic_id(side, topic)} if version >= 6 else {"name": topic}
            return {
                **txn_producer(side),
                "groupId": group,
                "generationIdOrMemberEpoch": first_epoch(side),
                "memberId": member,
                "groupInstanceId": None,
                "topics": [{**named, "partitions": parts}],
            }

        return body

    def acknowledged(side: Side) -> list:
        return side.saved.get(f"{member}-assigned") or []

    resource = {"resourceType": 32, "resourceName": group}
    return Scenario(
        f"consumer-{run}",
        {topic: 3},
        [
            Step(
                "join",
                "ConsumerGroupHeartbeat",
                1,
                heartbeat(0),
                until=lambda a, s: bool(a["assignment"] and a["assignment"]["topicPartitions"]),
                save=saved("joined"),
            ),
            Step(
                "describe",
                "ConsumerGroupDescribe",
                1,
                {"groupIds": [group, f"{group}-none"], "includeAuthorizedOperations": False},
            ),
            Step(
                "alter group config",
                "IncrementalAlterConfigs",
                1,
                {
                    "resources": [
                        {
                            **resource,
                            "configs": [
                                {"name": "consumer.heartbeat.interval.ms", "configOperation": 0, "value": "2000"}
                            ],
                        }
                    ],
                    "validateOnly": False,
                },
            ),
            Step(
                "describe group config",
                "DescribeConfigs",
                4,
                {
                    "resources": [
                        {
                            **resource,
                            "configurationKeys": ["consumer.heartbeat.interval.ms", "consumer.session.timeout.ms"],
                        }
                    ],
                    "includeSynonyms": False,
                    "includeDocumentation": False,
                },
            ),
            Step(
                "heartbeat takes the config",
                "ConsumerGroupHeartbeat",
                1,
                heartbeat(1),
                until=lambda a, s: a["heartbeatIntervalMs"] == 2000,
            ),
            Step(
                "second member joins",
                "ConsumerGroupHeartbeat",
                1,
                member_heartbeat(second, 0),
                save=_save_consumer_member(second),
            ),
            Step(
                "first member is asked to revoke",
                "ConsumerGroupHeartbeat",
                1,
                lambda s: {**heartbeat(1)(s), "topicPartitions": s.saved["joined"]["assignment"]["topicPartitions"]},
                save=_save_consumer_member(member),
            ),
            Step(
                "first member revokes",
                "ConsumerGroupHeartbeat",
                1,
                member_heartbeat(member, None, acknowledged),
                save=_save_consumer_member(member),
            ),
            Step(
                "second member heartbeats until assigned",
                "ConsumerGroupHeartbeat",
                1,
                member_heartbeat(second, None, lambda s: s.saved.get(f"{second}-assigned") or []),
                save=_save_consumer_member(second),
                until=lambda a, s: a["errorCode"] != 0 or bool(_partitions(s, second)),
            ),
            Step(
                "commit at an older epoch, partitions kept since",
                "OffsetCommit",
                9,
                offset_commit(member, first_epoch, kept, 9),
            ),
            Step(
                "commit at an older epoch, a partition assigned since to another member",
                "OffsetCommit",
                10,
                offset_commit(member, first_epoch, everything, 10),
            ),
            Step(
                "commit at an epoch older than the partition's assignment",
                "OffsetCommit",
                10,
                offset_commit(second, first_epoch, lambda s: _partitions(s, second), 10),
            ),
            Step(
                "offsets committed at older epochs",
                "OffsetFetch",
                10,
                lambda s: {
                    "groups": [
                        {
                            "groupId": group,
                            "memberId": None,
                            "memberEpoch": -1,
                            "topics": [{"topicId": _topic_id(s, topic), "partitionIndexes": [0, 1, 2]}],
                        }
                    ],
                    "requireStable": False,
                },
            ),
            Step(
                "init producer id",
                "InitProducerId",
                5,
                {"transactionalId": txn, "transactionTimeoutMs": 60000, "producerId": -1, "producerEpoch": -1},
                save=saved("init"),
                until=retried,
            ),
            Step("add offsets", "AddOffsetsToTxn", 3, lambda s: {**txn_producer(s), "groupId": group}),
            Step(
                "txn commit at an older epoch, partitions kept since (v6)",
                "TxnOffsetCommit",
                6,
                txn_offset_commit(kept, 6),
            ),
            Step(
                "txn commit at an older epoch, a partition assigned since (v6)",
                "TxnOffsetCommit",
                6,
                txn_offset_commit(everything, 6),
            ),
            Step(
                "txn commit at an older epoch, a partition assigned since (v4)",
                "TxnOffsetCommit",
                4,
                txn_offset_commit(everything, 4),
            ),
            Step("abort", "EndTxn", 3, lambda s: {**txn_producer(s), "committed": False}),
            Step("second member leaves", "ConsumerGroupHeartbeat", 1, member_heartbeat(second, -1)),
            Step("leave", "ConsumerGroupHeartbeat", 1, heartbeat(-1)),
            Step(
                "describe empty",
                "ConsumerGroupDescribe",
                1,
                {"groupIds": [group], "includeAuthorizedOperations": False},
            ),
            Step("delete", "DeleteGroups", 2, {"groupsNames": [group]}),
        ],
    )


# ------------------------------------------------------------------ Kafka 4.3/4.4's group configs
def group_configs(run: str) -> Scenario:
    """The group configs Kafka 4.3/4.4 added, on a group that does not exist (Kafka's configs live
    apart from groups): 4.4's validation messages, APPEND refused even on the LIST config, DescribeConfigs of
    the configs whose fallback both sides share (the reference broker's assignment settings are set
    in its file, the job's are defaults)."""
    group = f"diff-configs-{run}"

    def alter(*configs: tuple[str, int, str | None]) -> dict:
        return {
            "resources": [
                {
                    "resourceType": 32,
                    "resourceName": group,
                    "configs": [{"name": n, "configOperation": op, "value": v} for n, op, v in configs],
                }
            ],
            "validateOnly": False,
        }

    described = [
        "share.delivery.count.limit",
        "share.partition.max.record.locks",
        "share.renew.acknowledge.enable",
        "streams.rack.aware.assignment.tags",
        "streams.assignor.name",
        "errors.deadletterqueue.topic.name",
        "errors.deadletterqueue.copy.record.enable",
    ]
    describe = {
        "resources": [{"resourceType": 32, "resourceName": group, "configurationKeys": described}],
        "includeSynonyms": False,
        "includeDocumentation": True,
    }
    return Scenario(
        f"group-configs-{run}",
        {},
        [
            Step("describe the defaults", "DescribeConfigs", 4, describe),
            Step(
                "delivery count above its bound",
                "IncrementalAlterConfigs",
                1,
                alter(("share.delivery.count.limit", 0, "11")),
            ),
            Step(
                "record locks below ConfigDef's",
                "IncrementalAlterConfigs",
                1,
                alter(("share.partition.max.record.locks", 0, "99")),
            ),
            Step(
                "an unregistered assignor", "IncrementalAlterConfigs", 1, alter(("streams.assignor.name", 0, "greedy"))
            ),
            Step(
                "duplicate rack tags",
                "IncrementalAlterConfigs",
                1,
                alter(("streams.rack.aware.assignment.tags", 0, "zone,zone")),
            ),
            Step(
                "an internal DLQ name",
                "IncrementalAlterConfigs",
                1,
                alter(("errors.deadletterqueue.topic.name", 0, "__dlq")),
            ),
            Step("not a boolean", "IncrementalAlterConfigs", 1, alter(("share.renew.acknowledge.enable", 0, "yes"))),
            Step("append to a non-list", "IncrementalAlterConfigs", 1, alter(("share.delivery.count.limit", 2, "3"))),
            Step(
                "set the new configs",
                "IncrementalAlterConfigs",
                1,
                alter(
                    ("share.delivery.count.limit", 0, "7"),
                    ("share.partition.max.record.locks", 0, "300"),
                    ("share.renew.acknowledge.enable", 0, "false"),
                    ("streams.assignor.name", 0, "sticky"),
                    ("errors.deadletterqueue.topic.name", 0, "dlq"),
                    ("errors.deadletterqueue.copy.record.enable", 0, "true"),
                ),
            ),
            Step(
                "append to the list config",
                "IncrementalAlterConfigs",
                1,
                alter(("streams.rack.aware.assignment.tags", 2, "zone")),
            ),
            Step(
                "set rack tags",
                "IncrementalAlterConfigs",
                1,
                alter(("streams.rack.aware.assignment.tags", 0, "zone, rack")),
            ),
            Step("describe the group's values", "DescribeConfigs", 4, describe),
        ],
    )


# ------------------------------------------------------------------ transactions
def transactions(run: str) -> Scenario:
    txn, topic, group = f"diff-txn-{run}", f"diff-txn-{run}", f"diff-txn-group-{run}"

    def producer(side: Side) -> dict:
        a = side.saved["init"]
        return {"transactionalId": txn, "producerId": a["producerId"], "producerEpoch": a["producerEpoch"]}

    return Scenario(
        f"transactions-{run}",
        {topic: 2},
        [
            Step("find coordinator", "FindCoordinator", 4, {"keyType": 1, "coordinatorKeys": [txn]}),
            Step(
                "init producer id",
                "InitProducerId",
                5,
                {"transactionalId": txn, "transactionTimeoutMs": 60000, "producerId": -1, "producerEpoch": -1},
                save=saved("init"),
                until=retried,
            ),
            Step(
                "add partitions",
                "AddPartitionsToTxn",
                3,
                lambda s: {
                    "v3AndBelowTransactionalId": txn,
                    "v3AndBelowProducerId": s.saved["init"]["producerId"],
                    "v3AndBelowProducerEpoch": s.saved["init"]["producerEpoch"],
                    "v3AndBelowTopics": [{"name": topic, "partitions": [0]}],
                },
            ),
            Step("add offsets", "AddOffsetsToTxn", 3, lambda s: {**producer(s), "groupId": group}),
            Step(
                "txn offset commit",
                "TxnOffsetCommit",
                3,
                lambda s: {
                    **producer(s),
                    "groupId": group,
                    "generationIdOrMemberEpoch": -1,
                    "memberId": "",
                    "groupInstanceId": None,
                    "topics": [
                        {
                            "name": topic,
                            "partitions": [
                                {
                                    "partitionIndex": 0,
                                    "committedOffset": 3,
                                    "committedLeaderEpoch": -1,
                                    "committedMetadata": None,
                                }
                            ],
                        }
                    ],
                },
            ),
            Step("describe ongoing", "DescribeTransactions", 0, {"transactionalIds": [txn, f"{txn}-none"]}),
            Step(
                "list ongoing",
                "ListTransactions",
                1,
                {"stateFilters": ["Ongoing"], "producerIdFilters": [], "durationFilter": -1},
                view=only_transactions(txn),
            ),
            Step("commit", "EndTxn", 3, lambda s: {**producer(s), "committed": True}),
            Step(
                "offsets committed",
                "OffsetFetch",
                9,
                {
                    "groups": [
                        {
                            "groupId": group,
                            "memberId": None,
                            "memberEpoch": -1,
                            "topics": [{"name": topic, "partitionIndexes": [0]}],
                        }
                    ],
                    "requireStable": True,
                },
                until=lambda a, s: a["groups"][0]["topics"][0]["partitions"][0]["errorCode"] == 0,
            ),
            Step(
                "describe complete",
                "DescribeTransactions",
                0,
                {"transactionalIds": [txn]},
                until=lambda a, s: a["transactionStates"][0]["transactionState"] == "CompleteCommit",
            ),
            Step("end without transaction", "EndTxn", 3, lambda s: {**producer(s), "committed": False}),
        ],
    )


# ------------------------------------------------------------------ streams groups
def _topology(source: str, changelog: str | None = None) -> dict:
    return {
        "epoch": 0,
        "subtopologies": [
            {
                "subtopologyId": "0",
                "sourceTopics": [source],
                "sourceTopicRegex": [],
                "stateChangelogTopics": (
                    [{"name": changelog, "partitions": 0, "replicationFactor": 0, "topicConfigs": []}]
                    if changelog
                    else []
                ),
                "repartitionSinkTopics": [],
                "repartitionSourceTopics": [],
                "copartitionGroups": [],
            }
        ],
    }


def _streams_heartbeat(
    group: str, member: str, process: str, topology: dict | None, instance: str | None = None
) -> Callable[..., Callable[[Side], dict]]:
    """Heartbeat bodies of one streams member: `hb(epoch)` joins (0), leaves (-1) or sends the
    member's saved epoch; `owned` names the tasks it reports owning ({subtopology: partitions})."""

    def hb(epoch: int | None = None, owned: dict | str | None = None) -> Callable[[Side], dict]:
        """`owned`: the tasks the member reports ({subtopology: partitions}; "saved": those it was
        last given; None: unchanged)."""

        def body(side: Side) -> dict:
            current = side.saved.get(f"{member}-epoch", 0)
            e = current if epoch is None else epoch
            reported = _active({"activeTasks": side.saved.get(f"{member}-active")}) if owned == "saved" else owned
            tasks = None if reported is None else [{"subtopologyId": k, "partitions": v} for k, v in reported.items()]
            return {
                "groupId": group,
                "memberId": member,
                "memberEpoch": e,
                "endpointInformationEpoch": side.saved.get(f"{member}-endpoint-epoch", -1),
                "instanceId": instance,
                "rackId": None,
                "rebalanceTimeoutMs": 10000 if e == 0 else -1,
                "topology": topology if e == 0 else None,
                "activeTasks": [] if e == 0 else tasks,
                "standbyTasks": [] if e == 0 else ([] if tasks is not None else None),
                "warmupTasks": [] if e == 0 else ([] if tasks is not None else None),
                "processId": process if e == 0 else None,
                "userEndpoint": {"host": "localhost", "port": 8080 + int(process[-1])} if e == 0 else None,
                "clientTags": [] if e == 0 else None,
                "taskOffsets": None,
                "taskEndOffsets": None,
                "shutdownApplication": False,
            }

        return body

    return hb


def _save_epoch(member: str) -> Callable[[dict, Side], None]:
    def save(answer: dict, side: Side) -> None:
        if answer["errorCode"] == 0:
            side.saved[f"{member}-epoch"] = answer["memberEpoch"]
            side.saved[f"{member}-endpoint-epoch"] = answer["endpointInformationEpoch"]
            if answer["activeTasks"] is not None:
                side.saved[f"{member}-active"] = answer["activeTasks"]

    return save


def _active(answer: dict) -> dict:
    return {t["subtopologyId"]: sorted(t["partitions"]) for t in answer.get("activeTasks") or []}


def _owns(member: str, tasks: dict | None = None) -> Callable[[dict, Side], bool]:
    """Until the member was given these tasks (None: any), or an error."""

    def check(answer: dict, side: Side) -> bool:
        given = _active({"activeTasks": side.saved.get(f"{member}-active")})
        return answer["errorCode"] != 0 or (given == tasks if tasks is not None else bool(given))

    return check


def streams(run: str) -> Scenario:
    group, topic = f"diff-streams-{run}", f"diff-streams-{run}"
    topology = _topology(topic)
    m1 = _streams_heartbeat(group, "diffstreamsmember1", "process-1", topology)
    m2 = _streams_heartbeat(group, "diffstreamsmember2", "process-2", topology)
    describe = {"groupIds": [group], "includeAuthorizedOperations": False}
    both = {"0": [0, 1, 2, 3]}
    session = {"name": "streams.session.timeout.ms", "configOperation": 0, "value": "60000"}
    return Scenario(
        f"streams-{run}",
        {topic: 4},
        [
            # The first member is silent from its revocation to its leave: a long session keeps it on
            # a slow run (a loaded machine once took the job over 20 s for those steps).
            Step(
                "a session long enough for the scenario",
                "IncrementalAlterConfigs",
                1,
                {
                    "resources": [{"resourceType": 32, "resourceName": group, "configs": [session]}],
                    "validateOnly": False,
                },
            ),
            Step("first member joins", "StreamsGroupHeartbeat", 0, m1(0), save=_save_epoch("diffstreamsmember1")),
            Step("describe one member", "StreamsGroupDescribe", 0, describe),
            Step(
                "first member heartbeats until it has every task",
                "StreamsGroupHeartbeat",
                0,
                m1(None, owned="saved"),
                until=_owns("diffstreamsmember1", both),
                save=_save_epoch("diffstreamsmember1"),
            ),
            Step(
                "describe stable",
                "StreamsGroupDescribe",
                0,
                describe,
                # The broker's describe reads the last committed offset: the topology configured by a
                # heartbeat that wrote no records is not there yet.
                deviation={"groups[*].groupState": DOC_STREAMS_COMMITTED, "groups[*].topology": DOC_STREAMS_COMMITTED},
            ),
            Step("second member joins", "StreamsGroupHeartbeat", 0, m2(0), save=_save_epoch("diffstreamsmember2")),
            Step(
                "first member is asked to revoke",
                "StreamsGroupHeartbeat",
                0,
                m1(None, owned=both),
                save=_save_epoch("diffstreamsmember1"),
            ),
            Step(
                "first member acknowledges the revocation",
                "StreamsGroupHeartbeat",
                0,
                m1(None, owned="saved"),
                save=_save_epoch("diffstreamsmember1"),
            ),
            Step(
                "second member gets the released tasks",
                "StreamsGroupHeartbeat",
                0,
                m2(None, owned="saved"),
                until=_owns("diffstreamsmember2"),
                save=_save_epoch("diffstreamsmember2"),
            ),
            Step("describe two members", "StreamsGroupDescribe", 0, describe),
            # Kafka 4.4.0's v1s (KIP-1331/1357) and key 93, on a broker without a topology-description
            # plugin (the reference's default, and the service's only way).
            Step(
                "second member heartbeats with v1",
                "StreamsGroupHeartbeat",
                1,
                m2(None, owned="saved"),
                save=_save_epoch("diffstreamsmember2"),
            ),
            Step(
                "describe v1 with the topology description",
                "StreamsGroupDescribe",
                1,
                {**describe, "includeTopologyDescription": True},
            ),
            Step(
                "push a topology description",
                "StreamsGroupTopologyDescriptionUpdate",
                0,
                {
                    "groupId": group,
                    "memberId": "diffstreamsmember1",
                    "topologyEpoch": 0,
                    "topologyDescription": {"subtopologies": [], "globalStores": []},
                },
            ),
            Step(
                "commit from a member",
                "OffsetCommit",
                9,
                lambda s: {
                    "groupId": group,
                    "generationIdOrMemberEpoch": s.saved["diffstreamsmember2-epoch"],
                    "memberId": "diffstreamsmember2",
                    "groupInstanceId": None,
                    "topics": [
                        {
                            "name": topic,
                            "partitions": [
                                {
                                    "partitionIndex": 0,
                                    "committedOffset": 1,
                                    "committedLeaderEpoch": -1,
                                    "committedMetadata": "",
                                }
                            ],
                        }
                    ],
                },
            ),
            Step(
                "list streams groups",
                "ListGroups",
                5,
                {"statesFilter": [], "typesFilter": ["streams"]},
                view=only_groups(group),
            ),
            Step("second member leaves", "StreamsGroupHeartbeat", 0, m2(-1)),
            Step("delete a non-empty group", "DeleteGroups", 2, {"groupsNames": [group]}),
            Step("first member leaves", "StreamsGroupHeartbeat", 0, m1(-1)),
            Step("describe empty", "StreamsGroupDescribe", 0, describe),
            Step(
                "describe groups (classic API)",
                "DescribeGroups",
                5,
                {"groups": [group], "includeAuthorizedOperations": False},
            ),
            Step("delete", "DeleteGroups", 2, {"groupsNames": [group]}),
            Step("describe deleted", "StreamsGroupDescribe", 0, describe),
        ],
    )


def streams_internal_topics(run: str) -> Scenario:
    """A stateful topology: its changelog topic is missing (MISSING_INTERNAL_TOPICS) until created.
    A 4.1 broker creates it itself; the service's client does (docs/protocol.md)."""
    group, topic = f"diff-streams-state-{run}", f"diff-streams-state-{run}"
    changelog = f"{group}-store-changelog"
    m1 = _streams_heartbeat(group, "diffstatefulmember1", "process-1", _topology(topic, changelog))
    describe = {"groupIds": [group], "includeAuthorizedOperations": False}

    def create_changelog(side: Side) -> None:
        from client.drill.load import ensure_data_topics

        if side.name == "service":  # as client.StreamsGroupMember does on MISSING_INTERNAL_TOPICS
            ensure_data_topics(side.bootstrap, {changelog: 2})
            if side.await_topics is not None:
                side.await_topics({changelog: 2})

    return Scenario(
        f"streams-internal-topics-{run}",
        {topic: 2},
        [
            Step(
                "join: internal topic missing",
                "StreamsGroupHeartbeat",
                0,
                m1(0),
                save=_save_epoch("diffstatefulmember1"),
            ),
            Step("describe not ready", "StreamsGroupDescribe", 0, describe),
            Step(
                "heartbeat until the topic exists and tasks come",
                "StreamsGroupHeartbeat",
                0,
                m1(None, owned="saved"),
                before=create_changelog,
                until=_owns("diffstatefulmember1"),
                save=_save_epoch("diffstatefulmember1"),
            ),
            Step("describe configured", "StreamsGroupDescribe", 0, describe),
            Step("leave", "StreamsGroupHeartbeat", 0, m1(-1)),
        ],
    )


def streams_expiry(run: str) -> Scenario:
    group, topic = f"diff-streams-expiry-{run}", f"diff-streams-expiry-{run}"
    topology = _topology(topic)
    m1 = _streams_heartbeat(group, "diffexpirymember1", "process-1", topology)
    m2 = _streams_heartbeat(group, "diffexpirymember2", "process-2", topology)
    describe = {"groupIds": [group], "includeAuthorizedOperations": False}
    resource = {"resourceType": 32, "resourceName": group}

    def keep_first_alive(s: Side) -> None:
        _save_epoch("diffexpirymember1")(s.target.call("StreamsGroupHeartbeat", 0, m1(None, owned="saved")(s)), s)

    return Scenario(
        f"streams-expiry-{run}",
        {topic: 2},
        [
            Step(
                "short session for the group",
                "IncrementalAlterConfigs",
                1,
                {
                    "resources": [
                        {
                            **resource,
                            "configs": [{"name": "streams.session.timeout.ms", "configOperation": 0, "value": "6000"}],
                        }
                    ],
                    "validateOnly": False,
                },
            ),
            Step("first member joins", "StreamsGroupHeartbeat", 0, m1(0), save=_save_epoch("diffexpirymember1")),
            Step("second member joins", "StreamsGroupHeartbeat", 0, m2(0), save=_save_epoch("diffexpirymember2")),
            Step(
                "the first outlives the silent second",
                "StreamsGroupDescribe",
                0,
                describe,
                # the silent member is gone and the other one took its tasks (its heartbeat computes
                # the new assignment: Assigning until then)
                until=lambda a, s: len(a["groups"][0]["members"]) == 1 and a["groups"][0]["groupState"] == "Stable",
                before=keep_first_alive,
                keep_alive=keep_first_alive,
                timeout_s=60,
            ),
            Step("the expired member heartbeats", "StreamsGroupHeartbeat", 0, m2(None, owned="saved")),
            Step("leave", "StreamsGroupHeartbeat", 0, m1(-1)),
        ],
    )


def streams_static(run: str) -> Scenario:
    """Kafka 4.4.0's static streams members: a temporary leave (epoch -2) keeps the tasks, the
    instance rejoining under a new member id takes them back; the replaced id is fenced, a third
    member cannot take the instance id while it is held."""
    group, topic = f"diff-streams-static-{run}", f"diff-streams-static-{run}"
    topology = _topology(topic)
    instance = f"diff-static-instance-{run}"
    m1 = _streams_heartbeat(group, "diffstaticmember1", "process-1", topology, instance)
    m1b = _streams_heartbeat(group, "diffstaticmember1b", "process-1", topology, instance)
    m3 = _streams_heartbeat(group, "diffstaticmember3", "process-3", topology, instance)
    describe = {"groupIds": [group], "includeAuthorizedOperations": False}
    session = {"name": "streams.session.timeout.ms", "configOperation": 0, "value": "60000"}
    return Scenario(
        f"streams-static-{run}",
        {topic: 2},
        [
            # The members heartbeat only when a step says so: a long session keeps them on a slow run.
            Step(
                "a session long enough for the scenario",
                "IncrementalAlterConfigs",
                1,
                {
                    "resources": [{"resourceType": 32, "resourceName": group, "configs": [session]}],
                    "validateOnly": False,
                },
            ),
            Step("static member joins", "StreamsGroupHeartbeat", 0, m1(0), save=_save_epoch("diffstaticmember1")),
            Step(
                "static member heartbeats until it has every task",
                "StreamsGroupHeartbeat",
                0,
                m1(None, owned="saved"),
                until=_owns("diffstaticmember1", {"0": [0, 1]}),
                save=_save_epoch("diffstaticmember1"),
            ),
            Step("static member leaves temporarily", "StreamsGroupHeartbeat", 0, m1(-2)),
            Step("describe the temporarily left member", "StreamsGroupDescribe", 0, describe),
            Step(
                "the instance rejoins under a new member id",
                "StreamsGroupHeartbeat",
                0,
                m1b(0),
                save=_save_epoch("diffstaticmember1b"),
            ),
            Step("the replaced member id is fenced", "StreamsGroupHeartbeat", 0, m1(None, owned="saved")),
            Step("another member cannot take the held instance id", "StreamsGroupHeartbeat", 0, m3(0)),
            Step("describe the replacing member", "StreamsGroupDescribe", 0, describe),
            Step("the static member leaves for good", "StreamsGroupHeartbeat", 0, m1b(-1)),
            Step("describe empty", "StreamsGroupDescribe", 0, describe),
        ],
    )


# ------------------------------------------------------------------ share groups
def _share_heartbeat(group: str, member: str, topic: str) -> Callable[[int | None], Callable[[Side], dict]]:
    def hb(epoch: int | None = None) -> Callable[[Side], dict]:
        def body(side: Side) -> dict:
            e = side.saved.get(f"{member}-epoch", 0) if epoch is None else epoch
            return {
                "groupId": group,
                "memberId": member,
                "memberEpoch": e,
                "rackId": None,
                "subscribedTopicNames": [topic] if e == 0 else None,
            }

        return body

    return hb


def _save_share_epoch(member: str) -> Callable[[dict, Side], None]:
    def save(answer: dict, side: Side) -> None:
        if answer["errorCode"] == 0:
            side.saved[f"{member}-epoch"] = answer["memberEpoch"]
            if answer["assignment"] is not None:  # null: unchanged
                side.saved[f"{member}-assigned"] = answer["assignment"]["topicPartitions"]

    return save


def _assigned(member: str, count: int) -> Callable[[dict, Side], bool]:
    """Until the member was given `count` partitions, or an error."""

    def check(answer: dict, side: Side) -> bool:
        given = sum(len(t["partitions"]) for t in side.saved.get(f"{member}-assigned") or [])
        return answer["errorCode"] != 0 or given == count

    return check


def _produce_once(topic: str, partition: int, count: int) -> Callable[[Side], None]:
    """Append `count` records to a partition of the side's broker, once per side (a step's `before`
    runs before each attempt): their end offset is what DescribeShareGroupOffsets v1's lag counts."""

    def produce(side: Side) -> None:
        done = f"produced-{topic}-{partition}"
        if side.saved.get(done):
            return
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=side.bootstrap, acks="all")
        try:
            for i in range(count):
                producer.send(topic, value=f"r{i}".encode(), partition=partition)
            producer.flush()
        finally:
            producer.close()
        side.saved[done] = True

    return produce


def share(run: str) -> Scenario:
    group, topic = f"diff-share-{run}", f"diff-share-{run}"
    m1 = _share_heartbeat(group, "diffsharemember000000001", topic)
    m2 = _share_heartbeat(group, "diffsharemember000000002", topic)
    describe = {"groupIds": [group], "includeAuthorizedOperations": False}
    offsets = {"groups": [{"groupId": group, "topics": [{"topicName": topic, "partitions": [0, 1]}]}]}
    alter = {
        "groupId": group,
        "topics": [{"topicName": topic, "partitions": [{"partitionIndex": 0, "startOffset": 0}]}],
    }
    # Kafka 4.1.1's KafkaApis hands the coordinator no topics (docs/protocol.md): the broker answers
    # an empty list and alters nothing; the service does what the coordinator decides.
    kafka_411_alter = {"responses": DOC_SHARE_ALTER, "errorCode": DOC_SHARE_ALTER, "errorMessage": DOC_SHARE_ALTER}
    resource = {"resourceType": 32, "resourceName": group}
    return Scenario(
        f"share-{run}",
        {topic: 2},
        [
            Step(
                "a session long enough for the scenario",
                "IncrementalAlterConfigs",
                1,
                {
                    "resources": [
                        {
                            **resource,
                            "configs": [{"name": "share.session.timeout.ms", "configOperation": 0, "value": "60000"}],
                        }
                    ],
                    "validateOnly": False,
                },
            ),
            Step(
                "first member joins and gets every partition",
                "ShareGroupHeartbeat",
                1,
                m1(0),
                save=_save_share_epoch("diffsharemember000000001"),
            ),
            Step(
                "first member heartbeats until assigned",
                "ShareGroupHeartbeat",
                1,
                m1(),
                until=_assigned("diffsharemember000000001", 2),
                save=_save_share_epoch("diffsharemember000000001"),
            ),
            Step(
                "second member joins",
                "ShareGroupHeartbeat",
                1,
                m2(0),
                save=_save_share_epoch("diffsharemember000000002"),
            ),
            Step(
                "second member heartbeats until assigned",
                "ShareGroupHeartbeat",
                1,
                m2(),
                until=_assigned("diffsharemember000000002", 1),
                save=_save_share_epoch("diffsharemember000000002"),
            ),
            Step(
                "first member gives one up",
                "ShareGroupHeartbeat",
                1,
                m1(),
                until=_assigned("diffsharemember000000001", 1),
                save=_save_share_epoch("diffsharemember000000001"),
            ),
            Step("describe", "ShareGroupDescribe", 1, describe),
            Step(
                "describe offsets (initialized at -1)",
                "DescribeShareGroupOffsets",
                0,
                offsets,
            ),
            Step(
                "alter offsets of a group with members",
                "AlterShareGroupOffsets",
                0,
                alter,
                deviation=kafka_411_alter,
            ),
            Step(
                "list share groups",
                "ListGroups",
                5,
                {"statesFilter": [], "typesFilter": ["share"]},
                view=only_groups(group),
            ),
            Step("second member leaves", "ShareGroupHeartbeat", 1, m2(-1)),
            Step("first member leaves", "ShareGroupHeartbeat", 1, m1(-1)),
            Step("describe empty", "ShareGroupDescribe", 1, describe),
            Step("alter offsets of the empty group", "AlterShareGroupOffsets", 0, alter, deviation=kafka_411_alter),
            Step(
                "describe altered offsets",
                "DescribeShareGroupOffsets",
                0,
                offsets,
                deviation={"groups[*].topics[*].partitions[*].startOffset": DOC_SHARE_ALTER},
            ),
            Step(
                "describe altered offsets with their lag (v1, KIP-1226) after 3 records",
                "DescribeShareGroupOffsets",
                1,
                offsets,
                before=_produce_once(topic, 0, 3),
            ),
            Step(
                "delete offsets",
                "DeleteShareGroupOffsets",
                0,
                {"groupId": group, "topics": [{"topicName": topic}]},
            ),
            Step("describe deleted offsets", "DescribeShareGroupOffsets", 0, offsets),
            Step(
                "delete offsets no longer there",
                "DeleteShareGroupOffsets",
                0,
                {"groupId": group, "topics": [{"topicName": topic}, {"topicName": f"{topic}-none"}]},
            ),
            Step("delete", "DeleteGroups", 2, {"groupsNames": [group]}),
            Step("describe deleted", "ShareGroupDescribe", 1, describe),
        ],
    )


def share_expiry(run: str) -> Scenario:
    group, topic = f"diff-share-expiry-{run}", f"diff-share-expiry-{run}"
    m1 = _share_heartbeat(group, "diffshareexpiry000000001", topic)
    describe = {"groupIds": [group], "includeAuthorizedOperations": False}
    return Scenario(
        f"share-expiry-{run}",
        {topic: 1},
        [
            Step("member joins", "ShareGroupHeartbeat", 1, m1(0), save=_save_share_epoch("diffshareexpiry000000001")),
            Step(
                "its session expires",
                "ShareGroupDescribe",
                1,
                describe,
                until=lambda a, s: a["groups"][0]["groupState"] == "Empty",
                timeout_s=60,
            ),
            Step("the expired member heartbeats", "ShareGroupHeartbeat", 1, m1()),
        ],
    )


# ------------------------------------------------------------------ the share coordinator (inter-broker APIs)
# A topic id neither cluster has (the same on both sides); the zero id is Kafka's Uuid.ZERO_UUID, which
# the wire can carry (the shard's "null topic id" is only reachable from Java).
UNKNOWN_TOPIC_ID, ZERO_TOPIC_ID = "nGUYA0v1Qj2-tvD3QkB2Lw", "AAAAAAAAAAAAAAAAAAAAAA"
SHARE_STATE_APIS = (
    "InitializeShareGroupState",
    "ReadShareGroupState",
    "WriteShareGroupState",
    "DeleteShareGroupState",
    "ReadShareGroupStateSummary",
)


def _topic_id(side: Side, topic: str, timeout_s: float = 30) -> str:
    """The side's id of `topic` (the ids differ per cluster; answers show them as `<topicId:name>`),
    once its broker's metadata has the new topic."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = [tid for tid, name in side.names.topic_ids.items() if name == topic]
        if found or time.monotonic() > deadline:
            return found[0] if found else topic
        time.sleep(0.2)
        side.names.topic_ids = {v: k for k, v in side.metadata.topic_ids().items()}


def _share_state(group: str, topic: str, partition: int = 0, **fields) -> Callable[[Side], dict]:
    """A share-state request for one share-partition (what Kafka's persister sends: one coordinator's
    share-partitions); `topic` is a name of the scenario or a literal topic id."""

    def body(side: Side) -> dict:
        tid = topic if topic in (UNKNOWN_TOPIC_ID, ZERO_TOPIC_ID) else _topic_id(side, topic)
        return {"groupId": group, "topics": [{"topicId": tid, "partitions": [{"partition": partition, **fields}]}]}

    return body


def _batches(*spans: tuple[int, int, int, int]) -> list[dict]:
    return [{"firstOffset": f, "lastOffset": la, "deliveryState": st, "deliveryCount": c} for f, la, st, c in spans]


def share_coordinator(run: str) -> Scenario:
    """InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState v0-v1,
    ReadShareGroupStateSummary v0-v1 and DeleteShareGroupState, sent to the share coordinator as a
    partition leader would: epochs stale, fenced and negative, start offsets moving back and forth,
    batches merging, writes before initialization, unknown topics and partitions, and enough writes
    for snapshots (the run's snapshot.update.records.per.snapshot is SNAPSHOT_EVERY on both sides)."""
    group, topic = f"diff-sharecoord-{run}", f"diff-sharecoord-{run}"

    def state(api: str, version: int = 0, partition: int = 0, tid: str = topic, g: str = group, **fields):
        return api, version, _share_state(g, tid, partition, **fields)

    def init(state_epoch: int, start: int, partition: int = 0, tid: str = topic):
        return state("InitializeShareGroupState", 0, partition, tid, stateEpoch=state_epoch, startOffset=start)

    def read(leader_epoch: int, partition: int = 0, tid: str = topic):
        return state("ReadShareGroupState", 0, partition, tid, leaderEpoch=leader_epoch)

    def summary(version: int = 1, partition: int = 0, tid: str = topic):
        return state("ReadShareGroupStateSummary", version, partition, tid, leaderEpoch=0)

    def write(state_epoch, leader_epoch, start, batches=(), count=None, partition: int = 0, tid: str = topic):
        fields = {"stateEpoch": state_epoch, "leaderEpoch": leader_epoch, "startOffset": start}
        fields["stateBatches"] = _batches(*batches)
        if count is not None:
            fields["deliveryCompleteCount"] = count
        return state("WriteShareGroupState", 0 if count is None else 1, partition, tid, **fields)

    def delete(partition: int = 0, tid: str = topic):
        return state("DeleteShareGroupState", 0, partition, tid)

    def find(side: Side) -> dict:
        return {"keyType": 2, "coordinatorKeys": [f"{group}:{_topic_id(side, topic)}:0"]}

    steps = [
        Step(
            "find the share coordinator",
            "FindCoordinator",
            6,
            find,
            # A new broker creates __share_group_state at the first lookup: COORDINATOR_NOT_AVAILABLE.
            until=lambda a, s: a["coordinators"][0]["errorCode"] not in (14, 15),
            deviation={
                "coordinators[*].errorCode": DOC_GATEWAY_SHARE_KEY,
                "coordinators[*].errorMessage": DOC_GATEWAY_SHARE_KEY,
            },
        ),
        Step(
            "summary before initialization",
            *summary(),
            # Until the broker has loaded its __share_group_state partition (NOT_COORDINATOR meanwhile).
            until=lambda a, s: a["results"][0]["partitions"][0]["errorCode"] not in (14, 15, 16),
        ),
        Step("read before initialization", *read(0)),
        Step("write before initialization", *write(0, 0, 0, [(0, 9, 0, 1)])),
        Step("delete before initialization", *delete()),
        Step("initialize", *init(0, 10)),
        Step("initialize the other partition at -1", *init(0, -1, partition=1)),
        Step("initialize with a negative state epoch", *init(-1, 10)),
        Step("initialize an unknown partition", *init(0, 0, partition=7)),
        Step("initialize an unknown topic", *init(0, 0, tid=UNKNOWN_TOPIC_ID)),
        Step("initialize the zero topic id", *init(0, 0, tid=ZERO_TOPIC_ID)),
        Step("summary v0 after initialization", *summary(0)),
        Step("summary v1 of the partition at -1", *summary(1, partition=1)),
        Step("read with a new leader epoch", *read(1)),
        Step("read with the same leader epoch", *read(1)),
        Step("read with a negative leader epoch", *read(-1)),
        Step("read with a stale leader epoch", *read(0)),
        Step("write v0", *write(0, 1, 10, [(10, 19, 1, 1)])),
        Step("write v1 moves the start offset", *write(0, 1, 15, [(15, 24, 2, 1), (30, 34, 0, 2)], count=3)),
        Step("summary v1 after the writes", *summary()),
        Step("write with a stale leader epoch", *write(0, 0, 15, [(25, 29, 1, 1)])),
        Step("write with a higher leader epoch", *write(0, 5, 15, [(25, 29, 1, 1)], count=2)),
        Step("write with the leader epoch the read recorded", *write(0, 2, 15, [], count=4)),
        Step("write with a negative leader epoch", *write(0, -1, 15, [(35, 39, 1, 1)])),
        Step("write with a negative state epoch", *write(-1, 1, 15, [(35, 39, 1, 1)])),
        Step("write with a higher state epoch", *write(1, 1, 15, [(35, 39, 1, 1)])),
        Step("write moves the start offset back", *write(0, 1, 12, [(12, 16, 4, 3)], count=9)),
        Step("write with start offset -1", *write(0, 1, -1, [(16, 20, 2, 3)], count=1)),
        Step("read the merged batches", *read(1)),
        Step("summary v1 after the merges", *summary()),
        Step("write to an uninitialized partition", *write(0, 1, 0, [], partition=7)),
        Step("write to an unknown topic", *write(0, 1, 0, [], tid=UNKNOWN_TOPIC_ID)),
        Step("read an unknown partition", *read(1, partition=7)),
        Step("summary of an unknown partition", *summary(partition=7)),
        Step("summary of an unknown topic", *summary(tid=UNKNOWN_TOPIC_ID)),
        Step("summary of the zero topic id", *summary(tid=ZERO_TOPIC_ID)),
    ]
    # Snapshots: SNAPSHOT_EVERY updates, then a snapshot, over a few cycles; start offsets forward
    # and back, overlapping batches of other delivery counts and states.
    for i in range(3 * (SNAPSHOT_EVERY + 1)):
        start = 40 + 5 * i if i % 3 else 30 + 5 * i
        spans = [(start, start + 7, (0, 1, 2, 4)[i % 4], 1 + i % 3), (start + 3, start + 12, 2, 2 + i % 2)]
        steps.append(Step(f"write {i + 1} of the snapshot cycles", *write(0, 1, start, spans, count=i)))
        if i % SNAPSHOT_EVERY == SNAPSHOT_EVERY - 1:
            steps.append(Step(f"read after write {i + 1}", *read(1)))
            steps.append(Step(f"summary after write {i + 1}", *summary()))
    steps += [
        Step("read with a newer leader epoch after the snapshots", *read(3)),
        Step("write with the leader epoch before it", *write(0, 2, 0, [])),
        Step("initialize again (state epoch 2)", *init(2, 100)),
        Step("read after initializing again", *read(3)),
        Step("summary after initializing again", *summary()),
        Step("write with the old state epoch", *write(1, 3, 100, [])),
        Step("initialize with an older state epoch", *init(1, 100)),
        Step("write after initializing again", *write(2, 3, 105, [(105, 110, 2, 1)], count=6)),
        Step("delete", *delete()),
        Step("read after delete", *read(3)),
        Step("summary after delete", *summary()),
        Step("write after delete", *write(2, 3, 105, [])),
        Step("delete again", *delete()),
        Step("delete the other partition", *delete(partition=1)),
        Step("delete an unknown partition", *delete(partition=7)),
        Step("delete an unknown topic", *delete(tid=UNKNOWN_TOPIC_ID)),
        Step("initialize after delete", *init(0, 3)),
        Step("read after initializing anew", *read(0)),
        Step("an empty group id", *state("ReadShareGroupState", 0, g="", leaderEpoch=0)),
        Step("a negative partition", *summary(partition=-1)),
    ]
    return Scenario(f"share-coordinator-{run}", {topic: 2}, steps)


ALL: list[Callable[[str], Scenario]] = [
    classic,
    consumer,
    group_configs,
    transactions,
    streams,
    streams_internal_topics,
    streams_expiry,
    streams_static,
    share,
    share_expiry,
    share_coordinator,
    versions,
]


def _with_open_differences(scenario: Scenario) -> Scenario:
    """The scenario with KAFKA_44_OPEN's and TOPIC_ID_ORDER's fields documented on the steps of
    their APIs."""
    steps = [
        dataclasses.replace(
            step,
            deviation={
                **dict.fromkeys(TOPIC_ID_ORDER.get(step.api, ()), DOC_TOPIC_ID_ORDER),
                **dict.fromkeys(KAFKA_44_OPEN.get(step.api, ()), DOC_KAFKA_44),
                **step.deviation,
            },
        )
        for step in scenario.steps
    ]
    return Scenario(scenario.name, scenario.topics, steps)


def _only(scenario: Scenario, names: list[str]) -> Scenario:
    steps = [step for step in scenario.steps if step.name in names]
    if len(steps) != len(names):
        raise ValueError(f"{scenario.name}: no step named {sorted(set(names) - {st.name for st in steps})}")
    return _with_open_differences(Scenario(scenario.name, scenario.topics, steps))


def smoke(run: str) -> list[Scenario]:
    """The suite's smoke (tests/integration/test_differential_smoke.py): a classic group, a streams
    group through its first configuration, a share group through initialization and the admin APIs,
    the share coordinator's epochs and start offsets (Kafka 4.4.0's write rules)."""
    return [
        _only(classic(run), ["join without member id", "join with member id", "sync as leader", "describe", "leave"]),
        _only(
            streams(run),
            [
                "first member joins",
                "describe one member",
                "first member heartbeats until it has every task",
                "describe stable",
                "first member leaves",
                "describe empty",
            ],
        ),
        _only(
            share(run),
            [
                "a session long enough for the scenario",
                "first member joins and gets every partition",
                "first member heartbeats until assigned",
                "describe",
                "first member leaves",
                "alter offsets of the empty group",
                "describe altered offsets",
            ],
        ),
        _only(
            share_coordinator(run),
            [
                "find the share coordinator",
                "summary before initialization",
                "initialize",
                "read with a new leader epoch",
                "write with a higher leader epoch",
                "write with the leader epoch the read recorded",
                "write with a negative leader epoch",
                "write moves the start offset back",
                "read the merged batches",
            ],
        ),
    ]


def SCENARIOS(run: str) -> list[Scenario]:  # noqa: N802 - the table of scenarios
    return [_with_open_differences(make(run)) for make in ALL]


def scenario_names(run: str) -> list[str]:
    return [s.name for s in SCENARIOS(run)]
