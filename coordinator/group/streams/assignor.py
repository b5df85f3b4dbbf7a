"""Kafka 4.4.0's streams `StickyTaskAssignor` ("sticky"), the default task assignor of streams groups.

Quotas: each member may hold ceil(active tasks / members) active tasks and ceil(all tasks /
members) tasks in all (standbys of stateful subtopologies count); a member that reaches a quota
leaves its computation, which is redone over the rest (maybeUpdate{Active,Total}TasksPerMember).

Active tasks, in (partition, subtopology) order: first to the member that owns the task now, while
under its active quota; then to the best-ranked previous standby holder (see below) that is under
quota and whose process and member are strictly less loaded than the candidates before it; the
rest, in (subtopology, partition) order, to the least-loaded member of the least-loaded process.

Standby tasks (`num.standby.replicas` per stateful task), in descending (partition, subtopology)
order: to the task's previous active owner, then to a previous standby candidate, each only if its
process does not hold the task yet and it is under its total quota; the replicas left go, in
descending (subtopology, partition) order, to the least-loaded process without the task (Kafka logs
a warning when no process is left). 4.4.0 ranks a task's standby candidates: the members holding it
as a standby now first, then the members that reported an offset sum for it (`taskOffsets` of their
heartbeats: local state), each group by descending offset sum.

The inputs are each member's process, its current (not target) active and standby tasks and its
reported task offsets (TargetAssignmentBuilder.createMemberMetadataAndState). Kafka 4.4.0's
assignor hands out no warm-up tasks (its AssignmentRefiner returns the target unchanged), and it
reads no rack-aware tags; neither does this one.

Determinism: Kafka iterates hash maps (members, processes) and breaks ties between equally loaded
processes or members by their place in a java.util.PriorityQueue; here the maps are iterated in id
order and the queues are `JavaPriorityQueue`, java.util.PriorityQueue's sift rules over the same
insertions, so ties fall as in Kafka whenever its hash order is the id order, and an assignment is
the same on every run.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from .tasks import TasksTuple, freeze_tasks

NAME = "sticky"
log = logging.getLogger(__name__)

TaskId = tuple  # (subtopology id, partition)


class TaskAssignorError(Exception):
    """TaskAssignorException."""


@dataclass(frozen=True)
class MemberSpec:
    """MemberMetadataAndState: the member's process, its current active and standby tasks, and the
    offset sums it reported per task ({subtopology: {partition: offset}})."""

    process_id: str
    active: Mapping[str, frozenset] = field(default_factory=dict)
    standby: Mapping[str, frozenset] = field(default_factory=dict)
    task_offsets: Mapping[str, Mapping[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class SubtopologySpec:
    """What TopologyDescriber tells: the number of tasks and whether the subtopology has state."""

    number_of_tasks: int
    stateful: bool


class JavaPriorityQueue:
    """java.util.PriorityQueue (offer, poll) with a key: the same sift-up and sift-down rules, so
    that equal keys come out in the order Java's heap gives them, not in insertion or id order."""

    def __init__(self, key, items=()):
        self.key = key
        self.queue: list = []
        for item in items:
            self.offer(item)

    def offer(self, x) -> None:
        q, k, kx = self.queue, len(self.queue), self.key(x)
        q.append(x)
        while k > 0:
            parent = (k - 1) >> 1
            if kx >= self.key(q[parent]):
                break
            q[k] = q[parent]
            k = parent
        q[k] = x

    def poll(self):
        q = self.queue
        if not q:
            return None
        result, x = q[0], q.pop()
        n = len(q)
        if n:
            k, kx, half = 0, self.key(x), n >> 1
            while k < half:
                child = 2 * k + 1
                c = q[child]
                if child + 1 < n and self.key(c) > self.key(q[child + 1]):
                    child += 1
                    c = q[child]
                if kx <= self.key(c):
                    break
                q[k] = c
                k = child
            q[k] = x
        return result

    def __bool__(self) -> bool:
        return bool(self.queue)


class _Process:
    """ProcessState."""

    def __init__(self, process_id: str):
        self.process_id = process_id
        self.capacity = 0
        self.load = float("inf")  # Double.MAX_VALUE until a member joins
        self.task_count = 0
        self.member_counts: dict[str, int] = {}
        self.active: dict[str, set] = {}
        self.standby: dict[str, set] = {}
        self.assigned: set = set()
        self.members_by_load: JavaPriorityQueue | None = None  # [member id, count], rebuilt after add_task

    def add_member(self, member_id: str) -> None:
        self.member_counts[member_id] = 0
        self.capacity += 1
        self._compute_load()

    def add_task(self, member_id: str, task: TaskId, is_active: bool) -> int:
        """The member's task count once `task` is added."""
        self.members_by_load = None
        return self._add_task(member_id, task, is_active)

    def _add_task(self, member_id: str, task: TaskId, is_active: bool) -> int:
        self.task_count += 1
        self.assigned.add(task)
        (self.active if is_active else self.standby).setdefault(member_id, set()).add(task)
        self.member_counts[member_id] += 1
        self._compute_load()
        return self.member_counts[member_id]

    def add_task_to_least_loaded_member(self, task: TaskId, is_active: bool) -> int:
        if not self.member_counts:
            return -1
        if len(self.member_counts) == 1:
            return self._add_task(next(iter(self.member_counts)), task, is_active)
        if self.members_by_load is None:
            self.members_by_load = JavaPriorityQueue(
                lambda e: e[1], ([m, self.member_counts[m]] for m in sorted(self.member_counts))
            )
        entry = self.members_by_load.poll()
        entry[1] = self._add_task(entry[0], task, is_active)
        self.members_by_load.offer(entry)
        return entry[1]

    def _compute_load(self) -> None:
        self.load = -1.0 if self.capacity <= 0 else self.task_count / self.capacity

    def has_task(self, task: TaskId) -> bool:
        return task in self.assigned


def _by_load(processes) -> JavaPriorityQueue:
    """PriorityQueue<ProcessState> by load (a process is offered back once its load changed)."""
    return JavaPriorityQueue(lambda p: p.load, processes)


class StickyTaskAssignor:
    name = NAME

    def assign(
        self,
        members: Mapping[str, MemberSpec],
        subtopologies: Mapping[str, SubtopologySpec],
        num_standby_replicas: int = 0,
    ) -> dict[str, TasksTuple]:
        self._initialize(members, subtopologies, num_standby_replicas)
        self._assign_active([(s, p) for s in sorted(subtopologies) for p in range(subtopologies[s].number_of_tasks)])
        if num_standby_replicas > 0:
            stateful = [
                (s, p)
                for s in sorted(subtopologies)
                if subtopologies[s].stateful
                for p in range(subtopologies[s].number_of_tasks)
            ]
            self._assign_standby(stateful)
        return self._build(members)

    # ---------------------------------------------------------------- state
    def _initialize(self, members, subtopologies, num_standby_replicas: int) -> None:
        self.num_standby = num_standby_replicas
        self.total_active = sum(s.number_of_tasks for s in subtopologies.values())
        self.total_tasks = self.total_active + sum(
            s.number_of_tasks * num_standby_replicas for s in subtopologies.values() if s.stateful
        )
        self.members_with_active_capacity = len(members)
        self.members_with_capacity = len(members)
        self.active_per_member = _tasks_per_member(self.total_active, self.members_with_active_capacity)
        self.tasks_per_member = _tasks_per_member(self.total_tasks, self.members_with_capacity)
        self.processes: dict[str, _Process] = {}
        self.active_prev: dict[TaskId, tuple[str, str]] = {}
        candidates: dict[TaskId, list[tuple[bool, int, tuple[str, str]]]] = {}
        for member_id in sorted(members):
            spec = members[member_id]
            member = (spec.process_id, member_id)
            self.processes.setdefault(spec.process_id, _Process(spec.process_id)).add_member(member_id)
            for s in sorted(spec.active):
                for p in sorted(spec.active[s]):
                    self.active_prev[(s, p)] = member
            _collect_standby_candidates(candidates, spec, member)
        # rankStandbyCandidates: current standbys first, then by descending offset sum (a stable sort).
        self.standby_prev = {
            task: [c[2] for c in sorted(cs, key=lambda c: (not c[0], -c[1]))] for task, cs in candidates.items()
        }

    def _update_active_quota(self, count: int) -> None:
        """maybeUpdateActiveTasksPerMember."""
        if count == self.active_per_member:
            self.members_with_active_capacity -= 1
            self.total_active -= count
            self.active_per_member = _tasks_per_member(self.total_active, self.members_with_active_capacity)

    def _update_total_quota(self, count: int) -> None:
        """maybeUpdateTotalTasksPerMember."""
        if count == self.tasks_per_member:
            self.members_with_capacity -= 1
            self.total_tasks -= count
            self.tasks_per_member = _tasks_per_member(self.total_tasks, self.members_with_capacity)

    def _count(self, member: tuple[str, str]) -> int:
        return self.processes[member[0]].member_counts[member[1]]

    def _least_loaded_prev(self, members, standby_task: TaskId | None) -> tuple[str, str] | None:
        """findPrevMemberWithLeastLoad: a candidate replaces the one found so far only if both its
        process load and its task count are strictly smaller (skipping processes holding
        `standby_task`)."""
        candidate, process_load, member_load = None, float("inf"), float("inf")
        for member in members or ():
            process = self.processes[member[0]]
            if standby_task is not None and process.has_task(standby_task):
                continue
            load, count = process.load, self._count(member)
            if candidate is not None and not (load < process_load and count < member_load):
                continue
            candidate, process_load, member_load = member, load, count
        return candidate

    # ---------------------------------------------------------------- active tasks
    def _assign_active(self, tasks: list[TaskId]) -> None:
        tasks.sort(key=lambda t: (t[1], t[0]))
        remaining = []
        for task in tasks:  # 1. the member that owns it now
            prev = self.active_prev.get(task)
            if prev is not None and self._count(prev) < self.active_per_member:
                self._add_active(prev, task)
            else:
                remaining.append(task)
        tasks, remaining = remaining, []
        for task in tasks:  # 2. a previous standby holder
            prev = self._least_loaded_prev(self.standby_prev.get(task), None)
            if prev is not None and self._count(prev) < self.active_per_member:
                self._add_active(prev, task)
            else:
                remaining.append(task)
        remaining.sort()
        by_load = _by_load(self.processes[p] for p in sorted(self.processes))
        for task in remaining:  # 3. the least-loaded process
            process = by_load.poll()
            if process is None:
                raise TaskAssignorError(f"No process available to assign active task {_task_str(task)}.")
            count = process.add_task_to_least_loaded_member(task, True)
            if count == -1:
                raise TaskAssignorError(f"No member available to assign active task {_task_str(task)}.")
            self._update_active_quota(count)
            self._update_total_quota(count)
            by_load.offer(process)

    def _add_active(self, member: tuple[str, str], task: TaskId) -> None:
        count = self.processes[member[0]].add_task(member[1], task, True)
        self._update_active_quota(count)
        self._update_total_quota(count)

    # ---------------------------------------------------------------- standby tasks
    def _assign_standby(self, tasks: list[TaskId]) -> None:
        tasks.sort(key=lambda t: (t[1], t[0]), reverse=True)
        to_least_loaded: list[tuple[TaskId, int]] = []
        for task in tasks:
            for i in range(self.num_standby):
                prev = self.active_prev.get(task)
                if (
                    prev is not None
                    and not self.processes[prev[0]].has_task(task)
                    and self._count(prev) < self.tasks_per_member
                ):
                    self._update_total_quota(self.processes[prev[0]].add_task(prev[1], task, False))
                    continue
                prev = self._least_loaded_prev(self.standby_prev.get(task), task)
                if prev is not None and self._count(prev) < self.tasks_per_member:
                    self._update_total_quota(self.processes[prev[0]].add_task(prev[1], task, False))
                    continue
                to_least_loaded.append((task, self.num_standby - i))
                break
        to_least_loaded.sort(key=lambda x: x[0], reverse=True)
        by_load = _by_load(self.processes[p] for p in sorted(self.processes))
        for task, replicas in to_least_loaded:
            for i in range(replicas):
                if not self._assign_standby_to_least_loaded(by_load, task):
                    log.warning(
                        "Unable to assign %d of %d standby tasks for task [%s]. There is not enough available "
                        "capacity. You should increase the number of threads and/or application instances to "
                        "maintain the requested number of standby replicas.",
                        self.num_standby - i,
                        self.num_standby,
                        _task_str(task),
                    )
                    break

    def _assign_standby_to_least_loaded(self, by_load: JavaPriorityQueue, task: TaskId) -> bool:
        """assignStandbyToMemberWithLeastLoad: the least-loaded process without the task (the
        processes polled on the way go back into the queue)."""
        polled, found = [], False
        while True:
            process = by_load.poll()
            if process is None:
                break
            polled.append(process)
            if not process.has_task(task):
                count = process.add_task_to_least_loaded_member(task, False)
                if count != -1:
                    found = True
                    self._update_total_quota(count)
                break
        for process in polled:
            by_load.offer(process)
        return found

    # ---------------------------------------------------------------- result
    def _build(self, members) -> dict[str, TasksTuple]:
        active: dict[str, dict] = {}
        standby: dict[str, dict] = {}
        for process in self.processes.values():
            for out, by_member in ((active, process.active), (standby, process.standby)):
                for member_id, tasks in by_member.items():
                    for s, p in tasks:
                        out.setdefault(member_id, {}).setdefault(s, set()).add(p)
        return {m: TasksTuple(freeze_tasks(active.get(m)), freeze_tasks(standby.get(m)), {}) for m in members}


def _collect_standby_candidates(candidates: dict, spec: MemberSpec, member: tuple[str, str]) -> None:
    """collectStandbyCandidates: (is a current standby, offset sum, member) per task."""
    offsets = spec.task_offsets
    for s in sorted(spec.standby):
        for p in sorted(spec.standby[s]):
            candidates.setdefault((s, p), []).append((True, offsets.get(s, {}).get(p, 0), member))
    for s in sorted(offsets):
        for p in sorted(offsets[s]):
            if p not in spec.standby.get(s, ()):
                candidates.setdefault((s, p), []).append((False, offsets[s][p], member))


def _task_str(task: TaskId) -> str:
    """TaskId.toString."""
    return f"{task[0]}_{task[1]}"


def _tasks_per_member(tasks: int, members: int) -> int:
    if members == 0:
        return 0
    return -(-tasks // members)


ASSIGNORS = {NAME: StickyTaskAssignor}
DEFAULT_ASSIGNOR = NAME  # the first of group.streams.assignors (Kafka's default list: sticky)
