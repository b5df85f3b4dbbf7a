"""Property tests (hypothesis) for the server-side assignors.

- validity: every partition of every subscribed topic is assigned exactly once, to a subscriber;
- balance: homogeneous uniform within one partition per member; range within one per topic;
- determinism: the input's dict order does not matter;
- stability: re-running an assignor on its own output changes nothing;
- stickiness (uniform, homogeneous): after one member joins, leaves, or partitions are added,
  members keep their partitions up to their new quota.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.group.consumer.assignors import (
    GroupSpec,
    MemberSubscriptionAndAssignment,
    RangeAssignor,
    SubscribedTopicDescriber,
    SubscriptionType,
    UniformAssignor,
)

from .helpers import check_complete, check_validity_and_balance

HOMOGENEOUS, HETEROGENEOUS = SubscriptionType.HOMOGENEOUS, SubscriptionType.HETEROGENEOUS
UNIFORM, RANGE = UniformAssignor(), RangeAssignor()
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

topic_names = st.sampled_from([f"t{i}" for i in range(6)])
member_ids = st.text(alphabet="abcxyzé𝄞-0", min_size=1, max_size=4)


@st.composite
def topics_st(draw, min_topics=1):
    names = draw(st.lists(topic_names, min_size=min_topics, max_size=6, unique=True))
    return {t: draw(st.integers(0, 12)) for t in names}


@st.composite
def homogeneous_group(draw):
    topics = draw(topics_st())
    subscribed = frozenset(draw(st.lists(st.sampled_from(sorted(topics)), min_size=1, unique=True)))
    ids = draw(st.lists(member_ids, min_size=1, max_size=12, unique=True))
    static = draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)))
    members = {
        m: MemberSubscriptionAndAssignment(subscribed, {}, f"i-{m}" if s else None)
        for m, s in zip(ids, static, strict=True)
    }
    return members, topics


@st.composite
def heterogeneous_group(draw):
    topics = draw(topics_st())
    ids = draw(st.lists(member_ids, min_size=1, max_size=12, unique=True))
    members = {
        m: MemberSubscriptionAndAssignment(frozenset(draw(st.lists(st.sampled_from(sorted(topics)), unique=True))), {})
        for m in ids
    }
    return members, topics


def run(assignor, members, topics, subscription_type):
    return assignor.assign(GroupSpec(members, subscription_type), SubscribedTopicDescriber(topics))


def with_assignment(members, assignment, subscribed=None):
    return {
        m: MemberSubscriptionAndAssignment(subscribed or s.subscribed_topics, assignment.get(m, {}), s.instance_id)
        for m, s in members.items()
    }


def sizes(assignment):
    return {m: sum(map(len, a.values())) for m, a in assignment.items()}


@SETTINGS
@given(homogeneous_group(), st.sampled_from([UNIFORM, RANGE]), st.randoms())
def test_homogeneous_validity_balance_and_determinism(group, assignor, rnd):
    members, topics = group
    result = run(assignor, members, topics, HOMOGENEOUS)
    check_complete(members, result, topics)
    if assignor is UNIFORM:
        check_validity_and_balance(members, result)
    else:  # range: balanced per topic
        for t in next(iter(members.values())).subscribed_topics:
            per_topic = [len(a.get(t, ())) for a in result.values()]
            assert max(per_topic) - min(per_topic) <= 1
    shuffled = list(members.items())
    rnd.shuffle(shuffled)
    assert run(assignor, dict(shuffled), topics, HOMOGENEOUS) == result
    # Stable: its own output as the current assignment changes nothing.
    assert run(assignor, with_assignment(members, result), topics, HOMOGENEOUS) == result


@SETTINGS
@given(heterogeneous_group(), st.sampled_from([UNIFORM, RANGE]), st.randoms())
def test_heterogeneous_validity_and_determinism(group, assignor, rnd):
    members, topics = group
    result = run(assignor, members, topics, HETEROGENEOUS)
    check_complete(members, result, topics)
    shuffled = list(members.items())
    rnd.shuffle(shuffled)
    assert run(assignor, dict(shuffled), topics, HETEROGENEOUS) == result
    again = run(assignor, with_assignment(members, result), topics, HETEROGENEOUS)
    check_complete(members, again, topics)
    assert again == result


@SETTINGS
@given(heterogeneous_group())
def test_uniform_heterogeneous_with_identical_subscriptions_is_balanced(group):
    """Passing HETEROGENEOUS for identical subscriptions still balances within one."""
    members, topics = group
    same = next(iter(members.values())).subscribed_topics
    members = {m: MemberSubscriptionAndAssignment(same, {}) for m in members}
    result = run(UNIFORM, members, topics, HETEROGENEOUS)
    check_complete(members, result, topics)
    check_validity_and_balance(members, result)


@SETTINGS
@given(homogeneous_group(), member_ids)
def test_uniform_stickiness_when_a_member_joins(group, newcomer):
    members, topics = group
    first = run(UNIFORM, members, topics, HOMOGENEOUS)
    subscribed = next(iter(members.values())).subscribed_topics
    grown = with_assignment(members, first)
    grown.setdefault(newcomer, MemberSubscriptionAndAssignment(subscribed, {}))
    second = run(UNIFORM, grown, topics, HOMOGENEOUS)
    check_complete(grown, second, topics)
    check_validity_and_balance(grown, second)
    quota = sum(topics[t] for t in subscribed) // len(grown)
    for m, old in first.items():
        kept = sum(len(ps & second[m].get(t, frozenset())) for t, ps in old.items())
        assert kept >= min(sum(map(len, old.values())), quota)
        # Nothing is taken from a member that is not over quota.
        assert kept == min(sum(map(len, old.values())), sizes(second)[m])


@SETTINGS
@given(homogeneous_group(), st.data())
def test_uniform_stickiness_when_a_member_leaves(group, data):
    members, topics = group
    if len(members) < 2:
        return
    first = run(UNIFORM, members, topics, HOMOGENEOUS)
    leaving = data.draw(st.sampled_from(sorted(members)))
    rest = {m: s for m, s in with_assignment(members, first).items() if m != leaving}
    second = run(UNIFORM, rest, topics, HOMOGENEOUS)
    check_complete(rest, second, topics)
    check_validity_and_balance(rest, second)
    for m in rest:  # everyone who stays keeps all its partitions
        for t, ps in first[m].items():
            assert ps <= second[m].get(t, frozenset())


@SETTINGS
@given(homogeneous_group(), st.data())
def test_uniform_stickiness_when_partitions_are_added(group, data):
    members, topics = group
    first = run(UNIFORM, members, topics, HOMOGENEOUS)
    topic = data.draw(st.sampled_from(sorted(topics)))
    grown_topics = {**topics, topic: topics[topic] + data.draw(st.integers(1, 10))}
    second = run(UNIFORM, with_assignment(members, first), grown_topics, HOMOGENEOUS)
    check_complete(members, second, grown_topics)
    check_validity_and_balance(members, second)
    for m in members:
        for t, ps in first[m].items():
            assert ps <= second[m].get(t, frozenset())


@SETTINGS
@given(heterogeneous_group(), st.data())
def test_uniform_heterogeneous_subscription_change_keeps_valid_partitions(group, data):
    """A member changes its subscription: partitions of topics it still subscribes to stay with
    it unless balance requires a move; the result is complete and valid."""
    members, topics = group
    first = run(UNIFORM, members, topics, HETEROGENEOUS)
    m = data.draw(st.sampled_from(sorted(members)))
    new_sub = frozenset(data.draw(st.lists(st.sampled_from(sorted(topics)), unique=True)))
    changed = with_assignment(members, first)
    changed[m] = MemberSubscriptionAndAssignment(new_sub, first.get(m, {}))
    second = run(UNIFORM, changed, topics, HETEROGENEOUS)
    check_complete(changed, second, topics)
