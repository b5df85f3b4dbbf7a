"""Properties of streams groups under random (seeded) well-formed traffic: joins, heartbeats that
acknowledge or lag, leaves, kills (session expiry), topic growth, with standby replicas.
After every step:
- no active task is owned (assigned or pending revocation) by two members at once, and a member's
  active and standby tasks never overlap (CurrentAssignmentBuilder's "revoke before assign");
- the group rebuilt from its state log equals the live one (records are the truth);
and once the members stop lagging the group becomes Stable with every task assigned once."""

from __future__ import annotations

import random

import pytest

from tests.streams.helpers import StreamsTestClient, subtopology, topology

GROUP = "prop-app"
TOPO = topology(
    0, subtopology("0", source=["in-a"], changelog=[f"{GROUP}-s-changelog"]), subtopology("1", source=["in-b"])
)


def owned_active(g) -> list:
    return [
        (s, p)
        for m in g.members.values()
        for tasks in (m.assigned_tasks.active, m.tasks_pending_revocation.active)
        for s, ps in tasks.items()
        for p in ps
    ]


def check(c: StreamsTestClient, rebuild: bool = True) -> None:
    g = c.group()
    if g is None:
        return
    owned = owned_active(g)
    assert len(owned) == len(set(owned)), f"an active task owned twice: {sorted(owned)}"
    for m in g.members.values():
        for s, ps in m.assigned_tasks.standby.items():
            assert not set(ps) & set(m.assigned_tasks.active.get(s, ())), m
    if not rebuild:
        return
    rebuilt = c.rebuilt().component("groups").groups[GROUP]
    for attr in ("group_epoch", "target_assignment_epoch", "members", "target_assignment", "topology"):
        assert getattr(rebuilt, attr) == getattr(g, attr), attr


def ack(c, m, r):
    return c.heartbeat(m, r["memberEpoch"], active=r["activeTasks"] or [], standby=r["standbyTasks"] or [], warmup=[])


@pytest.mark.parametrize("seed", range(8))
def test_random_traffic_keeps_tasks_exclusive_and_the_log_the_truth(seed):
    rng = random.Random(seed)
    parts = {"in-a": 4, "in-b": 3}
    c = StreamsTestClient(
        GROUP, topics={**parts, f"{GROUP}-s-changelog": 4}, **{"group.streams.num.standby.replicas": rng.choice([0, 1])}
    )
    known: dict[str, dict] = {}  # member -> what it owns (its last full view)
    for step in range(60):
        op = rng.random()
        if op < 0.2 or not known:
            m = f"m{step}"
            r = c.join(m, TOPO, process_id=f"p{rng.randint(0, 3)}")
            if r["errorCode"] == 0:
                known[m] = r
        elif op < 0.75:
            m = rng.choice(sorted(known))
            r = known[m]
            new = ack(c, m, r)
            if new["errorCode"] == 0:
                known[m] = {**r, **{k: v for k, v in new.items() if v is not None}}
            else:
                known.pop(m)
        elif op < 0.85:
            m = rng.choice(sorted(known))
            c.heartbeat(m, -1)
            known.pop(m)
        elif op < 0.95:
            c.sleep(rng.choice([1000, 20000, 46000]))
            for m in list(known):
                if m not in c.group().members:
                    known.pop(m)
        else:
            topic = rng.choice(sorted(parts))
            parts[topic] += 1
            c.set_topics({**parts, f"{GROUP}-s-changelog": parts["in-a"]})
        check(c, rebuild=step % 5 == 0)
    # Everyone keeps heartbeating what it owns: the group settles.
    for _ in range(12):
        for m in sorted(known):
            new = ack(c, m, known[m])
            assert new["errorCode"] == 0, new
            known[m] = {**known[m], **{k: v for k, v in new.items() if v is not None}}
        check(c, rebuild=False)
    check(c)
    g = c.group()
    if known:
        assert g.state in ("Stable", "NotReady"), g.state
        if g.state == "Stable":
            tasks = sorted((s, p) for s, n in (("0", parts["in-a"]), ("1", parts["in-b"])) for p in range(n))
            assert sorted(owned_active(g)) == tasks
