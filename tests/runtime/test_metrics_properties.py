"""Random histories of the existing property tests (classic members, KIP-848 members,
transactions): after every step the gauges the metrics keep from events equal a count of every
group and transaction, and the counters never go down (but for a partition rebuilt from its state
log, whose metrics start again)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.consumer.test_consumer_group_properties import ACTIONS, Sim
from tests.group.test_group_properties import Model, operations
from tests.runtime.test_metrics import live_gauges, metrics, scanned_gauges
from tests.txn.test_txn_properties import Harness, op


def check(d, previous: dict) -> dict:
    m = d.partition.component("metrics")
    m.data  # noqa: B018 - loads the stored metrics
    if not m._initialized:  # rebuilt from the state log ("crash"): counted afresh by its next batch
        return {}
    assert live_gauges(d) == scanned_gauges(d)
    counters = dict(metrics(d)["counters"])
    assert all(counters.get(k, 0) >= v for k, v in previous.items()), "a counter went down"
    return counters


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operations, min_size=10, max_size=40))
def test_classic_group_histories(ops):
    model = Model()
    seen: dict = {}
    for o in ops:
        name = o[0]
        if name == "tick":
            model.c.sleep(o[1])
        elif name == "join":
            model.join(model.members[o[1]], o[2])
        elif name == "commit":
            model.commit(model.members[o[1]], o[2])
        else:
            getattr(model, name)(model.members[o[1]])
        seen = check(model.c.d, seen)
    for _ in range(4):
        model.c.sleep(7000)
        seen = check(model.c.d, seen)
    # Every rebalance started has ended once nothing is parked any more, or is still going.
    started = sum(v for k, v in seen.items() if k.startswith('group_rebalance_started_total{protocol="classic"'))
    ended = sum(
        v
        for k, v in seen.items()
        if k.startswith(
            ('group_rebalance_completed_total{protocol="classic"', 'group_rebalance_failed_total{protocol="classic"')
        )
    )
    in_progress = len(list(model.c.d.partition.component("metrics").rebalances))
    assert started == ended + in_progress


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ACTIONS, min_size=1, max_size=25))
def test_consumer_group_histories(actions):
    sim = Sim()
    seen: dict = {}
    for action in actions:
        alive = [m for m in sim.members.values() if m.alive]
        kind = action[0]
        if kind == "join" or (not alive and kind in ("leave", "kill", "restart", "heartbeat")):
            if len(sim.members) < 12:
                sim.join()
        elif kind in ("leave", "kill", "restart", "heartbeat"):
            getattr(sim, kind)(alive[action[1] % len(alive)])
        elif kind == "tick":
            sim.tick(action[1])
        elif kind == "grow":
            sim.grow(action[1])
        seen = check(sim.c.d, seen)
    sim.quiesce()
    check(sim.c.d, seen)
    assert list(sim.c.d.partition.component("metrics").rebalances) == []  # Stable: no rebalance open


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=3, max_size=30))
def test_transaction_histories(ops):
    h = Harness()
    seen: dict = {}
    for o in [("init", 0, False, 5), ("init", 1, False, 5)] + ops:
        h.step(o)
        seen = check(h.d, seen)
