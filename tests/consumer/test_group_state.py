"""Group state derivation, partition epochs, subscription type and assignor preference
(Kafka's ConsumerGroupTest equivalents)."""

from __future__ import annotations

import json

import pytest

from coordinator.group.consumer.assignors import SubscriptionType
from coordinator.group.consumer.group_state import (
    ConsumerGroupState,
    IllegalStateError,
    PartitionEpochs,
    SubscriptionCount,
    derive_group_state,
    preferred_server_assignor,
    subscribed_topic_counts,
    subscription_type,
)
from coordinator.group.consumer.member import ConsumerGroupMember, MemberState, ResolvedRegularExpression

from .helpers import mk_assignment
from .helpers import mk_topic_assignment as tp

FOO, BAR = "foo", "bar"


def member(
    member_id, epoch=10, state=MemberState.STABLE, assigned=None, pending=None, names=(), regex="", assignor=None
):
    return ConsumerGroupMember(
        member_id,
        member_epoch=epoch,
        state=state,
        assigned_partitions=assigned or {},
        partitions_pending_revocation=pending or {},
        subscribed_topic_names=frozenset(names),
        subscribed_topic_regex=regex,
        server_assignor_name=assignor,
    )


def test_consumer_group_states():
    """Kafka's testConsumerGroupStates, replay step by step."""
    assert derive_group_state([], 10, 10) == ConsumerGroupState.EMPTY
    m = member("m1", epoch=0, names=[FOO])
    assert derive_group_state([m], 11, 10) == ConsumerGroupState.ASSIGNING
    assert derive_group_state([m], 11, 11) == ConsumerGroupState.RECONCILING
    m = member("m1", epoch=11, state=MemberState.UNREVOKED_PARTITIONS, assigned=mk_assignment(tp(FOO, 1, 2, 3)))
    assert derive_group_state([m], 11, 11) == ConsumerGroupState.RECONCILING
    m = member("m1", epoch=11, assigned=mk_assignment(tp(FOO, 1, 2, 3)))
    assert derive_group_state([m], 11, 11) == ConsumerGroupState.STABLE
    assert str(ConsumerGroupState.STABLE) == "Stable"
    assert ConsumerGroupState.RECONCILING.lower_case() == "reconciling"


def test_update_partition_epochs():
    epochs = PartitionEpochs()
    m1 = member("m1", 10, assigned=mk_assignment(tp(FOO, 1, 2)), pending=mk_assignment(tp(BAR, 0)))
    epochs.update_member(None, m1)
    assert epochs(FOO, 1) == 10 and epochs(BAR, 0) == 10 and epochs(FOO, 3) == -1
    # The member acknowledges the revocation of bar-0 and moves to epoch 11.
    m1b = member("m1", 11, assigned=mk_assignment(tp(FOO, 1, 2)))
    epochs.update_member(m1, m1b)
    assert epochs(FOO, 1) == 11 and epochs(BAR, 0) == -1
    epochs.remove_member(m1b)
    assert len(epochs) == 0 and epochs.to_json() == {}


def test_adding_an_owned_partition_fails():
    """Kafka's testUpdatingMemberUpdatesPartitionEpochWhenPartitionIsAssigned..."""
    epochs = PartitionEpochs.from_members([member("m1", 10, assigned=mk_assignment(tp(FOO, 1)))])
    with pytest.raises(
        IllegalStateError, match="Cannot set the epoch of foo-1 to 11 because the partition is still owned at epoch 10"
    ):
        epochs.add(mk_assignment(tp(FOO, 1, 2)), 11)
    assert epochs(FOO, 2) == -1  # nothing applied


def test_removing_with_a_wrong_epoch_fails():
    epochs = PartitionEpochs.from_members([member("m1", 10, assigned=mk_assignment(tp(FOO, 1)))])
    with pytest.raises(IllegalStateError, match="still owned at a different epoch 10"):
        epochs.remove(mk_assignment(tp(FOO, 1)), 9)
    with pytest.raises(IllegalStateError, match="does not have any epoch"):
        epochs.remove(mk_assignment(tp(BAR, 1)), 10)
    with pytest.raises(IllegalStateError, match="different epoch None"):
        epochs.remove(mk_assignment(tp(FOO, 7)), 10)


def test_partition_epochs_json_round_trip():
    epochs = PartitionEpochs.from_members(
        [
            member("m1", 10, assigned=mk_assignment(tp(FOO, 1, 2))),
            member("m2", 12, assigned=mk_assignment(tp(BAR, 0)), pending=mk_assignment(tp(FOO, 3))),
        ]
    )
    data = json.loads(json.dumps(epochs.to_json()))
    assert data == {"bar": {"0": 12}, "foo": {"1": 10, "2": 10, "3": 12}}
    assert PartitionEpochs.from_json(data) == epochs


def test_subscription_type_without_regex():
    a, b = member("a", names=[FOO, BAR]), member("b", names=[FOO, BAR])
    assert subscription_type([a, b]) == SubscriptionType.HOMOGENEOUS
    assert subscription_type([a, member("b", names=[FOO])]) == SubscriptionType.HETEROGENEOUS
    # Names count whether or not the topics exist.
    assert subscription_type([a, member("b", names=[FOO, BAR, "zar"])]) == SubscriptionType.HETEROGENEOUS
    assert subscription_type([]) == SubscriptionType.HOMOGENEOUS


def test_subscription_type_with_regex():
    resolved = {
        "foo*": ResolvedRegularExpression(frozenset({FOO, "foox"}), 1, 0),
        "b.*": ResolvedRegularExpression(frozenset({BAR}), 1, 0),
    }
    a, b = member("a", regex="foo*"), member("b", regex="foo*")
    assert subscription_type([a, b], resolved) == SubscriptionType.HOMOGENEOUS
    # Unresolved yet: still homogeneous (no topics).
    assert subscription_type([a, b], {}) == SubscriptionType.HOMOGENEOUS
    # A name on top of the regex makes it heterogeneous.
    assert subscription_type([a, member("b", regex="foo*", names=[BAR])], resolved) == SubscriptionType.HETEROGENEOUS
    # Two regexes.
    assert subscription_type([a, member("b", regex="b.*")], resolved) == SubscriptionType.HETEROGENEOUS
    # A regex and a member with names only.
    assert subscription_type([a, member("b", names=[FOO])], resolved) == SubscriptionType.HETEROGENEOUS


def test_subscribed_topic_counts():
    resolved = {"foo*": ResolvedRegularExpression(frozenset({FOO}), 1, 0)}
    counts = subscribed_topic_counts(
        [member("a", names=[FOO, BAR], regex="foo*"), member("b", names=[FOO], regex="foo*")], resolved
    )
    assert counts == {FOO: SubscriptionCount(2, 1), BAR: SubscriptionCount(1, 0)}


def test_preferred_server_assignor():
    assert preferred_server_assignor([member("a")], "uniform") == "uniform"
    members = [member("a", assignor="range"), member("b", assignor="range"), member("c", assignor="uniform")]
    assert preferred_server_assignor(members, "uniform") == "range"
    # A tie: the first name in Java string order.
    assert preferred_server_assignor(members[1:], None) == "range"
