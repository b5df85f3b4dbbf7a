"""Pure helpers a KIP-848 group needs around reconciliation (from Kafka's ConsumerGroup):

- `derive_group_state`: Empty / Assigning / Reconciling / Stable, derived, never stored;
- `PartitionEpochs`: which member epoch currently owns each partition (a member's assigned and
  pending-revocation partitions, at its member epoch), the `current partition epoch` lookup the
  reconciliation needs, with Kafka's consistency checks;
- `subscription_type`: HOMOGENEOUS / HETEROGENEOUS, as Kafka derives it from the raw
  subscriptions (topic names and regexes, before checking that the topics exist);
- `preferred_server_assignor`: the assignor named by most members.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..group import IllegalStateError
from ._java import order_key
from .assignors.api import SubscriptionType
from .member import ConsumerGroupMember, ResolvedRegexes, ResolvedRegularExpression


class ConsumerGroupState(str, enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value

    def lower_case(self) -> str:
        return self.value.lower()


def derive_group_state(
    members: Iterable[ConsumerGroupMember], group_epoch: int, target_assignment_epoch: int
) -> ConsumerGroupState:
    """Kafka's ConsumerGroup.maybeUpdateGroupState: EMPTY without members; ASSIGNING while the
    target assignment lags the group epoch; RECONCILING while a member is not STABLE at the
    target epoch; otherwise STABLE."""
    members = list(members)
    if not members:
        return ConsumerGroupState.EMPTY
    if group_epoch > target_assignment_epoch:
        return ConsumerGroupState.ASSIGNING
    for m in members:
        if not m.is_reconciled_to(target_assignment_epoch):
            return ConsumerGroupState.RECONCILING
    return ConsumerGroupState.STABLE


class PartitionEpochs:
    """topic -> partition -> epoch of the member currently owning it (Kafka's
    `currentPartitionEpoch`). A partition is owned from the moment it is in a member's assigned
    partitions until it leaves both its assigned and its pending-revocation partitions; adding an
    owned partition again raises IllegalStateError, which is what makes "revoke before assign"
    checkable. Call the object as `epochs(topic, partition)` for the lookup (-1 if free)."""

    __slots__ = ("_epochs",)

    def __init__(self):
        self._epochs: dict[str, dict[int, int]] = {}

    def get(self, topic: str, partition: int) -> int:
        partitions = self._epochs.get(topic)
        return -1 if partitions is None else partitions.get(partition, -1)

    __call__ = get

    def add(self, assignment: Mapping[str, Iterable[int]], epoch: int) -> None:
        for topic, parts in assignment.items():
            owned = self._epochs.get(topic, {})
            for p in parts:
                if p in owned:
                    raise IllegalStateError(
                        f"Cannot set the epoch of {topic}-{p} to {epoch} because the partition is "
                        f"still owned at epoch {owned[p]}"
                    )
        for topic, parts in assignment.items():
            if parts:
                owned = self._epochs.setdefault(topic, {})
                for p in parts:
                    owned[p] = epoch

    def remove(self, assignment: Mapping[str, Iterable[int]], expected_epoch: int) -> None:
        for topic, parts in assignment.items():
            owned = self._epochs.get(topic)
            if owned is None:
                raise IllegalStateError(
                    f"Cannot remove the epoch {expected_epoch} from {topic} because it does not have any epoch"
                )
            for p in parts:
                if owned.get(p) != expected_epoch:
                    raise IllegalStateError(
                        f"Cannot remove the epoch {expected_epoch} from {topic}-{p} because the "
                        f"partition is still owned at a different epoch {owned.get(p)}"
                    )
        for topic, parts in assignment.items():
            owned = self._epochs[topic]
            for p in parts:
                del owned[p]
            if not owned:
                del self._epochs[topic]

    def update_member(self, old: ConsumerGroupMember | None, new: ConsumerGroupMember) -> None:
        """Kafka's maybeUpdatePartitionEpoch: release `old`'s partitions, take `new`'s."""
        self.remove_member(old)
        self.add(new.assigned_partitions, new.member_epoch)
        self.add(new.partitions_pending_revocation, new.member_epoch)

    def remove_member(self, old: ConsumerGroupMember | None) -> None:
        if old is not None:
            self.remove(old.assigned_partitions, old.member_epoch)
            self.remove(old.partitions_pending_revocation, old.member_epoch)

    @classmethod
    def from_members(cls, members: Iterable[ConsumerGroupMember]) -> PartitionEpochs:
        epochs = cls()
        for m in members:
            epochs.update_member(None, m)
        return epochs

    def __eq__(self, other) -> bool:
        return isinstance(other, PartitionEpochs) and self._epochs == other._epochs

    def __len__(self) -> int:
        return sum(len(p) for p in self._epochs.values())

    def to_json(self) -> dict:
        """{topic: {"partition": epoch}} (string keys only)."""
        return {
            t: {str(p): e for p, e in sorted(ps.items())}
            for t, ps in sorted(self._epochs.items(), key=lambda kv: order_key(kv[0]))
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Mapping[str, int]]) -> PartitionEpochs:
        epochs = cls()
        epochs._epochs = {t: {int(p): int(e) for p, e in ps.items()} for t, ps in data.items() if ps}
        return epochs


@dataclass(frozen=True)
class SubscriptionCount:
    """How many members subscribe to a topic by name, and how many resolved regexes match it."""

    by_name_count: int = 0
    by_regex_count: int = 0


def subscribed_topic_counts(
    members: Iterable[ConsumerGroupMember], resolved_regular_expressions: ResolvedRegexes | None = None
) -> dict[str, SubscriptionCount]:
    """Kafka's `subscribedTopicNames` map: per topic name, the members naming it and the
    (distinct, resolved) regexes matching it. Topics need not exist."""
    by_name: dict[str, int] = {}
    regexes = set()
    same: dict = {}  # members mostly share subscriptions: count each distinct one once
    for m in members:
        same[m.subscribed_topic_names] = same.get(m.subscribed_topic_names, 0) + 1
        if m.subscribed_topic_regex:
            regexes.add(m.subscribed_topic_regex)
    for names, n in same.items():
        for t in names:
            by_name[t] = by_name.get(t, 0) + n
    by_regex: dict[str, int] = {}
    for regex in regexes:
        resolved = (resolved_regular_expressions or {}).get(regex)
        if resolved is None:
            continue
        topics = resolved.topics if isinstance(resolved, ResolvedRegularExpression) else resolved
        for t in topics:
            by_regex[t] = by_regex.get(t, 0) + 1
    return {t: SubscriptionCount(by_name.get(t, 0), by_regex.get(t, 0)) for t in set(by_name) | set(by_regex)}


def subscribed_regular_expressions(members: Iterable[ConsumerGroupMember]) -> dict[str, int]:
    """regex -> number of members subscribed to it."""
    counts: dict[str, int] = {}
    for m in members:
        if m.subscribed_topic_regex:
            counts[m.subscribed_topic_regex] = counts.get(m.subscribed_topic_regex, 0) + 1
    return counts


def subscription_type(
    members: Iterable[ConsumerGroupMember], resolved_regular_expressions: ResolvedRegexes | None = None
) -> SubscriptionType:
    """Kafka's ConsumerGroup.subscriptionType over the given members.

    Without regexes: HOMOGENEOUS iff every subscribed topic name is named by every member.
    With regexes: HOMOGENEOUS iff all members subscribe to one same regex and to no names, and
    that regex is the only one matching each topic; otherwise HETEROGENEOUS."""
    members = list(members)
    regexes = subscribed_regular_expressions(members)
    counts = subscribed_topic_counts(members, resolved_regular_expressions)
    n = len(members)
    if not regexes:
        return (
            SubscriptionType.HOMOGENEOUS
            if all(c.by_name_count == n for c in counts.values())
            else SubscriptionType.HETEROGENEOUS
        )
    # Kafka looks at the first regex's count; with one regex per member, count == n means it is
    # the only regex.
    if len(regexes) == 1 and next(iter(regexes.values())) == n:
        return (
            SubscriptionType.HOMOGENEOUS
            if all(c.by_regex_count == 1 and c.by_name_count == 0 for c in counts.values())
            else SubscriptionType.HETEROGENEOUS
        )
    return SubscriptionType.HETEROGENEOUS


def server_assignor_counts(members: Iterable[ConsumerGroupMember]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in members:
        if m.server_assignor_name is not None:
            counts[m.server_assignor_name] = counts.get(m.server_assignor_name, 0) + 1
    return counts


def preferred_server_assignor(members: Iterable[ConsumerGroupMember], default: str | None = None) -> str | None:
    """The server assignor most members ask for, else `default` (Kafka: the first configured
    assignor). Ties: Kafka takes the first in its hash table's iteration order; this takes the
    first in Java string order."""
    counts = server_assignor_counts(members)
    if not counts:
        return default
    best = max(counts.values())
    return min((name for name, c in counts.items() if c == best), key=order_key)
