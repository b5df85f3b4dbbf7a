"""Kafka's streams CurrentAssignmentBuilder: the member's next state towards its target tasks.

Tasks move in two steps, as partitions do in consumer groups: the member first revokes what it
must give up (UNREVOKED_TASKS, at its current epoch), and only once its heartbeat no longer lists
them does it get the new epoch; a task still owned by another member (an active task anywhere, or
a standby / warm-up of the same task on the member's own process) is withheld (UNRELEASED_TASKS)
until it is released.
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import ApiError, Errors
from .member import MemberState, StreamsGroupMember
from .tasks import TasksTuple, freeze_tasks

# (subtopology, partition) -> process id owning it as active (or None) / process ids as standby / warm-up
ActiveOwner = Callable[[str, int], "str | None"]
ProcessOwners = Callable[[str, int], "set[str]"]


def reconcile(
    member: StreamsGroupMember,
    target_epoch: int,
    target: TasksTuple,
    active_owner: ActiveOwner,
    standby_owners: ProcessOwners,
    warmup_owners: ProcessOwners,
    owned: TasksTuple | None,
) -> StreamsGroupMember:
    """CurrentAssignmentBuilder.build. `owned` is None when the request did not list its tasks."""
    b = _Builder(member, target_epoch, target, active_owner, standby_owners, warmup_owners, owned)
    state = member.state
    if state == MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return b.next(member.member_epoch, member.assigned_tasks)
        return member
    if state == MemberState.UNREVOKED_TASKS:
        if owned is None or owned.contains_any(member.tasks_pending_revocation):
            return member
        return b.next(member.member_epoch + 1, member.assigned_tasks)
    if state == MemberState.UNRELEASED_TASKS:
        return b.next(member.member_epoch, member.assigned_tasks)
    if owned is None or not owned.is_empty():
        raise ApiError(
            Errors.FENCED_MEMBER_EPOCH,
            "The streams group member is in a unknown state. The member must abandon all its tasks and rejoin.",
        )
    return b.next(target_epoch, member.assigned_tasks)


class _Builder:
    def __init__(self, member, target_epoch, target, active_owner, standby_owners, warmup_owners, owned):
        self.member, self.target_epoch, self.target, self.owned = member, target_epoch, target, owned
        self.active_owner, self.standby_owners, self.warmup_owners = active_owner, standby_owners, warmup_owners

    def _unreleased_active(self, s: str, p: int) -> bool:
        pid = self.member.process_id
        return (
            self.active_owner(s, p) is not None or pid in self.standby_owners(s, p) or pid in self.warmup_owners(s, p)
        )

    def _unreleased_other(self, s: str, p: int) -> bool:
        pid = self.member.process_id
        return self.active_owner(s, p) == pid or pid in self.standby_owners(s, p) or pid in self.warmup_owners(s, p)

    @staticmethod
    def _difference(current, target, unreleased) -> tuple[dict, dict, dict, bool]:
        assigned, revoking, assigning = {}, {}, {}
        has_unreleased = False
        for s in sorted(set(current) | set(target)):
            cur, tgt = current.get(s, frozenset()), target.get(s, frozenset())
            keep = cur & tgt
            revoke = cur - keep
            pending = {p for p in tgt - keep}
            withheld = {p for p in pending if unreleased(s, p)}
            has_unreleased |= bool(withheld)
            pending -= withheld
            assigned[s], revoking[s], assigning[s] = keep, revoke, pending
        return freeze_tasks(assigned), freeze_tasks(revoking), freeze_tasks(assigning), has_unreleased

    def next(self, member_epoch: int, current: TasksTuple) -> StreamsGroupMember:
        """computeNextAssignment + buildNewMember."""
        a = self._difference(current.active, self.target.active, self._unreleased_active)
        s = self._difference(current.standby, self.target.standby, self._unreleased_other)
        w = self._difference(current.warmup, self.target.warmup, self._unreleased_other)
        assigned = TasksTuple(a[0], s[0], w[0])
        revoking = TasksTuple(a[1], s[1], w[1])
        assigning = TasksTuple(a[2], s[2], w[2])
        unreleased = a[3] or s[3] or w[3]
        m = self.member

        # Per-task epochs (computeAssignmentDifferenceWithEpoch): an active task the member keeps
        # or must revoke keeps the epoch it was given at, a newly assigned one gets the target's.
        def epochs(tasks) -> dict:
            return {
                (sid, p): m.active_task_epochs.get((sid, p), m.member_epoch)
                for sid, parts in tasks.items()
                for p in parts
            }

        kept = epochs(assigned.active)
        if not revoking.is_empty() and (self.owned is None or self.owned.contains_any(revoking)):
            return _with_epoch(m, member_epoch).replace(
                state=MemberState.UNREVOKED_TASKS,
                assigned_tasks=assigned,
                tasks_pending_revocation=revoking,
                active_task_epochs={**kept, **epochs(revoking.active)},
            )
        if not assigning.is_empty():
            state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE
            granted = {(sid, p): self.target_epoch for sid, parts in assigning.active.items() for p in parts}
            return _with_epoch(m, self.target_epoch).replace(
                state=state,
                assigned_tasks=assigned.merge(assigning),
                tasks_pending_revocation=TasksTuple({}, {}, {}),
                active_task_epochs={**kept, **granted},
            )
        state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE
        return _with_epoch(m, self.target_epoch).replace(
            state=state,
            assigned_tasks=assigned,
            tasks_pending_revocation=TasksTuple({}, {}, {}),
            active_task_epochs=kept,
        )


def _with_epoch(member: StreamsGroupMember, epoch: int) -> StreamsGroupMember:
    """Builder.updateMemberEpoch: the previous epoch is the one the member had."""
    return member.replace(previous_member_epoch=member.member_epoch, member_epoch=epoch)
