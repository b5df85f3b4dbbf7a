"""Assignments: which partitions of which topics, in memory and in JSON.

In memory an assignment is a `dict[str, frozenset[int]]` (topic -> partitions) with no empty
entries; treat it as immutable (the assignors hand back the very object they were given when a
member's assignment does not change, as Kafka does). In JSON it is `{topic: [sorted partitions]}`
with topics sorted, so equal assignments encode to equal text.

Topics are identified by name (see `coordinator/group/consumer/__init__.py`). Nothing here depends on
that choice: any string id works.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from ._java import order_key

Assignment = Mapping[str, frozenset]
EMPTY: dict = {}


def freeze(assignment: Mapping[str, Iterable[int]] | None) -> dict[str, frozenset[int]]:
    """Normalise any `{topic: partitions}` mapping: frozensets of ints, no empty topics."""
    if not assignment:
        return {}
    out = {}
    for topic, parts in assignment.items():
        fs = parts if type(parts) is frozenset else frozenset(parts)
        if fs:
            out[topic] = fs
    return out


def to_json(assignment: Mapping[str, Iterable[int]] | None) -> dict[str, list[int]]:
    """`{topic: [sorted partitions]}`, topics in Java string order, empty topics dropped."""
    if not assignment:
        return {}
    return {t: sorted(assignment[t]) for t in sorted(assignment, key=order_key) if assignment[t]}


def from_json(data: Mapping[str, Iterable[int]] | None) -> dict[str, frozenset[int]]:
    return freeze(data)


def group_to_json(group_assignment: Mapping[str, Mapping[str, Iterable[int]]]) -> dict:
    """`{memberId: {topic: [partitions]}}` with members and topics sorted."""
    return {m: to_json(group_assignment[m]) for m in sorted(group_assignment, key=order_key)}


def size(assignment: Mapping[str, Collection[int]]) -> int:
    return sum(len(p) for p in assignment.values())


def invert(members: Mapping[str, Mapping[str, Iterable[int]]]) -> dict[str, dict[int, str]]:
    """topic -> partition -> member id (Kafka's `invertedTargetAssignment`)."""
    inverted: dict[str, dict[int, str]] = {}
    for member_id, assignment in members.items():
        for topic, parts in assignment.items():
            owners = inverted.setdefault(topic, {})
            for p in parts:
                owners[p] = member_id
    return inverted


def restrict_to_topics(assignment: Mapping[str, frozenset], num_partitions) -> Mapping[str, frozenset]:
    """Drops partitions that do not exist: topics `num_partitions(topic)` reports as -1 (unknown)
    and partition numbers outside [0, n). With topic ids Kafka never needs this; with names, a
    topic deleted and re-created with fewer partitions would otherwise leave stale numbers in
    current assignments. Returns `assignment` itself when nothing is dropped."""
    out: dict[str, frozenset] | None = None
    for topic, parts in assignment.items():
        n = num_partitions(topic)
        keep: frozenset[int]
        if n < 0:
            keep = frozenset()
        elif parts and (min(parts) < 0 or max(parts) >= n):
            keep = frozenset(p for p in parts if 0 <= p < n)
        else:
            continue
        if out is None:
            out = dict(assignment)
        if keep:
            out[topic] = keep
        else:
            del out[topic]
    return assignment if out is None else out
