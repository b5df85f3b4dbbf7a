"""Mirrors Kafka's CurrentAssignmentBuilderTest (4.3.1: KAFKA-19431 subscription consistency,
KAFKA-19449 own pending revocations, KIP-1251 assignment epochs). Topic ids become topic names;
`at=` is Kafka's `toAssignmentWithEpochs(..., epoch)`, `epochs=` its `mkAssignmentWithEpochs`."""

from __future__ import annotations

import pytest

from coordinator.errors import ApiError, Errors
from coordinator.group.consumer.member import ConsumerGroupMember, MemberState, ResolvedRegularExpression
from coordinator.group.consumer.reconciliation import CurrentAssignmentBuilder

from .helpers import mk_assignment
from .helpers import mk_topic_assignment as tp

T1, T2 = "topic1", "topic2"
METADATA = {T1: 10, T2: 10}


def m(state, epoch, previous, assigned, pending=None, topics=(T1, T2), regex="", at=None, epochs=None):
    """A member; its partitions assigned at epoch `at` (default: its member epoch), those named in
    `epochs` ({topic: {partition: epoch}}) at theirs."""
    every = {t: dict.fromkeys(ps, epoch if at is None else at) for t, ps in {**(pending or {}), **assigned}.items()}
    for t, ps in (pending or {}).items():
        if t in assigned:
            every[t].update(dict.fromkeys(ps, epoch if at is None else at))
    for t, e in (epochs or {}).items():
        every.setdefault(t, {}).update(e)
    return ConsumerGroupMember(
        "member",
        member_epoch=epoch,
        previous_member_epoch=previous,
        state=state,
        subscribed_topic_names=frozenset(topics),
        subscribed_topic_regex=regex,
        assigned_partitions=assigned,
        partitions_pending_revocation=pending or {},
        partition_epochs=every,
    )


def builder(member, target_epoch, target, epoch_fn, owned="unset", subscription_changed=None, resolved=None):
    b = (
        CurrentAssignmentBuilder(member)
        .with_topic_metadata(METADATA)
        .with_target_assignment(target_epoch, target)
        .with_current_partition_epoch(epoch_fn)
    )
    if owned != "unset":
        b.with_owned_topic_partitions(owned)
    if subscription_changed is not None:
        b.with_has_subscription_changed(subscription_changed)
    if resolved is not None:
        b.with_resolved_regular_expressions(resolved)
    return b


STABLE, UNREVOKED, UNRELEASED, UNKNOWN = (
    MemberState.STABLE,
    MemberState.UNREVOKED_PARTITIONS,
    MemberState.UNRELEASED_PARTITIONS,
    MemberState.UNKNOWN,
)


def test_stable_to_stable():
    member = m(STABLE, 10, 10, mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4, 5, 6)), at=5)
    updated = builder(member, 11, mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4, 5, 6)), lambda t, p: 10).build()
    assert updated == m(STABLE, 11, 10, mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4, 5, 6)), at=5)


def test_stable_to_stable_with_new_partitions():
    member = m(STABLE, 10, 10, mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4, 5, 6)))
    updated = builder(member, 11, mk_assignment(tp(T1, 1, 2, 3, 4), tp(T2, 4, 5, 6, 7)), lambda t, p: -1).build()
    # Kept partitions keep their epoch (10), new ones are assigned at the target epoch (11).
    assert updated == m(
        STABLE, 11, 10, mk_assignment(tp(T1, 1, 2, 3, 4), tp(T2, 4, 5, 6, 7)), at=10, epochs={T1: {4: 11}, T2: {7: 11}}
    )


def test_stable_to_unrevoked_partitions():
    member = m(STABLE, 10, 10, mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4, 5, 6)))
    updated = builder(member, 11, mk_assignment(tp(T1, 2, 3, 4), tp(T2, 5, 6, 7)), lambda t, p: -1).build()
    assert updated == m(
        UNREVOKED, 10, 10, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)), mk_assignment(tp(T1, 1), tp(T2, 4))
    )


def test_stable_to_unreleased_partitions():
    member = m(STABLE, 10, 10, mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4, 5, 6)))
    updated = builder(member, 11, mk_assignment(tp(T1, 1, 2, 3, 4), tp(T2, 4, 5, 6, 7)), lambda t, p: 10).build()
    assert updated == m(UNRELEASED, 11, 10, mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4, 5, 6)), at=10)


def test_stable_to_unreleased_partitions_with_owned_partitions_not_having_revoked_partitions():
    member = m(STABLE, 10, 10, mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4, 5, 6)))
    updated = builder(
        member, 11, mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4, 5, 7)), lambda t, p: 10 if t == T2 else -1, owned={}
    ).build()
    assert updated == m(UNRELEASED, 11, 10, mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4, 5)), at=10)


def test_unrevoked_partitions_to_stable():
    member = m(UNREVOKED, 10, 10, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)), mk_assignment(tp(T1, 1), tp(T2, 4)))
    updated = builder(
        member, 11, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)), lambda t, p: -1, owned={T1: [2, 3], T2: [5, 6]}
    ).build()
    assert updated == m(STABLE, 11, 10, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)), at=10)


def test_remains_in_unrevoked_partitions():
    member = m(UNREVOKED, 10, 10, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)), mk_assignment(tp(T1, 1), tp(T2, 4)))
    b = builder(member, 12, mk_assignment(tp(T1, 3), tp(T2, 6)), lambda t, p: -1)
    assert b.with_owned_topic_partitions(None).build() is member
    assert b.with_owned_topic_partitions({T1: [1, 2, 3], T2: [5, 6]}).build() is member
    assert b.with_owned_topic_partitions({T1: [2, 3], T2: [4, 5, 6]}).build() is member


@pytest.mark.parametrize(
    "member_epoch,target_epoch,expected_epoch",
    [
        (10, 12, 10),  # Kafka 4.2+: the member stays at its epoch (4.1 advanced it by one)
        (10, 10, 10),
    ],
)
def test_unrevoked_partitions_to_unrevoked_partitions(member_epoch, target_epoch, expected_epoch):
    member = m(
        UNREVOKED,
        member_epoch,
        member_epoch,
        mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)),
        mk_assignment(tp(T1, 1), tp(T2, 4)),
    )
    updated = builder(
        member, target_epoch, mk_assignment(tp(T1, 3), tp(T2, 6)), lambda t, p: -1, owned={T1: [2, 3], T2: [5, 6]}
    ).build()
    assert updated == m(
        UNREVOKED,
        expected_epoch,
        member_epoch,
        mk_assignment(tp(T1, 3), tp(T2, 6)),
        mk_assignment(tp(T1, 2), tp(T2, 5)),
    )


def test_unrevoked_partitions_to_unreleased_partitions():
    member = m(UNREVOKED, 11, 10, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)))
    updated = builder(
        member, 11, mk_assignment(tp(T1, 2, 3, 4), tp(T2, 5, 6, 7)), lambda t, p: 10, owned={T1: [2, 3], T2: [5, 6]}
    ).build()
    assert updated == m(UNRELEASED, 11, 11, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)))


def test_unrevoked_partitions_to_stable_with_returned_partitions_pending_revocation():
    # Partition 4 is pending revocation by the member but is back in the latest target.
    member = m(UNREVOKED, 10, 10, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)), mk_assignment(tp(T1, 4)))
    owners = {(T1, 2), (T1, 3), (T1, 4), (T2, 5), (T2, 6)}  # all held by this member, at epoch 10
    updated = builder(
        member,
        12,
        mk_assignment(tp(T1, 2, 3, 4), tp(T2, 5, 6, 7)),
        lambda t, p: 10 if (t, p) in owners else -1,
        owned={T1: [2, 3], T2: [5, 6]},
    ).build()
    # Partition 4, pending revocation at epoch 10, is assigned again: at the target epoch.
    assert updated == m(
        STABLE, 12, 10, mk_assignment(tp(T1, 2, 3, 4), tp(T2, 5, 6, 7)), at=10, epochs={T1: {4: 12}, T2: {7: 12}}
    )


def test_unreleased_partitions_to_stable():
    member = m(UNRELEASED, 11, 11, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)))
    updated = builder(member, 12, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)), lambda t, p: 10).build()
    assert updated == m(STABLE, 12, 11, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)), at=11)


def test_unreleased_partitions_to_stable_with_new_partitions():
    member = m(UNRELEASED, 11, 11, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)))
    updated = builder(member, 11, mk_assignment(tp(T1, 2, 3, 4), tp(T2, 5, 6, 7)), lambda t, p: -1).build()
    assert updated == m(STABLE, 11, 11, mk_assignment(tp(T1, 2, 3, 4), tp(T2, 5, 6, 7)))


def test_unreleased_partitions_to_unreleased_partitions():
    member = m(UNRELEASED, 11, 11, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)))
    updated = builder(member, 11, mk_assignment(tp(T1, 2, 3, 4), tp(T2, 5, 6, 7)), lambda t, p: 10).build()
    assert updated == member


def test_unreleased_partitions_to_unrevoked_partitions():
    member = m(UNRELEASED, 11, 11, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)))
    updated = builder(member, 12, mk_assignment(tp(T1, 3), tp(T2, 6)), lambda t, p: 10).build()
    assert updated == m(UNREVOKED, 11, 11, mk_assignment(tp(T1, 3), tp(T2, 6)), mk_assignment(tp(T1, 2), tp(T2, 5)))


def test_unknown_state():
    member = m(UNKNOWN, 11, 11, mk_assignment(tp(T1, 3), tp(T2, 6)), mk_assignment(tp(T1, 2), tp(T2, 5)))
    # The member is first fenced, to reset its client-side state.
    with pytest.raises(ApiError) as e:
        builder(member, 12, mk_assignment(tp(T1, 3), tp(T2, 6)), lambda t, p: 10).build()
    assert e.value.error == Errors.FENCED_MEMBER_EPOCH
    assert e.value.message == (
        "The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin."
    )
    # Then it rejoins with no owned partitions.
    updated = builder(member, 12, mk_assignment(tp(T1, 3), tp(T2, 6)), lambda t, p: 11, owned={}).build()
    # Retained partitions keep their original epoch (11).
    assert updated == m(STABLE, 12, 11, mk_assignment(tp(T1, 3), tp(T2, 6)), at=11)


def test_unknown_state_with_an_owned_entry_without_partitions_is_fenced():
    member = m(UNKNOWN, 11, 11, {})
    with pytest.raises(ApiError):
        builder(member, 12, {}, lambda t, p: -1, owned={T1: []}).build()


@pytest.mark.parametrize(
    "member_epoch,target_epoch,expected_epoch,subscription_changed",
    [
        (10, 11, 11, False),  # advancing to a new target always applies the subscription
        (10, 11, 11, True),
        (10, 10, 10, True),
    ],
)
def test_stable_to_stable_with_assignment_topics_no_longer_in_subscription(
    member_epoch, target_epoch, expected_epoch, subscription_changed
):
    member = m(STABLE, member_epoch, member_epoch - 1, mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4, 5, 6)), topics=[T2])
    updated = builder(
        member,
        target_epoch,
        mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4, 5, 6)),
        lambda t, p: -1,
        owned={T2: [4, 5, 6]},
        subscription_changed=subscription_changed,
    ).build()
    # Retained partitions keep their original epoch; the previous member epoch is updated in all
    # cases (Kafka 4.3+), also when only the subscription shrank the assignment.
    assert updated == m(
        STABLE, expected_epoch, member_epoch, mk_assignment(tp(T2, 4, 5, 6)), topics=[T2], at=member_epoch
    )


@pytest.mark.parametrize(
    "member_epoch,target_epoch,expected_epoch,subscription_changed",
    [
        (10, 11, 10, False),
        (10, 11, 10, True),
        (10, 10, 10, True),
    ],
)
def test_stable_to_unrevoked_partitions_with_assignment_topics_no_longer_in_subscription(
    member_epoch, target_epoch, expected_epoch, subscription_changed
):
    member = m(STABLE, member_epoch, member_epoch - 1, mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4, 5, 6)), topics=[T2])
    updated = builder(
        member,
        target_epoch,
        mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4, 5, 6)),
        lambda t, p: -1,
        owned={T1: [1, 2, 3], T2: [4, 5, 6]},
        subscription_changed=subscription_changed,
    ).build()
    assert updated == m(
        UNREVOKED,
        expected_epoch,
        member_epoch,
        mk_assignment(tp(T2, 4, 5, 6)),
        mk_assignment(tp(T1, 1, 2, 3)),
        topics=[T2],
    )


def test_remains_in_unrevoked_partitions_with_assignment_topics_no_longer_in_subscription():
    member = m(
        UNREVOKED, 10, 10, mk_assignment(tp(T1, 2, 3), tp(T2, 5, 6)), mk_assignment(tp(T1, 1), tp(T2, 4)), topics=[T2]
    )
    updated = builder(
        member,
        12,
        mk_assignment(tp(T1, 1, 3, 4), tp(T2, 6, 7)),
        lambda t, p: -1,
        owned={T1: [1, 2, 3], T2: [4, 5, 6]},
        subscription_changed=True,
    ).build()
    assert updated == m(
        UNREVOKED, 10, 10, mk_assignment(tp(T2, 5, 6)), mk_assignment(tp(T1, 1, 2, 3), tp(T2, 4)), topics=[T2]
    )


FOO, BAR = "foo", "bar"


def _regex_builder(member, resolved):
    return (
        CurrentAssignmentBuilder(member)
        .with_topic_metadata({FOO: 10, BAR: 10})
        .with_target_assignment(10, mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 4, 5, 6)))
        .with_has_subscription_changed(True)
        .with_resolved_regular_expressions(resolved)
        .with_current_partition_epoch(lambda t, p: -1)
        .with_owned_topic_partitions({FOO: [1, 2, 3], BAR: [4, 5, 6]})
    )


def test_subscribed_topic_name_and_unresolved_regular_expression():
    member = m(STABLE, 10, 10, mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 4, 5, 6)), topics=[FOO], regex="bar*")
    updated = _regex_builder(member, {}).build()
    assert updated == m(
        UNREVOKED, 10, 10, mk_assignment(tp(FOO, 1, 2, 3)), mk_assignment(tp(BAR, 4, 5, 6)), topics=[FOO], regex="bar*"
    )


def test_unresolved_regular_expression():
    member = m(STABLE, 10, 10, mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 4, 5, 6)), topics=[], regex="bar*")
    updated = _regex_builder(member, {}).build()
    assert updated == m(
        UNREVOKED, 10, 10, {}, mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 4, 5, 6)), topics=[], regex="bar*"
    )


def test_subscribed_topic_name_and_resolved_regular_expression():
    member = m(STABLE, 10, 10, mk_assignment(tp(FOO, 1, 2, 3), tp(BAR, 4, 5, 6)), topics=[FOO], regex="bar*")
    updated = _regex_builder(member, {"bar*": ResolvedRegularExpression(frozenset({BAR}), 12345, 0)}).build()
    assert updated is member


# ----------------------------------------------------------------- beyond Kafka's test class


def test_deleted_topic_is_revoked_when_metadata_says_so():
    """With `with_topic_metadata`, a subscribed topic missing from the metadata counts as
    unsubscribed (Kafka resolves subscriptions through the metadata image)."""
    member = m(STABLE, 10, 10, mk_assignment(tp(T1, 1), tp("gone", 0)), topics=[T1, "gone"])
    updated = builder(
        member, 10, mk_assignment(tp(T1, 1)), lambda t, p: -1, owned={"gone": [0]}, subscription_changed=True
    ).build()
    assert updated.state == UNREVOKED and updated.partitions_pending_revocation == {"gone": frozenset({0})}


def test_requires_current_partition_epoch():
    with pytest.raises(ValueError):
        CurrentAssignmentBuilder(m(STABLE, 1, 0, {})).with_target_assignment(2, {}).build()
