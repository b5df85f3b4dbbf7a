"""Property-based tests: random interleavings of members joining, syncing, heartbeating, leaving,
committing and crashing, with time advancing, against one classic group.

Checked after every step:
- a partition has at most one owner per generation, and every member receives exactly the slice
  the leader assigned it;
- generations never go backwards (JoinGroup responses, group state);
- no offset commit from an old generation (or during CompletingRebalance) is accepted;
- only Kafka's legal state transitions happen, and the generation grows by one per join phase;
- structural invariants (leader is a member, parked requests only in the states that park them,
  a PreparingRebalance group always has a join timer, a CompletingRebalance one a sync timer);
and at the end, after enough time, every parked request has been answered.
"""

from __future__ import annotations

import base64
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.errors import Errors
from coordinator.group.classic.group import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    VALID_PREVIOUS_STATES,
)
from coordinator.records import record_key
from tests.group.group_helpers import GroupTestClient

PARTITIONS = 6
MEMBERS = 4
LEGAL = {(f, t) for t, fs in VALID_PREVIOUS_STATES.items() for f in fs}


def encode_assignment(partitions: list[int]) -> str:
    return base64.b64encode(json.dumps(partitions).encode()).decode()


def decode_assignment(value: str) -> list[int]:
    return json.loads(base64.b64decode(value)) if value else []


class Member:
    def __init__(self, index: int, static: bool):
        self.index = index
        self.client_id = f"c{index}"
        self.instance_id = f"instance-{index}" if static else None
        self.reset()
        self.parked_join: int | None = None
        self.parked_sync: tuple[int, int, str] | None = None  # (cid, generation, member id)

    def reset(self) -> None:
        self.member_id = ""
        self.generation = -1
        self.leader = False
        self.members: list[str] = []


class Model:
    def __init__(self) -> None:
        self.c = GroupTestClient(group_min_session_timeout_ms=1)
        self.members = [Member(i, static=i % 2 == 1) for i in range(MEMBERS)]
        self.owner: dict[tuple[int, int], str] = {}  # (generation, partition) -> member id
        self.join_generations: list[int] = []
        self.group_generation = 0
        self.seen_events = 0
        self.answered: set[int] = set()
        self.replaced: set[str] = set()

    # ---------------------------------------------------------------- operations
    def join(self, m: Member, version: int) -> None:
        if m.parked_join is not None or m.parked_sync is not None:
            return
        if m.instance_id is not None:
            version = max(version, 5)
        cid, resp = self.c.join(
            m.member_id,
            instance_id=m.instance_id,
            version=version,
            session_timeout=6000,
            rebalance_timeout=4000,
            client_id=m.client_id,
        )
        if resp is None:
            m.parked_join = cid
        else:
            self.on_join(m, resp)

    def on_join(self, m: Member, resp: dict) -> None:
        if resp["errorCode"] == Errors.MEMBER_ID_REQUIRED.code:
            m.member_id = resp["memberId"]
        elif resp["errorCode"] == Errors.NONE.code:
            m.member_id, m.generation = resp["memberId"], resp["generationId"]
            m.leader = resp["leader"] == resp["memberId"]
            m.members = [x["memberId"] for x in resp["members"]]
            assert not m.leader or m.members, "the leader receives the member list"
            assert m.leader or not m.members, "only the leader receives the member list"
            self.join_generations.append(resp["generationId"])
        else:
            m.reset()

    def sync(self, m: Member) -> None:
        if m.parked_join is not None or m.parked_sync is not None or m.generation < 0:
            return
        assignments = {}
        if m.leader:
            assignments = {
                mid: encode_assignment([p for p in range(PARTITIONS) if p % len(m.members) == i])
                for i, mid in enumerate(m.members)
            }
        cid, resp = self.c.sync(m.member_id, m.generation, assignments, instance_id=m.instance_id)
        if resp is None:
            m.parked_sync = (cid, m.generation, m.member_id)
        else:
            self.on_sync(m, m.generation, m.member_id, resp)

    def assignments(self) -> dict[int, dict[str, list[int]]]:
        """generation -> member -> partitions, as the coordinator persisted them: the leader's
        SyncGroup writes the generation's assignment; replacing a static member writes it again
        under the new member id."""
        out: dict[int, dict[str, list[int]]] = {}
        for key, value in self.c.records():
            if key == record_key("GroupMetadata", self.c.group_id) and value and value["members"]:
                out.setdefault(value["generation"], {}).update(
                    {mm["memberId"]: decode_assignment(mm["assignment"]) for mm in value["members"]}
                )
        return out

    def on_sync(self, m: Member, generation: int, member_id: str, resp: dict) -> None:
        """`member_id` is the id the request was sent with (the client may have crashed since)."""
        if resp["errorCode"] != Errors.NONE.code:
            if resp["errorCode"] in (25, 22, 82) and m.member_id == member_id:  # UNKNOWN_MEMBER_ID, ...
                m.reset()
            return
        partitions = decode_assignment(resp["assignment"])
        expected = self.assignments().get(generation)
        assert expected is not None, "a member got an assignment before its leader's was stored"
        assert partitions == expected.get(member_id, []), "each member receives exactly its slice"
        # Owners are clients: a static member keeps its partitions across a replacement.
        owner_id = m.instance_id or member_id
        for p in partitions:
            owner = self.owner.setdefault((generation, p), owner_id)
            assert owner == owner_id, f"partition {p} has two owners in generation {generation}"

    def heartbeat(self, m: Member) -> None:
        if not m.member_id:
            return
        resp = self.c.heartbeat(m.member_id, max(m.generation, 0), instance_id=m.instance_id)
        if resp["errorCode"] in (25, 82):
            if m.parked_join is None and m.parked_sync is None:
                m.reset()

    def leave(self, m: Member) -> None:
        if not m.member_id or m.parked_join is not None or m.parked_sync is not None:
            return
        self.c.leave({"memberId": m.member_id, "groupInstanceId": m.instance_id})
        m.reset()

    def commit(self, m: Member, partition: int) -> None:
        before = self.c.group()
        resp = self.c.commit(
            {("t", partition): 100 + partition},
            member_id=m.member_id,
            generation=m.generation,
            instance_id=m.instance_id,
        )
        code = resp["topics"][0]["partitions"][0]["errorCode"]
        if code == Errors.NONE.code:
            g = self.c.group()
            if m.generation >= 0:
                assert g.generation_id == m.generation, "a commit from an old generation was accepted"
                assert g.state in (STABLE, PREPARING_REBALANCE)
            else:
                assert before is None or before.state == EMPTY

    def crash(self, m: Member) -> None:
        """The client restarts: it forgets its member id and generation (its parked requests stay
        parked in the coordinator and must still be answered)."""
        m.reset()

    # ---------------------------------------------------------------- checks
    def collect(self) -> None:
        for m in self.members:
            if m.parked_join is not None and (resp := self.c.response(m.parked_join)) is not None:
                self.answered.add(m.parked_join)
                m.parked_join = None
                self.on_join(m, resp)
            if m.parked_sync is not None and (resp := self.c.response(m.parked_sync[0])) is not None:
                cid, generation, member_id = m.parked_sync
                self.answered.add(cid)
                m.parked_sync = None
                self.on_sync(m, generation, member_id, resp)

    def check(self) -> None:
        self.collect()
        assert self.join_generations == sorted(self.join_generations), "generations went backwards"
        for e in self.c.d.events[self.seen_events :]:
            if e["event"] == "GroupStateChanged":
                assert (e["fromState"], e["toState"]) in LEGAL, e
                if e["toState"] in (COMPLETING_REBALANCE, EMPTY) and e["fromState"] == PREPARING_REBALANCE:
                    assert e["generationId"] == self.group_generation + 1
                else:
                    assert e["generationId"] == self.group_generation
                self.group_generation = e["generationId"]
            elif e["event"] == "StaticMemberReplaced":
                self.replaced.add(e["oldMemberId"])
            elif e["event"] == "GroupDeleted":
                self.group_generation = 0
            elif e["event"] == "RequestFailed":
                raise AssertionError(f"a handler crashed: {e}")
        self.seen_events = len(self.c.d.events)
        part = self.c.d.partition
        g = part.component("groups").groups.get(self.c.group_id)
        if g is None:
            return
        assert g.generation_id == self.group_generation
        if g.members:
            assert g.leader_id in g.members
        else:
            assert g.leader_id is None and g.state in (EMPTY, PREPARING_REBALANCE)
        instances = [m.group_instance_id for m in g.members.values() if m.group_instance_id is not None]
        assert len(instances) == len(set(instances))
        # Kafka's replaceStaticMember leaves the old id among the members pending sync (so the
        # sync deadline then rebalances the group): only such ids may be pending and not members.
        assert set(g.pending_sync_members) - set(g.members) <= self.replaced
        for m in g.members.values():
            assert m.awaiting_join is None or g.state == PREPARING_REBALANCE
            assert m.awaiting_sync is None or g.state == COMPLETING_REBALANCE
        if g.state == PREPARING_REBALANCE:
            assert record_key("classic-join", g.group_id) in part.timers, "a rebalance with no deadline"
        if g.state == COMPLETING_REBALANCE:
            assert record_key("classic-sync", g.group_id) in part.timers, "a sync phase with no deadline"


member_index = st.integers(0, MEMBERS - 1)
# Weighted so that groups get through whole rebalances: joins and syncs are the most frequent.
KINDS = ["join"] * 4 + ["sync"] * 4 + ["heartbeat"] * 2 + ["commit"] * 2 + ["tick"] * 3 + ["leave", "crash"]


def _operation(kind: str):
    if kind == "join":
        return st.tuples(st.just("join"), member_index, st.sampled_from([3, 9]))
    if kind == "commit":
        return st.tuples(st.just("commit"), member_index, st.integers(0, PARTITIONS - 1))
    if kind == "tick":
        return st.tuples(st.just("tick"), st.sampled_from([100, 1000, 3000, 4000, 7000]))
    return st.tuples(st.just(kind), member_index)


operations = st.sampled_from(KINDS).flatmap(_operation)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operations, min_size=20, max_size=60))
def test_random_member_interleavings_keep_kafkas_invariants(ops):
    model = Model()
    for op in ops:
        name = op[0]
        if name == "tick":
            model.c.sleep(op[1])
        elif name == "join":
            model.join(model.members[op[1]], op[2])
        elif name == "commit":
            model.commit(model.members[op[1]], op[2])
        else:
            getattr(model, name)(model.members[op[1]])
        model.check()
    # Enough time for every rebalance, sync phase and session to run out: nothing stays parked.
    for _ in range(4):
        model.c.sleep(7000)
        model.check()
    assert all(m.parked_join is None and m.parked_sync is None for m in model.members), (
        "a parked request was never answered"
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operations, min_size=10, max_size=40))
def test_replaying_a_batch_gives_identical_outputs(ops):
    """Determinism: re-running the same requests from the same start gives the same member ids,
    responses, records and events (the stream re-runs a batch after a crash)."""
    runs = []
    for _ in range(2):
        model = Model()
        for op in ops:
            name = op[0]
            if name == "tick":
                model.c.sleep(op[1])
            elif name == "join":
                model.join(model.members[op[1]], op[2])
            elif name == "commit":
                model.commit(model.members[op[1]], op[2])
            else:
                getattr(model, name)(model.members[op[1]])
        runs.append((model.c.d.responses, model.c.d.records, model.c.d.events, model.c.d.partition.to_json()))
    assert runs[0] == runs[1]
