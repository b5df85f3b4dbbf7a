"""Kafka's authorisation of the coordinator APIs (coordinator/authorization.py), per API: the
authorised path, the denied path with Kafka's error code in Kafka's place (whole answer, per group,
per transactional id, per topic), and List/Describe filtering. Named after KafkaApisTest's and
AuthorizerIntegrationTest's cases where they have one. A request without a principal (the JSON
path) is never authorised against ACLs."""

from __future__ import annotations

from coordinator.acl import AclOperation as Op
from coordinator.acl import Authorizer
from coordinator.acl import ResourceType as RT
from coordinator.authorization import authorize_by_resource_type, client_address
from coordinator.errors import Errors
from tests.core_driver import CoreDriver
from tests.group.group_helpers import join_body
from tests.runtime.test_update_acls import acl, publish

ALICE, HOST = "User:alice", "/127.0.0.1"
GROUP_RT, TOPIC_RT, CLUSTER_RT, TXN_RT = 3, 2, 4, 5
READ, WRITE, DELETE, DESCRIBE, IDEMPOTENT = 3, 4, 6, 8, 12


def driver(acls: list[dict], group: str = "g", **kw) -> CoreDriver:
    d = CoreDriver(group)
    d.send(
        "UpdateMetadata",
        0,
        {"topicStates": [{"topicName": t, "numPartitions": 2} for t in ("t", "secret")]},
        key="__coordinator_broadcast__",
    )
    publish(d, acls, 0, **kw)
    return d


def send(d: CoreDriver, api: str, version: int, body: dict, principal: str | None = ALICE, **kw):
    return d.send(api, version, body, principal=principal, client_host=HOST, **kw)


def allow(rt: int, name: str, op: int, principal: str = ALICE, **kw) -> dict:
    return acl(rt=rt, name=name, op=op, principal=principal, **kw)


# ---------------------------------------------------------------------------- the rules' plumbing
def test_client_address_is_the_ip_of_kafka_s_socket_address():
    assert client_address("/127.0.0.1") == "127.0.0.1"
    assert client_address("host.example/10.0.0.7") == "10.0.0.7"
    assert client_address("/::1") == "::1"
    assert client_address("") == ""


def test_host_acls_match_the_client_ip():
    d = driver([allow(GROUP_RT, "g", READ, host="10.9.9.9")])
    r = send(d, "JoinGroup", 9, join_body())
    assert r["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code
    d = driver([allow(GROUP_RT, "g", READ, host="127.0.0.1")])
    assert send(d, "JoinGroup", 9, join_body())["errorCode"] == Errors.MEMBER_ID_REQUIRED.code


def test_super_user_is_authorised_without_acls():
    d = driver([], super_users=(ALICE,))
    assert send(d, "JoinGroup", 9, join_body())["errorCode"] == Errors.MEMBER_ID_REQUIRED.code


def test_json_path_without_principal_is_not_authorised_against_acls():
    d = driver([])  # no ACL at all: every principal is denied
    assert send(d, "JoinGroup", 9, join_body(), principal=None)["errorCode"] == Errors.MEMBER_ID_REQUIRED.code


def test_allow_everyone_if_no_acl_found():
    d = driver([], allow_if_none=True)
    assert send(d, "JoinGroup", 9, join_body())["errorCode"] == Errors.MEMBER_ID_REQUIRED.code
    d = driver([allow(GROUP_RT, "g", READ, principal="User:bob")], allow_if_none=True)
    assert send(d, "JoinGroup", 9, join_body())["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code


# ---------------------------------------------------------------------------- classic groups
def test_join_group_authorization_failed():
    d = driver([allow(GROUP_RT, "other", READ)])
    r = send(d, "JoinGroup", 9, join_body())
    assert r["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code and r["memberId"] == ""
    assert d.component("groups").groups.get("g") is None


def test_sync_heartbeat_leave_group_authorization_failed():
    d = driver([allow(GROUP_RT, "g", DESCRIBE)])  # DESCRIBE does not imply READ
    member = {"groupId": "g", "generationId": 1, "memberId": "m", "groupInstanceId": None}
    sync = {**member, "protocolType": "consumer", "protocolName": "range", "assignments": []}
    assert send(d, "SyncGroup", 5, sync)["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code
    assert send(d, "Heartbeat", 4, member)["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code
    leave = {"groupId": "g", "members": [{"memberId": "m", "groupInstanceId": None, "reason": None}]}
    r = send(d, "LeaveGroup", 5, leave)
    assert r["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code
    # Allowed READ: the coordinator answers.
    d = driver([allow(GROUP_RT, "g", READ)])
    assert send(d, "Heartbeat", 4, member)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code


def test_prefixed_and_wildcard_acls_and_deny_wins():
    d = driver([allow(GROUP_RT, "g", READ, pt=4), allow(GROUP_RT, "*", READ, perm=2)])
    assert send(d, "JoinGroup", 9, join_body())["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code
    d = driver([allow(GROUP_RT, "*", READ)])
    assert send(d, "JoinGroup", 9, join_body())["errorCode"] == Errors.MEMBER_ID_REQUIRED.code


# ---------------------------------------------------------------------------- offsets
def commit_body(topics=("t", "secret")) -> dict:
    return {
        "groupId": "g",
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [
            {
                "name": t,
                "partitions": [
                    {"partitionIndex": 0, "committedOffset": 5, "committedLeaderEpoch": -1, "committedMetadata": ""}
                ],
            }
            for t in topics
        ],
    }


def test_offset_commit_group_authorization_failed():
    d = driver([allow(TOPIC_RT, "t", READ)])
    r = send(d, "OffsetCommit", 9, commit_body())
    assert {p["errorCode"] for t in r["topics"] for p in t["partitions"]} == {Errors.GROUP_AUTHORIZATION_FAILED.code}


def test_offset_commit_topic_authorization_failed_per_partition():
    d = driver([allow(GROUP_RT, "g", READ), allow(TOPIC_RT, "t", READ)])
    r = send(d, "OffsetCommit", 9, commit_body())
    errors = {t["name"]: [p["errorCode"] for p in t["partitions"]] for t in r["topics"]}
    assert errors == {"secret": [Errors.TOPIC_AUTHORIZATION_FAILED.code], "t": [0]}
    # Only the authorised topic was committed.
    fetch = send(d, "OffsetFetch", 7, {"groupId": "g", "topics": None, "requireStable": False}, principal=None)
    assert [t["name"] for t in fetch["topics"]] == ["t"]


def test_offset_commit_every_topic_denied_commits_nothing():
    d = driver([allow(GROUP_RT, "g", READ)])
    r = send(d, "OffsetCommit", 9, commit_body())
    assert {p["errorCode"] for t in r["topics"] for p in t["partitions"]} == {Errors.TOPIC_AUTHORIZATION_FAILED.code}
    assert [k for k, _ in d.records if "offset" in k.lower()] == []


def test_offset_fetch_group_and_topic_authorization():
    d = driver([allow(GROUP_RT, "g", READ), allow(TOPIC_RT, "t", READ)])
    send(d, "OffsetCommit", 9, commit_body(), principal=None)  # both topics committed
    # All topics: only the described ones.
    r = send(d, "OffsetFetch", 7, {"groupId": "g", "topics": None, "requireStable": False})
    assert [t["name"] for t in r["topics"]] == ["t"] and r["errorCode"] == 0
    # Listed topics: the denied one answered TOPIC_AUTHORIZATION_FAILED after the others.
    listed = {
        "groupId": "g",
        "topics": [{"name": "secret", "partitionIndexes": [0]}, {"name": "t", "partitionIndexes": [0]}],
        "requireStable": False,
    }
    r = send(d, "OffsetFetch", 7, listed)
    assert [
        (t["name"], t["partitions"][0]["errorCode"], t["partitions"][0]["committedOffset"]) for t in r["topics"]
    ] == [
        ("t", 0, 5),
        ("secret", Errors.TOPIC_AUTHORIZATION_FAILED.code, -1),
    ]
    # v8+: per group.
    body = {"groups": [{"groupId": "g", "topics": None}, {"groupId": "h", "topics": None}], "requireStable": False}
    r = send(d, "OffsetFetch", 8, body)
    assert [(g["groupId"], g["errorCode"]) for g in r["groups"]] == [
        ("g", 0),
        ("h", Errors.GROUP_AUTHORIZATION_FAILED.code),
    ]
    assert [t["name"] for t in r["groups"][0]["topics"]] == ["t"]
    # v0-7 group denied: the whole answer.
    d2 = driver([])
    r = send(d2, "OffsetFetch", 7, {"groupId": "g", "topics": None, "requireStable": False})
    assert r["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code


def test_offset_delete_authorization():
    d = driver([allow(GROUP_RT, "g", READ)])
    body = {"groupId": "g", "topics": [{"name": "t", "partitions": [{"partitionIndex": 0}]}]}
    assert send(d, "OffsetDelete", 0, body)["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code
    d = driver([allow(GROUP_RT, "g", DELETE)])
    r = send(d, "OffsetDelete", 0, body)
    assert (
        r["errorCode"] == 0 and r["topics"][0]["partitions"][0]["errorCode"] == Errors.TOPIC_AUTHORIZATION_FAILED.code
    )


# ---------------------------------------------------------------------------- admin
def test_describe_groups_authorization_failed_per_group():
    d = driver([allow(GROUP_RT, "g", DESCRIBE)])
    r = send(d, "DescribeGroups", 5, {"groups": ["g", "h"], "includeAuthorizedOperations": True})
    assert [(g["groupId"], g["errorCode"]) for g in r["groups"]] == [
        ("h", Errors.GROUP_AUTHORIZATION_FAILED.code),
        ("g", 0),
    ]
    assert r["groups"][1]["authorizedOperations"] == 1 << DESCRIBE


def test_list_groups_filtered_without_cluster_describe():
    d = driver([allow(GROUP_RT, "g", READ), allow(GROUP_RT, "g2", READ)])
    send(d, "JoinGroup", 9, join_body(), principal=None)
    other = [allow(GROUP_RT, "x", READ)]
    publish(d, other, 1)
    assert send(d, "ListGroups", 5, {"statesFilter": [], "typesFilter": []})["groups"] == []
    publish(d, other + [allow(CLUSTER_RT, "kafka-cluster", DESCRIBE)], 2)
    assert [g["groupId"] for g in send(d, "ListGroups", 5, {"statesFilter": [], "typesFilter": []})["groups"]] == ["g"]
    publish(d, [allow(GROUP_RT, "g", DESCRIBE)], 3)
    assert [g["groupId"] for g in send(d, "ListGroups", 5, {"statesFilter": [], "typesFilter": []})["groups"]] == ["g"]


def test_delete_groups_authorization_failed_per_group():
    d = driver([allow(GROUP_RT, "g", DELETE)])
    r = send(d, "DeleteGroups", 2, {"groupsNames": ["g", "h"]})
    assert sorted((g["groupId"], g["errorCode"]) for g in r["results"]) == [
        ("g", Errors.GROUP_ID_NOT_FOUND.code),
        ("h", Errors.GROUP_AUTHORIZATION_FAILED.code),
    ]


def test_find_coordinator_authorization():
    d = driver([allow(GROUP_RT, "g", DESCRIBE), allow(TXN_RT, "tx", DESCRIBE)])
    r = send(d, "FindCoordinator", 3, {"key": "h", "keyType": 0})
    assert r["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code and r["nodeId"] == -1
    r = send(d, "FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["h", "g"]})
    assert [(c["key"], c["errorCode"]) for c in r["coordinators"]] == [
        ("h", Errors.GROUP_AUTHORIZATION_FAILED.code),
        ("g", 0),
    ]
    r = send(d, "FindCoordinator", 4, {"keyType": 1, "coordinatorKeys": ["no"]})
    assert r["coordinators"][0]["errorCode"] == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code
    assert send(d, "FindCoordinator", 4, {"keyType": 1, "coordinatorKeys": ["tx"]})["coordinators"][0]["errorCode"] == 0


# ---------------------------------------------------------------------------- transactions
TX = "tx"


def test_init_producer_id_transactional_id_authorization_failed():
    d = driver([allow(TXN_RT, "other", WRITE)], group=TX)
    r = send(
        d,
        "InitProducerId",
        5,
        {"transactionalId": TX, "transactionTimeoutMs": 60000, "producerId": -1, "producerEpoch": -1},
    )
    assert r["errorCode"] == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code and r["producerId"] == -1
    d = driver([allow(TXN_RT, TX, WRITE)], group=TX)
    r = send(
        d,
        "InitProducerId",
        5,
        {"transactionalId": TX, "transactionTimeoutMs": 60000, "producerId": -1, "producerEpoch": -1},
    )
    assert r["errorCode"] == 0 and r["producerId"] >= 0


def test_idempotent_producer_needs_idempotent_write_or_any_topic_write():
    body = {"transactionalId": None, "transactionTimeoutMs": 60000, "producerId": -1, "producerEpoch": -1}
    d = driver([allow(TOPIC_RT, "t", READ)], group=TX)
    assert send(d, "InitProducerId", 5, body, key=TX)["errorCode"] == Errors.CLUSTER_AUTHORIZATION_FAILED.code
    d = driver([allow(CLUSTER_RT, "kafka-cluster", IDEMPOTENT)], group=TX)
    assert send(d, "InitProducerId", 5, body, key=TX)["errorCode"] == 0
    d = driver([allow(TOPIC_RT, "t", WRITE, pt=4)], group=TX)
    assert send(d, "InitProducerId", 5, body, key=TX)["errorCode"] == 0


def test_authorize_by_resource_type_rules():
    from coordinator.acl_state import authorizer_of, stored_snapshot

    def az(acls, **kw) -> Authorizer:
        stored, _ = stored_snapshot(
            {"acls": acls, "superUsers": kw.get("su", []), "allowEveryoneIfNoAclFound": kw.get("allow", False)}
        )
        return authorizer_of(stored)

    def may(a):
        return authorize_by_resource_type(a, ALICE, "1.2.3.4", Op.WRITE, RT.TOPIC)

    assert not may(az([]))
    assert may(az([], allow=True))
    assert may(az([], su=[ALICE]))
    assert may(az([allow(TOPIC_RT, "t", WRITE)]))
    assert not may(az([allow(TOPIC_RT, "t", WRITE), allow(TOPIC_RT, "t", WRITE, perm=2)]))  # literal deny, same name
    assert not may(az([allow(TOPIC_RT, "t1", WRITE), allow(TOPIC_RT, "t", WRITE, pt=4, perm=2)]))  # prefixed deny
    assert not may(az([allow(TOPIC_RT, "t", WRITE), allow(TOPIC_RT, "*", WRITE, perm=2)]))  # wildcard deny
    assert may(az([allow(TOPIC_RT, "t", WRITE), allow(TOPIC_RT, "u", WRITE, perm=2)]))
    assert may(az([allow(TOPIC_RT, "t", 2)]))  # ALL
    # Kafka's first step, authorize() on the resource "hardcode": an ALLOW on a prefix of it, or
    # allow-everyone when no ACL matches it (ACLs of other topics do not count).
    assert may(az([allow(TOPIC_RT, "hard", WRITE, pt=4)]))
    assert may(az([allow(TOPIC_RT, "t", READ, principal="User:bob")], allow=True))
    assert not may(az([allow(TOPIC_RT, "h", READ, pt=4, principal="User:bob")], allow=True))


def begin(d: CoreDriver) -> tuple[int, int]:
    r = send(
        d,
        "InitProducerId",
        5,
        {"transactionalId": TX, "transactionTimeoutMs": 60000, "producerId": -1, "producerEpoch": -1},
        principal=None,
    )
    return r["producerId"], r["producerEpoch"]


def test_add_partitions_to_txn_topic_authorization_failed():
    d = driver([allow(TXN_RT, TX, WRITE), allow(TOPIC_RT, "t", WRITE)], group=TX)
    pid, epoch = begin(d)
    body = {
        "v3AndBelowTransactionalId": TX,
        "v3AndBelowProducerId": pid,
        "v3AndBelowProducerEpoch": epoch,
        "v3AndBelowTopics": [{"name": "t", "partitions": [0]}, {"name": "secret", "partitions": [0]}],
    }
    r = send(d, "AddPartitionsToTxn", 3, body)
    errors = {t["name"]: t["resultsByPartition"][0]["partitionErrorCode"] for t in r["resultsByTopicV3AndBelow"]}
    assert errors == {"t": Errors.OPERATION_NOT_ATTEMPTED.code, "secret": Errors.TOPIC_AUTHORIZATION_FAILED.code}
    body["v3AndBelowTopics"] = body["v3AndBelowTopics"][:1]
    r = send(d, "AddPartitionsToTxn", 3, body)
    assert r["resultsByTopicV3AndBelow"][0]["resultsByPartition"][0]["partitionErrorCode"] == 0
    publish(d, [allow(TOPIC_RT, "t", WRITE)], 1)
    r = send(d, "AddPartitionsToTxn", 3, body)
    assert (
        r["resultsByTopicV3AndBelow"][0]["resultsByPartition"][0]["partitionErrorCode"]
        == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code
    )


def test_add_offsets_end_txn_authorization():
    d = driver([allow(TXN_RT, TX, WRITE)], group=TX)
    pid, epoch = begin(d)
    body = {"transactionalId": TX, "producerId": pid, "producerEpoch": epoch, "groupId": "g"}
    assert send(d, "AddOffsetsToTxn", 4, body)["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code
    publish(d, [], 1)
    assert send(d, "AddOffsetsToTxn", 4, body)["errorCode"] == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code
    end = {"transactionalId": TX, "producerId": pid, "producerEpoch": epoch, "committed": False}
    assert send(d, "EndTxn", 4, end)["errorCode"] == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code


def test_txn_offset_commit_authorization():
    d = driver([allow(GROUP_RT, "g", READ), allow(TOPIC_RT, "t", READ)])
    body = {
        "transactionalId": TX,
        "groupId": "g",
        "producerId": 1,
        "producerEpoch": 0,
        "generationId": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partitionIndex": 0, "committedOffset": 1, "committedLeaderEpoch": -1, "committedMetadata": ""}
                ],
            }
        ],
    }
    r = send(d, "TxnOffsetCommit", 3, body)
    assert r["topics"][0]["partitions"][0]["errorCode"] == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code
    publish(d, [allow(TXN_RT, TX, WRITE), allow(TOPIC_RT, "t", READ)], 1)
    r = send(d, "TxnOffsetCommit", 3, body)
    assert r["topics"][0]["partitions"][0]["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code
    publish(d, [allow(TXN_RT, TX, WRITE), allow(GROUP_RT, "g", READ)], 2)
    r = send(d, "TxnOffsetCommit", 3, body)
    assert r["topics"][0]["partitions"][0]["errorCode"] == Errors.TOPIC_AUTHORIZATION_FAILED.code


def test_describe_and_list_transactions_filtering():
    d = driver([allow(TXN_RT, TX, DESCRIBE)], group=TX)
    begin(d)
    r = send(d, "DescribeTransactions", 0, {"transactionalIds": ["nope", TX]})
    assert [(s["transactionalId"], s["errorCode"]) for s in r["transactionStates"]] == [
        ("nope", Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code),
        (TX, 0),
    ]
    body = {"stateFilters": [], "producerIdFilters": [], "durationFilter": -1, "transactionalIdPattern": None}
    assert [s["transactionalId"] for s in send(d, "ListTransactions", 2, body)["transactionStates"]] == [TX]
    publish(d, [], 1)
    assert send(d, "ListTransactions", 2, body)["transactionStates"] == []


# ---------------------------------------------------------------------------- KIP-848, share, streams
def test_consumer_group_heartbeat_authorization_failed():
    hb = {
        "groupId": "g",
        "memberId": "m",
        "memberEpoch": 0,
        "rebalanceTimeoutMs": 5000,
        "subscribedTopicNames": ["t", "secret"],
        "topicPartitions": [],
    }
    d = driver([allow(TOPIC_RT, "t", DESCRIBE)])
    assert send(d, "ConsumerGroupHeartbeat", 1, hb)["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code
    publish(d, [allow(GROUP_RT, "g", READ), allow(TOPIC_RT, "t", DESCRIBE)], 1)
    assert send(d, "ConsumerGroupHeartbeat", 1, hb)["errorCode"] == Errors.TOPIC_AUTHORIZATION_FAILED.code
    r = send(d, "ConsumerGroupHeartbeat", 1, {**hb, "subscribedTopicNames": ["t"]})
    assert r["errorCode"] == 0 and r["memberEpoch"] == 2


def test_consumer_group_describe_authorization_and_topic_filtering():
    hb = {
        "groupId": "g",
        "memberId": "m",
        "memberEpoch": 0,
        "rebalanceTimeoutMs": 5000,
        "subscribedTopicNames": ["t", "secret"],
        "topicPartitions": [],
    }
    d = driver([allow(GROUP_RT, "g", READ), allow(TOPIC_RT, "t", DESCRIBE)])
    send(d, "ConsumerGroupHeartbeat", 1, hb, principal=None)
    r = send(d, "ConsumerGroupDescribe", 1, {"groupIds": ["g", "h"], "includeAuthorizedOperations": True})
    assert [(g["groupId"], g["errorCode"]) for g in r["groups"]] == [
        ("h", Errors.GROUP_AUTHORIZATION_FAILED.code),
        ("g", Errors.TOPIC_AUTHORIZATION_FAILED.code),  # an assignment names "secret"
    ]
    assert r["groups"][1]["members"] == []
    publish(d, [allow(GROUP_RT, "g", READ), allow(TOPIC_RT, "*", DESCRIBE)], 1)
    r = send(d, "ConsumerGroupDescribe", 1, {"groupIds": ["g"], "includeAuthorizedOperations": True})
    assert r["groups"][0]["errorCode"] == 0 and r["groups"][0]["authorizedOperations"] == (1 << READ) | (1 << DESCRIBE)


def test_share_group_heartbeat_authorization_failed():
    hb = {"groupId": "g", "memberId": "m", "memberEpoch": 0, "rackId": None, "subscribedTopicNames": ["secret"]}
    d = driver([allow(GROUP_RT, "g", READ)])
    assert send(d, "ShareGroupHeartbeat", 1, hb)["errorCode"] == Errors.TOPIC_AUTHORIZATION_FAILED.code
    publish(d, [], 1)
    assert send(d, "ShareGroupHeartbeat", 1, hb)["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code


def test_share_state_apis_need_cluster_action():
    d = driver([allow(GROUP_RT, "g", READ)])
    body = {
        "groupId": "g",
        "topics": [{"topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": [{"partition": 0, "leaderEpoch": 0}]}],
    }
    r = send(d, "ReadShareGroupStateSummary", 0, body)
    assert r["results"][0]["partitions"][0]["errorCode"] == Errors.CLUSTER_AUTHORIZATION_FAILED.code


def test_share_group_offsets_admin_authorization():
    d = driver([allow(GROUP_RT, "g", DESCRIBE), allow(TOPIC_RT, "t", DESCRIBE)])
    body = {"groups": [{"groupId": "h", "topics": None}]}
    r = send(d, "DescribeShareGroupOffsets", 0, body)
    assert [(g["groupId"], g["errorCode"]) for g in r["groups"]] == [("h", Errors.GROUP_AUTHORIZATION_FAILED.code)]
    alter = {"groupId": "g", "topics": [{"topicName": "t", "partitions": [{"partitionIndex": 0, "startOffset": 0}]}]}
    assert send(d, "AlterShareGroupOffsets", 0, alter)["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code
    delete = {"groupId": "g", "topics": [{"topicName": "secret"}]}
    assert send(d, "DeleteShareGroupOffsets", 0, delete)["errorCode"] == Errors.GROUP_AUTHORIZATION_FAILED.code
    publish(d, [allow(GROUP_RT, "g", DELETE), allow(GROUP_RT, "g", READ)], 1)
    r = send(d, "DeleteShareGroupOffsets", 0, delete)
    assert r["errorCode"] == 0 and [(t["topicName"], t["errorCode"]) for t in r["responses"]] == [
        ("secret", Errors.TOPIC_AUTHORIZATION_FAILED.code)
    ]
    r = send(d, "AlterShareGroupOffsets", 0, {**alter, "topics": [{**alter["topics"][0], "topicName": "secret"}]})
    assert r["errorCode"] == 0
    assert r["responses"][0]["partitions"][0]["errorCode"] == Errors.TOPIC_AUTHORIZATION_FAILED.code


def test_describe_configs_and_incremental_alter_configs_of_groups():
    d = driver([allow(GROUP_RT, "g", 11)])  # ALTER_CONFIGS implies DESCRIBE_CONFIGS
    describe = {
        "resources": [
            {"resourceType": 32, "resourceName": "g", "configurationKeys": None},
            {"resourceType": 32, "resourceName": "h", "configurationKeys": None},
        ],
        "includeSynonyms": False,
        "includeDocumentation": False,
    }
    r = send(d, "DescribeConfigs", 4, describe)
    assert [(x["resourceName"], x["errorCode"]) for x in r["results"]] == [
        ("g", 0),
        ("h", Errors.GROUP_AUTHORIZATION_FAILED.code),
    ]
    assert r["results"][1]["errorMessage"] == "Group authorization failed." and r["results"][1]["configs"] == []
    alter = {
        "resources": [
            {
                "resourceType": 32,
                "resourceName": n,
                "configs": [{"name": "consumer.session.timeout.ms", "configOperation": 0, "value": "45000"}],
            }
            for n in ("h", "g")
        ],
        "validateOnly": False,
    }
    r = send(d, "IncrementalAlterConfigs", 1, alter)
    assert [(x["resourceName"], x["errorCode"]) for x in r["responses"]] == [
        ("h", Errors.GROUP_AUTHORIZATION_FAILED.code),
        ("g", 0),
    ]


def test_share_and_streams_group_describe_per_group():
    d = driver([allow(GROUP_RT, "g", DESCRIBE)])
    for api in ("ShareGroupDescribe", "StreamsGroupDescribe"):
        version = 1 if api == "ShareGroupDescribe" else 0
        r = send(d, api, version, {"groupIds": ["h", "g"], "includeAuthorizedOperations": False})
        assert [(g["groupId"], g["errorCode"]) for g in r["groups"]] == [
            ("h", Errors.GROUP_AUTHORIZATION_FAILED.code),
            ("g", Errors.GROUP_ID_NOT_FOUND.code),
        ], api


def test_streams_group_heartbeat_topic_authorization_failed():
    topology = {
        "epoch": 1,
        "subtopologies": [
            {
                "subtopologyId": "0",
                "sourceTopics": ["secret"],
                "sourceTopicRegex": [],
                "stateChangelogTopics": [],
                "repartitionSinkTopics": [],
                "repartitionSourceTopics": [],
                "copartitionGroups": [],
            }
        ],
    }
    hb = {
        "groupId": "g",
        "memberId": "m",
        "memberEpoch": 0,
        "endpointInformationEpoch": 0,
        "instanceId": None,
        "rackId": None,
        "rebalanceTimeoutMs": 5000,
        "topology": topology,
        "activeTasks": [],
        "standbyTasks": [],
        "warmupTasks": [],
        "processId": "p",
        "userEndpoint": None,
        "clientTags": [],
        "taskOffsets": [],
        "taskEndOffsets": [],
        "shutdownApplication": False,
    }
    d = driver([allow(GROUP_RT, "g", READ)])
    assert send(d, "StreamsGroupHeartbeat", 0, hb)["errorCode"] == Errors.TOPIC_AUTHORIZATION_FAILED.code


def test_a_parked_txn_offset_commit_answers_its_denied_topics_too():
    from coordinator import coordinator_partition
    from coordinator.routing import key_for_partition

    group_partition = coordinator_partition("g", 50)
    tid = key_for_partition((group_partition + 1) % 50, 50, prefix="tx-")
    d = driver([allow(TXN_RT, tid, WRITE), allow(GROUP_RT, "g", READ), allow(TOPIC_RT, "t", READ)])
    part = {"partitionIndex": 0, "committedOffset": 1, "committedLeaderEpoch": -1, "committedMetadata": ""}
    body = {
        "transactionalId": tid,
        "groupId": "g",
        "producerId": 7,
        "producerEpoch": 0,
        "generationId": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [{"name": "t", "partitions": [part]}, {"name": "secret", "partitions": [part]}],
    }
    assert send(d, "TxnOffsetCommit", 4, body) is None  # parked: the transaction's partition is asked
    cid = d.last_cid
    [(key, question)] = [(k, e) for k, e in d.internal_requests if e["apiKey"] == "TxnVerification"]
    answer = {
        "apiKey": "TxnVerificationResult",
        "apiVersion": 0,
        "correlationId": 1,
        "clientId": "x",
        "request": {"verificationId": question["request"]["verificationId"], "transactionalId": tid, "errorCode": 0},
    }
    import json

    d.send_raw(
        json.dumps(answer).encode(), key="g", internal=True, stamp=(f"partition-{(group_partition + 1) % 50}", 1, 0)
    )
    r = d.response(cid)
    assert {t["name"]: t["partitions"][0]["errorCode"] for t in r["topics"]} == {
        "secret": Errors.TOPIC_AUTHORIZATION_FAILED.code,
        "t": 0,
    }
    assert len(d.component("acls").parked) == 0  # nothing left parked


def test_every_client_api_has_a_check():
    from coordinator.authorization import CHECKS
    from coordinator.protocol.table import API_TABLE

    assert sorted(s.name for s in API_TABLE if not s.internal and s.name not in CHECKS) == []


def test_describe_transactions_leaves_out_topics_the_principal_may_not_describe():
    d = driver([allow(TXN_RT, TX, DESCRIBE), allow(TOPIC_RT, "t", DESCRIBE)], group=TX)
    pid, epoch = begin(d)
    add = {
        "v3AndBelowTransactionalId": TX,
        "v3AndBelowProducerId": pid,
        "v3AndBelowProducerEpoch": epoch,
        "v3AndBelowTopics": [{"name": "t", "partitions": [0]}, {"name": "secret", "partitions": [1]}],
    }
    send(d, "AddPartitionsToTxn", 3, add, principal=None)
    [state] = send(d, "DescribeTransactions", 0, {"transactionalIds": [TX]})["transactionStates"]
    assert state["errorCode"] == 0 and [t["topic"] for t in state["topics"]] == ["t"]
    [state] = send(d, "DescribeTransactions", 0, {"transactionalIds": [TX]}, principal=None)["transactionStates"]
    assert sorted(t["topic"] for t in state["topics"]) == ["secret", "t"]


def test_add_partitions_to_txn_internal_topic_is_never_authorised():
    d = driver([allow(TXN_RT, TX, WRITE), allow(TOPIC_RT, "*", WRITE)], group=TX)
    pid, epoch = begin(d)
    add = {
        "v3AndBelowTransactionalId": TX,
        "v3AndBelowProducerId": pid,
        "v3AndBelowProducerEpoch": epoch,
        "v3AndBelowTopics": [{"name": "__consumer_offsets", "partitions": [0]}],
    }
    r = send(d, "AddPartitionsToTxn", 3, add)
    code = r["resultsByTopicV3AndBelow"][0]["resultsByPartition"][0]["partitionErrorCode"]
    assert code == Errors.TOPIC_AUTHORIZATION_FAILED.code


def test_share_group_offsets_whole_errors_carry_the_default_message():
    d = driver([])
    r = send(d, "DeleteShareGroupOffsets", 0, {"groupId": "g", "topics": [{"topicName": "t"}]})
    assert (r["errorCode"], r["errorMessage"]) == (
        Errors.GROUP_AUTHORIZATION_FAILED.code,
        "Group authorization failed.",
    )


def test_offset_commit_and_fetch_by_topic_id_authorise_the_topic_s_name():
    """v10 names topics by id: KafkaApis resolves the name from the metadata, then authorises it."""
    ids = {"t": "AAAAAAAAAAAAAAAAAAAAAQ", "secret": "AAAAAAAAAAAAAAAAAAAAAg"}
    d = CoreDriver("g")
    topics = [{"topicName": t, "topicId": i, "numPartitions": 2} for t, i in ids.items()]
    d.send("UpdateMetadata", 0, {"topicStates": topics}, key="__coordinator_broadcast__")
    publish(d, [allow(GROUP_RT, "g", READ), allow(TOPIC_RT, "t", READ)], 0)
    part = {"partitionIndex": 0, "committedOffset": 5, "committedLeaderEpoch": -1, "committedMetadata": ""}
    body = {
        "groupId": "g",
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [{"topicId": i, "partitions": [part]} for i in ids.values()],
    }
    r = send(d, "OffsetCommit", 10, body)
    assert {t["topicId"]: t["partitions"][0]["errorCode"] for t in r["topics"]} == {
        ids["t"]: 0,
        ids["secret"]: Errors.TOPIC_AUTHORIZATION_FAILED.code,
    }
    send(d, "OffsetCommit", 10, body, principal=None)  # both committed
    r = send(d, "OffsetFetch", 10, {"groups": [{"groupId": "g", "topics": None}], "requireStable": False})
    assert [t["topicId"] for t in r["groups"][0]["topics"]] == [ids["t"]]
    listed = [{"topicId": i, "partitionIndexes": [0]} for i in ids.values()]
    r = send(d, "OffsetFetch", 10, {"groups": [{"groupId": "g", "topics": listed}], "requireStable": False})
    assert [(t["topicId"], t["partitions"][0]["errorCode"]) for t in r["groups"][0]["topics"]] == [
        (ids["t"], 0),
        (ids["secret"], Errors.TOPIC_AUTHORIZATION_FAILED.code),
    ]


def _every_client_api_version():
    from coordinator.api import all_apis

    return [
        (spec.name, v)
        for spec in all_apis()
        if not spec.internal
        for v in range(spec.min_version, spec.max_version + 1)
    ]


def test_every_client_api_and_version_with_a_principal_is_answered_without_a_crash():
    """A body with every field set (two items in every array), under no ACLs, some ACLs (the first
    of each pair of names allowed, DENY on the second) and every operation allowed: never a
    failed request, whatever the checks filter and merge."""
    from coordinator.api import lookup
    from tests.runtime.test_protocol_messages import sample

    some = [
        allow(rt, name, 2, perm=perm, pt=pt)
        for rt in (GROUP_RT, TOPIC_RT, TXN_RT, CLUSTER_RT)
        for name, perm, pt in (("s0", 3, 3), ("s1", 2, 3), ("s", 3, 4), ("kafka-cluster", 3, 3))
    ]
    everything = [allow(rt, "*", 2) for rt in (GROUP_RT, TOPIC_RT, TXN_RT, CLUSTER_RT)]
    for acls in ([], some, everything):
        d = driver(acls, group="s0")
        for api, version in _every_client_api_version():
            body = sample(lookup(api).request, version)
            send(d, api, version, body, key="s0")
        assert d.events_named("RequestFailed") == [], acls


def test_regex_subscription_resolves_only_to_topics_the_member_may_describe():
    """Kafka's TopicRegexResolver.filterTopicDescribeAuthorizedTopics: the regex is resolved as the
    heartbeat that asked for it, so a matching topic the principal may not DESCRIBE is neither
    resolved nor assigned."""
    hb = {
        "groupId": "g",
        "memberId": "m",
        "memberEpoch": 0,
        "rebalanceTimeoutMs": 5000,
        "subscribedTopicNames": None,
        "subscribedTopicRegex": ".*",
        "topicPartitions": [],
    }
    d = driver([allow(GROUP_RT, "g", READ), allow(TOPIC_RT, "t", DESCRIBE)])
    assert send(d, "ConsumerGroupHeartbeat", 1, hb)["memberEpoch"] == 2
    d.advance(0)  # the next micro-batch resolves the regex
    resolved = d.events_named("RegularExpressionsResolved")[-1]["resolved"]
    assert resolved == {".*": ["t"]}
    r = send(d, "ConsumerGroupHeartbeat", 1, {**hb, "memberEpoch": 2, "subscribedTopicRegex": None})
    assigned = {t["topicId"] for t in r["assignment"]["topicPartitions"]}
    assert len(assigned) == 1  # only "t"'s partitions

    # The JSON path (no principal) is not authorised against ACLs: every matching topic.
    d = driver([allow(GROUP_RT, "g", READ)])
    send(d, "ConsumerGroupHeartbeat", 1, hb, principal=None)
    d.advance(0)
    assert d.events_named("RegularExpressionsResolved")[-1]["resolved"] == {".*": ["secret", "t"]}
