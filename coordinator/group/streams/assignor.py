"""Kafka 4.1's streams `StickyTaskAssignor` ("sticky"), the default task assignor of streams groups.

Active tasks first: a task stays with the member that had it in the previous target assignment
while that member is under its quota (ceil(tasks / members), recomputed as members fill up), then
goes to a previous standby of it, then to the least-loaded process (tasks / members of the
process), preferring processes for which the task forms a new pair with the tasks they already
have (spreading co-located task pairs). Standby tasks (`num.standby.replicas` per stateful task)
go to processes without the task, preferring its previous active or standby owner when that keeps
the load balanced. Kafka 4.1's assignor assigns no warm-up tasks; neither does this one.

Determinism: Kafka iterates hash sets (an order that depends on hash codes); here tasks are taken
in TaskId order (subtopology id, partition), processes in process-id order and members in
member-id order, so ties are broken the same way on every run.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field

from .tasks import TasksTuple, freeze_tasks

NAME = "sticky"

TaskId = tuple  # (subtopology id, partition)


class TaskAssignorError(Exception):
    """TaskAssignorException."""


@dataclass(frozen=True)
class MemberSpec:
    """AssignmentMemberSpec: the member's process and its tasks in the current target assignment."""

    process_id: str
    active: Mapping[str, frozenset] = field(default_factory=dict)
    standby: Mapping[str, frozenset] = field(default_factory=dict)


@dataclass(frozen=True)
class SubtopologySpec:
    """What TopologyDescriber tells: the number of tasks and whether the subtopology has state."""

    number_of_tasks: int
    stateful: bool


class _Process:
    """ProcessState."""

    def __init__(self, process_id: str):
        self.process_id = process_id
        self.capacity = 0
        self.load = float("inf")
        self.member_counts: dict[str, int] = {}
        self.active: dict[str, set] = {}
        self.standby: dict[str, set] = {}
        self.assigned: set = set()  # active and standby tasks of the process
        self.active_count = 0
        self.task_count = 0

    def add_member(self, member_id: str) -> None:
        self.member_counts[member_id] = 0
        self.capacity += 1
        self._compute_load()

    def add_task(self, member_id: str, task: TaskId, is_active: bool) -> None:
        (self.active if is_active else self.standby).setdefault(member_id, set()).add(task)
        if is_active:
            self.active_count += 1
        self.task_count += 1
        self.assigned.add(task)
        self.member_counts[member_id] += 1
        self._compute_load()

    def total(self) -> int:
        return self.task_count

    def _compute_load(self) -> None:
        self.load = -1.0 if self.capacity <= 0 else self.total() / self.capacity

    def has_capacity(self) -> bool:
        return self.total() < self.capacity

    def has_task(self, task: TaskId) -> bool:
        return task in self.assigned

    def member_with_least_load(self) -> str | None:
        if not self.member_counts:
            return None
        return min(sorted(self.member_counts), key=lambda m: self.member_counts[m])


class _TaskPairs:
    def __init__(self, max_pairs: int):
        self.max_pairs = max_pairs
        self.pairs: set = set()

    def has_new_pair(self, task: TaskId, tasks: set) -> bool:
        if len(self.pairs) == self.max_pairs:
            return False
        if not tasks:
            return True
        return any(_pair(task, t) not in self.pairs for t in tasks)

    def add_pairs(self, task: TaskId, assigned: set) -> None:
        for t in assigned:
            if t != task:
                self.pairs.add(_pair(t, task))


def _pair(a: TaskId, b: TaskId) -> tuple:
    return (a, b) if a < b else (b, a)


class StickyTaskAssignor:
    name = NAME

    def assign(
        self,
        members: Mapping[str, MemberSpec],
        subtopologies: Mapping[str, SubtopologySpec],
        num_standby_replicas: int = 0,
    ) -> dict[str, TasksTuple]:
        self._initialize(members, subtopologies)
        active = [(s, p) for s in sorted(subtopologies) for p in range(subtopologies[s].number_of_tasks)]
        self._assign_active(active)
        if num_standby_replicas > 0:
            stateful = [
                (s, p)
                for s in sorted(subtopologies)
                if subtopologies[s].stateful
                for p in range(subtopologies[s].number_of_tasks)
            ]
            self._assign_standby(stateful, num_standby_replicas)
        return self._build(members)

    # ---------------------------------------------------------------- state
    def _initialize(self, members, subtopologies) -> None:
        self.all_tasks = sum(s.number_of_tasks for s in subtopologies.values())
        self.total_capacity = len(members)
        self.tasks_per_member = _tasks_per_member(self.all_tasks, self.total_capacity)
        self.pairs = _TaskPairs(self.all_tasks * (self.all_tasks - 1) // 2)
        self.processes: dict[str, _Process] = {}
        self.task_holders: dict[TaskId, int] = {}  # processes having the task (active or standby)
        self.active_prev: dict[TaskId, tuple[str, str]] = {}
        self.standby_prev: dict[TaskId, list[tuple[str, str]]] = {}
        for member_id in sorted(members):
            spec = members[member_id]
            member = (spec.process_id, member_id)
            self.processes.setdefault(spec.process_id, _Process(spec.process_id)).add_member(member_id)
            for s in sorted(spec.active):
                for p in sorted(spec.active[s]):
                    self.active_prev[(s, p)] = member
            for s in sorted(spec.standby):
                for p in sorted(spec.standby[s]):
                    prev = self.standby_prev.setdefault((s, p), [])
                    if member not in prev:
                        prev.append(member)
        self.process_order = sorted(self.processes)
        # The processes by (load, id), for the least-loaded searches over all processes; an entry
        # whose load is no longer the process's is stale (loads only grow during an assignment).
        self.by_load = [(self.processes[p].load, p) for p in self.process_order]
        heapq.heapify(self.by_load)

    def _has_unfulfilled_quota(self, member: tuple[str, str]) -> bool:
        return self.processes[member[0]].member_counts[member[1]] < self.tasks_per_member

    def _update_helpers(self, member: tuple[str, str], task: TaskId, is_active: bool) -> None:
        process = self.processes[member[0]]
        self.pairs.add_pairs(task, process.assigned)
        if is_active and process.active_count == self.tasks_per_member:
            # maybeUpdateTasksPerMember: a full process leaves the quota computation.
            self.total_capacity -= 1
            self.all_tasks -= process.active_count
            self.tasks_per_member = _tasks_per_member(self.all_tasks, self.total_capacity)

    def _add(self, member: tuple[str, str], task: TaskId, is_active: bool) -> None:
        process = self.processes[member[0]]
        if not process.has_task(task):
            self.task_holders[task] = self.task_holders.get(task, 0) + 1
        process.add_task(member[1], task, is_active)
        heapq.heappush(self.by_load, (process.load, process.process_id))
        self._update_helpers(member, task, is_active)

    def _least_loaded_of_all(self, task: TaskId, without_task: bool) -> tuple[str, str] | None:
        """_least_loaded_process_member over all processes (those without `task` if asked), walking
        the load order instead of scanning every process: the first one where the task makes a new
        pair, else the least loaded."""
        popped, fallback, chosen = [], None, None
        while self.by_load:
            entry = heapq.heappop(self.by_load)
            process = self.processes[entry[1]]
            if entry[0] != process.load:
                continue  # stale
            popped.append(entry)
            if without_task and process.has_task(task):
                continue
            if fallback is None:
                fallback = process
            if self.pairs.has_new_pair(task, process.assigned):
                chosen = process
                break
        for entry in popped:
            heapq.heappush(self.by_load, entry)
        best = chosen or fallback
        if best is None:
            return None
        member_id = best.member_with_least_load()
        return None if member_id is None else (best.process_id, member_id)

    def _min_load(self) -> float:
        while self.by_load:
            load, pid = self.by_load[0]
            if load == self.processes[pid].load:
                return load
            heapq.heappop(self.by_load)
        return float("inf")

    # ---------------------------------------------------------------- active tasks
    def _assign_active(self, tasks: list[TaskId]) -> None:
        remaining = []
        for task in tasks:  # 1. stickiness to the previous active owner
            prev = self.active_prev.get(task)
            if prev is not None and self._has_unfulfilled_quota(prev):
                self._add(prev, task, True)
            else:
                remaining.append(task)
        tasks, remaining = remaining, []
        for task in tasks:  # 2. a previous standby owner
            prev = self._least_loaded(self.standby_prev.get(task), task, True)
            if prev is not None and self._has_unfulfilled_quota(prev):
                self._add(prev, task, True)
            else:
                remaining.append(task)
        for task in remaining:  # 3. the least-loaded process
            member = self._least_loaded_of_all(task, without_task=False)
            if member is None:
                raise TaskAssignorError(f"No member available to assign active task {task}.")
            self._add(member, task, True)

    def _least_loaded(self, members, task: TaskId, return_same_member: bool) -> tuple[str, str] | None:
        """findMemberWithLeastLoad over a set of members."""
        if not members:
            return None
        processes = sorted({m[0] for m in members})
        member = self._least_loaded_process_member(processes, task)
        if member is None:
            return None
        if return_same_member:
            for standby in self.standby_prev.get(task, ()):
                if standby[0] == member[0]:
                    return standby
        return member

    def _least_loaded_process_member(self, process_ids, task: TaskId) -> tuple[str, str] | None:
        """The least-loaded process among those where `task` makes a new pair (all of them if
        none does), and its least-loaded member."""
        candidates = [p for p in process_ids if self.pairs.has_new_pair(task, self.processes[p].assigned)]
        if not candidates:
            candidates = process_ids
        best = None
        for p in candidates:
            process = self.processes[p]
            if best is None or process.load < best.load:
                best = process
        if best is None:
            return None
        member_id = best.member_with_least_load()
        return None if member_id is None else (best.process_id, member_id)

    # ---------------------------------------------------------------- standby tasks
    def _is_load_balanced(self, process_id: str) -> bool:
        process = self.processes[process_id]
        return process.has_capacity() or self._min_load() >= process.load

    def _assign_standby(self, tasks: list[TaskId], replicas: int) -> None:
        for task in tasks:
            for _ in range(replicas):
                holders = self.task_holders.get(task, 0)
                if holders >= len(self.processes):
                    break  # not enough capacity for the requested replicas (Kafka logs a warning)
                standby = None
                prev = self.active_prev.get(task)
                if (
                    prev is not None
                    and not self.processes[prev[0]].has_task(task)
                    and self._is_load_balanced(prev[0])
                    and self.pairs.has_new_pair(task, self.processes[prev[0]].assigned)
                ):
                    standby = prev
                if standby is None:
                    prevs = self.standby_prev.get(task)
                    if prevs:
                        prevs[:] = [m for m in prevs if not self.processes[m[0]].has_task(task)]  # removeIf
                        prev = self._least_loaded(prevs, task, True)
                        if prev is not None and self._is_load_balanced(prev[0]):
                            standby = prev
                if standby is None:
                    standby = self._least_loaded_of_all(task, without_task=True)
                    if standby is None:
                        break
                self._add(standby, task, False)

    # ---------------------------------------------------------------- result
    def _build(self, members) -> dict[str, TasksTuple]:
        active: dict[str, dict] = {}
        standby: dict[str, dict] = {}
        for process in self.processes.values():
            for member_id, tasks in process.active.items():
                for s, p in tasks:
                    active.setdefault(member_id, {}).setdefault(s, set()).add(p)
            for member_id, tasks in process.standby.items():
                for s, p in tasks:
                    standby.setdefault(member_id, {}).setdefault(s, set()).add(p)
        return {m: TasksTuple(freeze_tasks(active.get(m)), freeze_tasks(standby.get(m)), {}) for m in members}


def _tasks_per_member(tasks: int, members: int) -> int:
    if members == 0:
        return 0
    return -(-tasks // members)


ASSIGNORS = {NAME: StickyTaskAssignor}
