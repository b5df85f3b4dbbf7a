"""The `uniform` server-side assignor (Kafka's UniformAssignor, the default).

Two builders, chosen by the group's subscription type:

* homogeneous (every member subscribes to the same topics): `UniformHomogeneousAssignmentBuilder`
  as of Kafka 4.1+ (KAFKA-18688): each member keeps its current partitions up to its quota
  (total / members, one more for `total % members` members); a member already holding the extra
  partition keeps it, so an already balanced assignment never moves; the freed and never-assigned
  partitions then fill the members below quota, the last unfilled members taking the remaining
  extra partitions.
* heterogeneous: `UniformHeterogeneousAssignmentBuilder` (KAFKA-17710): keep subscribed partitions,
  hand the unassigned ones to the least loaded subscribers topic by topic (topics with the most
  partitions per subscriber first), then move partitions from the most to the least loaded
  subscribers of each topic until balanced or 16 passes.

Priorities are Balance > Stickiness. Not rack-aware: Kafka 4.0-4.2's uniform builders ignore racks
(rack awareness was re-added on trunk later, KAFKA-19909); `rack_id` and partition racks are
accepted and ignored.

Where Kafka iterates a HashMap/HashSet, this iterates members by member id and topics by name, in
Java string order; partitions of a member's topic are visited in ascending order (what a
`HashSet<Integer>` of small partition numbers yields). That makes every outcome a valid Kafka
outcome and reproducible.
"""

from __future__ import annotations

from .._java import order_key
from .api import GroupAssignment, GroupSpec, PartitionAssignorException, SubscribedTopicDescriber, SubscriptionType

UNIFORM_ASSIGNOR_NAME = "uniform"


class UniformAssignor:
    name = UNIFORM_ASSIGNOR_NAME

    def assign(self, group_spec: GroupSpec, describer: SubscribedTopicDescriber) -> GroupAssignment:
        if not group_spec.member_ids:
            return {}
        if group_spec.subscription_type == SubscriptionType.HOMOGENEOUS:
            return build_homogeneous(group_spec, describer)
        return UniformHeterogeneousAssignmentBuilder(group_spec, describer).build()


# --------------------------------------------------------------------------- homogeneous


def build_homogeneous(spec: GroupSpec, describer: SubscribedTopicDescriber) -> GroupAssignment:
    member_ids = spec.member_ids
    subscribed = spec.member_subscription(member_ids[0]).subscribed_topics
    if not subscribed:
        return {}
    subscribed_sorted = sorted(subscribed, key=order_key)

    # Partitions not in anyone's current target, topic by topic, in ascending order.
    unassigned: list = []  # (topic, partition)
    total = 0
    inverted = spec.inverted_assignment
    for topic in subscribed_sorted:
        n = describer.num_partitions(topic)
        if n == -1:
            raise PartitionAssignorException(
                f"Members are subscribed to topic {topic} which doesn't exist in the topic metadata."
            )
        owners = inverted.get(topic)
        if owners:
            unassigned.extend((topic, p) for p in range(n) if p not in owners)
        else:
            unassigned.extend((topic, p) for p in range(n))
        total += n

    num_members = len(member_ids)
    min_quota, remaining_extra = divmod(total, num_members)

    # Revoke what is unsubscribed or over quota.
    target: dict = {}
    unfilled: list = []  # [member_id, remaining quota]
    for member_id in member_ids:
        old = spec.members[member_id].assignment
        new = None  # copy on first change
        quota = min_quota
        has_extra = False
        if remaining_extra > 0:
            quota += 1
            has_extra = True
        for topic in sorted(old, key=order_key) if len(old) > 1 else old:
            parts = old[topic]
            if topic in subscribed:
                if len(parts) <= quota:
                    quota -= len(parts)
                else:
                    keep = []
                    for p in sorted(parts):
                        if quota > 0:
                            quota -= 1
                            keep.append(p)
                        else:
                            unassigned.append((topic, p))
                    if new is None:
                        new = dict(old)
                    if keep:
                        new[topic] = frozenset(keep)
                    else:
                        del new[topic]
            else:
                if new is None:
                    new = dict(old)
                del new[topic]
        if quota > 0 and has_extra:
            # Give up the extra partition for another member to claim.
            quota -= 1
            has_extra = False
        if quota == 0 and has_extra:
            remaining_extra -= 1
        # Unfilled: quota left, or at the minimum and an extra partition is still unclaimed.
        if quota > 0 or (remaining_extra > 0 and not has_extra):
            unfilled.append([member_id, quota])
        target[member_id] = old if new is None else new

    # The last unfilled members take the remaining extra partitions.
    for entry in reversed(unfilled):
        if remaining_extra > 0:
            remaining_extra -= 1
            entry[1] += 1
    index = 0
    n_unassigned = len(unassigned)
    for member_id, quota in unfilled:
        if quota == 0 or index >= n_unassigned:
            continue
        chunk = unassigned[index : index + quota]
        index += len(chunk)
        new = dict(target[member_id])
        added: dict = {}
        for topic, p in chunk:
            added.setdefault(topic, []).append(p)
        for topic, ps in added.items():
            cur = new.get(topic)
            new[topic] = frozenset(ps) if cur is None else cur.union(ps)
        target[member_id] = new
    if index < n_unassigned:
        raise PartitionAssignorException("Partitions were left unassigned")
    return target


# --------------------------------------------------------------------------- heterogeneous


def _raise_unknown_topic(topics, describer) -> None:
    missing = min((t for t in topics if describer.num_partitions(t) == -1), key=order_key)
    raise PartitionAssignorException(
        f"Members are subscribed to topic {missing} which doesn't exist in the topic metadata."
    )


MAX_ITERATION_COUNT = 16


class _Balancer:
    """Kafka's MemberAssignmentBalancer: two ranges over the subscribers sorted by load, the least
    loaded range growing rightwards and the most loaded range growing leftwards."""

    __slots__ = (
        "sizes",
        "sorted_members",
        "least_end",
        "least_count",
        "next_least",
        "most_start",
        "most_end",
        "most_count",
        "next_most",
    )

    def __init__(self, sizes: list):
        self.sizes = sizes
        self.sorted_members: list = []

    def initialize(self, members: list) -> int:
        if not members:
            raise ValueError("Cannot balance an empty subscriber list.")
        sizes = self.sizes
        # By load, then member index: `members` is ascending and the sort is stable.
        self.sorted_members = sm = sorted(members, key=sizes.__getitem__)
        self.least_end = 0
        self.least_count = sizes[sm[0]] - 1
        self.next_least = 0
        self.most_start = len(sm)
        self.most_end = len(sm)
        self.most_count = sizes[sm[-1]] + 1
        self.next_most = len(sm) - 1
        return sizes[sm[-1]] - sizes[sm[0]]

    def next_least_loaded(self) -> int:
        sm, sizes = self.sorted_members, self.sizes
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(sm) and sizes[sm[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        m = sm[self.next_least]
        self.next_least += 1
        return m

    def next_most_loaded(self) -> int:
        sm, sizes = self.sorted_members, self.sizes
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = sizes[sm[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and sizes[sm[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        m = sm[self.next_most]
        self.next_most -= 1
        return m

    def exclude_most_loaded(self) -> None:
        sm = self.sorted_members
        i = self.next_most + 1
        sm[i], sm[self.most_end - 1] = sm[self.most_end - 1], sm[i]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class UniformHeterogeneousAssignmentBuilder:
    def __init__(self, spec: GroupSpec, describer: SubscribedTopicDescriber):
        self.spec = spec
        self.describer = describer
        self.member_ids = spec.member_ids
        self.topic_subscribers: dict = {}  # topic -> [member index], ascending
        self.num_partitions: dict = {}
        num_partitions = self.num_partitions
        subscribers = self.topic_subscribers
        for index, member_id in enumerate(self.member_ids):
            for topic in spec.members[member_id].subscribed_topics:
                if topic not in num_partitions:
                    n = describer.num_partitions(topic)
                    if n == -1:
                        _raise_unknown_topic(spec.members[member_id].subscribed_topics, describer)
                    num_partitions[topic] = n
                    subscribers[topic] = [index]
                else:
                    subscribers[topic].append(index)
        self.sizes = [0] * len(self.member_ids)
        self.owners = {t: [-1] * n for t, n in self.num_partitions.items()}
        self.target: dict = {}
        self._mutable: set = set()  # members whose target is a private dict of mutable sets

    def _topic_key(self, topic: str):
        # Partitions per subscriber descending, then subscriber count ascending, then topic.
        n, s = self.num_partitions[topic], len(self.topic_subscribers[topic])
        return (-(n / s), s, order_key(topic))

    def build(self) -> GroupAssignment:
        if not self.num_partitions:
            return {}
        self._maybe_revoke()
        unassigned = {}
        for topic in self.num_partitions:
            free = [p for p, o in enumerate(self.owners[topic]) if o == -1]
            if free:
                unassigned[topic] = free
        self._assign_remaining(unassigned)
        self._balance()
        for member_id in self._mutable:
            self.target[member_id] = {t: frozenset(ps) for t, ps in self.target[member_id].items()}
        return self.target

    def _maybe_revoke(self) -> None:
        for index, member_id in enumerate(self.member_ids):
            member = self.spec.members[member_id]
            old = member.assignment
            new = None
            for topic, parts in old.items():
                if topic in member.subscribed_topics:
                    self.sizes[index] += len(parts)
                    owners = self.owners[topic]
                    for p in parts:
                        owners[p] = index
                else:
                    if new is None:
                        new = dict(old)
                    del new[topic]
            self.target[member_id] = old if new is None else new

    def _assign_remaining(self, unassigned: dict) -> None:
        balancer = _Balancer(self.sizes)
        for topic in sorted(unassigned, key=self._topic_key):
            balancer.initialize(self.topic_subscribers[topic])
            for p in unassigned[topic]:
                self._assign(topic, p, balancer.next_least_loaded())

    def _balance(self) -> None:
        topics = [t for t in self.num_partitions if len(self.topic_subscribers[t]) >= 2]
        if topics:
            self._balance_topics(topics)

    def _balance_topics(self, topics: list) -> None:
        sorted_topics = sorted(topics, key=self._topic_key)
        last_rebalanced = -1
        balancer = _Balancer(self.sizes)
        for _ in range(MAX_ITERATION_COUNT):
            for i, topic in enumerate(sorted_topics):
                if i == last_rebalanced:
                    return
                moved = self._balance_topic(topic, balancer)
                if moved > 0 or last_rebalanced == -1:
                    last_rebalanced = i

    def _balance_topic(self, topic: str, balancer: _Balancer) -> int:
        moved = 0
        if balancer.initialize(self.topic_subscribers[topic]) <= 1:
            return moved
        owners = self.owners[topic]
        partitions = sorted(range(self.num_partitions[topic]), key=lambda p: (owners[p], p))
        start: dict = {}
        end: dict = {}  # exclusive
        for i, p in enumerate(partitions):
            o = owners[p]
            if o not in start:
                start[o] = i
            end[o] = i + 1
        while not balancer.is_balanced():
            most = -1
            while True:
                most = balancer.next_most_loaded()
                if most == -1:
                    break
                if most not in end or end[most] - start[most] <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if most == -1:
                break
            p = partitions[end[most] - 1]
            end[most] -= 1
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self._assign(topic, p, least)
            moved += 1
        return moved

    def _assign(self, topic: str, partition: int, index: int) -> None:
        owners = self.owners[topic]
        old_index = owners[partition]
        if old_index != -1:
            self._update(old_index, topic, partition, add=False)
            owners[partition] = -1
            self.sizes[old_index] -= 1
        self._update(index, topic, partition, add=True)
        owners[partition] = index
        self.sizes[index] += 1

    def _update(self, index: int, topic: str, partition: int, add: bool) -> None:
        member_id = self.member_ids[index]
        target = self.target[member_id]
        if member_id not in self._mutable:
            # A private, mutable copy; frozen again at the end of build().
            target = {t: set(ps) for t, ps in target.items()}
            self.target[member_id] = target
            self._mutable.add(member_id)
        if add:
            cur = target.get(topic)
            if cur is None:
                target[topic] = {partition}
            else:
                cur.add(partition)
        else:
            cur = target.get(topic)
            if cur is not None:
                cur.discard(partition)
                if not cur:
                    del target[topic]
