"""Kafka's GroupMetadataManagerTest.testReconciliationProcess, through the real coordinator
(ConsumerGroupHeartbeat requests on a CoreDriver, the group seeded by its state-log records).

Three members, topics foo (6) and bar (3). Members 1 and 2 are STABLE at epoch 10; member 3
joins, the (mocked) assignor moves foo-2 and bar-1 from member 1 and foo-4, foo-5 from member 2
to member 3. Revoke before assign: member 3 gets each partition only after its owner acknowledged
the revocation. The member states, epochs and assignments after each heartbeat are Kafka's (they
are what Kafka writes in the ConsumerGroupCurrentMemberAssignment records). Whether a response
carries the assignment follows Kafka 4.x: on a full request (epoch 0, or rebalance timeout,
subscription and owned partitions all set) or when the assignment changed.
"""

from __future__ import annotations

from coordinator.group.consumer.group_state import ConsumerGroupState
from coordinator.group.consumer.member import ConsumerGroupMember, MemberState
from coordinator.records import record_key
from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient, mock_assignor

from .helpers import mk_assignment
from .helpers import mk_topic_assignment as tp

__all__ = ["mock_assignor"]  # the fixture

GROUP = "fooup"
FOO, BAR = "foo", "bar"
M1, M2, M3 = "member-1", "member-2", "member-3"
STABLE, UNREVOKED, UNRELEASED = (
    MemberState.STABLE,
    MemberState.UNREVOKED_PARTITIONS,
    MemberState.UNRELEASED_PARTITIONS,
)


def client(topics: dict) -> ConsumerGroupTestClient:
    return ConsumerGroupTestClient(GROUP, topics, group_consumer_assignors=["mock"])


def stable_member(member_id, assigned, epoch=10, state=STABLE, pending=None, topics=(FOO, BAR)):
    return ConsumerGroupMember(
        member_id,
        member_epoch=epoch,
        previous_member_epoch=epoch - 1,
        state=state,
        client_id="client",
        client_host="localhost/127.0.0.1",
        rebalance_timeout_ms=5000,
        subscribed_topic_names=frozenset(topics),
        server_assignor_name="mock",
        assigned_partitions=assigned,
        partitions_pending_revocation=pending or {},
    )


def current(member_id, state, epoch, previous, assigned=None, pending=None, at=None, epochs=None):
    """The current-assignment part Kafka records for the member: its partitions assigned at epoch
    `at` (default: the member epoch), those in `epochs` ({topic: {partition: epoch}}) at theirs."""

    def epochs_of(assignment):
        return {
            t: [(epochs or {}).get(t, {}).get(p, epoch if at is None else at) for p in sorted(ps)]
            for t, ps in sorted((assignment or {}).items())
        }

    return {
        "memberEpoch": epoch,
        "previousMemberEpoch": previous,
        "state": state.name,
        "assignedPartitions": {t: sorted(p) for t, p in sorted((assigned or {}).items())},
        "partitionsPendingRevocation": {t: sorted(p) for t, p in sorted((pending or {}).items())},
        "assignedPartitionsAssignmentEpochs": epochs_of(assigned),
        "partitionsPendingRevocationAssignmentEpochs": epochs_of(pending),
    }


def response(c: ConsumerGroupTestClient, r: dict):
    """(member epoch, assignment by topic name as frozensets, or None when not sent)."""
    assert r["errorCode"] == 0, r
    a = c.assignment(r)
    return r["memberEpoch"], None if a is None else mk_assignment(*((t, frozenset(p)) for t, p in a.items()))


def current_records(c: ConsumerGroupTestClient, since: int, member_id: str) -> list[dict]:
    key = record_key("ConsumerGroupCurrentMemberAssignment", GROUP, member_id)
    return [v for k, v in c.records(since) if k == key]


def test_reconciliation_process(mock_assignor):
    c = client({FOO: 6, BAR: 3})
    a1 = mk_assignment(tp(FOO, 0, 1, 2), tp(BAR, 0, 1))
    a2 = mk_assignment(tp(FOO, 3, 4, 5), tp(BAR, 2))
    c.inject_group(10, [stable_member(M1, a1), stable_member(M2, a2)])
    mock_assignor.prepare(
        {
            M1: mk_assignment(tp(FOO, 0, 1), tp(BAR, 0)),
            M2: mk_assignment(tp(FOO, 2, 3), tp(BAR, 2)),
            M3: mk_assignment(tp(FOO, 4, 5), tp(BAR, 1)),
        }
    )

    def state_of(member_id):
        return c.member(member_id).assignment_value()

    assert c.member(M1).state == STABLE and c.member(M2).state == STABLE
    assert c.group().state == ConsumerGroupState.STABLE

    # Member 3 joins: a new target assignment for epoch 11. Member 3 gets nothing yet (all its
    # partitions are still owned) but moves to epoch 11, UNRELEASED_PARTITIONS.
    r = c.join(M3, [FOO, BAR], assignor="mock")
    assert response(c, r) == (11, {})
    assert state_of(M3) == current(M3, UNRELEASED, 11, 0)
    assert c.group().state == ConsumerGroupState.RECONCILING

    # Member 1 heartbeats: it stays at epoch 10, must revoke foo-2 and bar-1; the response carries
    # its new assignment without them.
    r = c.heartbeat(M1, 10)
    assert response(c, r) == (10, mk_assignment(tp(FOO, 0, 1), tp(BAR, 0)))
    assert state_of(M1) == current(
        M1, UNREVOKED, 10, 10, mk_assignment(tp(FOO, 0, 1), tp(BAR, 0)), mk_assignment(tp(FOO, 2), tp(BAR, 1))
    )
    assert c.group().state == ConsumerGroupState.RECONCILING

    # Member 2 likewise: foo-4 and foo-5 to revoke.
    r = c.heartbeat(M2, 10)
    assert response(c, r) == (10, mk_assignment(tp(FOO, 3), tp(BAR, 2)))
    assert state_of(M2) == current(
        M2, UNREVOKED, 10, 10, mk_assignment(tp(FOO, 3), tp(BAR, 2)), mk_assignment(tp(FOO, 4, 5))
    )

    # Member 3 heartbeats: still waiting; no assignment in the response. Its previous epoch moves
    # to 11 (Kafka writes a record for that).
    mark = len(c.records())
    r = c.heartbeat(M3, 11)
    assert response(c, r) == (11, None)
    assert state_of(M3) == current(M3, UNRELEASED, 11, 11)
    assert [v["previousMemberEpoch"] for v in current_records(c, mark, M3)] == [11]

    # Member 1 acknowledges the revocation by reporting what it still owns: epoch 11, STABLE.
    r = c.heartbeat(M1, 10, owned={FOO: [0, 1], BAR: [0]})
    assert response(c, r) == (11, None)  # unchanged, and not a full request (Kafka 4.x)
    # Kept partitions keep the epoch at which they were assigned (Kafka 4.3+).
    assert state_of(M1) == current(M1, STABLE, 11, 10, mk_assignment(tp(FOO, 0, 1), tp(BAR, 0)), at=10)
    assert c.group().state == ConsumerGroupState.RECONCILING

    # Member 2 heartbeats without acknowledging: nothing changes, nothing is written.
    before, mark = state_of(M2), len(c.records())
    r = c.heartbeat(M2, 10)
    assert response(c, r) == (10, None)
    assert state_of(M2) == before and c.records(mark) == []

    # Member 3 gets bar-1, released by member 1, and keeps waiting for foo-4 and foo-5.
    r = c.heartbeat(M3, 11)
    assert response(c, r) == (11, mk_assignment(tp(BAR, 1)))
    assert state_of(M3) == current(M3, UNRELEASED, 11, 11, mk_assignment(tp(BAR, 1)))

    # Member 3 again: member 2 has not released anything, no change.
    before, mark = state_of(M3), len(c.records())
    r = c.heartbeat(M3, 11)
    assert response(c, r) == (11, None)
    assert state_of(M3) == before and c.records(mark) == []

    # Member 2 acknowledges: epoch 11, STABLE, and it gets foo-2 (released by member 1).
    r = c.heartbeat(M2, 10, owned={FOO: [3], BAR: [2]})
    assert response(c, r) == (11, mk_assignment(tp(FOO, 2, 3), tp(BAR, 2)))
    assert state_of(M2) == current(
        M2, STABLE, 11, 10, mk_assignment(tp(FOO, 2, 3), tp(BAR, 2)), at=10, epochs={FOO: {2: 11}}
    )
    assert c.group().state == ConsumerGroupState.RECONCILING

    # Member 3 acknowledges bar-1 and gets foo-4 and foo-5: everyone is STABLE at epoch 11.
    r = c.heartbeat(M3, 11, owned={BAR: [1]})
    assert response(c, r) == (11, mk_assignment(tp(FOO, 4, 5), tp(BAR, 1)))
    assert state_of(M3) == current(M3, STABLE, 11, 11, mk_assignment(tp(FOO, 4, 5), tp(BAR, 1)))
    assert c.group().state == ConsumerGroupState.STABLE
    assert mock_assignor.calls == 1  # one target assignment, for epoch 11


def test_revocation_before_assignment_holds_at_every_step():
    """The same walk-through with the real uniform assignor: at no point is a partition in two
    members' assigned or pending-revocation sets (PartitionEpochs would raise)."""
    c = ConsumerGroupTestClient("g", {FOO: 6, BAR: 3})
    owned = {}
    epochs = {}

    def heartbeat(m, **kw):
        r = c.heartbeat(m, epochs[m], owned=owned[m], **kw)
        assert r["errorCode"] == 0, r
        epochs[m] = r["memberEpoch"]
        if r["assignment"] is not None:
            owned[m] = c.assignment(r)

    for m in (M1, M2):
        r = c.join(m, [FOO, BAR], assignor="uniform")
        epochs[m], owned[m] = r["memberEpoch"], c.assignment(r)
    for _ in range(3):
        for m in (M1, M2):
            heartbeat(m)
    assert c.group().state == ConsumerGroupState.STABLE
    r = c.join(M3, [FOO, BAR], assignor="uniform")
    epochs[M3], owned[M3] = r["memberEpoch"], c.assignment(r)
    for _ in range(3):
        for m in (M1, M2, M3):
            heartbeat(m)
            flat = [(t, p) for a in owned.values() for t, ps in a.items() for p in ps]
            assert len(flat) == len(set(flat))
    assert c.group().state == ConsumerGroupState.STABLE
    assert sum(sum(map(len, a.values())) for a in owned.values()) == 9


def _rejoin_case(mock_assignor, state, group_epoch, assigned, pending, target):
    c = client({FOO: 3})
    c.inject_group(
        group_epoch,
        [stable_member("m", assigned, epoch=100, state=state, pending=pending, topics=(FOO,))],
        targets={"m": target},
    )
    r = c.join("m", [FOO], assignor="mock")
    assert c.group().group_epoch == group_epoch and mock_assignor.calls == 0  # no bump
    return response(c, r)


def test_member_can_rejoin_with_epoch_zero_in_stable_state(mock_assignor):
    r = _rejoin_case(mock_assignor, STABLE, 100, mk_assignment(tp(FOO, 0, 1, 2)), {}, mk_assignment(tp(FOO, 0, 1, 2)))
    assert r == (100, mk_assignment(tp(FOO, 0, 1, 2)))


def test_member_can_rejoin_with_epoch_zero_in_unrevoked_partitions_state(mock_assignor):
    # The group moved to epoch 101 with target [0, 1]; the member still had 2 to revoke. It
    # rejoins owning nothing, so it has revoked: epoch 101, [0, 1].
    r = _rejoin_case(
        mock_assignor,
        UNREVOKED,
        101,
        mk_assignment(tp(FOO, 0, 1)),
        mk_assignment(tp(FOO, 2)),
        mk_assignment(tp(FOO, 0, 1)),
    )
    assert r == (101, mk_assignment(tp(FOO, 0, 1)))


def test_member_can_rejoin_with_epoch_zero_in_unreleased_partitions_state(mock_assignor):
    r = _rejoin_case(mock_assignor, UNRELEASED, 100, mk_assignment(tp(FOO, 0)), {}, mk_assignment(tp(FOO, 0, 1, 2)))
    assert r == (100, mk_assignment(tp(FOO, 0, 1, 2)))
