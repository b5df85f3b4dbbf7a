"""Kafka's streams `TasksTuple`: a member's active, standby and warm-up tasks, each a map
subtopology id -> partitions (frozen: hashable, comparable, safe to share)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

Tasks = Mapping[str, frozenset]


def freeze_tasks(tasks: Mapping[str, Iterable[int]] | None) -> dict[str, frozenset]:
    """{subtopology: partitions} without empty entries."""
    return {s: frozenset(p) for s, p in (tasks or {}).items() if p}


def tasks_from_wire(task_ids: list[dict] | None) -> dict[str, frozenset]:
    """[{subtopologyId, partitions}] (request, record and response shape) -> {subtopology: partitions}."""
    out: dict[str, set] = {}
    for t in task_ids or []:
        out.setdefault(t["subtopologyId"], set()).update(t["partitions"])
    return freeze_tasks(out)


def tasks_to_wire(tasks: Tasks) -> list[dict]:
    return [{"subtopologyId": s, "partitions": sorted(tasks[s])} for s in sorted(tasks) if tasks[s]]


def _merge(a: Tasks, b: Tasks) -> dict[str, frozenset]:
    out = dict(a)
    for s, p in b.items():
        out[s] = out.get(s, frozenset()) | p
    return freeze_tasks(out)


def _contains_any(a: Tasks, b: Tasks) -> bool:
    return any(a.get(s, frozenset()) & p for s, p in b.items())


class TasksTuple(NamedTuple):
    active: dict = {}
    standby: dict = {}
    warmup: dict = {}

    @classmethod
    def of(cls, active=None, standby=None, warmup=None) -> TasksTuple:
        return cls(freeze_tasks(active), freeze_tasks(standby), freeze_tasks(warmup))

    @classmethod
    def from_wire(cls, value: Mapping | None, suffix: str = "") -> TasksTuple:
        """From a request, record or response with the fields activeTasks{suffix}, standbyTasks{suffix},
        warmupTasks{suffix} (absent or null = none)."""
        value = value or {}
        return cls(
            tasks_from_wire(value.get("activeTasks" + suffix)),
            tasks_from_wire(value.get("standbyTasks" + suffix)),
            tasks_from_wire(value.get("warmupTasks" + suffix)),
        )

    def to_wire(self, suffix: str = "") -> dict:
        return {
            "activeTasks" + suffix: tasks_to_wire(self.active),
            "standbyTasks" + suffix: tasks_to_wire(self.standby),
            "warmupTasks" + suffix: tasks_to_wire(self.warmup),
        }

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def merge(self, other: TasksTuple) -> TasksTuple:
        return TasksTuple(
            _merge(self.active, other.active), _merge(self.standby, other.standby), _merge(self.warmup, other.warmup)
        )

    def contains_any(self, other: TasksTuple) -> bool:
        """TasksTuple.containsAny: any task of `other` in the same role here."""
        return (
            _contains_any(self.active, other.active)
            or _contains_any(self.standby, other.standby)
            or _contains_any(self.warmup, other.warmup)
        )

    def num_tasks(self) -> int:
        """The number of tasks in all roles (not tuple.count)."""
        return sum(len(p) for role in self for p in role.values())


EMPTY = TasksTuple({}, {}, {})
