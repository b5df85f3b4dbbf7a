"""Kafka's TransactionMetadataTest, and the transition table of TransactionState."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from coordinator.errors import ApiError, Errors
from coordinator.txn.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    TV_0,
    TV_2,
    VALID_PREVIOUS_STATES,
    IllegalArgumentError,
    IllegalStateError,
    TransactionMetadata,
    TransactionState,
)

S = TransactionState
PID = 23423
TID = "txnlId"
NOW = 1_000_000


def md(
    state=S.EMPTY,
    epoch=0,
    last=NO_PRODUCER_EPOCH,
    parts=(),
    start=-1,
    prev=NO_PRODUCER_ID,
    nxt=NO_PRODUCER_ID,
    tv=TV_0,
    timeout=30000,
    pid=PID,
):
    return TransactionMetadata(TID, pid, prev, nxt, epoch, last, timeout, state, set(parts), start, NOW, tv)


# ---------------------------------------------------------------------------- TransactionState
def test_transaction_state_id_and_name_mapping():
    names = {
        "Empty": 0,
        "Ongoing": 1,
        "PrepareCommit": 2,
        "PrepareAbort": 3,
        "CompleteCommit": 4,
        "CompleteAbort": 5,
        "Dead": 6,
        "PrepareEpochFence": 7,
    }
    for s in S:
        assert S.from_id(s.id) is s and S.from_name(s.state_name) is s
        assert names[s.state_name] == s.id
    assert S.from_name("Begin") is None  # seed error: there is no BEGIN state
    with pytest.raises(IllegalStateError):
        S.from_id(8)


def test_expiration_allowed_only_in_empty_and_complete_states():
    assert {s for s in S if s.expiration_allowed} == {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}


# Every (from, to) pair: a transition is legal exactly when Kafka's VALID_PREVIOUS_STATES allows it.
PREPARE = {
    S.EMPTY: lambda m: m.prepare_increment_producer_epoch(30000, None, NOW),
    S.ONGOING: lambda m: m.prepare_add_partitions({("t", 0)}, NOW, TV_0),
    S.PREPARE_COMMIT: lambda m: m.prepare_abort_or_commit(S.PREPARE_COMMIT, TV_0, NO_PRODUCER_ID, NOW, False),
    S.PREPARE_ABORT: lambda m: m.prepare_abort_or_commit(S.PREPARE_ABORT, TV_0, NO_PRODUCER_ID, NOW, False),
    S.DEAD: lambda m: m.prepare_dead(),
    S.PREPARE_EPOCH_FENCE: lambda m: m.prepare_fence_producer_epoch(),
}


@pytest.mark.parametrize("source,target", [(a, b) for a, b in itertools.product(S, PREPARE) if a != S.DEAD])
def test_prepare_transition_is_legal_exactly_per_kafka_table(source, target):
    m = md(state=source, epoch=5, parts=[("t", 0)] if source not in (S.EMPTY,) else [], start=NOW)
    if source in VALID_PREVIOUS_STATES[target]:
        transit = PREPARE[target](m)
        assert transit.txn_state == target and m.pending_state == target
    else:
        with pytest.raises(IllegalStateError):
            PREPARE[target](m)
        assert m.pending_state is None


@pytest.mark.parametrize("source", list(S))
def test_complete_states_are_entered_only_from_their_prepare_state(source):
    m = md(state=source, epoch=5, start=NOW)
    if source in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
        transit = m.prepare_complete(NOW)
        expected = S.COMPLETE_COMMIT if source == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        assert transit.txn_state == expected
    else:
        with pytest.raises(IllegalStateError):
            m.prepare_complete(NOW)


def test_a_second_prepare_while_one_is_pending_is_illegal():
    m = md(state=S.EMPTY, epoch=1)
    m.prepare_add_partitions({("t", 0)}, NOW, TV_0)
    with pytest.raises(IllegalStateError):
        m.prepare_add_partitions({("t", 1)}, NOW, TV_0)


def test_completing_without_or_with_another_pending_state_is_illegal():
    m = md(state=S.EMPTY, epoch=1)
    other = md(state=S.EMPTY, epoch=1).prepare_add_partitions({("t", 0)}, NOW, TV_0)
    with pytest.raises(IllegalStateError):
        m.complete_transition_to(other)  # nothing pending
    m.prepare_increment_producer_epoch(30000, None, NOW)
    with pytest.raises(IllegalStateError):
        m.complete_transition_to(other)  # pending Empty, transit Ongoing


def test_completing_a_transition_to_dead_or_epoch_fence_is_illegal():
    m = md(state=S.EMPTY, epoch=1)
    with pytest.raises(IllegalStateError):
        m.complete_transition_to(m.prepare_dead())
    o = md(state=S.ONGOING, epoch=1, start=NOW)
    with pytest.raises(IllegalStateError):
        o.complete_transition_to(o.prepare_fence_producer_epoch())


def test_negative_producer_id_or_epoch_in_a_transition_is_rejected():
    m = md(state=S.EMPTY, epoch=1)
    with pytest.raises(IllegalArgumentError):
        m.prepare_producer_id_rotation(-5, 30000, NOW, False)
    m2 = md(state=S.EMPTY, epoch=NO_PRODUCER_EPOCH)
    with pytest.raises(IllegalArgumentError):
        m2.prepare_add_partitions({("t", 0)}, NOW, TV_0)


def test_ongoing_completion_requires_a_superset_of_partitions_and_the_same_timeout():
    m = md(state=S.ONGOING, epoch=1, parts=[("t", 0), ("t", 1)], start=NOW)
    transit = m.prepare_add_partitions({("t", 2)}, NOW, TV_0)
    with pytest.raises(IllegalStateError):
        m.complete_transition_to(replace(transit, topic_partitions=frozenset({("t", 2)})))
    with pytest.raises(IllegalStateError):
        m.complete_transition_to(replace(transit, txn_timeout_ms=1))


# ---------------------------------------------------------------------------- TransactionMetadataTest
def test_initialize_epoch():
    m = md(epoch=NO_PRODUCER_EPOCH)
    m.complete_transition_to(m.prepare_increment_producer_epoch(30000, None, NOW))
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch) == (PID, 0, NO_PRODUCER_EPOCH)


def test_normal_epoch_bump():
    m = md(epoch=735)
    m.complete_transition_to(m.prepare_increment_producer_epoch(30000, None, NOW))
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch) == (PID, 736, NO_PRODUCER_EPOCH)


def test_bump_epoch_not_allowed_if_epochs_exhausted():
    m = md(epoch=SHORT_MAX - 1)
    assert m.is_producer_epoch_exhausted()
    with pytest.raises(IllegalStateError):
        m.prepare_increment_producer_epoch(30000, None, NOW)


@pytest.mark.parametrize("source", [S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT])
def test_transit_to_prepare_abort_in_v2(source):
    m = md(state=source, epoch=735, tv=TV_2, start=-1 if source == S.EMPTY else NOW - 1)
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_ABORT, TV_2, NO_PRODUCER_ID, NOW + 1, True))
    assert (m.producer_epoch, m.txn_start_timestamp, m.state) == (736, NOW + 1, S.PREPARE_ABORT)


def test_tolerate_update_time_shift_during_epoch_bump():
    m = md(epoch=1, start=1)
    m.complete_transition_to(m.prepare_increment_producer_epoch(30000, 1, NOW - 1))
    assert (m.producer_epoch, m.last_producer_epoch, m.txn_start_timestamp, m.txn_last_update_timestamp) == (
        2,
        1,
        -1,
        NOW - 1,
    )


def test_tolerate_update_time_reset_during_producer_id_rotation():
    m = md(epoch=1, start=1)
    m.complete_transition_to(m.prepare_producer_id_rotation(PID + 1, 30000, NOW - 1, True))
    assert (m.producer_id, m.last_producer_epoch, m.producer_epoch, m.txn_last_update_timestamp) == (
        PID + 1,
        1,
        0,
        NOW - 1,
    )


def test_tolerate_time_shift_during_add_partitions():
    m = md(epoch=1, start=NOW)
    m.complete_transition_to(m.prepare_add_partitions({("topic1", 0)}, NOW - 1, TV_0))
    assert m.txn_start_timestamp == NOW - 1 and m.txn_last_update_timestamp == NOW - 1
    m.complete_transition_to(m.prepare_add_partitions({("topic2", 0)}, NOW - 2, TV_0))
    assert m.topic_partitions == {("topic1", 0), ("topic2", 0)}
    assert m.txn_start_timestamp == NOW - 1 and m.txn_last_update_timestamp == NOW - 2


@pytest.mark.parametrize("target", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_tolerate_time_shift_during_prepare(target):
    m = md(state=S.ONGOING, epoch=1, start=1)
    m.complete_transition_to(m.prepare_abort_or_commit(target, TV_0, NO_PRODUCER_ID, NOW - 1, False))
    assert (m.state, m.producer_epoch, m.txn_start_timestamp, m.txn_last_update_timestamp) == (target, 1, 1, NOW - 1)


@pytest.mark.parametrize("tv", [TV_0, TV_2])
@pytest.mark.parametrize("source,target", [(S.PREPARE_COMMIT, S.COMPLETE_COMMIT), (S.PREPARE_ABORT, S.COMPLETE_ABORT)])
def test_tolerate_time_shift_during_complete(tv, source, target):
    m = md(state=source, epoch=1, last=0, start=1, tv=tv)
    m.complete_transition_to(m.prepare_complete(NOW - 1))
    assert (m.state, m.producer_epoch, m.last_producer_epoch, m.txn_start_timestamp, m.txn_last_update_timestamp) == (
        target,
        1,
        0,
        1,
        NOW - 1,
    )


def test_fence_producer_after_epochs_exhausted():
    m = md(state=S.ONGOING, epoch=SHORT_MAX - 1)
    fence = m.prepare_fence_producer_epoch()
    assert fence.producer_epoch == SHORT_MAX and fence.last_producer_epoch == NO_PRODUCER_EPOCH
    assert m.pending_state == S.PREPARE_EPOCH_FENCE
    m.pending_state = None  # make way for the abort
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_ABORT, TV_0, NO_PRODUCER_ID, NOW, False))
    assert m.producer_id == PID


@pytest.mark.parametrize("source", [S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_invalid_transition_from_complete_to_fence(source):
    with pytest.raises(IllegalStateError):
        md(state=source, epoch=SHORT_MAX - 1).prepare_fence_producer_epoch()


def test_fence_producer_not_allowed_if_it_would_overflow():
    with pytest.raises(IllegalStateError):
        md(state=S.ONGOING, epoch=SHORT_MAX).prepare_fence_producer_epoch()


def test_failed_epoch_fence_is_not_bumped_again():
    m = md(state=S.ONGOING, epoch=7)
    m.has_failed_epoch_fence = True
    assert m.prepare_fence_producer_epoch().producer_epoch == 7


def test_rotate_producer_id():
    m = md(epoch=SHORT_MAX - 1)
    m.complete_transition_to(m.prepare_producer_id_rotation(9893, 30000, NOW, True))
    assert (m.producer_id, m.prev_producer_id, m.producer_epoch, m.last_producer_epoch) == (9893, PID, 0, SHORT_MAX - 1)


def test_epoch_bump_on_end_txn():
    m = md(state=S.ONGOING, epoch=10, start=NOW, tv=TV_2)
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_COMMIT, TV_2, NO_PRODUCER_ID, NOW - 1, False))
    assert (m.producer_id, m.producer_epoch, m.client_transaction_version) == (PID, 11, TV_2)
    m.complete_transition_to(m.prepare_complete(NOW))
    assert (m.producer_id, m.producer_epoch) == (PID, 11)


def test_epoch_bump_on_end_txn_overflow():
    m = md(state=S.ONGOING, epoch=SHORT_MAX - 1, start=NOW, tv=TV_2)
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_COMMIT, TV_2, 9893, NOW - 1, False))
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch) == (PID, SHORT_MAX, SHORT_MAX - 1)
    m.complete_transition_to(m.prepare_complete(NOW))
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch, m.next_producer_id) == (
        9893,
        0,
        SHORT_MAX - 1,
        NO_PRODUCER_ID,
    )
    assert m.prev_producer_id == PID


@pytest.mark.parametrize(
    "state,tv",
    [
        (S.ONGOING, TV_0),
        (S.PREPARE_ABORT, TV_0),
        (S.PREPARE_ABORT, TV_2),
        (S.PREPARE_COMMIT, TV_0),
        (S.PREPARE_COMMIT, TV_2),
    ],
)
def test_rotate_producer_id_in_pending_transaction_states(state, tv):
    # testRotateProducerIdInOngoingState / InPrepareAbortState / InPrepareCommitState
    with pytest.raises(IllegalStateError):
        md(state=state, epoch=SHORT_MAX - 1, prev=PID, tv=tv).prepare_producer_id_rotation(9893, 30000, NOW, False)


def test_attempted_epoch_bump_with_newly_created_metadata():
    m = md(epoch=NO_PRODUCER_EPOCH)
    m.complete_transition_to(m.prepare_increment_producer_epoch(30000, 735, NOW))
    assert (m.producer_epoch, m.last_producer_epoch) == (0, NO_PRODUCER_EPOCH)


def test_epoch_bump_with_current_epoch_provided():
    m = md(epoch=735)
    m.complete_transition_to(m.prepare_increment_producer_epoch(30000, 735, NOW))
    assert (m.producer_epoch, m.last_producer_epoch) == (736, 735)


def test_attempted_epoch_bump_with_last_epoch():
    m = md(epoch=735, last=734)
    m.complete_transition_to(m.prepare_increment_producer_epoch(30000, 734, NOW))
    assert (m.producer_epoch, m.last_producer_epoch) == (735, 734)


def test_attempted_epoch_bump_with_fenced_epoch():
    m = md(epoch=735, last=734, prev=PID)
    with pytest.raises(ApiError) as e:
        m.prepare_increment_producer_epoch(30000, 733, NOW)
    assert e.value.error == Errors.PRODUCER_FENCED and m.pending_state is None


def test_metadata_snapshot_round_trips():
    m = md(state=S.ONGOING, epoch=3, last=2, parts=[("b", 1), ("a", 0)], start=5, tv=TV_2)
    m.pending_state = S.PREPARE_EPOCH_FENCE
    m.has_failed_epoch_fence = True
    assert TransactionMetadata.from_json(TID, m.to_json()) == m
