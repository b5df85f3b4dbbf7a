"""Kafka 4.4.0's additions to streams groups, through the whole core: static members
(GroupMetadataManager's getOrMaybeCreateStaticStreamsGroupMember, streamsGroupStaticMemberGroupLeave,
replaceStreamsMember), reported task offsets (MemberTaskOffsets), StreamsGroupHeartbeat v1
(acceptableRecoveryLag, MISSING_CLIENT_TAGS), StreamsGroupDescribe v1 (assignorName,
topologyDescriptionStatus) and StreamsGroupTopologyDescriptionUpdate (93) on a broker without a
topology-description plugin. Each test names the Kafka test it follows (the consumer-group test of
the same behaviour where the streams one is not published: 4.4.0 ships no test sources)."""

from __future__ import annotations

from coordinator.errors import Errors
from coordinator.group.streams.topology import MISSING_CLIENT_TAGS
from tests.streams.helpers import GROUP, StreamsTestClient, active_of, status_codes, subtopology, topology
from tests.streams.test_streams_group_heartbeat import settle

FOO = "foo"
CHANGELOG = f"{GROUP}-store-changelog"
TOPO = topology(0, subtopology("0", source=[FOO], changelog=[CHANGELOG]))


def client(**overrides) -> StreamsTestClient:
    return StreamsTestClient(GROUP, topics={FOO: 4, CHANGELOG: 4}, **overrides)


def ack(c: StreamsTestClient, member_id: str, r: dict, **fields) -> dict:
    return c.heartbeat(
        member_id,
        r["memberEpoch"],
        active=r["activeTasks"] or [],
        standby=r["standbyTasks"] or [],
        warmup=r["warmupTasks"] or [],
        **fields,
    )


def static_group(c: StreamsTestClient) -> dict:
    """m1 (instance i1) and m2 (dynamic), settled: two tasks each (a static member's later
    heartbeats may leave the instance id out, as Kafka's client does)."""
    settle(c, {"m1": c.join("m1", TOPO, instanceId="i1"), "m2": c.join("m2", TOPO)})
    assert c.group().state == "Stable"
    assert all(len(active_of(c.member(m))["0"]) == 2 for m in ("m1", "m2"))
    return {"m1": c.member("m1"), "m2": c.member("m2")}


# ---------------------------------------------------------------------- static members
def test_testStreamsStaticMemberGetsBackAssignmentUponRejoin():
    """A static member that left with epoch -2 keeps its tasks and the group epoch; its instance
    rejoining under a new member id takes its place, its target and its tasks, without a rebalance."""
    c = client()
    members = static_group(c)
    epoch = c.group().group_epoch
    r = c.heartbeat("m1", -2, instanceId="i1")
    assert (r["errorCode"], r["memberId"], r["memberEpoch"], r["status"]) == (0, "m1", -2, [])
    left = c.member("m1")
    assert left.member_epoch == -2 and left.assigned_tasks == members["m1"].assigned_tasks
    assert c.group().group_epoch == epoch
    assert [e["temporary"] for e in c.events("MemberLeft")] == [True]

    r = c.join("m1-new", TOPO, instanceId="i1", process_id="process-m1")
    assert r["errorCode"] == 0 and r["memberEpoch"] == epoch
    assert active_of(r) == {s: set(p) for s, p in members["m1"].assigned_tasks.active.items()}
    g = c.group()
    assert "m1" not in g.members and g.static_members == {"i1": "m1-new"}
    assert g.group_epoch == epoch and g.target_assignment["m1-new"].active == members["m1"].assigned_tasks.active
    assert c.events("StaticMemberReplaced")[-1]["oldMemberId"] == "m1"
    described = {m["memberId"]: m for m in c.described()["members"]}
    assert described["m1-new"]["instanceId"] == "i1" and described["m2"]["instanceId"] is None


def test_testStreamsShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId():
    c = client()
    static_group(c)
    r = c.join("m3", TOPO, instanceId="i1")
    assert (r["errorCode"], r["errorMessage"]) == (
        Errors.UNRELEASED_INSTANCE_ID.code,
        "Static member m3 with instance id i1 cannot join the group because the instance id is owned by m1 member.",
    )
    assert "m3" not in c.group().members


def test_testStreamsStaticMemberIsFencedAndUnknownInstanceIsRejected():
    """throwIfInstanceIdIsFenced / throwIfStaticMemberIsUnknown: the replaced member id is fenced,
    an instance id the group does not know is unknown."""
    c = client()
    members = static_group(c)
    c.heartbeat("m1", -2, instanceId="i1")
    c.join("m1-new", TOPO, instanceId="i1", process_id="process-m1")
    r = c.heartbeat("m1", members["m1"].member_epoch, instanceId="i1")
    assert (r["errorCode"], r["errorMessage"]) == (
        Errors.FENCED_INSTANCE_ID.code,
        "Static member m1 with instance id i1 was fenced by member m1-new.",
    )
    r = c.heartbeat("m9", 1, instanceId="i9")
    assert (r["errorCode"], r["errorMessage"]) == (Errors.UNKNOWN_MEMBER_ID.code, "Instance id i9 is unknown.")
    r = c.heartbeat("m1", -2, instanceId="i1")
    assert r["errorCode"] == Errors.FENCED_INSTANCE_ID.code


def test_testStreamsLeavingStaticMemberBumpsGroupEpoch():
    """A static member leaving with epoch -1 leaves for good: removed, the group epoch bumped."""
    c = client()
    members = static_group(c)
    epoch = c.group().group_epoch
    r = c.heartbeat("m1", -1, instanceId="i1")
    assert (r["errorCode"], r["memberEpoch"]) == (0, -1)
    assert "m1" not in c.group().members and c.group().static_members == {}
    assert c.group().group_epoch == epoch + 1
    assert members["m2"].member_id in c.group().members


def test_testStreamsNoGroupEpochBumpWhenStaticMemberChangesOnlyItsClientId():
    """hasStreamsMemberMetadataChanged: a static member's metadata record is written, but only an
    epoch-relevant change (topology epoch, rack, client tags, process) bumps the group epoch."""
    c = client()
    members = static_group(c)
    epoch = c.group().group_epoch
    r = c.send(
        "StreamsGroupHeartbeat",
        0,
        {
            "groupId": GROUP,
            "memberId": "m1",
            "memberEpoch": members["m1"].member_epoch,
            "instanceId": "i1",
            "endpointInformationEpoch": 0,
        },
        client_id="other-client",
    )
    assert r["errorCode"] == 0 and c.member("m1").client_id == "other-client"
    assert c.group().group_epoch == epoch
    r = c.heartbeat("m1", members["m1"].member_epoch, instanceId="i1", rackId="rack-b")
    assert r["errorCode"] == 0 and c.group().group_epoch == epoch + 1


def test_testStreamsStaticMemberRejoinsAGroupAtMaximumSize():
    """throwIfStreamsGroupIsFull lets a known static member's instance rejoin a full group."""
    c = client(**{"group.streams.max.size": 2})
    static_group(c)
    c.heartbeat("m1", -2, instanceId="i1")
    assert c.join("m3", TOPO)["errorCode"] == Errors.GROUP_MAX_SIZE_REACHED.code
    assert c.join("m1-new", TOPO, instanceId="i1", process_id="process-m1")["errorCode"] == 0


def test_testStreamsStaticMemberSessionExpiresAfterTemporaryLeave_and_state_log_rebuild():
    """The temporarily left member is fenced when its session expires; the static index is derived
    from the member records, so a rebuilt partition knows the instance ids."""
    c = client()
    members = static_group(c)
    c.heartbeat("m1", -2, instanceId="i1")
    assert c.rebuilt().component("groups").groups[GROUP].static_members == {"i1": "m1"}
    c.sleep(30000)
    c.heartbeat("m2", members["m2"].member_epoch)
    c.sleep(16000)
    assert "m1" not in c.group().members and c.group().static_members == {}
    assert "m2" in c.group().members


# ---------------------------------------------------------------------- task offsets
def test_task_offsets_are_kept_per_member_and_described_MemberTaskOffsets():
    c = client()
    r = c.join("m1", TOPO)
    offsets = [{"subtopologyId": "0", "partition": p, "offset": 10 * p} for p in (2, 0)]
    r = c.heartbeat("m1", r["memberEpoch"], taskOffsets=offsets, taskEndOffsets=[])
    assert r["errorCode"] == 0
    m = c.described()["members"][0]
    assert m["taskOffsets"] == [
        {"subtopologyId": "0", "partition": 0, "offset": 0},
        {"subtopologyId": "0", "partition": 2, "offset": 20},
    ]
    assert m["taskEndOffsets"] == []
    c.heartbeat("m1", r["memberEpoch"])  # not sent: kept
    assert len(c.described()["members"][0]["taskOffsets"]) == 2
    dup = [{"subtopologyId": "0", "partition": 1, "offset": 1}] * 2
    r = c.heartbeat("m1", r["memberEpoch"], taskOffsets=dup)
    assert (r["errorCode"], r["errorMessage"]) == (
        Errors.INVALID_REQUEST.code,
        "Task offsets contain a duplicate entry for subtopology 0 and partition 1.",
    )
    c.heartbeat("m1", -1)
    assert c.group().task_offsets == {}


def test_reported_task_offsets_choose_the_standby_StickyTaskAssignor_rankStandbyCandidates():
    """A standby goes to the member that reported the larger offset sum for the task (none holds it:
    the group gets standbys only once its config asks, at the next rebalance)."""
    c = client()
    topo = topology(0, subtopology("0", source=[FOO], changelog=[CHANGELOG]))
    c.set_topics({FOO: 1, CHANGELOG: 1})
    r1 = c.join("m1", topo)
    assert active_of(r1) == {"0": {0}}
    c.join("m2", topo, taskOffsets=[{"subtopologyId": "0", "partition": 0, "offset": 5}])
    c.join("m3", topo, taskOffsets=[{"subtopologyId": "0", "partition": 0, "offset": 50}])
    assert not any(t.standby for t in c.group().target_assignment.values())
    c.send(
        "IncrementalAlterConfigs",
        1,
        {
            "resources": [
                {
                    "resourceType": 32,
                    "resourceName": GROUP,
                    "configs": [{"name": "streams.num.standby.replicas", "configOperation": 0, "value": "1"}],
                }
            ],
            "validateOnly": False,
        },
    )
    c.heartbeat("m1", c.member("m1").member_epoch, rackId="rack-a")  # a metadata change: a rebalance
    target = c.group().target_assignment
    assert target["m1"].active == {"0": frozenset({0})}
    assert target["m3"].standby == {"0": frozenset({0})} and not target["m2"].standby


# ---------------------------------------------------------------------- version 1 and API 93
def heartbeat_v1(c: StreamsTestClient, member_id: str, epoch: int, **fields) -> dict:
    body = {"groupId": GROUP, "memberId": member_id, "memberEpoch": epoch, "endpointInformationEpoch": 0, **fields}
    if epoch == 0:
        body.update(rebalanceTimeoutMs=300000, processId=f"process-{member_id}", topology=TOPO)
        body.update(activeTasks=[], standbyTasks=[], warmupTasks=[])
    return c.send("StreamsGroupHeartbeat", 1, body)


def test_heartbeat_v1_acceptable_recovery_lag_and_v0_legacy_field():
    c = client()
    r = heartbeat_v1(c, "m1", 0)
    assert r["errorCode"] == 0 and r["acceptableRecoveryLag"] == 10000
    assert r["topologyDescriptionRequired"] is False and "acceptableRecoveryLagLegacy" not in r
    r0 = c.heartbeat("m1", r["memberEpoch"])
    assert r0["acceptableRecoveryLagLegacy"] == 0 and "acceptableRecoveryLag" not in r0
    c.send(
        "IncrementalAlterConfigs",
        1,
        {
            "resources": [
                {
                    "resourceType": 32,
                    "resourceName": GROUP,
                    "configs": [{"name": "streams.acceptable.recovery.lag", "configOperation": 0, "value": "77"}],
                }
            ],
            "validateOnly": False,
        },
    )
    assert heartbeat_v1(c, "m1", r["memberEpoch"])["acceptableRecoveryLag"] == 77
    leave = c.send(
        "StreamsGroupHeartbeat",
        1,
        {"groupId": GROUP, "memberId": "m1", "memberEpoch": -1, "endpointInformationEpoch": 0},
    )
    assert leave["acceptableRecoveryLag"] == -1 and leave["status"] == []


def test_missing_client_tags_status_in_v1_only_GroupMetadataManager_streamsGroupHeartbeat():
    c = client(**{"group.streams.rack.aware.assignment.tags": ["zone", "rack"]})
    r = heartbeat_v1(c, "m1", 0, clientTags=[{"key": "zone", "value": "a"}])
    assert r["status"] == [
        {
            "statusCode": MISSING_CLIENT_TAGS,
            "statusDetail": "Missing required client tags for rack-aware standby assignment: [rack]. "
            "Configure them via 'client.tag.<tagKey>' in your Streams config.",
        }
    ]
    assert MISSING_CLIENT_TAGS not in status_codes(c.heartbeat("m1", r["memberEpoch"]))  # v0 clients never see it
    r = heartbeat_v1(
        c, "m1", r["memberEpoch"], clientTags=[{"key": "zone", "value": "a"}, {"key": "rack", "value": "r"}]
    )
    assert MISSING_CLIENT_TAGS not in status_codes(r)


def test_describe_v1_assignor_name_and_topology_description_status():
    c = client()
    c.join("m1", TOPO)
    body = {"groupIds": [GROUP, "unknown-group"], "includeAuthorizedOperations": False}
    plain = c.send("StreamsGroupDescribe", 1, body)["groups"]
    asked = c.send("StreamsGroupDescribe", 1, {**body, "includeTopologyDescription": True})["groups"]
    found = [g for g in asked if g["groupId"] == GROUP][0]
    assert (found["assignorName"], found["topologyDescriptionStatus"], found["topologyDescription"]) == (
        "sticky",
        1,
        None,
    )
    assert [g["topologyDescriptionStatus"] for g in plain if g["groupId"] == GROUP] == [0]
    missing = [g for g in asked if g["groupId"] != GROUP][0]
    assert missing["errorCode"] != 0 and missing["assignorName"] is None and missing["topologyDescriptionStatus"] == 0
    assert "assignorName" not in c.describe()["groups"][0]  # v0


def test_an_unknown_streams_assignor_name_falls_back_to_the_default_streamsGroupAssignor():
    c = client()
    c.join("m1", TOPO)
    c.send(
        "IncrementalAlterConfigs",
        1,
        {
            "resources": [
                {
                    "resourceType": 32,
                    "resourceName": GROUP,
                    "configs": [{"name": "streams.assignor.name", "configOperation": 0, "value": "nope"}],
                }
            ],
            "validateOnly": False,
        },
    )
    g = c.send("StreamsGroupDescribe", 1, {"groupIds": [GROUP], "includeAuthorizedOperations": False})["groups"][0]
    assert g["assignorName"] == "sticky"


def test_topology_description_update_without_a_plugin_GroupCoordinatorService():
    c = client()
    body = {
        "groupId": GROUP,
        "memberId": "m1",
        "topologyEpoch": 0,
        "topologyDescription": {"subtopologies": [], "globalStores": []},
    }
    r = c.send("StreamsGroupTopologyDescriptionUpdate", 0, body)
    assert (r["errorCode"], r["errorMessage"]) == (
        Errors.UNSUPPORTED_VERSION.code,
        "The broker has no streams group topology description plugin configured.",
    )
    off = client(**{"group.coordinator.rebalance.protocols": ["classic", "consumer"]})
    assert off.send("StreamsGroupTopologyDescriptionUpdate", 0, body)["errorCode"] == Errors.UNSUPPORTED_VERSION.code


def test_the_last_member_leaving_sets_the_assignment_epoch_streamsGroupFenceMember():
    """Kafka 4.4.0 writes the target assignment epoch (= the new group epoch) when the last member
    is fenced, so an empty group's assignmentEpoch is its groupEpoch; not while others remain."""
    c = client()
    members = static_group(c)
    c.heartbeat("m2", -1)
    g = c.group()
    assert g.target_assignment_epoch < g.group_epoch
    c.heartbeat("m1", -1, instanceId="i1")
    g = c.group()
    assert g.members == {} and g.target_assignment_epoch == g.group_epoch == members["m1"].member_epoch + 2
    assert c.described()["assignmentEpoch"] == g.group_epoch
    assert c.rebuilt().component("groups").groups[GROUP].target_assignment_epoch == g.group_epoch
