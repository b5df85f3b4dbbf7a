"""Property tests: random joins, leaves, kills, rejoins, heartbeats, topic growth and time, through the
real coordinator, with simulated members that follow the protocol (they drop partitions the
moment a response no longer lists them, take new ones at once, report what they own, and give up
everything when fenced).

Checked after every step: no partition is owned by two live members at once (revoke before assign),
what a member owns is something the coordinator has it holding, epochs never go backwards (the
group's, and each member incarnation's). Once quiet (everyone keeps heartbeating, the dead are
expired): the group is Stable and every partition of the subscribed topics is owned by exactly one
live member, balanced within one partition (homogeneous subscriptions, uniform assignor). Finally,
the state rebuilt from the state log equals the live state.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient

SESSION, INTERVAL = 10_000, 2_000
TOPICS = ["foo", "bar"]
FENCED = {25, 110}  # UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH


class SimMember:
    def __init__(self, member_id: str, topics: list[str]):
        self.member_id = member_id
        self.topics = topics
        self.epoch = 0
        self.owned: dict[str, set[int]] = {}
        self.revoking: dict[str, set[int]] = {}  # still owned: the revocation takes until the next heartbeat
        self.alive = True
        self.max_epoch = 0

    def owned_json(self) -> dict:
        return {t: sorted(p) for t, p in self.owned.items() if p}

    def finish_revocation(self) -> None:
        for t, ps in self.revoking.items():
            self.owned[t] = self.owned.get(t, set()) - ps
        self.revoking = {}


class Sim:
    def __init__(self):
        self.c = ConsumerGroupTestClient(
            topics={"foo": 4, "bar": 2},
            group_consumer_session_timeout_ms=SESSION,
            group_consumer_min_session_timeout_ms=SESSION,
            group_consumer_heartbeat_interval_ms=INTERVAL,
            group_consumer_min_heartbeat_interval_ms=1000,
        )
        self.partitions = {"foo": 4, "bar": 2}
        self.members: dict[str, SimMember] = {}
        self.next_id = 0
        self.group_epoch = 0

    # ---------------------------------------------------------------- actions
    def join(self) -> None:
        m = SimMember(f"member-{self.next_id}", list(TOPICS))
        self.next_id += 1
        self.members[m.member_id] = m
        self.heartbeat(m)

    def heartbeat(self, m: SimMember) -> None:
        if not m.alive:
            return
        m.finish_revocation()
        if m.epoch == 0:
            resp = self.c.join(m.member_id, m.topics)
        else:
            resp = self.c.heartbeat(m.member_id, m.epoch, owned=m.owned_json())
        if resp["errorCode"] in FENCED:
            m.owned, m.revoking, m.epoch, m.max_epoch = {}, {}, 0, 0  # a new incarnation
            return
        assert resp["errorCode"] == 0, resp
        assert resp["memberEpoch"] >= m.max_epoch, (m.member_id, resp, m.max_epoch)
        m.epoch = m.max_epoch = resp["memberEpoch"]
        assignment = self.c.assignment(resp)
        if assignment is not None:
            new = {t: set(p) for t, p in assignment.items()}
            for t, ps in m.owned.items():
                gone = ps - new.get(t, set())
                if gone:
                    m.revoking[t] = m.revoking.get(t, set()) | gone
            for t, ps in new.items():
                m.owned[t] = m.owned.get(t, set()) | ps

    def leave(self, m: SimMember) -> None:
        # A leaving member first gives up its partitions (the consumer revokes them on close).
        m.owned, m.revoking = {}, {}
        if m.alive and m.epoch > 0:
            assert self.c.heartbeat(m.member_id, -1)["errorCode"] in (0, *FENCED)
        m.alive = False

    def kill(self, m: SimMember) -> None:
        m.alive, m.owned, m.revoking = False, {}, {}  # gone without a word: its session will expire

    def restart(self, m: SimMember) -> None:
        """Same member id, rejoining with epoch 0 (having given up everything)."""
        if m.alive:
            m.owned, m.revoking, m.epoch, m.max_epoch = {}, {}, 0, 0
            self.heartbeat(m)

    def tick(self, order: list[int]) -> None:
        self.c.sleep(INTERVAL)
        alive = [m for m in self.members.values() if m.alive]
        for i in order:
            if alive:
                self.heartbeat(alive[i % len(alive)])
        for m in alive:
            self.heartbeat(m)

    def grow(self, topic: str) -> None:
        self.partitions[topic] += 1
        self.c.set_topics(dict(self.partitions))

    # ---------------------------------------------------------------- invariants
    def check(self) -> None:
        seen: dict[tuple[str, int], str] = {}
        group = self.c.group()
        for m in self.members.values():
            if not m.alive:
                continue
            for t, ps in m.owned.items():
                for p in ps:
                    assert (t, p) not in seen, f"{t}-{p} owned by {seen[(t, p)]} and {m.member_id}"
                    seen[(t, p)] = m.member_id
            if m.owned and group is not None and m.member_id in group.members:
                server = group.members[m.member_id]
                for t, ps in m.owned.items():
                    ps = ps - m.revoking.get(t, set())
                    held = server.assigned_partitions.get(t, frozenset()) | server.partitions_pending_revocation.get(
                        t, frozenset()
                    )
                    assert ps <= held, (m.member_id, t, ps, held)
        if group is not None:
            assert group.group_epoch >= self.group_epoch
            self.group_epoch = group.group_epoch

    def quiesce(self) -> None:
        for _ in range(SESSION // INTERVAL + 12):
            self.tick([])
            self.check()
            group = self.c.group()
            alive = [m for m in self.members.values() if m.alive]
            if (
                group is not None
                and str(group.state) in ("Stable", "Empty")
                and set(group.members) == {m.member_id for m in alive}
            ):
                break
        group = self.c.group()
        alive = [m for m in self.members.values() if m.alive]
        if group is None or not alive:
            return
        assert str(group.state) == "Stable", group
        for m in alive:
            m.finish_revocation()
        owned = [(t, p) for m in alive for t, ps in m.owned.items() for p in ps]
        expected = [(t, p) for t in TOPICS for p in range(self.partitions[t])]
        assert sorted(owned) == sorted(expected)  # every partition exactly once
        sizes = [sum(len(ps) for ps in m.owned.values()) for m in alive]
        assert max(sizes) - min(sizes) <= 1, sizes


ACTIONS = st.one_of(
    st.just(("join",)),
    st.tuples(st.just("leave"), st.integers(0, 50)),
    st.tuples(st.just("kill"), st.integers(0, 50)),
    st.tuples(st.just("restart"), st.integers(0, 50)),
    st.tuples(st.just("heartbeat"), st.integers(0, 50)),
    st.tuples(st.just("tick"), st.lists(st.integers(0, 50), max_size=4)),
    st.tuples(st.just("grow"), st.sampled_from(TOPICS)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ACTIONS, min_size=1, max_size=30))
def test_random_membership_histories(actions):
    sim = Sim()
    for action in actions:
        alive = [m for m in sim.members.values() if m.alive]
        kind = action[0]
        if kind == "join" or (not alive and kind in ("leave", "kill", "restart", "heartbeat")):
            if len(sim.members) < 12:
                sim.join()
        elif kind in ("leave", "kill", "restart", "heartbeat"):
            m = alive[action[1] % len(alive)]
            getattr(sim, kind)(m)
        elif kind == "tick":
            sim.tick(action[1])
        elif kind == "grow":
            sim.grow(action[1])
        sim.check()
    sim.quiesce()
    # The log rebuilds the live state.
    rebuilt = sim.c.rebuilt().component("groups")
    live = sim.c.groups()
    strip = lambda g: {k: v for k, v in g.to_json().items() if k != "metadataRefreshDeadline"}  # noqa: E731
    assert {gid: strip(g) for gid, g in rebuilt.groups.items()} == {gid: strip(g) for gid, g in live.groups.items()}


def test_a_large_group_converges_through_heartbeats():
    """300 members, 3,000 partitions of two topics, joining one by one and acknowledging; then 30
    leave: each time complete, exactly once, balanced within one partition."""
    c = ConsumerGroupTestClient(topics={"foo": 2000, "bar": 1000}, roundtrip=False)
    ids = [f"m{i:04d}" for i in range(300)]
    for mid in ids:
        c.join(mid, TOPICS)

    def settle(members):
        for _ in range(6):
            for mid in members:
                m = c.member(mid)
                c.heartbeat(mid, m.member_epoch, owned={t: sorted(p) for t, p in m.assigned_partitions.items()})
            if str(c.group().state) == "Stable":
                return
        raise AssertionError(c.group().state)

    def check(members):
        owned = [(t, p) for mid in members for t, ps in c.member(mid).assigned_partitions.items() for p in ps]
        assert sorted(owned) == sorted([("foo", p) for p in range(2000)] + [("bar", p) for p in range(1000)])
        sizes = [sum(len(p) for p in c.member(mid).assigned_partitions.values()) for mid in members]
        assert max(sizes) - min(sizes) <= 1

    settle(ids)
    check(ids)
    for mid in ids[::10]:
        c.heartbeat(mid, -1)
    rest = [m for m in ids if m not in ids[::10]]
    settle(rest)
    check(rest)
