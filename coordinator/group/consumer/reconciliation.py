"""The reconciliation engine of the consumer group protocol (Kafka's CurrentAssignmentBuilder).

Given a member's current state and its target assignment, computes the member's next state,
one step at a time, so that a partition is never given to a member while another member may
still own it: revoke before assign.

Per topic, with `current` the member's assigned partitions and `target` its target partitions
(empty if the member no longer subscribes to the topic):

    assigned'           = current ∩ target
    pending revocation  = current − assigned'
    pending assignment  = target − assigned' − unreleased
    unreleased          = partitions whose current partition epoch is not -1 (another member
                          still holds them), unless the member itself holds them pending revocation

and then, in this order:
  1. something to revoke that the member still reports owning (a null owned list counts as
     owning) -> UNREVOKED_PARTITIONS at the member's current epoch, assigned' only;
  2. something to assign -> assign it, move to the target epoch, STABLE (UNRELEASED_PARTITIONS if
     some target partitions are still held elsewhere);
  3. only unreleased partitions -> UNRELEASED_PARTITIONS at the target epoch;
  4. otherwise STABLE at the target epoch.

Every assigned or pending partition keeps the epoch at which it was assigned (KIP-1251): a kept or
revoked partition its old one, a newly assigned one the target epoch.

UNREVOKED_PARTITIONS waits until the owned partitions no longer include any partition pending
revocation, then reconciles again from its epoch (Kafka 4.2+; 4.1 advanced one epoch, which the
assignment epochs made unnecessary);
UNRELEASED_PARTITIONS re-runs the computation on every heartbeat; UNKNOWN fences the member
(FENCED_MEMBER_EPOCH) unless it reports owning nothing. A STABLE member already at the target
epoch only drops partitions of topics it no longer subscribes to, when its subscription changed.

This is Kafka 4.4's builder: it includes KAFKA-19431 (assignments follow subscription changes
immediately) and KAFKA-19449 (a partition pending revocation by the member itself is not
"unreleased" for it).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping

from ...errors import ApiError, Errors
from .member import ConsumerGroupMember, MemberState, ResolvedRegexes, ResolvedRegularExpression
from .topic_partitions import freeze

CurrentPartitionEpoch = Callable[[str, int], int]
Owned = Mapping[str, Iterable[int]]

UNKNOWN_STATE_MESSAGE = (
    "The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin."
)


def subscribed_topics(
    member: ConsumerGroupMember,
    resolved_regular_expressions: ResolvedRegexes | None = None,
    topics: Container[str] | None = None,
) -> frozenset:
    """The topics the member subscribes to: its topic names plus the topics its regex resolved to
    (an unresolved regex matches nothing), narrowed to existing topics when `topics` is given
    (Kafka narrows with the metadata image). Resolved regexes may be ResolvedRegularExpression
    objects or plain topic collections."""
    subscriptions = member.subscribed_topic_names
    regex = member.subscribed_topic_regex
    if regex:
        resolved = (resolved_regular_expressions or {}).get(regex)
        if resolved is not None:
            regex_topics = resolved.topics if isinstance(resolved, ResolvedRegularExpression) else frozenset(resolved)
            if not subscriptions:
                subscriptions = frozenset(regex_topics)
            elif regex_topics:
                subscriptions = subscriptions | frozenset(regex_topics)
    if topics is not None:
        subscriptions = frozenset(t for t in subscriptions if t in topics)
    return subscriptions


class CurrentAssignmentBuilder:
    def __init__(self, member: ConsumerGroupMember):
        self.member = member
        self.target_assignment_epoch = 0
        self.target_assignment: dict = {}
        self.has_subscription_changed = False
        self.resolved_regular_expressions: Mapping = {}
        self.topics: Container[str] | None = None
        self.current_partition_epoch: CurrentPartitionEpoch | None = None
        self.owned_topic_partitions: Owned | None = None

    # ------------------------------------------------------------------ inputs
    def with_target_assignment(self, epoch: int, assignment: Mapping[str, Iterable[int]]):
        self.target_assignment_epoch = epoch
        self.target_assignment = freeze(assignment)
        return self

    def with_has_subscription_changed(self, changed: bool):
        self.has_subscription_changed = changed
        return self

    def with_resolved_regular_expressions(self, resolved: ResolvedRegexes):
        self.resolved_regular_expressions = resolved
        return self

    def with_topic_metadata(self, topics: Container[str] | None):
        """The existing topics (Kafka's metadata image). None: every subscribed topic exists."""
        self.topics = topics
        return self

    def with_current_partition_epoch(self, fn: CurrentPartitionEpoch):
        """`fn(topic, partition)`: the epoch of the partition's current owner, or -1 if free."""
        self.current_partition_epoch = fn
        return self

    def with_owned_topic_partitions(self, owned: Owned | None):
        """The partitions the member reports owning, or None if the request did not say."""
        self.owned_topic_partitions = owned
        return self

    # ------------------------------------------------------------------ state machine
    def build(self) -> ConsumerGroupMember:
        """The member's next state, or the member itself if it cannot move forward."""
        if self.current_partition_epoch is None:
            raise ValueError("current_partition_epoch is required")
        member = self.member
        state = member.state
        if state == MemberState.STABLE:
            if member.member_epoch != self.target_assignment_epoch:
                return self._compute_next_assignment(member.member_epoch, member.assigned_partitions)
            if self.has_subscription_changed:
                return self._update_current_assignment(member.assigned_partitions)
            return member
        if state == MemberState.UNREVOKED_PARTITIONS:
            if self._owns_revoked_partitions(member.partitions_pending_revocation):
                if self.has_subscription_changed:
                    return self._update_current_assignment(member.assigned_partitions)
                return member
            # All revoked: reconcile with the latest target.
            return self._compute_next_assignment(member.member_epoch, member.assigned_partitions)
        if state == MemberState.UNRELEASED_PARTITIONS:
            return self._compute_next_assignment(member.member_epoch, member.assigned_partitions)
        # UNKNOWN: only a downgraded coordinator sees it; reset the member from scratch.
        owned = self.owned_topic_partitions
        if owned is None or len(owned) > 0:  # Kafka: a null or non-empty owned list
            raise ApiError(Errors.FENCED_MEMBER_EPOCH, UNKNOWN_STATE_MESSAGE)
        return self._compute_next_assignment(self.target_assignment_epoch, member.assigned_partitions)

    def _subscribed(self) -> frozenset:
        return subscribed_topics(self.member, self.resolved_regular_expressions, self.topics)

    def _owns_revoked_partitions(self, pending: Mapping[str, frozenset]) -> bool:
        owned = self.owned_topic_partitions
        if owned is None:
            return True
        for topic, partitions in owned.items():
            revoking = pending.get(topic)
            if revoking and any(p in revoking for p in partitions):
                return True
        return False

    def _update_current_assignment(self, assigned: Mapping[str, frozenset]) -> ConsumerGroupMember:
        """Drops the partitions of topics the member no longer subscribes to (faster than a full
        reconciliation; used when the epoch does not change)."""
        member = self.member
        subscribed = self._subscribed()
        if not subscribed and not member.partitions_pending_revocation:
            if not assigned:
                return member
            new_assigned: dict = {}
            new_pending = dict(assigned)
        else:
            removed = [t for t in assigned if t not in subscribed]
            if not removed:
                return member
            new_assigned = {t: p for t, p in assigned.items() if t in subscribed}
            new_pending = dict(member.partitions_pending_revocation)
            for t in removed:
                cur = new_pending.get(t)
                new_pending[t] = assigned[t] if cur is None else cur | assigned[t]
        # The member epoch stays, the previous one becomes it (Kafka 4.3+'s updateMemberEpoch).
        if new_pending and self._owns_revoked_partitions(new_pending):
            return member.update_member_epoch(
                member.member_epoch,
                state=MemberState.UNREVOKED_PARTITIONS,
                assigned_partitions=new_assigned,
                partitions_pending_revocation=new_pending,
            )
        # Removed, but already revoked: keep the state, shrink the assignment.
        return member.update_member_epoch(member.member_epoch, assigned_partitions=new_assigned)

    def _compute_next_assignment(self, member_epoch: int, assigned: Mapping[str, frozenset]) -> ConsumerGroupMember:
        member = self.member
        subscribed = self._subscribed()
        epoch_of = self.current_partition_epoch
        assert epoch_of is not None  # build() checked it
        own_pending = member.partitions_pending_revocation
        empty: frozenset[int] = frozenset()

        has_unreleased = False
        new_assigned: dict = {}
        new_pending_revocation: dict = {}
        new_pending_assignment: dict = {}
        for topic in set(self.target_assignment) | set(assigned):
            target = self.target_assignment.get(topic, empty) if topic in subscribed else empty
            current = assigned.get(topic, empty)
            kept = current & target
            revoking = current - kept
            assigning = target - kept
            if assigning:
                mine = own_pending.get(topic, empty)
                free = frozenset(p for p in assigning if epoch_of(topic, p) == -1 or p in mine)
                if len(free) != len(assigning):
                    has_unreleased = True
                assigning = free
            if kept:
                new_assigned[topic] = kept
            if revoking:
                new_pending_revocation[topic] = revoking
            if assigning:
                new_pending_assignment[topic] = assigning

        if new_pending_revocation and self._owns_revoked_partitions(new_pending_revocation):
            # Revoke first: stay at the current epoch until the member acknowledges.
            return member.update_member_epoch(
                member_epoch,
                state=MemberState.UNREVOKED_PARTITIONS,
                assigned_partitions=new_assigned,
                partitions_pending_revocation=new_pending_revocation,
            )
        epochs: Mapping[str, Mapping[int, int]] = member.partition_epochs
        if new_pending_assignment:
            # Newly assigned partitions are assigned at the target epoch (also one the member
            # still held pending revocation); the kept ones keep theirs.
            updated = {t: dict(e) for t, e in epochs.items()}
            for topic, partitions in new_pending_assignment.items():
                cur = new_assigned.get(topic)
                new_assigned[topic] = partitions if cur is None else cur | partitions
                updated.setdefault(topic, {}).update(dict.fromkeys(partitions, self.target_assignment_epoch))
            epochs = updated
            state = MemberState.UNRELEASED_PARTITIONS if has_unreleased else MemberState.STABLE
        elif has_unreleased:
            state = MemberState.UNRELEASED_PARTITIONS
        else:
            state = MemberState.STABLE
        return member.update_member_epoch(
            self.target_assignment_epoch,
            state=state,
            assigned_partitions=new_assigned,
            partitions_pending_revocation={},
            partition_epochs=epochs,
        )


def reconcile(
    member: ConsumerGroupMember,
    target_assignment_epoch: int,
    target_assignment: Mapping[str, Iterable[int]],
    current_partition_epoch: CurrentPartitionEpoch,
    owned_topic_partitions: Owned | None = None,
    *,
    has_subscription_changed: bool = False,
    resolved_regular_expressions: ResolvedRegexes | None = None,
    topics: Container[str] | None = None,
) -> ConsumerGroupMember:
    """One reconciliation step (see the module docstring). Raises ApiError(FENCED_MEMBER_EPOCH)
    for a member in the UNKNOWN state that still reports partitions."""
    return (
        CurrentAssignmentBuilder(member)
        .with_target_assignment(target_assignment_epoch, target_assignment)
        .with_current_partition_epoch(current_partition_epoch)
        .with_owned_topic_partitions(owned_topic_partitions)
        .with_has_subscription_changed(has_subscription_changed)
        .with_resolved_regular_expressions(resolved_regular_expressions or {})
        .with_topic_metadata(topics)
        .build()
    )
