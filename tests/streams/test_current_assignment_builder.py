"""Ports of Kafka 4.1's streams CurrentAssignmentBuilderTest (kafka-group-coordinator-tests,
streams/CurrentAssignmentBuilderTest.java), parametrised over the task role as Kafka's are
(@EnumSource(TaskRole.class))."""

from __future__ import annotations

import pytest

from coordinator.errors import ApiError, Errors
from coordinator.group.streams.member import MemberState, StreamsGroupMember
from coordinator.group.streams.reconciliation import reconcile
from coordinator.group.streams.tasks import EMPTY, TasksTuple

S1, S2 = "subtopology-1", "subtopology-2"
PROCESS_ID = "process_id"
ROLES = ["active", "standby", "warmup"]


def tt(role: str, a=(), b=()) -> TasksTuple:
    """mkTasksTuple(role, mkTasks(S1, *a), mkTasks(S2, *b))."""
    tasks = {S1: frozenset(a), S2: frozenset(b)}
    return TasksTuple.of(**{role: tasks})


def member(state, epoch, assigned, pending=EMPTY, previous=None) -> StreamsGroupMember:
    return StreamsGroupMember(
        "member",
        member_epoch=epoch,
        previous_member_epoch=epoch if previous is None else previous,
        state=state,
        process_id=PROCESS_ID,
        assigned_tasks=assigned,
        tasks_pending_revocation=pending,
    )


def build(
    m,
    target_epoch,
    target,
    active_owner=lambda s, p: None,
    standby=lambda s, p: set(),
    warmup=lambda s, p: set(),
    owned=None,
):
    return reconcile(m, target_epoch, target, active_owner, standby, warmup, owned)


@pytest.mark.parametrize("role", ROLES)
def test_testStableToStable(role):
    m = member(MemberState.STABLE, 10, tt(role, (1, 2), (3, 4)))
    r = build(m, 11, tt(role, (1, 2), (3, 4)), active_owner=lambda s, p: PROCESS_ID)
    assert r == member(MemberState.STABLE, 11, tt(role, (1, 2), (3, 4)), previous=10)


@pytest.mark.parametrize("role", ROLES)
def test_testStableToStableAtTargetEpoch(role):
    m = member(MemberState.STABLE, 10, tt(role, (1, 2), (3, 4)))
    assert build(m, 10, tt(role, (1, 2), (3, 4)), active_owner=lambda s, p: PROCESS_ID) == m


@pytest.mark.parametrize("role", ROLES)
def test_testStableToStableWithNewTasks(role):
    m = member(MemberState.STABLE, 10, tt(role, (1, 2), (3, 4)))
    r = build(m, 11, tt(role, (1, 2, 4), (3, 4, 7)))
    assert r == member(MemberState.STABLE, 11, tt(role, (1, 2, 4), (3, 4, 7)), previous=10)


@pytest.mark.parametrize("role", ROLES)
def test_testStableToUnrevokedTasks(role):
    m = member(MemberState.STABLE, 10, tt(role, (1, 2), (3, 4)))
    r = build(m, 11, tt(role, (2, 3), (4, 5)))
    assert r == member(MemberState.UNREVOKED_TASKS, 10, tt(role, (2,), (4,)), tt(role, (1,), (3,)))


@pytest.mark.parametrize("role", ROLES)
def test_testStableToUnrevokedWithEmptyAssignment(role):
    m = member(MemberState.STABLE, 10, tt(role, (1, 2), (3, 4)))
    r = build(m, 11, EMPTY)
    assert r == member(MemberState.UNREVOKED_TASKS, 10, EMPTY, tt(role, (1, 2), (3, 4)))


@pytest.mark.parametrize("role", ROLES)
def test_testStableToUnreleasedTasks(role):
    m = member(MemberState.STABLE, 10, tt(role, (1, 2), (3, 4)))
    r = build(m, 11, tt(role, (1, 2, 4), (3, 4, 7)), active_owner=lambda s, p: PROCESS_ID)
    assert r == member(MemberState.UNRELEASED_TASKS, 11, tt(role, (1, 2), (3, 4)), previous=10)


@pytest.mark.parametrize("role", ROLES)
def test_testUnrevokedTasksToStable(role):
    m = member(MemberState.UNREVOKED_TASKS, 10, tt(role, (2, 3), (5, 6)), tt(role, (1,), (4,)))
    r = build(m, 11, tt(role, (2, 3), (5, 6)), owned=tt(role, (2, 3), (5, 6)))
    assert r == member(MemberState.STABLE, 11, tt(role, (2, 3), (5, 6)), previous=10)


@pytest.mark.parametrize("role", ROLES)
def test_testRemainsInUnrevokedTasks(role):
    m = member(MemberState.UNREVOKED_TASKS, 10, tt(role, (2, 3), (5, 6)), tt(role, (1,), (4,)))
    target = tt(role, (3,), (6,))
    assert build(m, 12, target, owned=None) == m
    assert build(m, 12, target, owned=tt(role, (1, 2, 3), (5, 6))) == m
    assert build(m, 12, target, owned=tt(role, (2, 3), (4, 5, 6))) == m


@pytest.mark.parametrize("role", ROLES)
def test_testUnrevokedTasksToUnrevokedTasks(role):
    m = member(MemberState.UNREVOKED_TASKS, 10, tt(role, (2, 3), (5, 6)), tt(role, (1,), (4,)))
    r = build(m, 12, tt(role, (3,), (6,)), owned=tt(role, (2, 3), (5, 6)))
    assert r == member(MemberState.UNREVOKED_TASKS, 11, tt(role, (3,), (6,)), tt(role, (2,), (5,)), previous=10)


@pytest.mark.parametrize("role", ROLES)
def test_testUnreleasedTasksToStable(role):
    m = member(MemberState.UNRELEASED_TASKS, 11, tt(role, (2, 3), (5, 6)))
    r = build(m, 12, tt(role, (2, 3), (5, 6)), active_owner=lambda s, p: PROCESS_ID)
    assert r == member(MemberState.STABLE, 12, tt(role, (2, 3), (5, 6)), previous=11)


@pytest.mark.parametrize("role", ROLES)
def test_testUnreleasedTasksToStableWithNewTasks(role):
    m = member(MemberState.UNRELEASED_TASKS, 11, tt(role, (2, 3), (5, 6)))
    r = build(m, 11, tt(role, (2, 3, 4), (5, 6, 7)))
    assert r == member(MemberState.STABLE, 11, tt(role, (2, 3, 4), (5, 6, 7)))


@pytest.mark.parametrize("role", ROLES)
def test_testUnreleasedTasksToUnreleasedTasks(role):
    m = member(MemberState.UNRELEASED_TASKS, 11, tt(role, (2, 3), (5, 6)))
    r = build(
        m,
        11,
        tt(role, (2, 3, 4), (5, 6, 7)),
        active_owner=lambda s, p: PROCESS_ID,
        standby=lambda s, p: {PROCESS_ID},
        warmup=lambda s, p: {PROCESS_ID},
    )
    assert r == m


def test_testUnreleasedTasksToUnreleasedTasksAnyActiveOwner():
    m = member(MemberState.UNRELEASED_TASKS, 11, tt("active", (2, 3), (5, 6)))
    r = build(
        m,
        11,
        tt("active", (2, 3, 4), (5, 6, 7)),
        active_owner=lambda s, p: "anyOtherProcess" if (s, p) == (S1, 4) else None,
    )
    assert r == member(MemberState.UNRELEASED_TASKS, 11, tt("active", (2, 3), (5, 6, 7)))


@pytest.mark.parametrize("role", ROLES)
def test_testUnreleasedTasksToUnrevokedTasks(role):
    m = member(MemberState.UNRELEASED_TASKS, 11, tt(role, (2, 3), (5, 6)))
    r = build(m, 12, tt(role, (3,), (6,)))
    assert r == member(MemberState.UNREVOKED_TASKS, 11, tt(role, (3,), (6,)), tt(role, (2,), (5,)))


@pytest.mark.parametrize("role", ROLES)
def test_testUnknownState(role):
    m = member(MemberState.UNKNOWN, 11, tt(role, (3,), (6,)), tt(role, (2,), (5,)))
    with pytest.raises(ApiError) as e:
        build(m, 12, tt(role, (3,), (6,)), active_owner=lambda s, p: PROCESS_ID)
    assert e.value.error is Errors.FENCED_MEMBER_EPOCH
    r = build(m, 12, tt(role, (3,), (6,)), active_owner=lambda s, p: PROCESS_ID, owned=TasksTuple.of())
    assert r == member(MemberState.STABLE, 12, tt(role, (3,), (6,)), previous=11)


# ---------------------------------------------------------------------- Kafka 4.4.0's role changes
# CurrentAssignmentBuilder's demoteActiveTasksToStandby, convertReplicaRole and
# applyPromotionsToActive (read from 4.4.0's class files: it ships no test sources).
def test_an_active_task_to_give_up_but_keep_as_standby_is_demoted_at_once():
    m = member(MemberState.STABLE, 10, tt("active", (1,)))
    r = build(
        m,
        11,
        tt("standby", (1,)),
        active_owner=lambda s, p: PROCESS_ID if (s, p) == (S1, 1) else None,
        owned=tt("active", (1,)),
    )
    assert (r.state, r.member_epoch) == (MemberState.UNREVOKED_TASKS, 10)
    assert (r.assigned_tasks, r.tasks_pending_revocation) == (tt("standby", (1,)), tt("active", (1,)))


def test_a_standby_to_become_a_warmup_changes_role_without_a_revocation():
    m = member(MemberState.STABLE, 10, tt("standby", (1,)))
    mine = lambda s, p: {PROCESS_ID} if (s, p) == (S1, 1) else set()  # noqa: E731
    r = build(m, 11, tt("warmup", (1,)), standby=mine, owned=tt("standby", (1,)))
    assert r == member(MemberState.STABLE, 11, tt("warmup", (1,)), previous=10)


def test_a_standby_the_target_makes_active_is_promoted_at_once():
    m = member(MemberState.STABLE, 10, tt("standby", (1,)))
    mine = lambda s, p: {PROCESS_ID} if (s, p) == (S1, 1) else set()  # noqa: E731
    r = build(m, 11, tt("active", (1,)), standby=mine, owned=tt("standby", (1,)))
    assert r == member(MemberState.STABLE, 11, tt("active", (1,)), previous=10)
    assert r.active_task_epoch(S1, 1) == 11


def test_a_standby_the_target_makes_active_stays_standby_until_the_active_is_released():
    m = member(MemberState.STABLE, 10, tt("standby", (1,)))
    mine = lambda s, p: {PROCESS_ID} if (s, p) == (S1, 1) else set()  # noqa: E731
    r = build(
        m,
        11,
        tt("active", (1,)),
        active_owner=lambda s, p: "anotherProcess",
        standby=mine,
        owned=tt("standby", (1,)),
    )
    assert r == member(MemberState.UNRELEASED_TASKS, 11, tt("standby", (1,)), previous=10)
