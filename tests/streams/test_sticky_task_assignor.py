"""Ports of Kafka's StickyTaskAssignorTest (kafka-group-coordinator-tests,
streams/assignor/StickyTaskAssignorTest.java; 4.1's tests, which 4.4.0's assignor passes, then
tests of 4.4.0's additions): same member specs, same topologies, same assertions.
`spec(process, active, standby)` is createAssignmentMemberSpec; `topo(n, stateful, subtopologies)`
is TopologyDescriberImpl."""

from __future__ import annotations

from coordinator.group.streams.assignor import MemberSpec, StickyTaskAssignor, SubtopologySpec

S = "test-subtopology"


def spec(process: str, active: dict | None = None, standby: dict | None = None) -> MemberSpec:
    return MemberSpec(
        process,
        {k: frozenset(v) for k, v in (active or {}).items()},
        {k: frozenset(v) for k, v in (standby or {}).items()},
    )


def topo(n: int, stateful: bool = False, subs=(S,)) -> dict:
    return {s: SubtopologySpec(n, stateful) for s in subs}


def assign(members, topology, standby: int = 0):
    return StickyTaskAssignor().assign(members, topology, standby)


def active(result, *members) -> list[int]:
    return [p for m in members for parts in result[m].active.values() for p in parts]


def standby(result, *members) -> list[int]:
    return [p for m in members for parts in result[m].standby.values() for p in parts]


def active_map(result, m) -> dict:
    return {s: set(p) for s, p in result[m].active.items()}


def merged(result, role: str, members=None) -> dict:
    out: dict = {}
    for m in members or result:
        for s, p in getattr(result[m], role).items():
            out.setdefault(s, set()).update(p)
    return out


def test_shouldAssignOneActiveTaskToEachProcessWhenTaskCountSameAsProcessCount():
    r = assign({f"member{i}": spec(f"process{i}") for i in (1, 2, 3)}, topo(3))
    assert len(r) == 3
    assert all(len(active(r, f"member{i}")) == 1 for i in (1, 2, 3))
    assert set(active(r, "member1", "member2", "member3")) == {0, 1, 2}


def _six_members():
    return {f"member{p}_{i}": spec(f"process{p}") for p in (1, 2, 3) for i in (1, 2)}


def test_shouldAssignTopicGroupIdEvenlyAcrossClientsWithNoStandByTasks():
    r = assign(_six_members(), topo(3, False, ["test-subtopology1", "test-subtopology2"]))
    assert all(len(active(r, m)) == 1 for m in r)
    assert merged(r, "active") == {"test-subtopology1": {0, 1, 2}, "test-subtopology2": {0, 1, 2}}


def test_shouldAssignTopicGroupIdEvenlyAcrossClientsWithStandByTasks():
    r = assign(_six_members(), topo(3, True, ["test-subtopology1", "test-subtopology2"]), standby=1)
    assert all(len(active(r, m)) == 1 for m in r)
    assert merged(r, "active") == {"test-subtopology1": {0, 1, 2}, "test-subtopology2": {0, 1, 2}}


def test_shouldNotMigrateActiveTaskToOtherProcess():
    r = assign({"member1": spec("process1", {S: {0}}), "member2": spec("process2", {S: {1}})}, topo(3))
    assert 0 in r["member1"].active[S] and 1 in r["member2"].active[S]
    assert len(r["member1"].active[S]) + len(r["member2"].active[S]) == 3
    r = assign({"member2": spec("process2", {S: {1}}), "member3": spec("process1", {S: {2}})}, topo(3))
    assert 1 in r["member2"].active[S] and 2 in r["member3"].active[S]
    assert len(r["member2"].active[S]) + len(r["member3"].active[S]) == 3


def test_shouldMigrateActiveTasksToNewProcessWithoutChangingAllAssignments():
    r = assign(
        {"member1": spec("process1", {S: {0, 2}}), "member2": spec("process2", {S: {1}}), "member3": spec("process3")},
        topo(3),
    )
    assert r["member1"].active[S] & {0, 2}
    assert 1 in r["member2"].active[S]
    assert r["member3"].active[S] & {0, 2}
    assert len(active(r, "member1", "member2", "member3")) == 3


def test_shouldAssignBasedOnCapacity():
    r = assign({"member1": spec("process1"), "member2_1": spec("process2"), "member2_2": spec("process2")}, topo(3))
    assert [len(r[m].active[S]) for m in ("member1", "member2_1", "member2_2")] == [1, 1, 1]


def test_shouldAssignTasksEvenlyWithUnequalTopicGroupSizes():
    tasks = {"test-subtopology1": {0, 1, 2, 3, 4, 5}, "test-subtopology2": {0}}
    topology = {"test-subtopology1": SubtopologySpec(6, False), "test-subtopology2": SubtopologySpec(1, False)}
    r = assign({"member1": spec("process1", tasks), "member2": spec("process2")}, topology)
    assert len(active(r, "member1")) == 4
    assert len(active(r, "member2")) == 3
    assert merged(r, "active") == tasks


def test_shouldKeepActiveTaskStickinessWhenMoreClientThanActiveTasks():
    r = assign(
        {
            "member1": spec("process1", {S: {0}}),
            "member2": spec("process2", {S: {2}}),
            "member3": spec("process3", {S: {1}}),
            "member4": spec("process4"),
            "member5": spec("process5"),
        },
        topo(3),
    )
    assert [active_map(r, m).get(S) for m in ("member1", "member2", "member3", "member4", "member5")] == [
        {0},
        {2},
        {1},
        None,
        None,
    ]
    r = assign(
        {
            "member1": spec("process1"),
            "member2": spec("process2", {S: {0}}),
            "member3": spec("process3"),
            "member4": spec("process4", {S: {2}}),
            "member5": spec("process5", {S: {1}}),
        },
        topo(3),
    )
    assert [active_map(r, m).get(S) for m in ("member1", "member2", "member3", "member4", "member5")] == [
        None,
        {0},
        None,
        {2},
        {1},
    ]


def test_shouldAssignTasksToClientWithPreviousStandbyTasks():
    r = assign(
        {
            "member1": spec("process1", {}, {S: {2}}),
            "member2": spec("process2", {}, {S: {1}}),
            "member3": spec("process3", {}, {S: {0}}),
        },
        topo(3),
    )
    assert [active_map(r, m)[S] for m in ("member1", "member2", "member3")] == [{2}, {1}, {0}]


def test_shouldNotAssignStandbyTasksToClientWithPreviousStandbyTasksAndCurrentActiveTasks():
    r = assign(
        {"member1": spec("process1", {}, {S: {0}}), "member2": spec("process2", {}, {S: {1}})}, topo(2, True), standby=1
    )
    assert active_map(r, "member1")[S] == {0} and set(r["member1"].standby[S]) == {1}
    assert active_map(r, "member2")[S] == {1} and set(r["member2"].standby[S]) == {0}


def test_shouldAssignBasedOnCapacityWhenMultipleClientHaveStandbyTasks():
    r = assign(
        {
            "member1": spec("process1", {S: {0}}, {S: {1}}),
            "member2_1": spec("process2", {S: {2}}, {S: {1}}),
            "member2_2": spec("process2"),
        },
        topo(3),
    )
    assert [active_map(r, m)[S] for m in ("member1", "member2_1", "member2_2")] == [{0}, {2}, {1}]


def test_shouldAssignStandbyTasksToDifferentClientThanCorrespondingActiveTaskIsAssignedTo():
    members = {f"member{i + 1}": spec(f"process{i + 1}", {S: {i}}) for i in range(4)}
    r = assign(members, topo(4, True), standby=1)
    non_empty = 0
    for i in range(4):
        ids = standby(r, f"member{i + 1}")
        assert i not in ids and len(ids) <= 2
        non_empty += bool(ids)
    assert non_empty >= 3
    assert merged(r, "standby") == {S: {0, 1, 2, 3}}


def test_shouldAssignMultipleReplicasOfStandbyTask():
    members = {f"member{i + 1}": spec(f"process{i + 1}", {S: {i}}) for i in range(3)}
    r = assign(members, topo(3, True), standby=2)
    assert set(standby(r, "member1")) == {1, 2}
    assert set(standby(r, "member2")) == {0, 2}
    assert set(standby(r, "member3")) == {0, 1}


def test_shouldNotAssignStandbyTaskReplicasWhenNoClientAvailableWithoutHavingTheTaskAssigned():
    r = assign({"member1": spec("process1")}, topo(1, True), standby=1)
    assert not r["member1"].standby


def test_shouldAssignActiveAndStandbyTasks():
    r = assign({f"member{i}": spec(f"process{i}") for i in (1, 2, 3)}, topo(3, True), standby=1)
    assert set(active(r, *r)) == {0, 1, 2}
    assert set(standby(r, *r)) == {0, 1, 2}


def test_shouldAssignAtLeastOneTaskToEachClientIfPossible():
    r = assign(
        {
            "member1_1": spec("process1"),
            "member1_2": spec("process1"),
            "member1_3": spec("process1"),
            "member2": spec("process2"),
            "member3": spec("process3"),
        },
        topo(3),
    )
    assert len(active(r, "member1_1", "member1_2", "member1_3")) == 1
    assert len(active(r, "member2")) == 1 and len(active(r, "member3")) == 1


def test_shouldAssignEachActiveTaskToOneClientWhenMoreClientsThanTasks():
    r = assign({f"member{i}": spec(f"process{i}") for i in range(1, 7)}, topo(3))
    assert len(active(r, *r)) == 3 and set(active(r, *r)) == {0, 1, 2}


def test_shouldBalanceActiveAndStandbyTasksAcrossAvailableClients():
    r = assign({f"member{i}": spec(f"process{i}") for i in range(1, 7)}, topo(3, True), standby=1)
    for m in r:
        assert len(r[m].standby) + len(active(r, m)) == 1


def test_shouldAssignMoreTasksToClientWithMoreCapacity():
    subs = [f"test-subtopology{i}" for i in range(4)]
    r = assign(
        {"member1": spec("process1"), "member2_1": spec("process2"), "member2_2": spec("process2")},
        topo(3, False, subs),
    )
    assert len(active(r, "member2_1", "member2_2")) == 8
    assert len(active(r, "member1")) == 4


def all_task_ids(result, m) -> list[int]:
    """getAllTaskIds: the active task ids, then the standby ones (a member holding 0 as active and 3
    as standby differs from one holding 3 as active and 0 as standby)."""
    return sorted(active(result, m)) + sorted(standby(result, m))


def test_shouldNotHaveSameAssignmentOnAnyTwoHosts():
    r = assign({f"member{i}": spec(f"process{i}") for i in range(1, 5)}, topo(4, True), standby=1)
    for m in r:
        for other in r:
            if other != m:
                assert all_task_ids(r, m) != all_task_ids(r, other)


def test_shouldNotHaveSameAssignmentOnAnyTwoHostsWhenThereArePreviousActiveTasks():
    members = {
        "member1": spec("process1", {S: {1, 2}}),
        "member2": spec("process2", {S: {3}}),
        "member3": spec("process3", {S: {0}}),
        "member4": spec("process4"),
    }
    r = assign(members, topo(4, True), standby=1)
    for m in r:
        for other in r:
            if other != m:
                assert all_task_ids(r, m) != all_task_ids(r, other)


def test_shouldReBalanceTasksAcrossAllClientsWhenCapacityAndTaskCountTheSame():
    r = assign(
        {
            "member1": spec("process1", {S: {0, 1, 2, 3}}),
            "member2": spec("process2"),
            "member3": spec("process3"),
            "member4": spec("process4"),
        },
        topo(4),
    )
    assert [len(active(r, f"member{i}")) for i in range(1, 5)] == [1, 1, 1, 1]


def test_shouldRebalanceTasksToClientsBasedOnCapacity():
    r = assign(
        {"member2": spec("process2", {S: {0, 3, 2}}), "member3_1": spec("process3"), "member3_2": spec("process3")},
        topo(3),
    )
    assert len(active(r, "member2")) == 1
    assert len(active(r, "member3_1", "member3_2")) == 2


def test_shouldMoveMinimalNumberOfTasksWhenPreviouslyAboveCapacityAndNewClientAdded():
    p1, p2 = {0, 2}, {1, 3}
    r = assign(
        {"member1": spec("process1", {S: p1}), "member2": spec("process2", {S: p2}), "member3": spec("process3")},
        topo(4),
    )
    p3 = active(r, "member3")
    assert len(p3) == 1
    if p1 & set(p3):
        assert set(active(r, "member2")) == p2
    else:
        assert set(active(r, "member1")) == p1


def test_shouldNotMoveAnyTasksWhenNewTasksAdded():
    r = assign({"member1": spec("process1", {S: {0, 1}}), "member2": spec("process2", {S: {2, 3}})}, topo(6))
    assert {0, 1} <= set(active(r, "member1")) and {2, 3} <= set(active(r, "member2"))


def test_shouldAssignNewTasksToNewClientWhenPreviousTasksAssignedToOldClients():
    r = assign(
        {
            "member1": spec("process1", {S: {2, 1}}),
            "member2": spec("process2", {S: {0, 3}}),
            "member3": spec("process3"),
        },
        topo(6),
    )
    assert {2, 1} <= set(active(r, "member1")) and {0, 3} <= set(active(r, "member2"))
    assert {4, 5} <= set(active(r, "member3"))


def test_shouldAssignTasksNotPreviouslyActiveToNewClient():
    s0, s1, s2 = "test-subtopology0", "test-subtopology1", "test-subtopology2"
    members = {
        "member1": spec("process1", {s0: {1}, s1: {2, 3}}, {s0: {0}, s1: {1}, s2: {0, 1, 3}}),
        "member2": spec("process2", {s0: {0}, s1: {1}, s2: {2}}, {s0: {1, 2, 3}, s1: {0, 2, 3}, s2: {0, 1, 3}}),
        "member3": spec("process3", {s2: {0, 1, 3}}, {s0: {2}, s1: {2}}),
        "newMember": spec("process4", {}, {s0: {0, 1, 2, 3}, s1: {0, 1, 2, 3}, s2: {0, 1, 2, 3}}),
    }
    r = assign(members, topo(4, False, [s0, s1, s2]))
    assert active_map(r, "member1") == {s0: {1}, s1: {2, 3}}
    assert active_map(r, "member2") == {s0: {0}, s1: {1}, s2: {2}}
    assert active_map(r, "member3") == {s2: {0, 1, 3}}
    assert active_map(r, "newMember") == {s0: {2, 3}, s1: {0}}


def test_shouldAssignTasksToNewClient():
    r = assign({"member1": spec("process1", {S: {1, 2}}), "member2": spec("process2")}, topo(2))
    assert len(active(r, "member1")) == 1


def test_shouldAssignTasksToNewClientWithoutFlippingAssignmentBetweenExistingClients():
    r = assign(
        {
            "member1": spec("process1", {S: {0, 1, 2}}),
            "member2": spec("process2", {S: {3, 4, 5}}),
            "newMember": spec("process3"),
        },
        topo(6),
    )
    m1, m2 = active(r, "member1"), active(r, "member2")
    assert not {3, 4, 5} & set(m1) and len(m1) == 2
    assert not {0, 1, 2} & set(m2) and len(m2) == 2
    assert len(active(r, "newMember")) == 2


def test_shouldAssignTasksToNewClientWithoutFlippingAssignmentBetweenExistingAndBouncedClients():
    r = assign(
        {
            "member1": spec("process1", {S: {0, 1, 2, 6}}),
            "member2": spec("process2", {}, {S: {3, 4, 5}}),
            "newMember": spec("newProcess"),
        },
        topo(7),
    )
    m1, m2 = active(r, "member1"), active(r, "member2")
    assert not {3, 4, 5} & set(m1) and len(m1) == 3
    assert not {0, 1, 2} & set(m2) and len(m2) == 2
    assert len(active(r, "newMember")) == 2


def test_deterministic_for_the_same_input():
    """Not in Kafka (its hash-set iteration order is fixed per JVM): the core must be deterministic."""
    members = {f"m{i}": spec(f"p{i % 7}") for i in range(40)}
    t = topo(13, True, ["a", "b", "c"])
    assert assign(members, t, 1) == assign(dict(reversed(list(members.items()))), t, 1)


# ---------------------------------------------------------------------- Kafka 4.4.0's additions
def offsets_spec(process: str, active=None, standby=None, offsets=None) -> MemberSpec:
    """createMemberMetadataAndState with reported task offsets ({subtopology: {partition: offset}})."""
    s = spec(process, active, standby)
    return MemberSpec(s.process_id, s.active, s.standby, offsets or {})


def test_shouldRankStandbyCandidatesByReportedOffsetSum():
    """rankStandbyCandidates: among members that reported an offset for the task, the larger sum wins."""
    r = assign(
        {
            "member1": offsets_spec("process1", {S: {0}}),
            "member2": offsets_spec("process2", offsets={S: {0: 5}}),
            "member3": offsets_spec("process3", offsets={S: {0: 50}}),
        },
        topo(1, True),
        standby=1,
    )
    assert active_map(r, "member1") == {S: {0}}
    assert standby(r, "member3") == [0] and standby(r, "member2") == []


def test_shouldPreferCurrentStandbyOverLargerReportedOffsetSum():
    """A member holding the task as a standby now ranks before any member that only reported offsets."""
    r = assign(
        {
            "member1": offsets_spec("process1", {S: {0}}),
            "member2": offsets_spec("process2", standby={S: {0}}, offsets={S: {0: 1}}),
            "member3": offsets_spec("process3", offsets={S: {0: 100}}),
        },
        topo(1, True),
        standby=1,
    )
    assert standby(r, "member2") == [0] and standby(r, "member3") == []


def test_shouldAssignActiveTaskToPreviousStandbyBeforeLeastLoadedProcess():
    r = assign({"member2": spec("process2", standby={S: {0}}), "member3": spec("process3")}, topo(2))
    assert active_map(r, "member2") == {S: {0}} and active_map(r, "member3") == {S: {1}}


def test_shouldKeepOnlyTheActiveTaskQuotaOfAPreviousOwner():
    """A member keeps its current tasks up to ceil(tasks / members), in (partition, subtopology) order."""
    r = assign({"member1": spec("process1", {S: {0, 1, 2, 3}}), "member2": spec("process2")}, topo(4))
    assert active_map(r, "member1") == {S: {0, 1}} and active_map(r, "member2") == {S: {2, 3}}


def test_shouldNotAssignStandbyToTheActivesProcessAndWarnWhenCapacityIsMissing(caplog):
    with caplog.at_level("WARNING"):
        r = assign({"member1": spec("process1"), "member2": spec("process1")}, topo(1, True), standby=1)
    assert sorted(active(r, "member1", "member2")) == [0] and standby(r, "member1", "member2") == []
    assert "Unable to assign 1 of 1 standby tasks for task [test-subtopology_0]." in caplog.text


def test_shouldNeverAssignWarmupTasks_AssignmentRefiner():
    r = assign({f"member{i}": spec(f"process{i}") for i in (1, 2, 3)}, topo(6, True), standby=2)
    assert all(t.warmup == {} for t in r.values())
    assert all(len(standby(r, m)) == 4 for m in r)


def test_assignment_does_not_depend_on_member_insertion_order():
    members = {f"member{i}": spec(f"process{i % 2}", {S: {i}} if i < 3 else None) for i in range(5)}
    first = assign(members, topo(7, True), standby=1)
    second = assign(dict(reversed(list(members.items()))), topo(7, True), standby=1)
    assert first == second
