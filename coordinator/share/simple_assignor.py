"""Kafka's SimpleAssignor (`group/assignor/SimpleAssignor.java`), the share groups' assignor.

A share group's partitions are consumed cooperatively: a partition may go to several members, and
every subscribed partition goes to at least one member. The algorithm is Kafka's:
- homogeneous subscriptions: each member is hashed to one partition (`memberId.hashCode() %
  numPartitions`), current assignments are kept while a member has fewer than
  ceil(partitions / members), and the partitions nobody holds go round-robin, at most one over
  that count per member;
- heterogeneous subscriptions: each member is hashed to one of its partitions, partitions neither
  hashed nor currently held go round-robin among their topic's subscribers, then each member keeps
  its current partitions of topics it still subscribes to.

Determinism: Kafka iterates members and topic ids in HashMap order; here members are taken in
Java string order of their ids and topics by name (partitions ascending), so one input gives one
assignment after any replay. Topics are identified by name (see coordinator/group/consumer/).

Input: `members` {memberId: (subscribed topic names, current target {topic: partitions})},
`topics` {name: partition count}, `homogeneous`; output {memberId: {topic: frozenset}} for every
member (empty assignments included), as Kafka's GroupAssignment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from ..group.consumer._java import order_key
from ..group.consumer.assignors.api import PartitionAssignorException
from ..routing import java_string_hashcode

SIMPLE_ASSIGNOR_NAME = "simple"

TopicPartition = tuple  # (topic name, partition)


def _java_abs_mod(h: int, n: int) -> int:
    """Math.abs(h % n) with Java's truncating remainder."""
    r = abs(h) % n
    return r


def member_hash_assignment(member_ids: Iterable[str], partitions: list, assignment: dict) -> None:
    """memberHashAssignment: each member to partitions[abs(hashCode % n)]; assignment is
    {partition: [members]}."""
    if not partitions:
        return
    n = len(partitions)
    for member_id in member_ids:
        tp = partitions[_java_abs_mod(java_string_hashcode(member_id), n)]
        assignment.setdefault(tp, []).append(member_id)


def round_robin_assignment(member_ids: list[str], partitions: list, assignment: dict) -> None:
    """roundRobinAssignment: partitions in order, members cycling; assignment {partition: [members]}."""
    if not member_ids:
        return
    for i, tp in enumerate(partitions):
        assignment.setdefault(tp, []).append(member_ids[i % len(member_ids)])


def round_robin_assignment_with_count(member_ids: list[str], partitions: list, assignment: dict, desired: int) -> None:
    """roundRobinAssignmentWithCount: like round robin, but a member already holding more than
    `desired` partitions leaves the rotation; assignment is {member: set(partitions)}."""
    members = list(dict.fromkeys(member_ids))
    i = 0  # index of the next member in `members`
    k = 0  # index of the next partition
    while k < len(partitions):
        if i >= len(members):
            i = 0
            if not members:
                raise PartitionAssignorException("Inconsistent number of member IDs")
        member = members[i]
        held = assignment.setdefault(member, set())
        if len(held) <= desired:
            held.add(partitions[k])
            k += 1
            i += 1
        else:
            members.pop(i)  # the iterator's remove(): the next member takes this partition


class SimpleAssignor:
    name = SIMPLE_ASSIGNOR_NAME

    def assign(
        self,
        members: Mapping[str, tuple],
        topics: Mapping[str, int],
        homogeneous: bool,
        is_assignable: Callable[[str, int], bool] | None = None,
    ) -> dict:
        member_ids = sorted(members, key=order_key)
        if not member_ids:
            return {}
        assignable = is_assignable or (lambda _t, _p: True)
        if homogeneous:
            subscribed = members[member_ids[0]][0]
            if not subscribed:
                return {}
            targets = self._target_partitions(subscribed, topics, assignable)
            return self._homogeneous(member_ids, set(subscribed), targets, self._current(members, member_ids))
        by_member = {}
        for m in member_ids:
            subscribed = members[m][0]
            if subscribed:
                by_member[m] = self._target_partitions(subscribed, topics, assignable)
        return self._heterogeneous(member_ids, by_member, self._current(members, member_ids))

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _target_partitions(subscribed: Iterable[str], topics: Mapping[str, int], assignable) -> list:
        out = []
        for topic in sorted(subscribed, key=order_key):
            n = topics.get(topic)
            if n is None:
                raise PartitionAssignorException(
                    f"Members are subscribed to topic {topic} which doesn't exist in the topic metadata."
                )
            out += [(topic, p) for p in range(n) if assignable(topic, p)]
        return out

    @staticmethod
    def _current(members: Mapping[str, tuple], member_ids: list[str]) -> dict:
        """{partition: [members]} of the current target, partitions in (topic, partition) order."""
        current: dict = {}
        for m in member_ids:
            for topic, parts in (members[m][1] or {}).items():
                for p in parts:
                    current.setdefault((topic, p), []).append(m)
        return {tp: current[tp] for tp in sorted(current, key=lambda tp: (order_key(tp[0]), tp[1]))}

    @staticmethod
    def _homogeneous(member_ids: list[str], subscribed: set, targets: list, current: dict) -> dict:
        desired = (len(targets) + len(member_ids) - 1) // len(member_ids)
        hashed: dict = {}
        member_hash_assignment(member_ids, targets, hashed)
        final: dict[str, set] = {}
        by_partition: dict = {}
        for tp, ms in hashed.items():
            for m in ms:
                final.setdefault(m, set()).add(tp)
                by_partition.setdefault(tp, set()).add(m)
        known = set(member_ids)
        for tp, ms in current.items():
            if tp[0] not in subscribed:
                continue
            for m in ms:
                if m in known:
                    held = final.setdefault(m, set())
                    if len(held) < desired and tp not in hashed:
                        held.add(tp)
                        by_partition.setdefault(tp, set()).add(m)
        unassigned = [tp for tp in targets if tp not in by_partition]
        round_robin_assignment_with_count(member_ids, unassigned, final, desired)
        return _group_assignment(final, member_ids)

    @staticmethod
    def _heterogeneous(member_ids: list[str], by_member: dict, current: dict) -> dict:
        targets = list(dict.fromkeys(tp for m in member_ids if m in by_member for tp in by_member[m]))
        subscribers: dict[str, list] = {}
        for m in member_ids:
            for tp in by_member.get(m, ()):
                lst = subscribers.setdefault(tp[0], [])
                if not lst or lst[-1] != m:
                    lst.append(m)
        new: dict = {}
        for m in member_ids:
            if m in by_member:
                member_hash_assignment([m], by_member[m], new)
        assigned = set(new)
        unassigned: dict[str, list] = {}
        for tp in targets:
            if tp not in assigned and tp not in current:
                unassigned.setdefault(tp[0], []).append(tp)
        for topic in sorted(unassigned, key=order_key):
            round_robin_assignment(subscribers[topic], unassigned[topic], new)
        final: dict[str, set] = {}
        for tp, ms in new.items():
            for m in ms:
                final.setdefault(m, set()).add(tp)
        subscriber_sets = {t: set(ms) for t, ms in subscribers.items()}
        for tp, ms in current.items():
            if tp in new:
                continue
            subscribed = subscriber_sets.get(tp[0], ())
            for m in ms:
                if m in subscribed:
                    final.setdefault(m, set()).add(tp)
        return _group_assignment(final, member_ids)


def _group_assignment(final: Mapping[str, set], member_ids: list[str]) -> dict:
    out = {}
    for m in member_ids:
        by_topic: dict[str, set] = {}
        for topic, p in final.get(m, ()):
            by_topic.setdefault(topic, set()).add(p)
        out[m] = {t: frozenset(ps) for t, ps in by_topic.items()}
    return out
