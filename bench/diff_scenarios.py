"""The differential test's request sequences (bench/differential.py): every API the service serves,
streams and share groups in depth. Group, transactional and topic names carry the run's id, so a
run against a job that served earlier runs (the suite's shared job) starts from nothing.

A step's `deviation` maps an answer path to the section of docs/protocol.md that says why the
service answers otherwise; every other difference fails the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from coordinator.group.classic.consumer_protocol import encode_subscription

from .diff_model import Scenario, Side, Step

DOC_STREAMS_COMMITTED = "docs/protocol.md#streams-groups-deviations-from-kafka (describe reads the latest state)"
DOC_SHARE_ALTER = "docs/protocol.md#share-coordinator-deviations-from-kafka (AlterShareGroupOffsets in Kafka 4.1.1)"
DOC_KAFKA_44 = "docs/protocol.md#open-differences-with-kafka-440 (not yet followed)"
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

# Errors
MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID, NON_EMPTY_GROUP = 79, 25, 68
MISSING_INTERNAL_TOPICS = 3


def saved(name: str) -> Callable[[dict, Side], None]:
    def save(answer: dict, side: Side) -> None:
        side.saved[name] = answer

    return save


def retried(answer: dict, side: Side) -> bool:
    """Until an answer a client would not retry (the broker loads a coordinator partition at its first
    use: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE)."""
    return answer.get("errorCode") not in (14, 15)


def only_groups(*groups: str) -> Callable[[dict], dict]:
    """ListGroups: only these groups (the service's job lists the other clients' groups too)."""
    return lambda a: {**a, "groups": [g for g in a["groups"] if g["groupId"] in groups]}


def only_transactions(*ids: str) -> Callable[[dict], dict]:
    return lambda a: {**a, "transactionStates": [t for t in a["transactionStates"] if t["transactionalId"] in ids]}


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
def consumer(run: str) -> Scenario:
    group, topic = f"diff-consumer-{run}", f"diff-consumer-{run}"
    member = "diffconsumermember000001"

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
    group through its first configuration, a share group through initialization and the admin APIs."""
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
    ]


def SCENARIOS(run: str) -> list[Scenario]:  # noqa: N802 - the table of scenarios
    return [_with_open_differences(make(run)) for make in ALL]


def scenario_names(run: str) -> list[str]:
    return [s.name for s in SCENARIOS(run)]
