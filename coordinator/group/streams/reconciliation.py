"""Kafka's streams CurrentAssignmentBuilder: the member's next state towards its target tasks.

Tasks move in two steps, as partitions do in consumer groups: the member first revokes what it
must give up (UNREVOKED_TASKS, at its current epoch), and only once its heartbeat no longer lists
them does it get the new epoch; a task still owned by another member (an active task anywhere, or
a standby / warm-up of the same task held by another member of its process) is withheld
(UNRELEASED_TASKS) until it is released. Kafka 4.4.0: a task the member has in one role and is
given in another changes role at once (no revoke-then-assign round for it).
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

    # Kafka 4.4.0's tests of a task another member still holds: a replica of the task on the member's
    # own process withholds it only when another member of that process holds it (the member's own
    # replica changes role instead, below).
    def _held_by_another(self, owners: ProcessOwners, member_tasks, s: str, p: int) -> bool:
        return self.member.process_id in owners(s, p) and p not in member_tasks.get(s, ())

    def _unreleased_active(self, current: TasksTuple, s: str, p: int) -> bool:
        return (
            self.active_owner(s, p) is not None
            or self._held_by_another(self.standby_owners, current.standby, s, p)
            or self._held_by_another(self.warmup_owners, current.warmup, s, p)
        )

    def _unreleased_standby(self, current: TasksTuple, s: str, p: int) -> bool:
        pid = self.member.process_id
        return (
            (self.active_owner(s, p) == pid and p not in current.active.get(s, ()))
            or pid in self.standby_owners(s, p)
            or self._held_by_another(self.warmup_owners, current.warmup, s, p)
        )

    def _unreleased_warmup(self, current: TasksTuple, s: str, p: int) -> bool:
        pid = self.member.process_id
        return (
            self.active_owner(s, p) == pid
            or self._held_by_another(self.standby_owners, current.standby, s, p)
            or pid in self.warmup_owners(s, p)
        )

    @staticmethod
    def _difference(current, target, unreleased) -> tuple[dict, dict, dict, bool]:
        """computeAssignmentDifference: (kept, to revoke, to assign, whether some were withheld),
        as mutable {subtopology: set}."""
        assigned: dict[str, set] = {}
        revoking: dict[str, set] = {}
        assigning: dict[str, set] = {}
        has_unreleased = False
        for s in sorted(set(current) | set(target)):
            cur, tgt = current.get(s, frozenset()), target.get(s, frozenset())
            keep = cur & tgt
            pending = set(tgt - keep)
            withheld = {p for p in pending if unreleased(s, p)}
            has_unreleased |= bool(withheld)
            assigned[s], revoking[s], assigning[s] = set(keep), set(cur - keep), pending - withheld
        return assigned, revoking, assigning, has_unreleased

    def next(self, member_epoch: int, current: TasksTuple) -> StreamsGroupMember:
        """computeNextAssignment + buildNewMember (Kafka 4.4.0: a task changing role on the member
        is granted in its new role at once; an active task the member must give up as active but
        keep as standby is demoted at once; a standby or warm-up the target makes active stays
        until the active task is granted)."""
        a_kept, a_rev, a_new, a_withheld = self._difference(
            current.active, self.target.active, lambda s, p: self._unreleased_active(current, s, p)
        )
        s_kept, s_rev, s_new, s_withheld = self._difference(
            current.standby, self.target.standby, lambda s, p: self._unreleased_standby(current, s, p)
        )
        w_kept, w_rev, w_new, w_withheld = self._difference(
            current.warmup, self.target.warmup, lambda s, p: self._unreleased_warmup(current, s, p)
        )
        _convert(current.active, None, s_new, s_kept)  # demoteActiveTasksToStandby
        _convert(current.standby, s_rev, w_new, w_kept)  # convertReplicaRole
        _convert(current.warmup, w_rev, s_new, s_kept)
        # applyPromotionsToActive: a standby or warm-up the target makes active is not revoked...
        for tasks, rev in ((current.standby, s_rev), (current.warmup, w_rev)):
            for sid in tasks:
                rev.get(sid, set()).difference_update(self.target.active.get(sid, frozenset()))
        revoking = TasksTuple(freeze_tasks(a_rev), freeze_tasks(s_rev), freeze_tasks(w_rev))
        to_revoke = not revoking.is_empty() and (self.owned is None or self.owned.contains_any(revoking))
        # ... and stays in its role until the active task is granted (keepPromotedTasksUntilGranted).
        for tasks, kept in ((current.standby, s_kept), (current.warmup, w_kept)):
            for sid, parts in tasks.items():
                for p in parts & self.target.active.get(sid, frozenset()):
                    if to_revoke or p not in a_new.get(sid, ()):
                        kept.setdefault(sid, set()).add(p)
        assigned = TasksTuple(freeze_tasks(a_kept), freeze_tasks(s_kept), freeze_tasks(w_kept))
        assigning = TasksTuple(freeze_tasks(a_new), freeze_tasks(s_new), freeze_tasks(w_new))
        unreleased = a_withheld or s_withheld or w_withheld
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
        if to_revoke:
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


def _convert(outgoing, outgoing_revocation: dict | None, incoming_pending: dict, incoming_kept: dict) -> None:
    """demoteActiveTasksToStandby / convertReplicaRole: a task the member has in one role and is to
    be given in another is granted in the new role now (not withheld until the old role is
    revoked), and no longer revoked in the old one (an active task is revoked all the same)."""
    for sid, parts in outgoing.items():
        for p in parts:
            if p in incoming_pending.get(sid, ()):
                incoming_pending[sid].discard(p)
                incoming_kept.setdefault(sid, set()).add(p)
                if outgoing_revocation is not None:
                    outgoing_revocation.get(sid, set()).discard(p)


def _with_epoch(member: StreamsGroupMember, epoch: int) -> StreamsGroupMember:
    """Builder.updateMemberEpoch: the previous epoch is the one the member had."""
    return member.replace(previous_member_epoch=member.member_epoch, member_epoch=epoch)
