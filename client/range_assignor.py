"""The consumer's client-side "range" assignor, run by the group leader (Kafka's `RangeAssignor`,
kafka-python's `RangePartitionAssignor`).

Per topic, independently: the topic's partitions in ascending order, the consumers subscribed to it
in order — static members first, sorted by group instance id, then dynamic members sorted by
member id (Java's `MemberInfo.compareTo`; strings compare by UTF-16 code units as Java's
`String.compareTo` does) — and `n = P // C` partitions each, the first `P % C` consumers one more,
in contiguous ranges. A topic without partition metadata is skipped (Java logs "Skipping
assignment for topic ... since no metadata is available"). Every member gets an entry, possibly
empty.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

NAME = "range"


@dataclass(frozen=True)
class MemberSubscription:
    member_id: str
    group_instance_id: str | None
    topics: tuple[str, ...]


def _java_order(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")


def consumer_order(member: MemberSubscription) -> tuple:
    if member.group_instance_id is not None:
        return (0, _java_order(member.group_instance_id))
    return (1, _java_order(member.member_id))


def assign(
    members: Iterable[MemberSubscription], partitions_for: Callable[[str], int | None]
) -> dict[str, dict[str, list[int]]]:
    """{member id: {topic: [partitions]}} for the members' subscriptions; `partitions_for(topic)`
    is the topic's partition count, or None when the topic has no metadata."""
    members = list(members)
    assignment: dict[str, dict[str, list[int]]] = {m.member_id: {} for m in members}
    consumers_per_topic: dict[str, list[MemberSubscription]] = {}
    for m in members:
        for topic in dict.fromkeys(m.topics):
            consumers_per_topic.setdefault(topic, []).append(m)
    for topic in sorted(consumers_per_topic, key=_java_order):
        count = partitions_for(topic)
        if count is None:
            continue
        consumers = sorted(consumers_per_topic[topic], key=consumer_order)
        per_consumer, with_extra = divmod(count, len(consumers))
        start = 0
        for i, consumer in enumerate(consumers):
            length = per_consumer + (1 if i < with_extra else 0)
            if length:
                assignment[consumer.member_id][topic] = list(range(start, start + length))
            start += length
    return assignment
