"""Kafka's GroupMetadataManagerTest.testReconciliationProcess, at the reconciliation level.

Three members, topics foo (6) and bar (3). Members 1 and 2 are STABLE at epoch 10; member 3
joins, the (mocked) assignor moves foo-2 and bar-1 from member 1 and foo-4, foo-5 from member 2
to member 3. Revoke before assign: member 3 gets each partition only after its owner acknowledged
the revocation. The member states, epochs and assignments after each heartbeat are Kafka's (they
are what Kafka writes in the ConsumerGroupCurrentMemberAssignment records). Whether a response
carries the assignment follows Kafka 4.x: on a full request (epoch 0, or rebalance timeout,
subscription and owned partitions all set) or when the assignment changed.
"""
from __future__ import annotations

from coordinator.group.consumer.group import ConsumerGroup
from coordinator.group.consumer.group_state import ConsumerGroupState
from coordinator.group.consumer.member import ConsumerGroupMember, MemberState

from .helpers import mk_assignment, mk_topic_assignment as tp
from .mini_coordinator import MiniCoordinator

FOO, BAR = "foo", "bar"
M1, M2, M3 = "member-1", "member-2", "member-3"
STABLE, UNREVOKED, UNRELEASED = (MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS,
                                 MemberState.UNRELEASED_PARTITIONS)


class PreparedAssignor:
    name = "range"

    def __init__(self, assignment):
        self.assignment = assignment

    def assign(self, spec, describer):
        return self.assignment


def stable_member(member_id, assigned):
    return ConsumerGroupMember(member_id, member_epoch=10, previous_member_epoch=9,
                               state=STABLE, client_id="client", client_host="localhost/127.0.0.1",
                               rebalance_timeout_ms=5000, subscribed_topic_names=frozenset({FOO, BAR}),
                               server_assignor_name="range", assigned_partitions=assigned)


def current(member_id, state, epoch, previous, assigned=None, pending=None):
    """The current-assignment part Kafka records for the member."""
    return {"memberEpoch": epoch, "previousMemberEpoch": previous, "state": state.name,
            "assignedPartitions": {t: sorted(p) for t, p in sorted((assigned or {}).items())},
            "partitionsPendingRevocation": {t: sorted(p) for t, p in sorted((pending or {}).items())}}


def test_reconciliation_process():
    group = ConsumerGroup("fooup")
    group.group_epoch = 10
    group.target_assignment_epoch = 10
    a1 = mk_assignment(tp(FOO, 0, 1, 2), tp(BAR, 0, 1))
    a2 = mk_assignment(tp(FOO, 3, 4, 5), tp(BAR, 2))
    group.update_member(stable_member(M1, a1))
    group.update_member(stable_member(M2, a2))
    group.update_target_assignment(M1, a1)
    group.update_target_assignment(M2, a2)
    assignor = PreparedAssignor({
        M1: mk_assignment(tp(FOO, 0, 1), tp(BAR, 0)),
        M2: mk_assignment(tp(FOO, 2, 3), tp(BAR, 2)),
        M3: mk_assignment(tp(FOO, 4, 5), tp(BAR, 1)),
    })
    coordinator = MiniCoordinator(group, {FOO: 6, BAR: 3}, assignor)

    def state_of(member_id):
        return group.members[member_id].assignment_value()

    assert group.members[M1].state == STABLE and group.members[M2].state == STABLE
    assert group.state == ConsumerGroupState.STABLE

    # Member 3 joins: a new target assignment for epoch 11. Member 3 gets nothing yet (all its
    # partitions are still owned) but moves to epoch 11, UNRELEASED_PARTITIONS.
    r = coordinator.heartbeat(M3, 0, subscribed_topic_names=[FOO, BAR], owned={},
                              rebalance_timeout_ms=5000)
    assert (r.member_epoch, r.assignment) == (11, {})
    assert state_of(M3) == current(M3, UNRELEASED, 11, 0)
    assert group.state == ConsumerGroupState.RECONCILING

    # Member 1 heartbeats: it stays at epoch 10, must revoke foo-2 and bar-1; the response carries
    # its new assignment without them.
    r = coordinator.heartbeat(M1, 10)
    assert (r.member_epoch, r.assignment) == (10, mk_assignment(tp(FOO, 0, 1), tp(BAR, 0)))
    assert state_of(M1) == current(M1, UNREVOKED, 10, 10, mk_assignment(tp(FOO, 0, 1), tp(BAR, 0)),
                                   mk_assignment(tp(FOO, 2), tp(BAR, 1)))
    assert group.state == ConsumerGroupState.RECONCILING

    # Member 2 likewise: foo-4 and foo-5 to revoke.
    r = coordinator.heartbeat(M2, 10)
    assert (r.member_epoch, r.assignment) == (10, mk_assignment(tp(FOO, 3), tp(BAR, 2)))
    assert state_of(M2) == current(M2, UNREVOKED, 10, 10, mk_assignment(tp(FOO, 3), tp(BAR, 2)),
                                   mk_assignment(tp(FOO, 4, 5)))

    # Member 3 heartbeats: still waiting; no assignment in the response. Its previous epoch moves
    # to 11 (Kafka writes a record for that).
    r = coordinator.heartbeat(M3, 11)
    assert (r.member_epoch, r.assignment) == (11, None)
    assert state_of(M3) == current(M3, UNRELEASED, 11, 11)

    # Member 1 acknowledges the revocation by reporting what it still owns: epoch 11, STABLE.
    r = coordinator.heartbeat(M1, 10, owned={FOO: [0, 1], BAR: [0]})
    assert r.member_epoch == 11
    assert r.assignment is None  # unchanged, and not a full request (Kafka 4.x)
    assert state_of(M1) == current(M1, STABLE, 11, 10, mk_assignment(tp(FOO, 0, 1), tp(BAR, 0)))
    assert group.state == ConsumerGroupState.RECONCILING

    # Member 2 heartbeats without acknowledging: nothing changes.
    before = group.members[M2]
    r = coordinator.heartbeat(M2, 10)
    assert (r.member_epoch, r.assignment) == (10, None)
    assert group.members[M2] is before

    # Member 3 gets bar-1, released by member 1, and keeps waiting for foo-4 and foo-5.
    r = coordinator.heartbeat(M3, 11)
    assert (r.member_epoch, r.assignment) == (11, mk_assignment(tp(BAR, 1)))
    assert state_of(M3) == current(M3, UNRELEASED, 11, 11, mk_assignment(tp(BAR, 1)))

    # Member 3 again: member 2 has not released anything, no change.
    before = group.members[M3]
    r = coordinator.heartbeat(M3, 11)
    assert (r.member_epoch, r.assignment) == (11, None)
    assert group.members[M3] is before

    # Member 2 acknowledges: epoch 11, STABLE, and it gets foo-2 (released by member 1).
    r = coordinator.heartbeat(M2, 10, owned={FOO: [3], BAR: [2]})
    assert (r.member_epoch, r.assignment) == (11, mk_assignment(tp(FOO, 2, 3), tp(BAR, 2)))
    assert state_of(M2) == current(M2, STABLE, 11, 10, mk_assignment(tp(FOO, 2, 3), tp(BAR, 2)))
    assert group.state == ConsumerGroupState.RECONCILING

    # Member 3 acknowledges bar-1 and gets foo-4 and foo-5: everyone is STABLE at epoch 11.
    r = coordinator.heartbeat(M3, 11, owned={BAR: [1]})
    assert (r.member_epoch, r.assignment) == (11, mk_assignment(tp(FOO, 4, 5), tp(BAR, 1)))
    assert state_of(M3) == current(M3, STABLE, 11, 11, mk_assignment(tp(FOO, 4, 5), tp(BAR, 1)))
    assert group.state == ConsumerGroupState.STABLE
    assert coordinator.target_computations == 1


def test_revocation_before_assignment_holds_at_every_step():
    """The same walk-through with the real uniform assignor: at no point is a partition in two
    members' assigned or pending-revocation sets (PartitionEpochs would raise)."""
    group = ConsumerGroup("g")
    coordinator = MiniCoordinator(group, {FOO: 6, BAR: 3})
    owned = {}
    epochs = {}
    for m in (M1, M2):
        r = coordinator.heartbeat(m, 0, subscribed_topic_names=[FOO, BAR], owned={},
                                  rebalance_timeout_ms=5000)
        epochs[m], owned[m] = r.member_epoch, r.assignment
    for _ in range(3):
        for m in (M1, M2):
            r = coordinator.heartbeat(m, epochs[m], owned=owned[m])
            epochs[m] = r.member_epoch
            owned[m] = r.assignment if r.assignment is not None else owned[m]
    assert group.state == ConsumerGroupState.STABLE
    r = coordinator.heartbeat(M3, 0, subscribed_topic_names=[FOO, BAR], owned={}, rebalance_timeout_ms=5000)
    epochs[M3], owned[M3] = r.member_epoch, r.assignment
    for _ in range(3):
        for m in (M1, M2, M3):
            r = coordinator.heartbeat(m, epochs[m], owned=owned[m])
            epochs[m] = r.member_epoch
            if r.assignment is not None:
                owned[m] = r.assignment
            flat = [(t, p) for a in owned.values() for t, ps in a.items() for p in ps]
            assert len(flat) == len(set(flat))
    assert group.state == ConsumerGroupState.STABLE
    assert sum(sum(map(len, a.values())) for a in owned.values()) == 9


def _rejoin_case(state, group_epoch, assigned, pending, target):
    group = ConsumerGroup("fooup")
    group.group_epoch = group.target_assignment_epoch = group_epoch
    group.update_member(ConsumerGroupMember(
        "m", member_epoch=100, previous_member_epoch=99, state=state, rebalance_timeout_ms=5000,
        subscribed_topic_names=frozenset({FOO}), server_assignor_name="range",
        assigned_partitions=assigned, partitions_pending_revocation=pending))
    group.update_target_assignment("m", target)
    coordinator = MiniCoordinator(group, {FOO: 3}, PreparedAssignor({}))
    r = coordinator.heartbeat("m", 0, subscribed_topic_names=[FOO], owned={}, rebalance_timeout_ms=5000)
    assert group.group_epoch == group_epoch and coordinator.target_computations == 0  # no bump
    return r


def test_member_can_rejoin_with_epoch_zero_in_stable_state():
    r = _rejoin_case(STABLE, 100, mk_assignment(tp(FOO, 0, 1, 2)), {}, mk_assignment(tp(FOO, 0, 1, 2)))
    assert (r.member_epoch, r.assignment) == (100, mk_assignment(tp(FOO, 0, 1, 2)))


def test_member_can_rejoin_with_epoch_zero_in_unrevoked_partitions_state():
    # The group moved to epoch 101 with target [0, 1]; the member still had 2 to revoke. It
    # rejoins owning nothing, so it has revoked: epoch 101, [0, 1].
    r = _rejoin_case(UNREVOKED, 101, mk_assignment(tp(FOO, 0, 1)), mk_assignment(tp(FOO, 2)),
                     mk_assignment(tp(FOO, 0, 1)))
    assert (r.member_epoch, r.assignment) == (101, mk_assignment(tp(FOO, 0, 1)))


def test_member_can_rejoin_with_epoch_zero_in_unreleased_partitions_state():
    r = _rejoin_case(UNRELEASED, 100, mk_assignment(tp(FOO, 0)), {}, mk_assignment(tp(FOO, 0, 1, 2)))
    assert (r.member_epoch, r.assignment) == (100, mk_assignment(tp(FOO, 0, 1, 2)))
