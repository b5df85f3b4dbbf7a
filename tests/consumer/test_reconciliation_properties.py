"""Property tests (hypothesis) for reconciliation, driven through the real coordinator
(ConsumerGroupHeartbeat requests on a CoreDriver; partition additions by UpdateMetadata).

Random sequences of joins, leaves, partition additions and heartbeats from simulated clients.
A client revokes (and only then takes new partitions) when it chooses to acknowledge, and sends
its owned partitions or omits them (null: "unchanged"), like the Java consumer. Checked after
every step:
- no partition is owned by two clients at once (revoke before assign);
- a client owns nothing the coordinator has not assigned to it or is not waiting for it to
  revoke, and the coordinator's bookkeeping never gives one partition to two members
  (PartitionEpochs raises otherwise);
- member epochs never decrease and never pass the assignment epoch; group and assignment epochs
  never decrease;
and at the end, once every client acknowledges, the group converges: STABLE, each member's
assignment equal to its target, every subscribed partition owned exactly once.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.group.consumer.group_state import ConsumerGroupState
from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient

TOPICS = ("a", "b", "c")


class Client:
    def __init__(self, member_id, subscription):
        self.member_id = member_id
        self.subscription = subscription
        self.epoch = 0
        self.owned: dict = {}
        self.latest: dict | None = None  # the last assignment received, not yet applied
        self.sent_owned: dict | None = None

    def heartbeat(self, c: ConsumerGroupTestClient, ack: bool, omit_owned: bool):
        if ack and self.latest is not None:
            self.owned = {t: ps for t, ps in self.latest.items() if ps}  # revoke, then assign
            self.latest = None
        owned = None if (omit_owned and self.sent_owned == self.owned) else dict(self.owned)
        r = c.heartbeat(self.member_id, self.epoch, owned=owned)
        assert r["errorCode"] == 0, r
        if owned is not None:
            self.sent_owned = owned
        assert r["memberEpoch"] >= self.epoch
        self.epoch = r["memberEpoch"]
        if r["assignment"] is not None:
            self.latest = c.assignment(r)


subscriptions = st.sets(st.sampled_from(TOPICS), min_size=1).map(sorted)
join = st.tuples(st.just("join"), st.integers(0, 5), subscriptions)
# Heartbeats and leaves pick among the current clients (index modulo their number).
heartbeat = st.tuples(st.just("hb"), st.integers(0, 5), st.booleans(), st.booleans())
ops = st.builds(
    lambda first, rest: first + rest,
    st.lists(join, min_size=1, max_size=4),
    st.lists(
        st.one_of(
            join,
            st.tuples(st.just("leave"), st.integers(0, 5)),
            st.tuples(st.just("grow"), st.sampled_from(TOPICS), st.integers(1, 3)),
            heartbeat,
            heartbeat,
            heartbeat,
            heartbeat,
            heartbeat,
            heartbeat,
        ),
        min_size=15,
        max_size=80,
    ),
)


def as_lists(assignment) -> dict:
    return {t: sorted(ps) for t, ps in assignment.items() if ps}


def check_invariants(group, clients, last_epochs):
    seen = {}
    for c in clients.values():
        for t, ps in c.owned.items():
            for p in ps:
                assert (t, p) not in seen, f"{t}-{p} owned by {seen[(t, p)]} and {c.member_id}"
                seen[(t, p)] = c.member_id
        m = group.members[c.member_id]
        for t, ps in c.owned.items():
            held = m.assigned_partitions.get(t, frozenset()) | m.partitions_pending_revocation.get(t, frozenset())
            assert set(ps) <= held
        assert m.member_epoch <= group.target_assignment_epoch <= group.group_epoch
        assert m.member_epoch >= last_epochs.get(c.member_id, 0)
        last_epochs[c.member_id] = m.member_epoch


def run_scenario(steps, assignor):
    topics = {"a": 4, "b": 3, "c": 5}
    # The live partition between batches (no encoding round trip): hundreds of examples.
    coordinator = ConsumerGroupTestClient("g", topics, roundtrip=False)
    clients: dict[int, Client] = {}
    last_epochs: dict = {}
    epochs = (0, 0)
    for step in steps:
        kind = step[0]
        if kind == "join" and step[1] not in clients:
            cl = clients[step[1]] = Client(f"member-{step[1]}", step[2])
            r = coordinator.join(cl.member_id, cl.subscription, rebalance_timeout=30000, assignor=assignor)
            assert r["errorCode"] == 0, r
            cl.epoch, cl.latest = r["memberEpoch"], coordinator.assignment(r)
        elif kind == "leave" and clients:
            cl = clients.pop(sorted(clients)[step[1] % len(clients)])
            cl.owned = {}  # the consumer revokes everything, then leaves
            assert coordinator.heartbeat(cl.member_id, -1)["errorCode"] == 0
            last_epochs.pop(cl.member_id, None)
        elif kind == "grow":
            topics[step[1]] += step[2]
            coordinator.set_topics(topics)  # the metadata change bumps the group epoch
        elif kind == "hb" and clients:
            cl = clients[sorted(clients)[step[1] % len(clients)]]
            cl.heartbeat(coordinator, ack=step[2], omit_owned=step[3])
        group = coordinator.group()
        if group is None:  # every member left, or none has joined yet
            assert not clients
            continue
        check_invariants(group, clients, last_epochs)
        assert (group.group_epoch, group.target_assignment_epoch) >= epochs
        epochs = (group.group_epoch, group.target_assignment_epoch)

    # Everyone acknowledges: the group converges within a few rounds.
    for _ in range(4):
        for cl in clients.values():
            cl.heartbeat(coordinator, ack=True, omit_owned=False)
            check_invariants(coordinator.group(), clients, last_epochs)
    for cl in clients.values():
        cl.heartbeat(coordinator, ack=True, omit_owned=False)
    group = coordinator.group()
    if clients:
        assert group.state == ConsumerGroupState.STABLE, group.state
    for cl in clients.values():
        m = group.members[cl.member_id]
        assert m.assigned_partitions == group.target_assignment.get(cl.member_id, {})
        assert as_lists(cl.owned) == as_lists(m.assigned_partitions) and cl.epoch == group.target_assignment_epoch
    subscribed = {t for cl in clients.values() for t in cl.subscription}
    owned = sorted((t, p) for cl in clients.values() for t, ps in cl.owned.items() for p in ps)
    assert owned == sorted((t, p) for t in subscribed for p in range(topics[t]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, st.sampled_from(["uniform", "range"]))
def test_revoke_before_assign_and_convergence(steps, assignor):
    run_scenario(steps, assignor)


def test_scenario_with_every_kind_of_step():
    steps = [
        ("join", 0, ["a", "b"]),
        ("join", 1, ["a", "b"]),
        ("hb", 0, True, False),
        ("hb", 1, False, True),
        ("join", 2, ["b", "c"]),
        ("grow", "a", 2),
        ("hb", 0, False, True),
        ("hb", 1, True, True),
        ("hb", 2, True, False),
        ("leave", 0),
        ("hb", 1, True, True),
        ("hb", 2, False, False),
        ("join", 3, ["a"]),
        ("hb", 3, True, True),
    ]
    for assignor in ("uniform", "range"):
        run_scenario(steps, assignor)
