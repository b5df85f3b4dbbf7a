"""Kafka's SimpleAssignor (`group/assignor/SimpleAssignor.java`), the share groups' assignor, as
Kafka 4.3+ writes it (SimpleHomogeneousAssignmentBuilder / SimpleHeterogeneousAssignmentBuilder).

A share group's partitions are consumed cooperatively: a partition may go to several members, and
every subscribed partition goes to at least one member. Members are numbered in the order of the
group spec's members (a HashMap of member ids); each partition should be shared by
`desiredSharing` = ceil(members / partitions) members, and member i should hold
ceil(x * (i + 1)) - ceil(x * i) partitions, x = desiredSharing * partitions / members. From the
current target assignment: partitions of topics no longer subscribed are revoked, then partitions
of members holding too many, then members of partitions shared too much; partitions that want more
members go to the members that want more partitions, cycling over them.
- homogeneous subscriptions: over all the partitions at once;
- heterogeneous subscriptions: topic by topic, among the topic's subscribers.

Which partition a member gives up or gets depends on Java's HashMap and HashSet iteration orders,
which this follows (coordinator/group/javautil.py): member ids hash as Java strings, partitions of
the homogeneous builder as `TopicIdPartition` records (31 * the topic id's Uuid hash + partition),
so the topic ids decide; those of the heterogeneous builder as their index. Kafka 4.1's assignor
(member hashing and round robin) is gone.

Input: `members` {memberId: (subscribed topic names, current target {topic: partitions})},
`topics` {name: partition count}, `homogeneous`, `is_assignable(topic, partition)`, `topic_ids`
{name: Kafka Uuid string}; output {memberId: {topic: frozenset}} for every member, as Kafka's
GroupAssignment (a topic whose partitions were all revoked stays, empty, as in Kafka).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping

from ..group.consumer._java import order_key
from ..group.consumer.assignors.api import PartitionAssignorException
from ..group.javautil import (
    JavaHashMap,
    java_expected_capacity,
    java_hashmap_order,
    java_int_hash,
    java_uuid_hash,
)
from ..group.modern.hashing import _uuid_bytes
from ..routing import java_string_hashcode

SIMPLE_ASSIGNOR_NAME = "simple"


def _int_map(capacity: int | None = None) -> JavaHashMap:
    return JavaHashMap(java_int_hash, capacity)


def _int_set_of(values) -> JavaHashMap:
    """new HashSet<>(collection): capacity max(n / .75f + 1, 16), the values in their order."""
    values = list(values)
    s = _int_map(max(int(len(values) / 0.75) + 1, 16))
    for v in values:
        s.add(v)
    return s


class _Topics:
    """Topic names and their Uuid hash codes (a topic without a known id hashes as its name)."""

    def __init__(self, topic_ids: Mapping[str, str] | None):
        self._ids = topic_ids or {}
        self._hashes: dict[str, int] = {}

    def hash(self, topic: str) -> int:
        h = self._hashes.get(topic)
        if h is None:
            topic_id = self._ids.get(topic)
            if topic_id is None:
                h = java_string_hashcode(topic) & 0xFFFFFFFF
            else:
                msb, lsb = struct.unpack(">QQ", _uuid_bytes(topic_id))
                h = java_uuid_hash(msb, lsb)
            self._hashes[topic] = h
        return h

    def partition_hash(self, tp: tuple) -> int:
        """TopicIdPartition.hashCode (a record): 31 * topicId.hashCode() + partitionId."""
        return (31 * self.hash(tp[0]) + tp[1]) & 0xFFFFFFFF

    def assignment(self, current: Mapping[str, frozenset] | None) -> JavaHashMap:
        """A member's assignment as Kafka holds it: Map<Uuid, Set<Integer>> (HashMap, HashSets)."""
        out = JavaHashMap(self.hash)
        current = current or {}
        for topic in sorted(current, key=order_key):
            out.put(topic, _int_set_of(sorted(current[topic])))
        return out

    def deep_copy(self, assignment: JavaHashMap) -> JavaHashMap:
        """AssignorHelpers.deepCopyAssignment."""
        out = JavaHashMap(self.hash, len(assignment))
        for topic, parts in assignment.items():
            out.put(topic, _int_set_of(parts.keys()))
        return out


def _desired_counts(desired_sharing: int, partitions: int, members: int) -> list[int]:
    precise = desired_sharing * partitions / members
    return [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(members)]


class SimpleAssignor:
    name = SIMPLE_ASSIGNOR_NAME

    def assign(
        self,
        members: Mapping[str, tuple],
        topics: Mapping[str, int],
        homogeneous: bool,
        is_assignable: Callable[[str, int], bool] | None = None,
        topic_ids: Mapping[str, str] | None = None,
    ) -> dict:
        if not members:
            return {}
        # GroupSpecImpl.memberIds(): the key set of TargetAssignmentBuilder's HashMap of members.
        member_ids = java_hashmap_order(sorted(members, key=order_key))
        builder = _Homogeneous if homogeneous else _Heterogeneous
        return builder(member_ids, members, topics, is_assignable or (lambda _t, _p: True), _Topics(topic_ids)).build()


class _Builder:
    def __init__(self, member_ids, members, topics, assignable, ids: _Topics):
        self.member_ids = member_ids
        self.members = members
        self.topics = topics
        self.assignable = assignable
        self.ids = ids
        self.num_members = len(member_ids)
        self.old = _int_map(java_expected_capacity(self.num_members))
        self.new = _int_map(java_expected_capacity(self.num_members))
        for i, m in enumerate(member_ids):
            self.old.put(i, ids.assignment(members[m][1]))

    def target_partitions(self, topic: str) -> list[int]:
        n = self.topics.get(topic)
        if n is None:
            raise PartitionAssignorException(
                f"Members are subscribed to topic {topic} which doesn't exist in the topic metadata."
            )
        return [p for p in range(n) if self.assignable(topic, p)]

    def new_assignment(self, i: int) -> JavaHashMap:
        """The member's new assignment, a deep copy of its old one at the first change."""
        a = self.new.get(i)
        if a is None:
            a = self.ids.deep_copy(self.old.get(i))
            self.new.put(i, a)
        return a

    def result(self) -> dict:
        out = {}
        for i, m in enumerate(self.member_ids):
            a = self.new.get(i)
            if a is None:
                a = self.old.get(i)
            out[m] = {t: frozenset(parts.keys()) for t, parts in a.items()}
        return out


def _assign_remaining(partitions: JavaHashMap, unfilled: JavaHashMap, desired_sharing: int, give) -> None:
    """assignRemainingPartitions: once over the partitions, cycling over the members that want
    more; `give(member, partition)` assigns and returns whether the member is now full."""
    if not len(unfilled):
        return
    cycle, at, assigned_this_cycle = unfilled.keys(), 0, False
    for partition, holders in partitions.items():
        if len(holders) < desired_sharing:
            to_make = desired_sharing - len(holders)
            while to_make > 0:
                if at >= len(cycle):
                    if not assigned_this_cycle or not len(unfilled):
                        break
                    cycle, at, assigned_this_cycle = unfilled.keys(), 0, False
                member = cycle[at]
                at += 1
                if member not in holders:
                    to_make -= 1
                    assigned_this_cycle = True
                    if give(member, partition):
                        unfilled.remove(member)
        if not len(unfilled):
            break


class _Homogeneous(_Builder):
    """SimpleHomogeneousAssignmentBuilder: partitions are (topic, partition) pairs."""

    def __init__(self, *args):
        super().__init__(*args)
        self.subscribed = set(self.members[self.member_ids[0]][0])
        self.targets = [(t, p) for t in sorted(self.subscribed, key=order_key) for p in self.target_partitions(t)]
        n = len(self.targets)
        self.desired_sharing = 0 if n == 0 else (self.num_members + n - 1) // n
        self.desired = _desired_counts(self.desired_sharing, n, self.num_members)
        self.by_partition = JavaHashMap(self.ids.partition_hash, java_expected_capacity(n))
        self.by_member = _int_map(java_expected_capacity(self.num_members))
        self.unfilled = _int_map(java_expected_capacity(self.num_members))
        self.overfilled = _int_map(java_expected_capacity(self.num_members))

    def _member_partitions(self, i: int) -> JavaHashMap:
        return self.by_member.compute_if_absent(i, lambda: JavaHashMap(self.ids.partition_hash))

    def build(self) -> dict:
        if not self.subscribed:
            return {}
        self.revoke_unassignable_partitions()
        self.revoke_overfilled_members()
        self.revoke_overshared_partitions()
        for tp in self.targets:
            self.by_partition.compute_if_absent(tp, lambda: _int_map())
        _assign_remaining(self.by_partition, self.unfilled, self.desired_sharing, self._give)
        return self.result()

    def revoke_unassignable_partitions(self) -> None:
        for i, old in self.old.items():
            count, copied = 0, False
            for topic, parts in old.items():
                if topic in self.subscribed:
                    for p in parts.keys():
                        count += 1
                        self.by_partition.compute_if_absent((topic, p), lambda: _int_map()).add(i)
                        self._member_partitions(i).add((topic, p))
                        if count >= self.desired[i] and not copied:
                            self.new.put(i, self.ids.deep_copy(old))
                            copied = True
                else:
                    if not copied:
                        self.new.put(i, self.ids.deep_copy(old))
                        copied = True
                    self.new.get(i).remove(topic)
            if count < self.desired[i]:
                self.unfilled.add(i)
            elif count > self.desired[i]:
                self.overfilled.add(i)

    def revoke_overfilled_members(self) -> None:
        for i in self.overfilled.keys():
            held = self.by_member.get(i)
            if len(held) > self.desired[i]:
                for tp in held.keys():
                    self.new.get(i).get(tp[0]).remove(tp[1])
                    self.by_partition.get(tp).remove(i)
                    held.remove(tp)
                    if len(held) == self.desired[i]:
                        break

    def revoke_overshared_partitions(self) -> None:
        for tp, holders in self.by_partition.items():
            count = len(holders)
            if count > self.desired_sharing:
                for i in holders.keys():
                    parts = self.new_assignment(i).get(tp[0])
                    if parts is not None and parts.remove(tp[1]):
                        count -= 1
                        holders.remove(i)
                        self.by_member.get(i).remove(tp)
                        self.unfilled.add(i)
                    if count <= self.desired_sharing:
                        break

    def _give(self, i: int, tp: tuple) -> bool:
        self.new_assignment(i).compute_if_absent(tp[0], _int_map).add(tp[1])
        held = self._member_partitions(i)
        held.add(tp)
        return len(held) >= self.desired[i]


class _Heterogeneous(_Builder):
    """SimpleHeterogeneousAssignmentBuilder: topic by topic (TopicAssignmentPartialBuilder), the
    partitions and members as their indexes."""

    def build(self) -> dict:
        subscribed = {t for m in self.member_ids for t in self.members[m][0]}
        if not subscribed:
            return {}
        by_topic = {t: self.target_partitions(t) for t in sorted(subscribed, key=order_key)}
        for topic, partitions in by_topic.items():
            subscribers = [i for i, m in enumerate(self.member_ids) if topic in self.members[m][0]]
            self._topic(topic, partitions, subscribers)
        return self.result()

    def _topic(self, topic: str, partitions: list[int], subscribers: list[int]) -> None:
        by_partition = _int_map(java_expected_capacity(len(partitions)))
        by_member = _int_map(java_expected_capacity(len(subscribers)))
        n, s = len(partitions), len(subscribers)
        desired_sharing = 0 if n == 0 else (s + n - 1) // n
        desired = [0] * self.num_members
        for k, count in enumerate(_desired_counts(desired_sharing, n, s)):
            desired[subscribers[k]] = count

        # revokeUnassignablePartitions (the topic is subscribed: the current partitions are kept)
        for i, old in self.old.items():
            parts = old.get(topic) if len(old) else None
            if parts is not None:
                for p in parts.keys():
                    by_partition.compute_if_absent(p, _int_map).add(i)
                    by_member.compute_if_absent(i, _int_map).add(p)
        # revokeOverfilledMembers
        for i, held in by_member.items():
            while len(held) > desired[i]:
                p = held.keys()[0]
                by_partition.get(p).remove(i)
                held.remove(p)
                self.new_assignment(i).get(topic).remove(p)
        # revokeOversharedPartitions
        for p, holders in by_partition.items():
            count = len(holders)
            if count > desired_sharing:
                for i in holders.keys():
                    parts = self.new_assignment(i).get(topic)
                    if parts is not None and parts.remove(p):
                        count -= 1
                        holders.remove(i)
                        by_member.get(i).remove(p)
                    if count <= desired_sharing:
                        break
        for p in partitions:
            by_partition.compute_if_absent(p, lambda: _int_map(java_expected_capacity(s)))
        # assignRemainingPartitions
        unfilled = _int_map(java_expected_capacity(self.num_members))
        for i in subscribers:
            held = by_member.get(i)
            if (0 if held is None else len(held)) < desired[i]:
                unfilled.add(i)

        def give(i: int, p: int) -> bool:
            self.new_assignment(i).compute_if_absent(topic, _int_map).add(p)
            held = by_member.compute_if_absent(i, _int_map)
            held.add(p)
            return len(held) >= desired[i]

        _assign_remaining(by_partition, unfilled, desired_sharing, give)
