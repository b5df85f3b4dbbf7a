"""Kafka 4.3/4.4's streams-group additions this module covers, through the whole core: a new
streams group's initial rebalance delay (a timer in the partition's state), the StreamsGroupMetadata
record's `lastAssignmentConfigs` and description epochs (a changed standby count or rack tags
rebalances), and the per-task epochs of active tasks (TasksTupleWithEpochs) with the offset-commit
validator they feed. Each test names the Kafka test it follows (4.3.1's test sources;
4.4.0 ships none)."""

from __future__ import annotations

import pytest

from coordinator.errors import ApiError, Errors
from coordinator.group.streams.group import StreamsGroup, initial_rebalance_timer_key
from coordinator.group.streams.member import MemberState, StreamsGroupMember
from coordinator.group.streams.reconciliation import reconcile
from coordinator.group.streams.tasks import EMPTY, TasksTuple
from coordinator.group.streams.topology import ASSIGNMENT_DELAYED
from coordinator.records import record_key
from tests.group.test_group_configs import set_op
from tests.streams.helpers import GROUP, StreamsTestClient, active_of, status_codes, subtopology, topology
from tests.streams.test_streams_group_heartbeat import settle

FOO = "foo"
TOPO = topology(0, subtopology("0", source=[FOO]))
DELAY = "group.streams.initial.rebalance.delay.ms"
INITIAL_DELAY_DETAIL = "Assignment delayed due to the configured initial rebalance delay."


def client(**overrides) -> StreamsTestClient:
    return StreamsTestClient(GROUP, topics={FOO: 2}, **overrides)


def alter(c: StreamsTestClient, *ops) -> None:
    body = {"resources": [{"resourceType": 32, "resourceName": GROUP, "configs": list(ops)}], "validateOnly": False}
    assert c.send("IncrementalAlterConfigs", 1, body)["responses"][0]["errorCode"] == 0


def metadata_records(c: StreamsTestClient, since: int = 0) -> list[dict]:
    key = record_key("StreamsGroupMetadata", GROUP)
    return [v for k, v in c.records(since) if k == key and v is not None]


# ---------------------------------------------------------------------- the initial rebalance delay
def test_testStreamsInitialRebalanceDelayEmptyDuringDelayAssignsAfterTimer():
    """The first member of a new group gets no tasks, epoch 1 (the new group's assignment epoch) and
    ASSIGNMENT_DELAYED; the timer finds no configured topology (the heartbeat that created the
    group did not keep it, as Kafka's does not), so the member's next heartbeat computes the
    assignment."""
    c = client(**{DELAY: 1000})
    r = c.join("m1", TOPO)
    assert (r["errorCode"], r["memberEpoch"], r["activeTasks"], r["endpointInformationEpoch"]) == (0, 1, [], 0)
    assert r["status"] == [{"statusCode": ASSIGNMENT_DELAYED, "statusDetail": INITIAL_DELAY_DETAIL}]
    key = initial_rebalance_timer_key(GROUP)
    assert c.timers()[key][0] == c.now + 1000
    assert (c.group().group_epoch, c.group().target_assignment_epoch, c.group().state) == (2, 1, "Assigning")

    c.sleep(10000)
    assert key not in c.timers() and c.group().target_assignment_epoch == 1
    r = c.heartbeat("m1", 1, active=[], standby=[], warmup=[])
    assert (r["memberEpoch"], active_of(r), r["status"]) == (2, {"0": {0, 1}}, [])


def test_the_delay_timer_computes_the_assignment_of_members_who_joined_during_it():
    """computeDelayedTargetAssignment: a second member's heartbeat configures the topology on the
    group, so the timer computes the target assignment at the group epoch; the members' next
    heartbeats reconcile to it. Within the delay every answer is ASSIGNMENT_DELAYED, no tasks."""
    c = client(**{DELAY: 3000})
    r1 = c.join("m1", TOPO)
    c.sleep(1000)
    r2 = c.join("m2", TOPO)
    assert (r2["memberEpoch"], r2["activeTasks"], status_codes(r2)) == (1, [], [ASSIGNMENT_DELAYED])
    r1 = c.heartbeat("m1", r1["memberEpoch"], active=[], standby=[], warmup=[])
    assert (r1["memberEpoch"], status_codes(r1)) == (1, [ASSIGNMENT_DELAYED])
    g = c.group()
    assert (g.group_epoch, g.target_assignment_epoch, g.target_assignment) == (3, 1, {})

    c.sleep(2000)  # the timer fires
    g = c.group()
    assert g.target_assignment_epoch == 3
    assert sorted(p for t in g.target_assignment.values() for p in t.active["0"]) == [0, 1]
    computed = c.events("TargetAssignmentComputed")[-1]
    assert computed["assignmentEpoch"] == 3 and computed["members"] == 2
    assert c.events("GroupStateChanged")[-1]["toState"] == "Reconciling"
    done = settle(c, {"m1": {**r1, "activeTasks": []}, "m2": {**r2, "activeTasks": []}})
    assert {m: r["memberEpoch"] for m, r in done.items()} == {"m1": 3, "m2": 3}
    assert c.group().state == "Stable"


def test_testStreamsRebalanceDelayWhenJoiningEmptyGroupWithNonZeroEpoch():
    """An existing group whose members all left delays again for its next first member."""
    c = client(**{DELAY: 1000})
    r = c.join("m1", TOPO)
    c.sleep(1000)
    r = c.heartbeat("m1", r["memberEpoch"], active=[], standby=[], warmup=[])
    assert active_of(r) == {"0": {0, 1}}
    c.heartbeat("m1", -1)
    assert c.group().is_empty() and c.group().group_epoch > 2
    r = c.join("m2", TOPO)
    assert (r["activeTasks"], status_codes(r)) == ([], [ASSIGNMENT_DELAYED])
    assert initial_rebalance_timer_key(GROUP) in c.timers()
    c.sleep(2000)
    r = c.heartbeat("m2", r["memberEpoch"], active=[], standby=[], warmup=[])
    assert active_of(r) == {"0": {0, 1}} and r["status"] == []


def test_testStreamsGroupDeleteCancelsInitialRebalanceTimer():
    c = client(**{DELAY: 5000})
    c.join("m1", TOPO)
    c.heartbeat("m1", -1)
    key = initial_rebalance_timer_key(GROUP)
    assert key in c.timers()
    assert c.send("DeleteGroups", 2, {"groupsNames": [GROUP]})["results"][0]["errorCode"] == 0
    assert key not in c.timers()


def test_the_delay_is_the_groups_config_and_0_turns_it_off():
    """GroupMetadataManager.streamsGroupInitialRebalanceDelayMs: the group's
    streams.initial.rebalance.delay.ms, else the coordinator's."""
    c = client(**{DELAY: 0})
    alter(c, set_op("streams.initial.rebalance.delay.ms", "2000"))
    r = c.join("m1", TOPO)
    assert status_codes(r) == [ASSIGNMENT_DELAYED]
    assert c.timers()[initial_rebalance_timer_key(GROUP)][0] == c.now + 2000

    c = client(**{DELAY: 5000})
    alter(c, set_op("streams.initial.rebalance.delay.ms", "0"))
    r = c.join("m1", TOPO)
    assert active_of(r) == {"0": {0, 1}} and initial_rebalance_timer_key(GROUP) not in c.timers()


def test_the_delay_timer_survives_a_snapshot_and_is_lost_with_a_rebuild_from_the_log():
    """The timer is state (deterministic on replay); as Kafka's in-memory timer, a partition rebuilt
    from its log has none, and its members' next heartbeat computes the assignment."""
    c = client(**{DELAY: 3000})
    c.join("m1", TOPO)
    key = initial_rebalance_timer_key(GROUP)
    assert key in c.d.stored().load(c.d.partition_id, c.d.config).timers
    rebuilt = c.rebuilt()
    assert key not in rebuilt.timers


# ---------------------------------------------------------------------- lastAssignmentConfigs
def test_testStreamsGroupEpochIncreaseWithAssignmentConfigChanges():
    """A changed streams.num.standby.replicas bumps the group epoch on the next heartbeat, and the
    StreamsGroupMetadata record carries the configs the assignment was computed with."""
    c = client()
    r = settle(c, {"m1": c.join("m1", TOPO)})["m1"]
    epoch = c.group().group_epoch
    assert metadata_records(c)[-1]["lastAssignmentConfigs"] == [{"key": "num.standby.replicas", "value": "0"}]
    assert c.group().last_assignment_configs == {"num.standby.replicas": "0"}
    assert c.heartbeat("m1", r["memberEpoch"])["memberEpoch"] == epoch  # nothing changed: no bump

    alter(c, set_op("streams.num.standby.replicas", "2"))
    since = len(c.records())
    r = c.heartbeat("m1", r["memberEpoch"], active=r["activeTasks"], standby=[], warmup=[])
    assert r["memberEpoch"] == epoch + 1
    value = metadata_records(c, since)[-1]
    assert value["epoch"] == epoch + 1
    assert value["lastAssignmentConfigs"] == [{"key": "num.standby.replicas", "value": "2"}]
    assert (value["storedDescriptionTopologyEpoch"], value["failedDescriptionTopologyEpoch"]) == (-1, -1)


def test_changed_rack_aware_assignment_tags_rebalance_too():
    """streamsGroupAssignmentConfigs: the rack tags (joined by ',') are an assignment config."""
    c = client()
    r = settle(c, {"m1": c.join("m1", TOPO)})["m1"]
    epoch = c.group().group_epoch
    alter(c, set_op("streams.rack.aware.assignment.tags", "zone,rack"))
    r = c.heartbeat("m1", r["memberEpoch"])
    assert r["memberEpoch"] == epoch + 1
    assert c.group().last_assignment_configs == {"num.standby.replicas": "0", "rack.aware.assignment.tags": "zone,rack"}


def test_a_record_without_assignment_configs_rebalances_once_after_an_upgrade():
    """A StreamsGroupMetadata record written before 4.3 has no lastAssignmentConfigs (Kafka's
    default: an empty list), so the next heartbeat finds the configs changed and bumps the epoch,
    once."""
    c = client()
    r = settle(c, {"m1": c.join("m1", TOPO)})["m1"]
    epoch = c.group().group_epoch
    old = {k: v for k, v in metadata_records(c)[-1].items() if k not in ("lastAssignmentConfigs",)}
    c.d.inject([(record_key("StreamsGroupMetadata", GROUP), old)])
    assert c.group().last_assignment_configs == {}
    r = c.heartbeat("m1", r["memberEpoch"])
    assert r["memberEpoch"] == epoch + 1
    r = c.heartbeat("m1", r["memberEpoch"])
    assert r["memberEpoch"] == epoch + 1


def test_the_fence_keeps_the_groups_assignment_configs():
    """streamsGroupFenceMember writes the group's lastAssignmentConfigs and description epochs."""
    c = client(**{"group.streams.num.standby.replicas": 1})
    settle(c, {"m1": c.join("m1", TOPO), "m2": c.join("m2", TOPO)})
    since = len(c.records())
    c.heartbeat("m2", -1)
    value = metadata_records(c, since)[-1]
    assert value["lastAssignmentConfigs"] == [{"key": "num.standby.replicas", "value": "1"}]


def test_assignment_configs_and_description_epochs_survive_snapshot_and_replay():
    c = client()
    settle(c, {"m1": c.join("m1", TOPO)})
    g = c.group()
    loaded = StreamsGroup.from_json(g.to_json())
    assert loaded.last_assignment_configs == g.last_assignment_configs == {"num.standby.replicas": "0"}
    assert (loaded.stored_description_topology_epoch, loaded.failed_description_topology_epoch) == (-1, -1)
    rebuilt = c.rebuilt().component("groups").groups[GROUP]
    assert rebuilt.last_assignment_configs == g.last_assignment_configs
    # a snapshot written before these fields loads as a 4.1 record does
    old = {k: v for k, v in g.to_json().items() if k != "lastAssignmentConfigs"}
    assert StreamsGroup.from_json(old).last_assignment_configs == {}


# ---------------------------------------------------------------------- per-task epochs
PROCESS = "process_id"
S1, S2 = "subtopology-1", "subtopology-2"


def epochs_member(state, epoch, active: dict, pending: dict | None = None) -> StreamsGroupMember:
    """A member whose active tasks (`{subtopology: {partition: epoch}}`) carry their epochs."""
    pending = pending or {}

    def tuple_of(tasks: dict) -> TasksTuple:
        return TasksTuple.of(active={s: set(p) for s, p in tasks.items()})

    return StreamsGroupMember(
        "member",
        member_epoch=epoch,
        previous_member_epoch=epoch,
        state=state,
        process_id=PROCESS,
        assigned_tasks=tuple_of(active),
        tasks_pending_revocation=tuple_of(pending),
        active_task_epochs={(s, p): e for tasks in (active, pending) for s, ps in tasks.items() for p, e in ps.items()},
    )


def epochs_of(m: StreamsGroupMember) -> dict:
    return {(s, p): m.active_task_epoch(s, p) for s, ps in m.assigned_tasks.active.items() for p in ps}


def reconciled(m, target_epoch, target_active: dict, active_owner=lambda s, p: None, owned=None):
    target = TasksTuple.of(active={s: set(p) for s, p in target_active.items()})
    return reconcile(m, target_epoch, target, active_owner, lambda s, p: set(), lambda s, p: set(), owned)


def test_CurrentAssignmentBuilderTest_testAssignmentEpochsShouldBePreservedFromPreviousAssignment():
    m = epochs_member(MemberState.STABLE, 10, {S1: {1: 5, 2: 6}, S2: {3: 7, 4: 8}})
    r = reconciled(m, 11, {S1: {1, 2}, S2: {3, 4}}, active_owner=lambda s, p: PROCESS)
    assert (r.state, r.member_epoch, r.previous_member_epoch) == (MemberState.STABLE, 11, 10)
    assert epochs_of(r) == {(S1, 1): 5, (S1, 2): 6, (S2, 3): 7, (S2, 4): 8}


def test_CurrentAssignmentBuilderTest_testNewlyAssignedTasksGetTargetAssignmentEpoch():
    m = epochs_member(MemberState.STABLE, 10, {})
    r = reconciled(m, 11, {S1: {1, 2}, S2: {3, 4}})
    assert (r.state, r.member_epoch) == (MemberState.STABLE, 11)
    assert epochs_of(r) == {(S1, 1): 11, (S1, 2): 11, (S2, 3): 11, (S2, 4): 11}


def test_CurrentAssignmentBuilderTest_testMixedPreservedAndNewAssignmentEpochs():
    m = epochs_member(MemberState.UNREVOKED_TASKS, 10, {S1: {1: 5, 2: 6}}, pending={S2: {3: 7, 4: 8}})
    owned = TasksTuple.of(active={S1: {1}})
    r = reconciled(m, 11, {S1: {1, 2}, S2: {3, 5}}, owned=owned)
    assert (r.state, r.member_epoch, r.tasks_pending_revocation) == (MemberState.STABLE, 11, EMPTY)
    assert epochs_of(r) == {(S1, 1): 5, (S1, 2): 6, (S2, 3): 11, (S2, 5): 11}


def test_tasks_pending_revocation_keep_their_epochs_in_the_record():
    """toTaskIdsWithEpochs: the current-assignment record carries an epoch per active partition,
    pending revocation too; its replay restores them."""
    m = epochs_member(MemberState.STABLE, 10, {S1: {1: 5, 2: 6}})
    r = reconciled(m, 11, {S1: {1}}, owned=TasksTuple.of(active={S1: {1, 2}}))
    assert r.state == MemberState.UNREVOKED_TASKS
    value = r.assignment_value()
    assert value["activeTasks"] == [{"subtopologyId": S1, "partitions": [1], "assignmentEpochs": [5]}]
    assert value["activeTasksPendingRevocation"] == [{"subtopologyId": S1, "partitions": [2], "assignmentEpochs": [6]}]
    back = StreamsGroupMember("member").with_assignment_value(value)
    assert (back.active_task_epoch(S1, 1), back.active_task_epoch(S1, 2)) == (5, 6)


def group_with(member: StreamsGroupMember, with_topology: bool = True) -> StreamsGroup:
    g = StreamsGroup("group-foo")
    if with_topology:
        g.topology = topology(1, subtopology("0", source=["input-topic"], rsource=["repartition"]))
    g.update_member(member)
    return g


def member_1(epoch: int, active: dict) -> StreamsGroupMember:
    m = epochs_member(MemberState.STABLE, epoch, active)
    return m.replace(member_id="member-1")


def test_StreamsGroupTest_testValidateOffsetCommitWithOlderEpoch():
    g = group_with(member_1(2, {"0": {0: 2, 1: 1}}))
    validate = g.validate_offset_commit("member-1", "", 1, False, 10)
    assert validate is not None
    with pytest.raises(ApiError) as e:
        validate("input-topic", 0)
    assert (e.value.error, e.value.message) == (
        Errors.STALE_MEMBER_EPOCH,
        "Received member epoch 1 is older than assignment epoch 2 for task 0-0.",
    )
    validate("input-topic", 1)  # given at epoch 1: the commit with epoch 1 stands


def test_StreamsGroupTest_testValidateOffsetCommitWithOlderEpochMissingTopology():
    g = group_with(member_1(2, {}), with_topology=False)
    with pytest.raises(ApiError) as e:
        g.validate_offset_commit("member-1", "", 1, False, 10)
    assert (e.value.error, e.value.message) == (
        Errors.STALE_MEMBER_EPOCH,
        "Topology is not available for offset commit validation.",
    )


def test_StreamsGroupTest_testValidateOffsetCommitWithOlderEpochMissingSubtopology():
    validate = group_with(member_1(2, {})).validate_offset_commit("member-1", "", 1, False, 10)
    with pytest.raises(ApiError) as e:
        validate("unknown-topic", 0)
    assert (e.value.error, e.value.message) == (
        Errors.STALE_MEMBER_EPOCH,
        "Topic unknown-topic is not in the topology.",
    )


def test_StreamsGroupTest_testValidateOffsetCommitWithOlderEpochUnassignedPartition():
    validate = group_with(member_1(2, {"0": {0: 1}})).validate_offset_commit("member-1", "", 1, False, 10)
    with pytest.raises(ApiError) as e:
        validate("input-topic", 1)
    assert (e.value.error, e.value.message) == (
        Errors.STALE_MEMBER_EPOCH,
        "Task 0-1 is not assigned or pending revocation for member.",
    )


def test_StreamsGroupTest_testValidateOffsetCommitWithOlderEpochValidAssignment():
    validate = group_with(member_1(5, {"0": {0: 2, 1: 2}})).validate_offset_commit("member-1", "", 2, False, 10)
    validate("input-topic", 0)
    validate("input-topic", 1)
    validate("repartition", 1)  # a repartition source topic is the subtopology's too


def test_StreamsGroupTest_newer_and_equal_epochs():
    g = group_with(member_1(5, {"0": {0: 2}}))
    assert g.validate_offset_commit("member-1", "", 5, False, 10) is None
    with pytest.raises(ApiError) as e:
        g.validate_offset_commit("member-1", "", 6, False, 10)
    assert (e.value.error, e.value.message) == (
        Errors.STALE_MEMBER_EPOCH,
        "Received member epoch 6 is newer than current member epoch 5.",
    )


def commit_body(member_id: str, epoch: int, partitions: list[int]) -> dict:
    return {
        "groupId": GROUP,
        "generationIdOrMemberEpoch": epoch,
        "memberId": member_id,
        "groupInstanceId": None,
        "retentionTimeMs": -1,
        "topics": [
            {
                "name": FOO,
                "partitions": [
                    {"partitionIndex": p, "committedOffset": 7, "committedLeaderEpoch": -1, "committedMetadata": ""}
                    for p in partitions
                ],
            }
        ],
    }


def test_an_older_epochs_commit_stands_for_kept_tasks_and_is_fenced_for_moved_ones():
    """Through OffsetCommit and TxnOffsetCommit: after a rebalance m1 keeps task 0 (given at its
    first epoch) and gives task 1 to m2; m1's commit at its previous epoch stands for partition 0,
    and one that also names partition 1 fails as a whole (STALE_MEMBER_EPOCH; TxnOffsetCommit
    before v6: ILLEGAL_GENERATION), writing nothing."""
    c = client(transaction_partition_verification_enable=False)  # KIP-890's check: tested elsewhere
    r1 = settle(c, {"m1": c.join("m1", TOPO)})["m1"]
    first = r1["memberEpoch"]
    settle(c, {"m1": r1, "m2": c.join("m2", TOPO)})
    m1 = c.member("m1")
    assert m1.member_epoch > first and m1.active_task_epoch("0", 0) == first
    assert m1.active_task_epoch("0", 1) is None

    r = c.send("OffsetCommit", 9, commit_body("m1", first, [0]))
    assert r["topics"][0]["partitions"][0]["errorCode"] == 0
    since = len(c.records())
    r = c.send("OffsetCommit", 9, commit_body("m1", first, [0, 1]))
    assert [p["errorCode"] for p in r["topics"][0]["partitions"]] == [Errors.STALE_MEMBER_EPOCH.code] * 2
    assert not [k for k, _ in c.records(since) if k.startswith('["OffsetCommit"')]

    def txn_commit(version: int, partitions: list[int]) -> list[int]:
        body = {
            **commit_body("m1", first, partitions),
            "transactionalId": "t",
            "producerId": 1,
            "producerEpoch": 0,
        }
        del body["retentionTimeMs"]
        if version >= 6:  # topics by id
            body["topics"][0]["topicId"] = next(tid for tid, name in c.names.items() if name == FOO)
        r = c.send("TxnOffsetCommit", version, body)
        return [p["errorCode"] for p in r["topics"][0]["partitions"]]

    assert txn_commit(4, [0, 1]) == [Errors.ILLEGAL_GENERATION.code] * 2
    assert txn_commit(6, [0, 1]) == [Errors.STALE_MEMBER_EPOCH.code] * 2


def test_a_static_member_leaving_resets_its_task_epochs_to_zero():
    """streamsGroupStaticMemberGroupLeave (resetAssignedTasksEpochsToZero): the member that takes
    its place commits with its new epochs for the tasks it inherits."""
    c = client()
    settle(c, {"m1": c.join("m1", TOPO, instanceId="i1")})
    c.heartbeat("m1", -2, instanceId="i1")
    left = c.member("m1")
    assert left.member_epoch == -2 and {left.active_task_epoch("0", p) for p in (0, 1)} == {0}
