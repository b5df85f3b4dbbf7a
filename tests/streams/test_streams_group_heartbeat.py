"""StreamsGroupHeartbeat, StreamsGroupDescribe and the other group APIs on streams groups, through
the whole core (requests in, responses, records and events out). Each test names the Kafka test
it follows (4.1, or 4.3 where Kafka changed) (GroupMetadataManagerTest testStreams*, StreamsGroupTest, GroupCoordinatorServiceTest);
tests without a name cover this service's own parts (events, internal topics, replay, snapshots)."""

from __future__ import annotations

import pytest

from coordinator.errors import Errors
from coordinator.group.streams.group import StreamsGroup
from coordinator.group.streams.member import MemberState
from coordinator.group.streams.topology import (
    INCORRECTLY_PARTITIONED_TOPICS,
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    SHUTDOWN_APPLICATION,
    STALE_TOPOLOGY,
)
from coordinator.records import record_key
from tests.streams.helpers import GROUP, StreamsTestClient, active_of, status_codes, subtopology, tasks, topology

FOO = "foo"
CHANGELOG = f"{GROUP}-store-changelog"
TOPO = topology(0, subtopology("0", source=[FOO], changelog=[CHANGELOG]))


def client(**overrides) -> StreamsTestClient:
    return StreamsTestClient(GROUP, topics={FOO: 6, CHANGELOG: 6}, **overrides)


def local_id(c: StreamsTestClient, prefix: str) -> str:
    """A group id routed to the test's coordinator partition."""
    from coordinator.routing import coordinator_partition

    n = c.d.config["coordinator.partitions"]
    return next(f"{prefix}{i}" for i in range(10_000) if coordinator_partition(f"{prefix}{i}", n) == c.d.partition_id)


def all_active(c: StreamsTestClient) -> list[int]:
    return sorted(p for m in c.group().members.values() for parts in m.assigned_tasks.active.values() for p in parts)


def settle(c: StreamsTestClient, responses: dict) -> dict:
    """Heartbeat every member with what it owns until nobody's assignment changes."""
    for _ in range(10):
        changed = False
        for m, r in list(responses.items()):
            new = c.ack(m, r)
            assert new["errorCode"] == 0, new
            if new["activeTasks"] is not None or new["memberEpoch"] != r["memberEpoch"]:
                changed = True
                responses[m] = {**r, **{k: v for k, v in new.items() if v is not None}}
        if not changed:
            return responses
    raise AssertionError("the group did not settle")


# ---------------------------------------------------------------------- joining and assignment
def test_testStreamsNewJoiningMemberTriggersNewTargetAssignment():
    c = client()
    r1 = c.join("m1", TOPO)
    assert r1["errorCode"] == 0 and r1["memberEpoch"] == 2
    assert active_of(r1) == {"0": {0, 1, 2, 3, 4, 5}}
    assert r1["status"] == []
    r2 = c.join("m2", TOPO)
    assert r2["memberEpoch"] == 3 and active_of(r2) == {}  # its tasks are still m1's
    g = c.group()
    assert g.group_epoch == 3 and g.target_assignment_epoch == 3
    assert sorted(p for t in g.target_assignment.values() for p in t.active["0"]) == [0, 1, 2, 3, 4, 5]
    assert all(len(t.active["0"]) == 3 for t in g.target_assignment.values())
    assert c.described()["groupState"] == "Reconciling"


def test_testStreamsReconciliationProcess():
    """m1 must revoke (UNREVOKED_TASKS at its epoch) before m2 gets the tasks (UNRELEASED until then)."""
    c = client()
    r1 = c.join("m1", TOPO)
    c.join("m2", TOPO)
    r1b = c.heartbeat("m1", 2, active=r1["activeTasks"], standby=[], warmup=[])
    assert r1b["memberEpoch"] == 2
    assert c.member("m1").state == MemberState.UNREVOKED_TASKS
    keep = active_of(r1b)["0"]
    assert len(keep) == 3
    # m2 still waits: the tasks are owned by m1's process
    r2b = c.heartbeat("m2", 3, active=[], standby=[], warmup=[])
    assert c.member("m2").state == MemberState.UNRELEASED_TASKS and r2b["activeTasks"] is None
    # m1 acknowledges the revocation: epoch 2, stable
    r1c = c.heartbeat("m1", 2, active=tasks(**{"0": keep}), standby=[], warmup=[])
    assert r1c["memberEpoch"] == 3 and c.member("m1").state == MemberState.STABLE
    r2c = c.heartbeat("m2", 3, active=[], standby=[], warmup=[])
    assert active_of(r2c) == {"0": {0, 1, 2, 3, 4, 5} - keep}
    assert c.described()["groupState"] == "Stable"
    assert all_active(c) == [0, 1, 2, 3, 4, 5]


def test_testStreamsGroupHeartbeatPartialResponseWhenNothingChanges():
    c = client()
    r = c.join("m1", TOPO)
    r2 = c.heartbeat("m1", r["memberEpoch"], active=r["activeTasks"], standby=[], warmup=[])
    assert r2["activeTasks"] is None and r2["standbyTasks"] is None and r2["warmupTasks"] is None
    assert r2["memberEpoch"] == 2 and r2["heartbeatIntervalMs"] == 5000


def test_testStreamsLeavingMemberRemovesMemberAndBumpsGroupEpoch():
    c = client()
    settle(c, {"m1": c.join("m1", TOPO), "m2": c.join("m2", TOPO)})
    epoch = c.group().group_epoch
    r = c.heartbeat("m2", -1)
    assert r["errorCode"] == 0 and r["memberEpoch"] == -1 and r["memberId"] == "m2"
    g = c.group()
    assert "m2" not in g.members and g.group_epoch == epoch + 1
    assert (record_key("StreamsGroupMemberMetadata", GROUP, "m2"), None) in c.records()
    r1 = c.heartbeat(
        "m1",
        c.member("m1").member_epoch,
        active=tasks(**{"0": c.member("m1").assigned_tasks.active["0"]}),
        standby=[],
        warmup=[],
    )
    assert active_of(r1) == {"0": {0, 1, 2, 3, 4, 5}}


def test_testStreamsGroupMemberEpochValidation():
    c = client()
    r = c.join("m1", TOPO)
    assert (
        c.heartbeat("m1", 6, active=r["activeTasks"], standby=[], warmup=[])["errorCode"]
        == Errors.FENCED_MEMBER_EPOCH.code
    )
    c.join("m2", TOPO)
    c.heartbeat("m1", 2, active=[], standby=[], warmup=[])  # m1 revokes everything it must: epoch 2
    assert c.member("m1").member_epoch == 3
    # the previous epoch with owned tasks within the assignment is accepted (lost response)
    ok = c.heartbeat("m1", 2, active=tasks(**{"0": c.member("m1").assigned_tasks.active["0"]}), standby=[], warmup=[])
    assert ok["errorCode"] == 0
    # the previous epoch owning tasks it no longer has is fenced
    bad = c.heartbeat("m1", 2, active=tasks(**{"0": {0, 1, 2, 3, 4, 5}}), standby=[], warmup=[])
    assert bad["errorCode"] == Errors.FENCED_MEMBER_EPOCH.code
    assert c.heartbeat("unknown", 2)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code


def test_testStreamsOwnedTasksValidation():
    c = client()
    r = c.join("m1", TOPO)
    bad = c.heartbeat("m1", 2, active=tasks(**{"0": {9}}), standby=[], warmup=[])
    assert bad["errorCode"] == Errors.INVALID_REQUEST.code
    assert bad["errorMessage"] == "Task 9 for subtopology 0 is invalid. Number of tasks for this subtopology: 6"
    bad = c.heartbeat("m1", 2, active=tasks(**{"x": {0}}), standby=[], warmup=[])
    assert bad["errorMessage"] == "Subtopology x does not exist in the topology."
    assert r["errorCode"] == 0


def test_testStreamsNewMemberIsRejectedWithMaximumMembersIsReached():
    c = client(**{"group.streams.max.size": 1})
    c.join("m1", TOPO)
    r = c.join("m2", TOPO)
    assert r["errorCode"] == Errors.GROUP_MAX_SIZE_REACHED.code
    assert r["errorMessage"] == "The streams group has reached its maximum capacity of 1 members."


# ---------------------------------------------------------------------- request validation
@pytest.mark.parametrize(
    "body, message",
    [
        ({"memberId": "", "memberEpoch": 1}, "MemberId can't be empty."),
        ({"memberId": "m", "memberEpoch": 0}, "RebalanceTimeoutMs must be provided in first request."),
        (
            {"memberId": "m", "memberEpoch": 0, "rebalanceTimeoutMs": 1000},
            "Topology must be non-null when (re-)joining.",
        ),
        ({"memberId": "m", "memberEpoch": 1, "topology": TOPO}, "Topology can only be provided when (re-)joining."),
        ({"memberId": "m", "memberEpoch": -3}, "MemberEpoch is -3, but must be greater than or equal to -2."),
        ({"memberId": "m", "memberEpoch": 1, "activeTasks": []}, "If one task-type is non-null, all must be non-null."),
        ({"memberId": "m", "memberEpoch": 1, "instanceId": " "}, "InstanceId can't be empty."),
        ({"memberId": "m", "memberEpoch": -2}, "InstanceId can't be null."),
        (
            {"memberId": "m", "memberEpoch": 0, "rebalanceTimeoutMs": 1000, "warmupTasks": tasks(**{"0": {1}})},
            "WarmupTasks must be empty when (re-)joining.",
        ),
        (
            {
                "memberId": "m",
                "memberEpoch": 0,
                "rebalanceTimeoutMs": 1000,
                "topology": topology(0, {**subtopology("0", source=[FOO]), "sourceTopicRegex": ["f.*"]}),
            },
            "Regular expressions for source topics are not supported yet.",
        ),
    ],
)
def test_request_validation_GroupCoordinatorServiceTest_testStreamsGroupHeartbeatRequestValidation(body, message):
    c = client()
    r = c.send("StreamsGroupHeartbeat", 0, {"groupId": GROUP, "endpointInformationEpoch": 0, **body})
    assert (r["errorCode"], r["errorMessage"]) == (Errors.INVALID_REQUEST.code, message)
    assert c.group() is None


def test_invalid_topologies_KafkaApisTest_testStreamsGroupHeartbeatRequestWithInternalTopicsAndInvalidNames():
    c = client()
    r = c.join("m1", topology(0, subtopology("0", source=["__consumer_offsets"])))
    assert (r["errorCode"], r["errorMessage"]) == (
        Errors.STREAMS_INVALID_TOPOLOGY.code,
        "Use of Kafka internal topics __consumer_offsets in a Kafka Streams topology is prohibited.",
    )
    r = c.join("m1", topology(0, subtopology("0", source=["a b"])))
    assert (r["errorCode"], r["errorMessage"]) == (
        Errors.STREAMS_INVALID_TOPOLOGY.code,
        "Topic names a b are not valid topic names.",
    )
    bad = topology(
        0,
        {
            **subtopology("0", source=[FOO]),
            "stateChangelogTopics": [{"name": "c", "partitions": 3, "replicationFactor": 0, "topicConfigs": []}],
        },
    )
    r = c.join("m1", bad)
    assert r["errorCode"] == Errors.STREAMS_INVALID_TOPOLOGY.code
    assert r["errorMessage"] == "Changelog topic c must have an undefined partition count, but it is set to 3."


def test_disabled_protocol_answers_unsupported_version_KafkaApis_isStreamsGroupProtocolEnabled():
    c = client(**{"group.coordinator.rebalance.protocols": ["classic", "consumer"]})
    assert c.join("m1", TOPO)["errorCode"] == Errors.UNSUPPORTED_VERSION.code
    assert c.describe()["groups"][0]["errorCode"] == Errors.UNSUPPORTED_VERSION.code


# ---------------------------------------------------------------------- topology and status
def test_testStreamsGroupMemberJoiningWithMissingSourceTopic():
    c = StreamsTestClient(GROUP, topics={CHANGELOG: 6})
    r = c.join("m1", TOPO)
    assert r["errorCode"] == 0 and status_codes(r) == [MISSING_SOURCE_TOPICS]
    assert r["status"][0]["statusDetail"] == "Source topics foo are missing."
    assert active_of(r) == {}
    assert c.described()["groupState"] == "NotReady"
    # the topic appears: the next heartbeat configures the topology and assigns
    c.set_topics({FOO: 6, CHANGELOG: 6})
    r = c.heartbeat("m1", r["memberEpoch"], active=[], standby=[], warmup=[])
    assert r["status"] == [] and active_of(r) == {"0": {0, 1, 2, 3, 4, 5}}


def test_testStreamsGroupMemberJoiningWithMissingInternalTopic():
    c = StreamsTestClient(GROUP, topics={FOO: 3})
    r = c.join("m1", TOPO)
    assert status_codes(r) == [MISSING_INTERNAL_TOPICS]
    assert r["status"][0]["statusDetail"] == f"Internal topics are missing: {CHANGELOG}"
    assert c.events("StreamsInternalTopicsMissing")[-1]["topics"] == [
        {"name": CHANGELOG, "numPartitions": 3, "replicationFactor": -1, "configs": []}
    ]
    # Kafka 4.2+: NotReady (no validated topology epoch), described with the topology of the
    # group's record (partitions as the member sent them) while it is not configured and ready.
    described = c.described()
    assert described["groupState"] == "NotReady"
    assert described["topology"]["subtopologies"][0]["stateChangelogTopics"][0]["partitions"] == 0
    r = c.heartbeat("m1", r["memberEpoch"], active=[], standby=[], warmup=[])
    assert status_codes(r) == [MISSING_INTERNAL_TOPICS]
    described = c.described()
    assert described["groupState"] == "NotReady"
    assert described["topology"]["subtopologies"][0]["stateChangelogTopics"][0]["partitions"] == 0
    c.set_topics({FOO: 3, CHANGELOG: 3})
    r = c.heartbeat("m1", r["memberEpoch"], active=[], standby=[], warmup=[])
    assert r["status"] == [] and active_of(r) == {"0": {0, 1, 2}}


def test_testStreamsGroupMemberJoiningWithIncorrectlyPartitionedTopic():
    topo = topology(
        0,
        subtopology(
            "0",
            source=[FOO, "bar"],
            copartition=[{"sourceTopics": [0, 1], "sourceTopicRegex": [], "repartitionSourceTopics": []}],
        ),
    )
    c = StreamsTestClient(GROUP, topics={FOO: 6, "bar": 3})
    r = c.join("m1", topo)
    assert status_codes(r) == [INCORRECTLY_PARTITIONED_TOPICS]
    assert (
        r["status"][0]["statusDetail"] == "Following topics do not have the same number of partitions: [{bar=3, foo=6}]"
    )


def test_testStreamsGroupMemberJoiningWithStaleTopology():
    c = client()
    c.join("m1", topology(1, *TOPO["subtopologies"]))
    r = c.join("m2", TOPO)  # epoch 0 < the group's 1
    assert r["errorCode"] == 0 and status_codes(r) == [STALE_TOPOLOGY]
    assert r["status"][0]["statusDetail"] == "The member's topology epoch 0 is behind the group's topology epoch 1."


def test_topology_updates_are_refused_as_in_kafka_4_1():
    """maybeUpdateTopology: a different topology with the same or a newer epoch."""
    c = client()
    c.join("m1", TOPO)
    other = topology(1, subtopology("0", source=[FOO]), subtopology("1", source=[CHANGELOG]))
    r = c.join("m2", other)
    assert (r["errorCode"], r["errorMessage"]) == (
        Errors.INVALID_REQUEST.code,
        "Topology updates are not supported yet.",
    )
    assert "m2" not in c.group().members


def test_testStreamsGroupMemberRequestingShutdownApplication():
    c = client()
    r1 = c.join("m1", TOPO)
    c.join("m2", TOPO)
    r = c.heartbeat("m2", 3, active=[], standby=[], warmup=[], shutdownApplication=True)
    assert SHUTDOWN_APPLICATION in status_codes(r)
    r = c.heartbeat("m1", 2, active=r1["activeTasks"], standby=[], warmup=[])
    assert r["status"][-1] == {
        "statusCode": SHUTDOWN_APPLICATION,
        "statusDetail": "Streams group member m2 encountered a fatal error and requested a shutdown for the "
        "entire application.",
    }


def test_a_leaving_member_requesting_shutdown_makes_the_others_shut_down():
    c = client()
    r1 = c.join("m1", TOPO)
    c.join("m2", TOPO)
    r = c.heartbeat("m2", -1, shutdownApplication=True)
    assert (r["errorCode"], r["memberEpoch"]) == (0, -1)
    assert "m2" not in c.group().members
    r = c.heartbeat("m1", 2, active=r1["activeTasks"], standby=[], warmup=[])
    assert SHUTDOWN_APPLICATION in status_codes(r)
    assert [e["memberId"] for e in c.events("StreamsShutdownRequested")] == ["m2"]


def test_an_unknown_members_shutdown_request_stands_although_its_leave_fails_as_in_kafka():
    """streamsGroupLeave sets the shutdown request (a plain field) before getMemberOrThrow."""
    c = client()
    r1 = c.join("m1", TOPO)
    r = c.heartbeat("gone", -1, shutdownApplication=True)
    assert r["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    r = c.heartbeat("m1", 2, active=r1["activeTasks"], standby=[], warmup=[])
    assert r["status"][-1]["statusCode"] == SHUTDOWN_APPLICATION
    assert "member gone encountered a fatal error" in r["status"][-1]["statusDetail"]
    # Without a shutdown request, an unknown member's leave changes nothing.
    assert c.heartbeat("other", -1)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code


# ---------------------------------------------------------------------- timers and metadata
def test_testStreamsSessionTimeoutExpiration():
    c = client()
    responses = settle(c, {"m1": c.join("m1", TOPO), "m2": c.join("m2", TOPO)})
    lost = set(c.member("m2").assigned_tasks.active["0"])
    c.sleep(45000 - 1)
    c.ack("m1", responses["m1"])  # m1 keeps its session; m2 says nothing
    c.sleep(45000 - 1)
    assert "m2" not in c.group().members
    fenced = c.events("MemberFenced")[-1]
    assert fenced["memberId"] == "m2" and fenced["reason"] == "the member session expired"
    r = c.heartbeat(
        "m1",
        c.member("m1").member_epoch,
        active=tasks(**{"0": c.member("m1").assigned_tasks.active["0"]}),
        standby=[],
        warmup=[],
    )
    assert lost <= active_of(r)["0"] and active_of(r) == {"0": {0, 1, 2, 3, 4, 5}}


def test_testStreamsRebalanceTimeoutExpiration():
    c = client()
    r1 = c.join("m1", TOPO, rebalance_timeout_ms=12000)
    c.join("m2", TOPO)
    c.heartbeat("m1", 2, active=r1["activeTasks"], standby=[], warmup=[])  # told to revoke; never does
    assert c.member("m1").state == MemberState.UNREVOKED_TASKS
    c.sleep(12000)
    assert "m1" not in c.group().members
    assert c.events("MemberFenced")[-1]["reason"] == "it failed to transition from epoch 2 within 12000ms"


def test_testStreamsOnNewMetadataImage():
    """A source topic grows: the next heartbeat bumps the epoch and assigns the new tasks."""
    c = client()
    r = c.join("m1", TOPO)
    epoch = c.group().group_epoch
    c.set_topics({FOO: 8, CHANGELOG: 8})
    r = c.heartbeat("m1", r["memberEpoch"], active=r["activeTasks"], standby=[], warmup=[])
    assert c.group().group_epoch == epoch + 1
    assert active_of(r) == {"0": set(range(8))}


def test_testStreamsStreamsGroupStates():
    c = client()
    r = c.join("m1", TOPO)
    # The heartbeat that created the group configured its topology on a group object Kafka
    # discards (getOrCreateStreamsGroup); since Kafka 4.2 the state follows the validated topology
    # epoch of the group's record: Stable at once, although not configured until the next heartbeat.
    assert c.group().state == "Stable" and c.group().configured_topology is None
    assert c.group().validated_topology_epoch == 0
    c.heartbeat("m1", r["memberEpoch"])
    g = c.group()
    assert g.state == "Stable"
    c.join("m2", TOPO)
    assert c.group().state == "Reconciling"
    c.heartbeat("m1", -1)
    c.heartbeat("m2", -1)
    assert c.group().state == "Empty"


def test_standby_tasks_follow_group_streams_num_standby_replicas():
    c = client(**{"group.streams.num.standby.replicas": 1})
    settle(c, {"m1": c.join("m1", TOPO, process_id="p1"), "m2": c.join("m2", TOPO, process_id="p2")})
    for m in c.group().members.values():
        assert not (set(m.assigned_tasks.active.get("0", ())) & set(m.assigned_tasks.standby.get("0", ())))
    assert sorted(p for m in c.group().members.values() for p in m.assigned_tasks.standby.get("0", ())) == [
        0,
        1,
        2,
        3,
        4,
        5,
    ]


# ---------------------------------------------------------------------- describe and other APIs
def test_testStreamsGroupDescribeNoErrors_and_WithErrors():
    c = client()
    r = c.join("m1", TOPO)
    # configured on a discarded group object: the record's topology (Kafka 4.2+; 4.1.1: null)
    assert c.describe(GROUP)["groups"][0]["topology"]["subtopologies"][0]["stateChangelogTopics"][0]["partitions"] == 0
    c.heartbeat("m1", r["memberEpoch"])
    unknown = local_id(c, "unknown")
    out = c.describe(GROUP, unknown)["groups"]
    assert out[0]["groupState"] == "Stable" and out[0]["members"][0]["memberId"] == "m1"
    assert out[0]["members"][0]["assignment"]["activeTasks"] == tasks(**{"0": range(6)})
    assert out[0]["topology"] == {
        "epoch": 0,
        "subtopologies": [
            {
                "subtopologyId": "0",
                "sourceTopics": [FOO],
                "repartitionSinkTopics": [],
                "stateChangelogTopics": [
                    {"name": CHANGELOG, "partitions": 6, "replicationFactor": 0, "topicConfigs": []}
                ],
                "repartitionSourceTopics": [],
            }
        ],
    }
    assert (out[1]["errorCode"], out[1]["errorMessage"]) == (
        Errors.GROUP_ID_NOT_FOUND.code,
        f"Group {unknown} not found.",  # GroupMetadataManager.group(), found by bench/differential.py
    )


def test_group_type_conflicts_testStreamsGroupHeartbeatOnConsumerGroup_and_DescribeOnConsumerGroup():
    c = client()
    cg_id = local_id(c, "cg")
    cg = c.send(
        "ConsumerGroupHeartbeat",
        1,
        {
            "groupId": cg_id,
            "memberId": "c1",
            "memberEpoch": 0,
            "rebalanceTimeoutMs": 1000,
            "subscribedTopicNames": [FOO],
            "topicPartitions": [],
        },
    )
    assert cg["errorCode"] == 0
    r = c.join("m1", TOPO, group_id=cg_id)
    assert (r["errorCode"], r["errorMessage"]) == (
        Errors.GROUP_ID_NOT_FOUND.code,
        f"Group {cg_id} is not a streams group.",
    )
    d = c.describe(cg_id)["groups"][0]
    assert (d["errorCode"], d["errorMessage"]) == (
        Errors.GROUP_ID_NOT_FOUND.code,
        f"Group {cg_id} is not a streams group.",
    )
    # and the other way round
    c.join("m1", TOPO)
    r = c.send(
        "ConsumerGroupHeartbeat",
        1,
        {
            "groupId": GROUP,
            "memberId": "c1",
            "memberEpoch": 0,
            "rebalanceTimeoutMs": 1000,
            "subscribedTopicNames": [FOO],
            "topicPartitions": [],
        },
    )
    assert (r["errorCode"], r["errorMessage"]) == (
        Errors.GROUP_ID_NOT_FOUND.code,
        f"Group {GROUP} is not a consumer group.",
    )
    j = c.send(
        "JoinGroup",
        9,
        {
            "groupId": GROUP,
            "sessionTimeoutMs": 10000,
            "rebalanceTimeoutMs": 10000,
            "memberId": "",
            "protocolType": "consumer",
            "protocols": [{"name": "range", "metadata": ""}],
        },
    )
    assert j["errorCode"] == Errors.INCONSISTENT_GROUP_PROTOCOL.code
    dg = c.send("DescribeGroups", 5, {"groups": [GROUP], "includeAuthorizedOperations": False})["groups"][0]
    assert dg["groupState"] == "Dead"
    listed = c.send("ListGroups", 5, {"statesFilter": [], "typesFilter": ["streams"]})["groups"]
    # (Kafka 4.2+: Stable, the record's validated topology epoch; 4.1.1: NotReady until the next heartbeat)
    assert listed == [{"groupId": GROUP, "protocolType": "streams", "groupState": "Stable", "groupType": "streams"}]


def test_offsets_StreamsGroupTest_testValidateOffsetCommit_and_Fetch():
    c = client()
    c.join("m1", TOPO)

    def commit(version, epoch, member="m1"):
        body = {
            "groupId": GROUP,
            "generationIdOrMemberEpoch": epoch,
            "memberId": member,
            "groupInstanceId": None,
            "retentionTimeMs": -1,
            "topics": [
                {
                    "name": FOO,
                    "partitions": [
                        {"partitionIndex": 0, "committedOffset": 7, "committedLeaderEpoch": -1, "committedMetadata": ""}
                    ],
                }
            ],
        }
        r = c.send("OffsetCommit", version, body)
        return r["topics"][0]["partitions"][0]["errorCode"]

    assert commit(9, 2) == 0
    assert commit(9, 0) == Errors.STALE_MEMBER_EPOCH.code
    assert commit(9, 2, "nobody") == Errors.UNKNOWN_MEMBER_ID.code
    assert commit(8, 2) == Errors.UNSUPPORTED_VERSION.code
    f = c.send(
        "OffsetFetch",
        9,
        {
            "groups": [
                {
                    "groupId": GROUP,
                    "memberId": "m1",
                    "memberEpoch": 2,
                    "topics": [{"name": FOO, "partitionIndexes": [0]}],
                }
            ],
            "requireStable": False,
        },
    )
    assert f["groups"][0]["topics"][0]["partitions"][0]["committedOffset"] == 7


def test_delete_groups_StreamsGroupTest_testValidateDeleteGroup():
    c = client()
    c.join("m1", TOPO)
    r = c.send("DeleteGroups", 2, {"groupsNames": [GROUP]})
    assert r["results"][0]["errorCode"] == Errors.NON_EMPTY_GROUP.code
    c.heartbeat("m1", -1)
    r = c.send("DeleteGroups", 2, {"groupsNames": [GROUP]})
    assert r["results"][0]["errorCode"] == 0
    assert c.group() is None
    assert (record_key("StreamsGroupTopology", GROUP), None) in c.records()
    # the topology is gone with the group: a new one may be declared
    other = topology(1, subtopology("0", source=[FOO]))
    assert c.join("m1", other)["errorCode"] == 0


# ---------------------------------------------------------------------- replay, snapshot, events
def test_the_state_log_rebuilds_the_same_group():
    c = client(**{"group.streams.num.standby.replicas": 1})
    settle(c, {"m1": c.join("m1", TOPO), "m2": c.join("m2", TOPO)})
    c.join("m3", TOPO)
    live = c.group()
    rebuilt = c.rebuilt().component("groups").groups[GROUP]
    assert isinstance(rebuilt, StreamsGroup)
    for attr in (
        "group_epoch",
        "metadata_hash",
        "target_assignment_epoch",
        "topology",
        "members",
        "target_assignment",
        "active_owner",
        "standby_owners",
    ):
        assert getattr(rebuilt, attr) == getattr(live, attr), attr
    assert rebuilt.validated_topology_epoch == live.validated_topology_epoch == 0
    # The configured topology is soft state, as in Kafka; the state follows the record's epoch.
    assert rebuilt.configured_topology is None and rebuilt.state == live.state
    assert StreamsGroup.from_json(live.to_json()).to_json() == live.to_json()


def test_events_of_a_rebalance():
    c = client()
    c.join("m1", TOPO)
    names = [e["event"] for e in c.events()]
    for expected in (
        "GroupCreated",
        "MemberJoined",
        "StreamsTopologyInitialized",
        "GroupEpochBumped",
        "TargetAssignmentComputed",
        "MemberAssignmentChanged",
        "GroupStateChanged",
    ):
        assert expected in names
    assert c.events("GroupCreated")[0]["groupType"] == "streams"


def test_metrics_label_streams_groups():
    """Not in Kafka's tests: the service's metrics count streams groups under protocol "streams"
    (Kafka's streams-group-count{state} and rebalance sensors)."""
    from tests.runtime.test_metrics import counter, gauge, live_gauges, scanned_gauges

    c = client()
    r1 = c.join("m1", TOPO)
    c.join("m2", TOPO)
    c.heartbeat("m1", 1, active=r1["activeTasks"], standby=[], warmup=[])
    assert gauge(c.d, "group_count", protocol="streams") == 1
    assert counter(c.d, "group_created_total", protocol="streams") == 1
    assert counter(c.d, "group_rebalance_started_total", protocol="streams") == 2
    assert counter(c.d, "group_member_joined_total", protocol="streams") == 2
    assert gauge(c.d, "streams_group_count", state="Reconciling") == 1
    assert counter(c.d, "group_rebalance_started_total", protocol="consumer") == 0
    assert live_gauges(c.d) == scanned_gauges(c.d)


def test_replay_of_an_inconsistent_log_is_refused_GroupMetadataManagerTest_testReplayStreamsGroup_tombstones():
    """replay(StreamsGroupMetadataKey/MemberMetadataKey/TargetAssignmentMetadataKey, null) refuse a
    tombstone that comes before the tombstones it depends on, as Kafka's IllegalStateExceptions."""
    from coordinator import CoordinatorPartition
    from coordinator.group.consumer.group_state import IllegalStateError
    from coordinator.messages import StateRecord

    c = client()
    c.join("m1", TOPO)
    log = [StateRecord(k, v) for k, v in c.records()]
    for bad_key in (
        record_key("StreamsGroupMetadata", GROUP),
        record_key("StreamsGroupMemberMetadata", GROUP, "m1"),
        record_key("StreamsGroupTargetAssignmentMetadata", GROUP),
    ):
        with pytest.raises(IllegalStateError):
            CoordinatorPartition.from_records(c.d.partition_id, log + [StateRecord(bad_key, None)], c.d.config)
    # DeleteGroups' tombstones, in Kafka's order, replay cleanly
    c.heartbeat("m1", -1)
    c.send("DeleteGroups", 2, {"groupsNames": [GROUP]})
    assert GROUP not in c.rebuilt().component("groups").groups


def test_a_known_member_rejoining_with_epoch_0_keeps_its_place_as_in_4_4():
    """Kafka 4.4.0's throwIfStreamsGroupMemberEpochIsInvalid lets epoch 0 pass (4.1 fenced a known
    member rejoining with it): the member is answered its epoch and its tasks."""
    c = client()
    c.join("m1", TOPO)
    c.join("m2", TOPO)
    c.heartbeat("m1", 2, active=[], standby=[], warmup=[])
    assert c.member("m1").member_epoch == 3
    r = c.join("m1", TOPO)
    assert r["errorCode"] == 0 and r["memberEpoch"] == 3
    assert r["activeTasks"] is not None and c.group().group_epoch == 3


def test_TargetAssignmentBuilderTest_testAssignmentHasNotChanged_via_a_metadata_update():
    """testStreamsUpdatingMemberMetadataTriggersNewTargetAssignment + TargetAssignmentBuilderTest
    .testAssignmentHasNotChanged: a member's metadata change bumps the group epoch and recomputes
    the target; unchanged members get no target record, only the new assignment epoch is written."""
    c = client()
    settle(c, {"m1": c.join("m1", TOPO), "m2": c.join("m2", TOPO)})
    epoch = c.group().group_epoch
    before = len(c.records())
    c.heartbeat("m1", c.member("m1").member_epoch, rackId="rack-2")
    kinds = [k for k, _ in c.records(before)]
    assert record_key("StreamsGroupMemberMetadata", GROUP, "m1") in kinds
    assert record_key("StreamsGroupMetadata", GROUP) in kinds
    assert record_key("StreamsGroupTargetAssignmentMetadata", GROUP) in kinds
    assert not any("StreamsGroupTargetAssignmentMember" in k for k in kinds)
    assert c.group().group_epoch == epoch + 1 == c.group().target_assignment_epoch


def test_TargetAssignmentBuilderTest_testBuildEmptyAssignmentWhenTopologyNotReady():
    c = StreamsTestClient(GROUP, topics={})
    c.join("m1", TOPO)
    c.join("m2", TOPO)
    g = c.group()
    assert g.state == "NotReady" and all(t.is_empty() for t in g.target_assignment.values())
    assert set(g.target_assignment) == {"m1", "m2"}


def test_testStreamsGroupEndpointInformationOnlyWhenEpochGreater():
    """Kafka 4.3+: a joining member with an endpoint gets the endpoints at once (its own, last),
    the member epoch 2 (a new group starts at epoch 1), and endpoint information epoch 0 (the group
    the heartbeat created is not the one the records make, which starts at 0); once it has the
    group's epoch, no endpoints."""
    c = StreamsTestClient(GROUP, topics={FOO: 2})
    topo = topology(0, subtopology("subtopology1", source=[FOO]))
    endpoint = {"host": "localhost", "port": 9092}
    r = c.join("m1", topo, userEndpoint=endpoint, endpointInformationEpoch=0)
    assert r["memberEpoch"] == 2 and active_of(r) == {"subtopology1": {0, 1}}
    assert r["partitionsByUserEndpoint"] == [
        {"userEndpoint": endpoint, "activePartitions": [{"topic": FOO, "partitions": [0, 1]}], "standbyPartitions": []}
    ]
    assert r["endpointInformationEpoch"] == 0 == c.group().endpoint_information_epoch
    r = c.heartbeat(
        "m1", r["memberEpoch"], userEndpoint=endpoint, endpointInformationEpoch=r["endpointInformationEpoch"]
    )
    assert r["partitionsByUserEndpoint"] is None


def test_testStreamsGroupEndpointInformationIncludesNewMember():
    c = StreamsTestClient(GROUP, topics={FOO: 4})
    topo = topology(0, subtopology("subtopology1", source=[FOO]))
    r1 = c.join("m1", topo, userEndpoint={"host": "host1", "port": 9092}, endpointInformationEpoch=0)
    assert r1["memberEpoch"] == 2
    r2 = c.join("m2", topo, userEndpoint={"host": "host2", "port": 9093})
    # The joining member's endpoint changed (none before): the group's epoch goes 0 -> 1, the
    # member's is 0, so both members' endpoints come back, the joining one last.
    assert r2["endpointInformationEpoch"] == 1
    endpoints = r2["partitionsByUserEndpoint"]
    assert [e["userEndpoint"] for e in endpoints] == [{"host": "host1", "port": 9092}, {"host": "host2", "port": 9093}]
    assert [[p for t in e["activePartitions"] for p in t["partitions"]] for e in endpoints] == [
        [0, 1, 2, 3],  # m1 still owns every task until it revokes two
        sorted(p for parts in active_of(r2).values() for p in parts),
    ]


def test_endpoint_information_epoch_is_bumped_when_a_member_with_an_endpoint_gets_other_tasks():
    """Kafka 4.3+: the epoch moves when a member's endpoint changes or a member with an endpoint
    is handed other tasks; a member without an endpoint moves it by neither."""
    c = StreamsTestClient(GROUP, topics={FOO: 2})
    topo = topology(0, subtopology("subtopology1", source=[FOO]))
    r1 = c.join("m1", topo, userEndpoint={"host": "h", "port": 1}, endpointInformationEpoch=-1)
    assert r1["endpointInformationEpoch"] == 0 and r1["partitionsByUserEndpoint"] is not None
    r2 = c.join("m2", topo, endpointInformationEpoch=0)  # no endpoint, no tasks yet: no bump
    assert r2["endpointInformationEpoch"] == 0 and r2["partitionsByUserEndpoint"] is None
    r1 = c.heartbeat(
        "m1", r1["memberEpoch"], active=r1["activeTasks"], standby=[], warmup=[], endpointInformationEpoch=0
    )
    assert r1["activeTasks"] is not None  # asked to revoke one task: its tasks changed
    assert r1["endpointInformationEpoch"] == 1 == c.group().endpoint_information_epoch
    assert len(r1["partitionsByUserEndpoint"]) == 1  # only m1 has an endpoint


def test_onLoaded_arms_session_and_rebalance_timers():
    """GroupMetadataManager.onLoaded for streams groups: a session timer per member, a rebalance
    timer for members with tasks to revoke."""
    c = client()
    r1 = c.join("m1", TOPO)
    c.join("m2", TOPO)
    c.heartbeat("m1", 2, active=r1["activeTasks"], standby=[], warmup=[])  # m1: UNREVOKED_TASKS
    timers = c.rebuilt().timers.schedule_view()
    assert {k for k in timers if "streams-session" in k} == {
        record_key("streams-session", GROUP, m) for m in ("m1", "m2")
    }
    assert {k for k in timers if "streams-rebalance" in k} == {record_key("streams-rebalance", GROUP, "m1")}


def test_heartbeat_task_offset_interval_is_the_configured_interval():
    """Kafka 4.2+ (GroupMetadataManager.streamsGroupHeartbeat: setTaskOffsetIntervalMs(
    streamsGroupTaskOffsetIntervalMs)): every answer carries group.streams.task.offset.interval.ms,
    60000 by default (4.1.1 answered 0); v0's acceptableRecoveryLagLegacy stays 0 (4.4.0 sets only
    v1's int64 acceptableRecoveryLag)."""
    r = client().join("m1", TOPO)
    assert r["errorCode"] == 0
    assert r["taskOffsetIntervalMs"] == 60000 and r["acceptableRecoveryLagLegacy"] == 0
    assert "acceptableRecoveryLag" not in r
    c = client(group_streams_task_offset_interval_ms=20000)
    r = c.join("m1", TOPO)
    assert r["taskOffsetIntervalMs"] == 20000
    assert c.heartbeat("m1", r["memberEpoch"])["taskOffsetIntervalMs"] == 20000


def test_heartbeat_task_offset_interval_follows_the_group_config():
    """Kafka 4.4.0's GroupMetadataManager.streamsGroupTaskOffsetIntervalMs: the group's
    streams.task.offset.interval.ms (an internal group config), else the coordinator's setting."""
    c = client()
    r = c.join("m1", TOPO)
    assert r["taskOffsetIntervalMs"] == 60000
    alter = {
        "resources": [
            {
                "resourceType": 32,
                "resourceName": c.group_id,
                "configs": [{"name": "streams.task.offset.interval.ms", "configOperation": 0, "value": "30000"}],
            }
        ],
        "validateOnly": False,
    }
    assert c.send("IncrementalAlterConfigs", 1, alter)["responses"][0]["errorCode"] == 0
    assert c.heartbeat("m1", r["memberEpoch"])["taskOffsetIntervalMs"] == 30000


def test_leave_answer_status_is_an_empty_list():
    """Kafka 4.4.0's StreamsGroupHeartbeatResponse.Status has no null default: a leave's answer,
    which sets no status, carries [] (found by the differential test against a 4.4.0 broker)."""
    c = client()
    r = c.join("m1", TOPO)
    left = c.heartbeat("m1", -1)
    assert left["errorCode"] == 0 and left["memberEpoch"] == -1, left
    assert left["status"] == []
    assert r["status"] == []


def test_testStreamsGroupAssignmentInterval():
    """Kafka 4.3+: within group.streams.assignment.interval.ms of the last target assignment, a
    joining member bumps the group epoch but gets the last assignment, with the ASSIGNMENT_DELAYED
    status; after it, the next heartbeat computes the new one."""
    c = client(group_streams_assignment_interval_ms=5000)
    r1 = c.join("m1", TOPO)
    assert r1["memberEpoch"] == 2 and r1["status"] == []
    c.d.advance(4995)
    r2 = c.join("m2", TOPO)
    assert r2["memberEpoch"] == 2 and active_of(r2) == {}
    assert r2["status"] == [
        {"statusCode": 5, "statusDetail": "Assignment delayed due to the configured assignment interval."}
    ]
    assert (c.group().group_epoch, c.group().target_assignment_epoch) == (3, 2)
    c.d.advance(10)
    r2 = c.heartbeat("m2", 2)
    assert r2["status"] == [] and c.group().target_assignment_epoch == 3
