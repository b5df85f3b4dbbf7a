"""The differential test's `versions` scenario (bench/diff_scenarios.py lists it): every served
version of the group, offset, transaction and config APIs that the other scenarios do not send,
each on its own group or transactional id, with a success and a typical error answer where cheap.

The streams and share APIs are compared at every version by their own scenarios. Bodies carry the
fields of every version: the wire codec writes only those of the version asked (the gateway path);
the JSON path's bodies (DescribeConfigs, IncrementalAlterConfigs) are exactly the version's.
"""

from __future__ import annotations

from collections.abc import Callable

from coordinator.group.classic.consumer_protocol import encode_subscription

from .diff_model import Scenario, Side, Step, only_groups, only_transactions, retried, saved

CLASSIC_JOIN_VERSIONS = range(0, 9)  # v9 is the classic scenario's
TXN_VERSIONS = range(0, 6)
MEMBER_ID_REQUIRED_SINCE = 4  # JoinGroup v4+: a first join without a member id gets one back


# ------------------------------------------------------------------ classic groups and offsets
def _classic_steps(run: str, v: int, topic: str) -> list[Step]:
    """One classic group's life at JoinGroup v`v`, the other classic APIs at the nearest version
    each serves (the versions below their maximum once each, the maximum again)."""
    group = f"diff-v{v}-{run}"
    join = {
        "groupId": group,
        "sessionTimeoutMs": 10000,
        "rebalanceTimeoutMs": 10000,
        "groupInstanceId": None,
        "protocolType": "consumer",
        "protocols": [{"name": "range", "metadata": encode_subscription([topic])}],
        "reason": None,
    }
    first, joined = f"join-v{v}-first", f"join-v{v}"

    def member(side: Side) -> str:
        return side.saved[joined]["memberId"]

    def generation(side: Side) -> int:
        return side.saved[joined]["generationId"]

    def commit(epoch_delta: int) -> Callable[[Side], dict]:
        def body(side: Side) -> dict:
            return {
                "groupId": group,
                "generationIdOrMemberEpoch": generation(side) + epoch_delta,
                "memberId": member(side),
                "groupInstanceId": None,
                "retentionTimeMs": -1,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partitionIndex": 0,
                                "committedOffset": 10 + v,
                                "committedLeaderEpoch": -1,
                                "committedMetadata": f"v{v}",
                            }
                        ],
                    }
                ],
            }

        return body

    def sync(generation_delta: int) -> Callable[[Side], dict]:
        return lambda s: {
            "groupId": group,
            "generationId": generation(s) + generation_delta,
            "memberId": member(s),
            "groupInstanceId": None,
            "protocolType": "consumer",
            "protocolName": "range",
            "assignments": [{"memberId": member(s), "assignment": ""}],
        }

    fetch = {
        "groupId": group,
        "topics": [{"name": topic, "partitionIndexes": [0, 1]}],
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
    sync_v, hb_v, leave_v, list_v, del_v, desc_v = min(v, 5), min(v, 4), min(v, 5), min(v, 5), min(v, 3), min(v, 6)
    steps = []
    if v >= MEMBER_ID_REQUIRED_SINCE:
        steps.append(Step(f"v{v} join without member id", "JoinGroup", v, {**join, "memberId": ""}, save=saved(first)))
        steps.append(
            Step(
                f"v{v} join with member id",
                "JoinGroup",
                v,
                lambda s: {**join, "memberId": s.saved[first]["memberId"]},
                save=saved(joined),
            )
        )
    else:
        steps.append(Step(f"v{v} join", "JoinGroup", v, {**join, "memberId": ""}, save=saved(joined)))
    steps += [
        Step(f"v{v} sync as leader (SyncGroup v{sync_v})", "SyncGroup", sync_v, sync(0)),
        Step(f"v{v} sync at the next generation (SyncGroup v{sync_v})", "SyncGroup", sync_v, sync(1)),
        Step(
            f"v{v} heartbeat (Heartbeat v{hb_v})",
            "Heartbeat",
            hb_v,
            lambda s: {"groupId": group, "generationId": generation(s), "memberId": member(s), "groupInstanceId": None},
        ),
        Step(
            f"v{v} heartbeat of an unknown member (Heartbeat v{hb_v})",
            "Heartbeat",
            hb_v,
            lambda s: {"groupId": group, "generationId": generation(s), "memberId": "nobody", "groupInstanceId": None},
        ),
        Step(
            f"v{v} describe (DescribeGroups v{desc_v})",
            "DescribeGroups",
            desc_v,
            {"groups": [group, f"{group}-none"], "includeAuthorizedOperations": False},
        ),
        Step(
            f"v{v} list (ListGroups v{list_v})",
            "ListGroups",
            list_v,
            {"statesFilter": [], "typesFilter": []},
            view=only_groups(group),
        ),
    ]
    if v >= 2:  # OffsetCommit 2-8 here, 9-10 elsewhere
        commit_v = min(v, 8)
        steps += [
            Step(f"v{v} commit (OffsetCommit v{commit_v})", "OffsetCommit", commit_v, commit(0)),
            Step(
                f"v{v} commit at the next generation (OffsetCommit v{commit_v})",
                "OffsetCommit",
                commit_v,
                commit(1),
            ),
        ]
    if v >= 1:
        fetch_v = min(v, 8)
        steps.append(Step(f"v{v} fetch (OffsetFetch v{fetch_v})", "OffsetFetch", fetch_v, fetch))
    steps += [
        Step(
            f"v{v} leave (LeaveGroup v{leave_v})",
            "LeaveGroup",
            leave_v,
            lambda s: {
                "groupId": group,
                "memberId": member(s),
                "members": [{"memberId": member(s), "groupInstanceId": None, "reason": "bye"}],
            },
        ),
        Step(
            f"v{v} leave again (LeaveGroup v{leave_v})",
            "LeaveGroup",
            leave_v,
            lambda s: {
                "groupId": group,
                "memberId": member(s),
                "members": [{"memberId": member(s), "groupInstanceId": None, "reason": "bye"}],
            },
        ),
        Step(
            f"v{v} delete (DeleteGroups v{del_v})",
            "DeleteGroups",
            del_v,
            {"groupsNames": [group, f"{group}-none"]},
        ),
    ]
    return steps


def _find_coordinator_steps(run: str) -> list[Step]:
    group, txn = f"diff-v-find-{run}", f"diff-v-find-txn-{run}"
    steps = [Step("find a group's coordinator (FindCoordinator v0)", "FindCoordinator", 0, {"key": group})]
    for v in (1, 2, 3):
        steps += [
            Step(
                f"find a group's coordinator (FindCoordinator v{v})", "FindCoordinator", v, {"key": group, "keyType": 0}
            ),
            Step(
                f"find a transaction's coordinator (FindCoordinator v{v})",
                "FindCoordinator",
                v,
                {"key": txn, "keyType": 1},
                until=retried,
            ),
        ]
    steps += [
        Step(
            "find a group's and a transaction's coordinators (FindCoordinator v5)",
            "FindCoordinator",
            5,
            {"keyType": 0, "coordinatorKeys": [group, f"{group}-2"]},
        ),
        Step(
            "find a transaction's coordinator (FindCoordinator v5)",
            "FindCoordinator",
            5,
            {"keyType": 1, "coordinatorKeys": [txn]},
        ),
        Step("an unknown key type (FindCoordinator v3)", "FindCoordinator", 3, {"key": group, "keyType": 9}),
        Step(
            "an unknown key type (FindCoordinator v6)",
            "FindCoordinator",
            6,
            {"keyType": 9, "coordinatorKeys": [group, txn]},
        ),
    ]
    return steps


# ------------------------------------------------------------------ KIP-848 v0
def _consumer_v0_steps(run: str, topic: str) -> list[Step]:
    group, member = f"diff-v-consumer-{run}", "diffversionsmember0000001"

    def heartbeat(epoch: int | None, member_id: str = member) -> Callable[[Side], dict]:
        def body(side: Side) -> dict:
            return {
                "groupId": group,
                "memberId": member_id,
                "memberEpoch": epoch if epoch is not None else side.saved["v0-member"]["memberEpoch"],
                "instanceId": None,
                "rackId": None,
                "rebalanceTimeoutMs": 10000 if epoch == 0 else -1,
                "subscribedTopicNames": [topic] if epoch == 0 else None,
                "serverAssignor": None,
                "topicPartitions": [] if epoch == 0 else None,
            }

        return body

    describe = {"groupIds": [group, f"{group}-none"], "includeAuthorizedOperations": False}
    return [
        Step(
            "KIP-848 join (ConsumerGroupHeartbeat v0)",
            "ConsumerGroupHeartbeat",
            0,
            heartbeat(0),
            until=lambda a, s: a["errorCode"] != 0 or bool(a["assignment"] and a["assignment"]["topicPartitions"]),
            save=saved("v0-member"),
        ),
        Step("KIP-848 describe (ConsumerGroupDescribe v0)", "ConsumerGroupDescribe", 0, describe),
        Step(
            "KIP-848 an unknown member (ConsumerGroupHeartbeat v0)", "ConsumerGroupHeartbeat", 0, heartbeat(3, "nobody")
        ),
        Step("KIP-848 leave (ConsumerGroupHeartbeat v0)", "ConsumerGroupHeartbeat", 0, heartbeat(-1)),
        Step("KIP-848 describe empty (ConsumerGroupDescribe v0)", "ConsumerGroupDescribe", 0, describe),
    ]


# ------------------------------------------------------------------ transactions
def _txn_steps(run: str, v: int, topic: str) -> list[Step]:
    """One transaction with EndTxn/TxnOffsetCommit/AddPartitionsToTxn v`v`, InitProducerId and
    AddOffsetsToTxn at the nearest version they serve. v4+ AddPartitionsToTxn is Kafka's batch
    form (a broker's verification request; no authorizer on either side, so it is answered)."""
    txn, group = f"diff-v{v}-txn-{run}", f"diff-v{v}-txn-group-{run}"
    init_v, offsets_v = min(v, 5), min(v, 4)
    init = f"init-v{v}"

    def producer(side: Side) -> dict:
        a = side.saved[init]
        return {"transactionalId": txn, "producerId": a["producerId"], "producerEpoch": a["producerEpoch"]}

    def add_partitions(side: Side) -> dict:
        p = producer(side)
        return {
            "v3AndBelowTransactionalId": txn,
            "v3AndBelowProducerId": p["producerId"],
            "v3AndBelowProducerEpoch": p["producerEpoch"],
            "v3AndBelowTopics": [{"name": topic, "partitions": [v % 2]}],
            "transactions": [{**p, "verifyOnly": False, "topics": [{"name": topic, "partitions": [v % 2]}]}],
        }

    def txn_commit(side: Side) -> dict:
        return {
            **producer(side),
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
                            "committedOffset": 20 + v,
                            "committedLeaderEpoch": -1,
                            "committedMetadata": None,
                        }
                    ],
                }
            ],
        }

    def fenced(side: Side) -> dict:
        p = producer(side)
        return {**p, "producerEpoch": p["producerEpoch"] + 5, "committed": True}

    return [
        Step(
            f"txn v{v} init producer id (InitProducerId v{init_v})",
            "InitProducerId",
            init_v,
            {"transactionalId": txn, "transactionTimeoutMs": 60000, "producerId": -1, "producerEpoch": -1},
            save=saved(init),
            until=retried,
        ),
        Step(
            f"txn v{v} a timeout above the maximum (InitProducerId v{init_v})",
            "InitProducerId",
            init_v,
            lambda s: {**producer(s), "transactionTimeoutMs": 2_000_000_000},
        ),
        Step(f"txn v{v} add partitions (AddPartitionsToTxn v{v})", "AddPartitionsToTxn", v, add_partitions),
        Step(
            f"txn v{v} add offsets (AddOffsetsToTxn v{offsets_v})",
            "AddOffsetsToTxn",
            offsets_v,
            lambda s: {**producer(s), "groupId": group},
        ),
        Step(
            f"txn v{v} add offsets for another producer id (AddOffsetsToTxn v{offsets_v})",
            "AddOffsetsToTxn",
            offsets_v,
            lambda s: {**producer(s), "producerId": producer(s)["producerId"] + 1000, "groupId": group},
        ),
        Step(f"txn v{v} offset commit (TxnOffsetCommit v{v})", "TxnOffsetCommit", v, txn_commit),
        Step(f"txn v{v} end with a wrong epoch (EndTxn v{v})", "EndTxn", v, fenced),
        Step(
            f"txn v{v} list ongoing (ListTransactions v{min(v, 2)})",
            "ListTransactions",
            min(v, 2),
            {
                "stateFilters": ["Ongoing"],
                "producerIdFilters": [],
                "durationFilter": -1,
                "transactionalIdPattern": None,
            },
            view=only_transactions(txn),
        ),
        *(_list_by_pattern(txn, run) if v == TXN_VERSIONS[-1] else []),
        Step(f"txn v{v} commit (EndTxn v{v})", "EndTxn", v, lambda s: {**producer(s), "committed": True}),
        Step(
            f"txn v{v} describe complete",
            "DescribeTransactions",
            0,
            {"transactionalIds": [txn]},
            until=lambda a, s: a["transactionStates"][0]["transactionState"] == "CompleteCommit",
        ),
    ]


def _list_by_pattern(txn: str, run: str) -> list[Step]:
    """ListTransactions v2's transactionalIdPattern (KIP-1152): a regex the ids must match, and one
    that does not compile."""

    def body(pattern: str) -> dict:
        return {"stateFilters": [], "producerIdFilters": [], "durationFilter": -1, "transactionalIdPattern": pattern}

    return [
        Step(
            "list by a pattern (ListTransactions v2)",
            "ListTransactions",
            2,
            body(f"diff-v[0-9]-txn-{run}"),
            view=only_transactions(txn),
        ),
        Step("list by a pattern that does not compile (ListTransactions v2)", "ListTransactions", 2, body("diff-[")),
    ]


# ------------------------------------------------------------------ group configs (JSON path)
def _config_steps(run: str) -> list[Step]:
    group = f"diff-v-configs-{run}"
    resource = {"resourceType": 32, "resourceName": group}
    keys = ["consumer.heartbeat.interval.ms", "consumer.session.timeout.ms"]
    steps = [
        Step(
            "set a group config (IncrementalAlterConfigs v0)",
            "IncrementalAlterConfigs",
            0,
            {
                "resources": [
                    {
                        **resource,
                        "configs": [{"name": "consumer.heartbeat.interval.ms", "configOperation": 0, "value": "3000"}],
                    }
                ],
                "validateOnly": False,
            },
        ),
        Step(
            "an unknown group config (IncrementalAlterConfigs v0)",
            "IncrementalAlterConfigs",
            0,
            {
                "resources": [
                    {**resource, "configs": [{"name": "consumer.no.such", "configOperation": 0, "value": "1"}]}
                ],
                "validateOnly": False,
            },
        ),
    ]
    for v in (1, 2, 3):
        body = {"resources": [{**resource, "configurationKeys": keys}], "includeSynonyms": v == 2}
        if v >= 3:
            body["includeDocumentation"] = True
        steps.append(Step(f"describe group configs (DescribeConfigs v{v})", "DescribeConfigs", v, body))
    return steps


def versions(run: str) -> Scenario:
    topic = f"diff-versions-{run}"
    steps = _find_coordinator_steps(run)
    for v in CLASSIC_JOIN_VERSIONS:
        steps += _classic_steps(run, v, topic)
    steps += _consumer_v0_steps(run, topic)
    for v in TXN_VERSIONS:
        steps += _txn_steps(run, v, topic)
    steps += _config_steps(run)
    return Scenario(f"versions-{run}", {topic: 2}, steps)
