"""Property test: random histories of a consumer group with consumer-protocol members and
classic-protocol members (JoinGroup / SyncGroup / Heartbeat, the eager Java consumer: it gives up
everything before it rejoins). One consumer-protocol member stays throughout, so the group stays a
consumer group.

Checked after every step: no partition is owned by two live members at once, what a member owns the
coordinator has it holding, the group epoch never goes back. Once quiet: Stable, every partition
owned exactly once. Finally the state rebuilt from the state log equals the live state.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.errors import Errors
from coordinator.group.classic.consumer_protocol import decode_assignment, encode_subscription
from tests.consumer.test_consumer_group_properties import SESSION, TOPICS, Sim, SimMember
from tests.group.group_helpers import GroupTestClient
from tests.runtime.test_metrics import live_gauges, scanned_gauges

CLASSIC_PROTOCOLS = [{"name": "range", "metadata": encode_subscription(TOPICS, version=3)}]


class SimClassic(SimMember):
    classic = True

    def __init__(self):
        super().__init__("", list(TOPICS))
        self.generation = -1


class MixedSim(Sim):
    def __init__(self):
        super().__init__()
        self.view = GroupTestClient.__new__(GroupTestClient)
        self.view.group_id, self.view.d = self.c.group_id, self.c.d
        self.anchor = None

    def join_classic(self) -> None:
        name = f"classic-{self.next_id}"
        self.next_id += 1
        m = self.members[name] = SimClassic()
        self.classic_rejoin(m)

    def classic_rejoin(self, m: SimClassic) -> None:
        m.owned, m.revoking = {}, {}  # eager: everything is revoked before the join
        kw = dict(protos=CLASSIC_PROTOCOLS, session_timeout=SESSION, rebalance_timeout=5 * SESSION)
        _, resp = self.view.join(m.member_id, **kw)
        if resp["errorCode"] == Errors.MEMBER_ID_REQUIRED.code:
            m.member_id = resp["memberId"]
            _, resp = self.view.join(m.member_id, **kw)
        if resp["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code:
            m.member_id, m.generation = "", -1
            return
        assert resp["errorCode"] == 0, resp
        m.generation = resp["generationId"]
        assert m.generation >= m.max_epoch
        m.max_epoch = m.generation
        _, sync = self.view.sync(m.member_id, m.generation, protocol_type="consumer", protocol_name="range")
        if sync["errorCode"] == 0:
            m.owned = {t: set(p) for t, p in decode_assignment(sync["assignment"]).as_dict().items()}
        else:
            assert sync["errorCode"] == Errors.REBALANCE_IN_PROGRESS.code, sync

    def heartbeat(self, m) -> None:
        if not isinstance(m, SimClassic):
            return super().heartbeat(m)
        if not m.alive:
            return
        if m.generation < 0:
            return self.classic_rejoin(m)
        code = self.view.heartbeat(m.member_id, m.generation)["errorCode"]
        if code in (Errors.UNKNOWN_MEMBER_ID.code, Errors.ILLEGAL_GENERATION.code):
            m.member_id, m.generation, m.owned, m.max_epoch = "", -1, {}, 0  # fenced: a new incarnation
            self.classic_rejoin(m)
        elif code == Errors.REBALANCE_IN_PROGRESS.code:
            self.classic_rejoin(m)
        else:
            assert code == 0, code

    def leave(self, m) -> None:
        if m is self.anchor:
            return
        if not isinstance(m, SimClassic):
            return super().leave(m)
        m.owned = {}
        if m.alive and m.member_id:
            self.view.leave({"memberId": m.member_id})
        m.alive = False

    def kill(self, m) -> None:
        if m is not self.anchor:
            super().kill(m)

    def restart(self, m) -> None:
        if isinstance(m, SimClassic):
            if m.alive:
                self.classic_rejoin(m)
        else:
            super().restart(m)

    def check(self) -> None:
        super().check()
        assert self.c.group().type == "consumer"
        assert live_gauges(self.c.d) == scanned_gauges(self.c.d)  # the metrics kept up with both kinds


ACTIONS = st.one_of(
    st.just(("join",)),
    st.just(("join_classic",)),
    st.tuples(st.just("leave"), st.integers(0, 50)),
    st.tuples(st.just("kill"), st.integers(0, 50)),
    st.tuples(st.just("restart"), st.integers(0, 50)),
    st.tuples(st.just("heartbeat"), st.integers(0, 50)),
    st.tuples(st.just("tick"), st.lists(st.integers(0, 50), max_size=4)),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ACTIONS, min_size=1, max_size=25))
def test_random_histories_of_classic_and_consumer_members(actions):
    sim = MixedSim()
    sim.join()
    sim.anchor = next(iter(sim.members.values()))
    for action in actions:
        alive = [m for m in sim.members.values() if m.alive]
        kind = action[0]
        if kind in ("join", "join_classic"):
            if len(sim.members) < 10:
                getattr(sim, kind)()
        elif kind == "tick":
            sim.tick(action[1])
        else:
            getattr(sim, kind)(alive[action[1] % len(alive)])
        sim.check()
    sim.quiesce()
    rebuilt = sim.c.rebuilt().component("groups")
    live = sim.c.groups()
    strip = lambda g: {k: v for k, v in g.to_json().items() if k != "metadataRefreshDeadline"}  # noqa: E731
    assert {gid: strip(g) for gid, g in rebuilt.groups.items()} == {gid: strip(g) for gid, g in live.groups.items()}
