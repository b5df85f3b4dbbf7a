"""Share groups under random sequences of joins, heartbeats, subscription changes, leaves, session
expiries and topic growth (seeded): after every step the live group equals the group rebuilt from
the state log, every member is at the group's epoch or moving to it, and once every member has
heartbeated and their share-partitions are initialized, every partition of the subscribed topics is
assigned to at least one member. The group's initialization queries are answered at random steps
(or time out and are retried)."""

from __future__ import annotations

import random

import pytest

from tests.consumer.consumer_group_helpers import GROUP
from tests.share.share_group_helpers import ShareGroupTestClient

MEMBERS = [f"member-{i}-aaaaaaaaaaaaaa" for i in range(6)]


def comparable(group) -> dict | None:
    if group is None:
        return None
    data = group.to_json()
    data.pop("metadataRefreshDeadline")
    info = data.get("statePartitionMetadata")
    if info is not None:  # InitMapValue timestamps are the replay time (soft state, as in Kafka)
        for kind in ("initializing", "initialized"):
            info[kind] = {t: {k: v for k, v in iv.items() if k != "timestamp"} for t, iv in info[kind].items()}
    return data


@pytest.mark.parametrize("seed", range(8))
def test_random_share_group_sequences_replay_to_the_live_state(seed):
    rng = random.Random(seed)
    topics = {"foo": 3, "bar": 2}
    c = ShareGroupTestClient(topics=dict(topics))
    epochs: dict[str, int] = {}
    for _ in range(40):
        op = rng.choice(["join", "heartbeat", "heartbeat", "subscribe", "leave", "expire", "grow", "initialize"])
        m = rng.choice(MEMBERS)
        if op == "join" and m not in epochs:
            r = c.share_heartbeat(m, 0, topics=rng.sample(sorted(topics), rng.randint(1, len(topics))))
            assert r["errorCode"] == 0
            epochs[m] = r["memberEpoch"]
        elif op == "heartbeat" and m in epochs:
            r = c.share_heartbeat(m, epochs[m])
            assert r["errorCode"] == 0, r
            epochs[m] = r["memberEpoch"]
        elif op == "subscribe" and m in epochs:
            r = c.share_heartbeat(m, epochs[m], topics=rng.sample(sorted(topics), rng.randint(1, len(topics))))
            assert r["errorCode"] == 0, r
            epochs[m] = r["memberEpoch"]
        elif op == "leave" and m in epochs:
            assert c.share_heartbeat(m, -1)["errorCode"] == 0
            del epochs[m]
        elif op == "expire":
            c.sleep(45_001)  # every session expires: all members fenced
            epochs.clear()
        elif op == "grow":
            t = rng.choice(sorted(topics))
            topics[t] += 1
            c.set_topics(dict(topics))
        elif op == "initialize":
            c.initialize_share_partitions()
        live = c.group()
        assert comparable(live) == comparable(c.rebuilt().component("groups").groups.get(GROUP))
        if live is not None:
            assert set(live.members) == set(epochs)
            assert all(mm.member_epoch <= live.group_epoch for mm in live.members.values())
    # Everyone heartbeats until stable: every subscribed partition has an owner.
    for _ in range(3):
        for m in sorted(epochs):
            epochs[m] = c.share_heartbeat(m, epochs[m])["memberEpoch"]
        c.initialize_share_partitions()
    group = c.group()
    if group is not None and group.members:
        subscribed = set().union(*(mm.subscribed_topic_names for mm in group.members.values()))
        owned = {(t, p) for mm in group.members.values() for t, ps in mm.assigned_partitions.items() for p in ps}
        assert owned == {(t, p) for t in subscribed for p in range(topics[t])}
        assert all(mm.member_epoch == group.group_epoch for mm in group.members.values())
