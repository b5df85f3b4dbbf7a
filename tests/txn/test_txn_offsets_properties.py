"""Property tests of transactional offsets through the real runtime, against a model of Kafka's
OffsetMetadataManager (log positions decide which offset wins):
- a pending offset is never visible as committed; requireStable reports it;
- after a COMMIT marker every pending offset of the producer is committed unless a newer record of
  its key exists; after an ABORT none is;
- a partition rebuilt from its state log (as written, or compacted) at any point continues exactly
  like the original, including which offset wins when several producers have pending offsets for
  one partition at once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.group.group_helpers import GroupTestClient
from tests.group.test_group_replay import compacted

GROUP = "g"
KEYS = [("t", 0), ("t", 1), ("u", 0)]
PRODUCERS = [10, 11, 12]


@st.composite
def programs(draw):
    ops = []
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(["txn", "txn", "commit", "end", "end"]))
        if kind == "txn":
            ops.append(
                (
                    "txn",
                    draw(st.sampled_from(PRODUCERS)),
                    draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True)),
                )
            )
        elif kind == "commit":
            ops.append(("commit", draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=2, unique=True))))
        else:
            ops.append(("end", draw(st.sampled_from(PRODUCERS)), draw(st.booleans())))
    return ops, draw(st.integers(0, len(ops)))


class Model:
    """Kafka's rules: committed[key] = (offset, position); pending[pid][key] = (offset, position)."""

    def __init__(self):
        self.pos = 0
        self.committed: dict = {}
        self.pending: dict = {}

    def txn(self, pid, keys, offset):
        for k in keys:
            self.pending.setdefault(pid, {})[k] = (offset, self.pos)
            self.pos += 1

    def commit(self, keys, offset):
        for k in keys:
            self.committed[k] = (offset, self.pos)
            self.pos += 1

    def end(self, pid, commit):
        for k, (offset, pos) in self.pending.pop(pid, {}).items():
            if commit and (k not in self.committed or pos > self.committed[k][1]):
                self.committed[k] = (offset, pos)

    def visible(self) -> dict:
        return {k: self.committed.get(k, (-1,))[0] for k in KEYS}

    def stable(self) -> dict:
        return {
            k: "UNSTABLE" if any(k in offs for offs in self.pending.values()) else self.committed.get(k, (-1,))[0]
            for k in KEYS
        }


class Runner:
    def __init__(self):
        self.c = GroupTestClient(group_id=GROUP, transaction_partition_verification_enable=False)
        self.epochs = {pid: 0 for pid in PRODUCERS}
        self.n = 0

    def apply(self, op, model: Model | None = None) -> None:
        self.n += 1
        offset = self.n * 100
        if op[0] == "txn":
            _, pid, keys = op
            topics: dict = {}
            for t, p in keys:
                topics.setdefault(t, []).append(
                    {"partitionIndex": p, "committedOffset": offset, "committedMetadata": ""}
                )
            r = self.c.send(
                "TxnOffsetCommit",
                4,
                {
                    "transactionalId": f"tid-{pid}",
                    "groupId": GROUP,
                    "producerId": pid,
                    "producerEpoch": self.epochs[pid],
                    "generationIdOrMemberEpoch": -1,
                    "memberId": "",
                    "groupInstanceId": None,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                },
            )[1]
            assert all(p["errorCode"] == 0 for t in r["topics"] for p in t["partitions"]), r
            if model:
                model.txn(pid, keys, offset)
        elif op[0] == "commit":
            self.c.commit({k: offset for k in op[1]})
            if model:
                model.commit(op[1], offset)
        else:
            _, pid, commit = op
            self.epochs[pid] += 1  # transaction version 2: every end bumps the epoch
            r = self.c.send(
                "WriteTxnMarkers",
                2,
                {
                    "markers": [
                        {
                            "producerId": pid,
                            "producerEpoch": self.epochs[pid],
                            "transactionResult": commit,
                            "topics": [{"name": "__consumer_offsets", "partitionIndexes": [self.c.d.partition_id]}],
                            "coordinatorEpoch": 0,
                            "transactionVersion": 2,
                        }
                    ]
                },
            )[1]
            assert r["markers"][0]["topics"][0]["partitions"][0]["errorCode"] == 0
            if model:
                model.end(pid, commit)

    def fetch(self, require_stable: bool) -> dict:
        topics = {}
        for t, p in KEYS:
            topics.setdefault(t, []).append(p)
        r = self.c.fetch(topics, require_stable=require_stable)["groups"][0]
        return {
            (t["name"], p["partitionIndex"]): p["committedOffset"] if p["errorCode"] == 0 else "UNSTABLE"
            for t in r["topics"]
            for p in t["partitions"]
        }

    def rebuild(self, compact: bool) -> None:
        records = compacted(self.c.records()) if compact else self.c.records()
        self.c.d.failover(records)


@given(programs())
@settings(max_examples=75, deadline=None)
def test_pending_offsets_are_never_visible_and_markers_resolve_them(program):
    ops, _ = program
    run, model = Runner(), Model()
    for op in ops:
        run.apply(op, model)
        assert run.fetch(False) == model.visible()
        assert run.fetch(True) == model.stable()


@given(programs(), st.booleans())
@settings(max_examples=75, deadline=None)
def test_a_rebuilt_partition_continues_like_the_original(program, compact):
    ops, cut = program
    live, rebuilt, model = Runner(), Runner(), Model()
    for op in ops[:cut]:
        live.apply(op, model)
        rebuilt.apply(op)
    rebuilt.rebuild(compact)
    for op in ops[cut:]:
        live.apply(op, model)
        rebuilt.apply(op)
    assert rebuilt.fetch(False) == live.fetch(False) == model.visible()
    assert rebuilt.fetch(True) == live.fetch(True) == model.stable()
