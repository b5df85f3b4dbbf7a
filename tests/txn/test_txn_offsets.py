"""The group side of transactions through the real runtime: TxnOffsetCommit and WriteTxnMarkers
(Kafka's OffsetMetadataManagerTest / GroupMetadataManagerTest scenarios), the producer-epoch check
of the offsets partition, the marker records and their replay (with and without compaction), and
producer-state expiry."""

from __future__ import annotations

import pytest

from coordinator.errors import ApiError, Errors
from coordinator.group.classic.group import EMPTY, ClassicGroup, ClassicGroupMember
from coordinator.group.group import Group, register_group_type
from coordinator.records import record_key
from coordinator.result import CoordinatorResult
from tests.core_driver import call_handler
from tests.group.group_helpers import GroupTestClient, join_and_rebalance
from tests.group.test_group_replay import compacted

E = Errors
PID = 5
MINUTE = 60_000


def _created(comp, group_id: str) -> CoordinatorResult:
    """Tests only: a new classic group, its event and timer in a result for the runtime."""
    result = CoordinatorResult()
    comp.create_classic_group(group_id, "test", result)
    return result


def client(**overrides) -> GroupTestClient:
    # The group side alone, as OffsetMetadataManagerTest tests it: the transaction verification
    # (KIP-890, a question to the transaction coordinator) is tested in test_txn_verification.py.
    overrides.setdefault("group_min_session_timeout_ms", 1)
    overrides.setdefault("transaction_partition_verification_enable", False)
    return GroupTestClient(group_id="foo", **overrides)


def txn_commit(
    c: GroupTestClient,
    offsets: dict,
    *,
    producer_id: int = PID,
    epoch: int = 0,
    version: int = 4,
    member_id: str = "",
    generation: int = -1,
    instance_id: str | None = None,
    metadata: str | None = "metadata",
    leader_epoch: int = 10,
    group_id: str | None = None,
) -> dict:
    topics: dict[str, list] = {}
    for (topic, partition), offset in offsets.items():
        part = {"partitionIndex": partition, "committedOffset": offset, "committedMetadata": metadata}
        if version >= 2:
            part["committedLeaderEpoch"] = leader_epoch
        topics.setdefault(topic, []).append(part)
    body = {
        "transactionalId": "txn",
        "groupId": c.group_id if group_id is None else group_id,
        "producerId": producer_id,
        "producerEpoch": epoch,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }
    if version >= 3:
        body.update(generationId=generation, memberId=member_id, groupInstanceId=instance_id)
    return c.send("TxnOffsetCommit", version, body)[1]


def marker(
    c: GroupTestClient,
    producer_id: int,
    committed: bool,
    *,
    epoch: int = 1,
    tv: int = 2,
    topics: list | None = None,
    version: int = 2,
) -> dict:
    m = {
        "producerId": producer_id,
        "producerEpoch": epoch,
        "transactionResult": committed,
        "topics": topics or [{"name": "__consumer_offsets", "partitionIndexes": [c.d.partition_id]}],
        "coordinatorEpoch": 0,
    }
    if version >= 2:
        m["transactionVersion"] = tv
    return c.send("WriteTxnMarkers", version, {"markers": [m]})[1]


def marker_error(resp: dict) -> int:
    codes = {p["errorCode"] for m in resp["markers"] for t in m["topics"] for p in t["partitions"]}
    assert len(codes) == 1, resp
    return codes.pop()


def errors(resp: dict) -> list[int]:
    return [p["errorCode"] for t in resp["topics"] for p in t["partitions"]]


def fetch_parts(c: GroupTestClient, topics: dict | None, require_stable: bool = False) -> dict:
    resp = c.fetch(topics, require_stable=require_stable)["groups"][0]
    return {
        (t["name"], p["partitionIndex"]): p["committedOffset"] if p["errorCode"] == 0 else "UNSTABLE"
        for t in resp["topics"]
        for p in t["partitions"]
    }


def pending(c: GroupTestClient) -> dict:
    comp = c.groups()
    return {
        (pid, g, t, p): o.committed_offset
        for pid, gs in comp.offsets.pending.items()
        for g, ts in gs.items()
        for t, ps in ts.items()
        for p, o in ps.items()
    }


def stable_group_with_member(c: GroupTestClient) -> str:
    """A Stable classic group at generation 1 whose only member is "member" (Kafka's tests add it
    with group.add and transitionTo)."""

    def setup(comp):
        g = ClassicGroup(c.group_id, now_ms=c.now)
        comp.groups[c.group_id] = g
        g.add(ClassicGroupMember("member", None, "client", "host", 5000, 5000, "consumer", [("range", "")]))
        g.transition_to("PreparingRebalance", c.now)
        g.init_next_generation(c.now)
        g.transition_to("Stable", c.now)

    c.mutate(setup)
    return "member"


# ====================================================================== TxnOffsetCommit
def test_generic_group_transactional_offset_commit():
    c = client()
    stable_group_with_member(c)
    mark = len(c.records())
    resp = txn_commit(c, {("bar", 0): 100}, member_id="member", generation=1, epoch=3)
    assert resp == {
        "throttleTimeMs": 0,
        "topics": [{"name": "bar", "partitions": [{"partitionIndex": 0, "errorCode": 0}]}],
    }
    assert c.records(mark) == [
        (
            record_key("TxnOffsetCommit", PID, "foo", "bar", 0),
            {
                "type": "TxnOffsetCommit",
                "offset": 100,
                "leaderEpoch": 10,
                "metadata": "metadata",
                "commitTimestamp": c.now,
                "expireTimestamp": -1,
                "producerId": PID,
                "producerEpoch": 3,
            },
        )
    ]
    # Pending: not visible as committed; requireStable reports it.
    assert fetch_parts(c, {"bar": [0]}) == {("bar", 0): -1}
    assert fetch_parts(c, {"bar": [0]}, require_stable=True) == {("bar", 0): "UNSTABLE"}
    assert pending(c) == {(PID, "foo", "bar", 0): 100}


def test_generic_group_transactional_offset_commit_with_unknown_group_id():
    c = client()
    resp = txn_commit(c, {("bar", 0): 100}, member_id="member", generation=10)
    assert errors(resp) == [E.ILLEGAL_GENERATION.code]
    assert c.group() is None and c.records() == []


def test_generic_group_transactional_offset_commit_with_unknown_member_id():
    c = client()
    c.mutate(lambda comp: comp.p.apply(_created(comp, "foo")))
    resp = txn_commit(c, {("bar", 0): 100}, member_id="member", generation=10)
    assert errors(resp) == [E.UNKNOWN_MEMBER_ID.code] and c.records() == []


def test_generic_group_transactional_offset_commit_with_illegal_generation_id():
    c = client()
    stable_group_with_member(c)
    resp = txn_commit(c, {("bar", 0): 100}, member_id="member", generation=100)
    assert errors(resp) == [E.ILLEGAL_GENERATION.code] and c.records() == []


class _StaleEpochGroup(Group):
    """A KIP-848 consumer group whose member epoch never matches (ConsumerGroup raises
    STALE_MEMBER_EPOCH)."""

    type = "consumer"

    def __init__(self, group_id):
        self.group_id = group_id

    def state_as_string(self):
        return "Stable"

    def is_empty(self):
        return False

    def validate_offset_commit(self, member_id, instance_id, generation_id, is_transactional, api_version):
        raise ApiError(Errors.STALE_MEMBER_EPOCH)

    def to_json(self):
        return {"type": self.type, "groupId": self.group_id}

    @classmethod
    def from_json(cls, d):
        return cls(d["groupId"])


def test_consumer_group_transactional_offset_commit_with_stale_member_epoch():
    # testConsumerGroupTransactionalOffsetCommitWithStaleMemberEpoch: STALE_MEMBER_EPOCH becomes
    # ILLEGAL_GENERATION for TxnOffsetCommit.
    from coordinator.group import group as group_module

    saved = group_module._GROUP_TYPES.get("consumer")
    register_group_type(_StaleEpochGroup)
    try:
        c = client()
        c.mutate(lambda comp: comp.groups.__setitem__("foo", _StaleEpochGroup("foo")))
        resp = txn_commit(c, {("bar", 0): 100}, member_id="member", generation=100)
        assert errors(resp) == [E.ILLEGAL_GENERATION.code]
    finally:
        if saved is not None:
            group_module._GROUP_TYPES["consumer"] = saved


def test_transactional_offset_commit_creates_a_simple_group_and_skips_state_checks():
    c = client()
    resp = txn_commit(c, {("bar", 0): 100, ("bar", 1): 101})
    assert errors(resp) == [0, 0]
    assert c.group().state == EMPTY and c.group().protocol_type is None
    assert c.events("GroupCreated")[0]["reason"] == "simple group created by TxnOffsetCommit"
    # A group completing a rebalance: transactional commits skip the REBALANCE_IN_PROGRESS check.
    g = client()
    leader = join_and_rebalance(g)
    g.join(leader["memberId"])  # the leader rejoins: generation 2, CompletingRebalance
    assert g.group().state == "CompletingRebalance"
    assert errors(g.commit({("bar", 0): 7}, member_id=leader["memberId"], generation=2)) == [
        E.REBALANCE_IN_PROGRESS.code
    ]
    resp = txn_commit(g, {("bar", 0): 7}, member_id=leader["memberId"], generation=2)
    assert errors(resp) == [0]


def test_transactional_offset_commit_with_offset_metadata_too_large():
    c = client(offset_metadata_max_bytes=5)
    resp = txn_commit(c, {("bar", 0): 100}, metadata="toolarge")
    assert errors(resp) == [E.OFFSET_METADATA_TOO_LARGE.code] and pending(c) == {}
    body = {
        "transactionalId": "txn",
        "groupId": "foo",
        "producerId": PID,
        "producerEpoch": 0,
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [
            {
                "name": "bar",
                "partitions": [
                    {"partitionIndex": 0, "committedOffset": 1, "committedMetadata": "toolarge"},
                    {"partitionIndex": 1, "committedOffset": 2, "committedMetadata": "small"},
                ],
            }
        ],
    }
    resp = c.send("TxnOffsetCommit", 4, body)[1]
    assert errors(resp) == [E.OFFSET_METADATA_TOO_LARGE.code, 0]
    assert pending(c) == {(PID, "foo", "bar", 1): 2}


def test_transactional_offset_commit_with_empty_group_id():
    c = GroupTestClient(group_id="")
    resp = txn_commit(c, {("bar", 0): 1, ("baz", 3): 2})
    assert errors(resp) == [E.INVALID_GROUP_ID.code] * 2 and c.records() == []


def test_unknown_topics_and_partitions_are_answered_by_the_api_layer():
    c = client()
    c.send("UpdateMetadata", 0, {"topicStates": [{"topicName": "bar", "numPartitions": 2}]})
    resp = txn_commit(c, {("nope", 0): 1, ("bar", 0): 2, ("bar", 5): 3, ("bar", 1): 4})
    # KafkaApis answers unknown topics/partitions first, then merges the coordinator's answer.
    assert resp["topics"] == [
        {"name": "nope", "partitions": [{"partitionIndex": 0, "errorCode": E.UNKNOWN_TOPIC_OR_PARTITION.code}]},
        {
            "name": "bar",
            "partitions": [
                {"partitionIndex": 5, "errorCode": E.UNKNOWN_TOPIC_OR_PARTITION.code},
                {"partitionIndex": 0, "errorCode": 0},
                {"partitionIndex": 1, "errorCode": 0},
            ],
        },
    ]
    assert pending(c) == {(PID, "foo", "bar", 0): 2, (PID, "foo", "bar", 1): 4}
    # Only unknown partitions: the coordinator is not asked (no group is created).
    other = client()
    other.send("UpdateMetadata", 0, {"topicStates": []})
    assert errors(txn_commit(other, {("nope", 0): 1}, generation=10)) == [E.UNKNOWN_TOPIC_OR_PARTITION.code]


@pytest.mark.parametrize("version", range(0, 5))
def test_every_version_has_the_same_response_shape(version):
    c = client()
    resp = txn_commit(c, {("bar", 0): 100}, version=version)
    assert resp == {
        "throttleTimeMs": 0,
        "topics": [{"name": "bar", "partitions": [{"partitionIndex": 0, "errorCode": 0}]}],
    }
    value = c.records()[-1][1]
    assert value["leaderEpoch"] == (10 if version >= 2 else -1)


def test_version_5_has_the_same_request_and_response_as_version_4():
    # What v5 changes is the verification (it adds the partition): test_txn_verification.py.
    c = client()
    assert errors(txn_commit(c, {("bar", 0): 1}, version=5)) == [0]
    assert c.groups().offsets.has_pending("foo", "bar", 0)


def test_a_zombie_with_an_older_epoch_is_fenced_by_the_offsets_partition():
    c = client()
    assert errors(txn_commit(c, {("bar", 0): 1}, epoch=4)) == [0]
    assert marker_error(marker(c, PID, True, epoch=5)) == 0  # TV2: the end bumps the epoch to 5
    # The old producer (epoch 4) is fenced; the current one (5) commits its next transaction.
    resp = txn_commit(c, {("bar", 0): 2}, epoch=4)
    assert errors(resp) == [E.INVALID_PRODUCER_EPOCH.code] and pending(c) == {}
    for version in (0, 2):
        assert errors(txn_commit(c, {("bar", 0): 2}, epoch=4, version=version)) == [E.INVALID_PRODUCER_EPOCH.code]
    assert errors(txn_commit(c, {("bar", 0): 3}, epoch=5)) == [0]
    assert pending(c) == {(PID, "foo", "bar", 0): 3}


def test_a_negative_producer_id_has_no_transaction():
    c = client()
    assert errors(txn_commit(c, {("bar", 0): 1}, producer_id=-1)) == [E.INVALID_PRODUCER_ID_MAPPING.code]


# ====================================================================== WriteTxnMarkers
def test_replay_transaction_end_marker_with_commit():
    # testReplayTransactionEndMarkerWithCommit, through TxnOffsetCommit and WriteTxnMarkers.
    c = client()
    c.commit({("bar", 0): 99})
    txn_commit(c, {("bar", 0): 100}, producer_id=5)
    txn_commit(c, {("bar", 1): 200}, producer_id=6)
    # A marker for an unknown producer does not fail.
    assert marker_error(marker(c, 1, True)) == 0
    assert marker_error(marker(c, 5, True)) == 0
    assert fetch_parts(c, {"bar": [0, 1]}) == {("bar", 0): 100, ("bar", 1): -1}
    assert marker_error(marker(c, 6, False)) == 0
    assert fetch_parts(c, {"bar": [0, 1]}, require_stable=True) == {("bar", 0): 100, ("bar", 1): -1}
    assert pending(c) == {}
    assert [
        (e["event"], e["producerId"], e["partitions"])
        for e in c.events()
        if e["event"].startswith("TransactionalOffsets")
    ] == [("TransactionalOffsetsCommitted", 5, [["bar", 0, 100]]), ("TransactionalOffsetsAborted", 6, [["bar", 1]])]


def test_write_txn_markers_returns_steps_the_runtime_applies_one_after_the_other():
    """The handler applies nothing: its result is a chain of steps, each computed once the
    previous one is replayed (the second marker sees the offsets the first one materialized), and
    the last carries the response. Two markers in one request, as the transaction coordinator
    sends them, end as two requests would, and the log rebuilds the same offsets."""
    from coordinator.messages import ReplyTo, Request

    def offsets_after(two_requests: bool) -> tuple:
        c = client()
        c.commit({("bar", 0): 99})
        txn_commit(c, {("bar", 0): 100, ("bar", 1): 10}, producer_id=5)
        txn_commit(c, {("bar", 0): 101}, producer_id=6)
        markers = [
            {
                "producerId": pid,
                "producerEpoch": 1,
                "transactionResult": True,
                "topics": [{"name": "__consumer_offsets", "partitionIndexes": [c.d.partition_id]}],
                "coordinatorEpoch": 0,
                "transactionVersion": 2,
            }
            for pid in (5, 6)
        ]
        if two_requests:
            for m in markers:
                c.send("WriteTxnMarkers", 2, {"markers": [m]})
        else:
            records = len(c.records())
            request = Request(ReplyTo("WriteTxnMarkers", 2, 99, "c"), {"markers": markers}, c.now, "k", (0, 1))
            out = []
            c.d.call(lambda part: out.append(call_handler(part, "WriteTxnMarkers", request)))
            (result,) = out
            assert result.steps is not None and result.response is None and not result.records
            assert len(c.records()) == records and {k[0] for k in pending(c)} == {5, 6}  # nothing applied yet
            c.d.call(lambda part: part.apply(result, request.reply))
            assert [marker_error({"markers": [m]}) for m in c.d.response(99)["markers"]] == [0, 0]
        assert pending(c) == {}
        rebuilt = c.d.rebuilt().component("groups").offsets
        return fetch_parts(c, {"bar": [0, 1]}), rebuilt.get("foo", "bar", 0).committed_offset

    assert (
        offsets_after(two_requests=False)
        == offsets_after(two_requests=True)
        == ({("bar", 0): 101, ("bar", 1): 10}, 101)
    )


def test_replay_transaction_end_marker_keeps_the_most_recent_committed_offset():
    c = client()
    txn_commit(c, {("bar", 0): 100})
    c.commit({("bar", 0): 101})  # a regular commit after the transactional one
    marker(c, PID, True)
    assert fetch_parts(c, {"bar": [0]}) == {("bar", 0): 101}
    assert c.events("TransactionalOffsetsCommitted")[0]["skipped"] == [["bar", 0]]


def test_fetch_offsets_with_pending_transactional_offsets():
    # testFetchOffsetsWithPendingTransactionalOffsets / testFetchAllOffsetsWithPendingTransactionalOffsets
    c = client()
    c.commit({("foo", 0): 100, ("foo", 1): 110, ("bar", 0): 200})
    txn_commit(c, {("foo", 1): 111, ("bar", 0): 201, ("bar", 1): 211}, producer_id=10)
    topics = {"foo": [0, 1], "bar": [0, 1]}
    assert fetch_parts(c, topics, require_stable=True) == {
        ("foo", 0): 100,
        ("foo", 1): "UNSTABLE",
        ("bar", 0): "UNSTABLE",
        ("bar", 1): "UNSTABLE",
    }
    assert fetch_parts(c, topics) == {("foo", 0): 100, ("foo", 1): 110, ("bar", 0): 200, ("bar", 1): -1}
    # "All offsets" lists committed partitions only: bar-1 is not there until the commit.
    assert fetch_parts(c, None, require_stable=True) == {
        ("foo", 0): 100,
        ("foo", 1): "UNSTABLE",
        ("bar", 0): "UNSTABLE",
    }
    marker(c, 10, True)
    assert fetch_parts(c, topics, require_stable=True) == {
        ("foo", 0): 100,
        ("foo", 1): 111,
        ("bar", 0): 201,
        ("bar", 1): 211,
    }
    assert fetch_parts(c, None) == {("foo", 0): 100, ("foo", 1): 111, ("bar", 0): 201, ("bar", 1): 211}


def test_markers_are_idempotent_and_epoch_checked():
    c = client()
    txn_commit(c, {("bar", 0): 1}, epoch=0)
    assert marker_error(marker(c, PID, True, epoch=1)) == 0
    records = len(c.records())
    # A second copy of a TV2 marker is not newer than the producer's epoch: rejected, no change.
    assert marker_error(marker(c, PID, False, epoch=1)) == E.INVALID_PRODUCER_EPOCH.code
    assert len(c.records()) == records and fetch_parts(c, {"bar": [0]}) == {("bar", 0): 1}
    assert c.events("TransactionMarkerRejected")[0]["lastProducerEpoch"] == 1
    # A TV1 marker may repeat the epoch: accepted, nothing pending, nothing changes but the marker record.
    assert marker_error(marker(c, PID, False, epoch=1, tv=0)) == 0
    assert fetch_parts(c, {"bar": [0]}) == {("bar", 0): 1}
    assert [k for k, _ in c.records(records)] == [record_key("EndTransactionMarker", PID)]
    # An older one is rejected whatever its version.
    assert marker_error(marker(c, PID, True, epoch=0, tv=0)) == E.INVALID_PRODUCER_EPOCH.code


def test_markers_for_partitions_this_partition_does_not_host():
    c = client()
    txn_commit(c, {("bar", 0): 1})
    own = c.d.partition_id
    resp = marker(
        c,
        PID,
        True,
        topics=[
            {"name": "__consumer_offsets", "partitionIndexes": [own + 1, own]},
            {"name": "bar", "partitionIndexes": [0]},
        ],
        version=1,
    )
    assert resp == {
        "markers": [
            {
                "producerId": PID,
                "topics": [
                    {
                        "name": "__consumer_offsets",
                        "partitions": [
                            {"partitionIndex": own + 1, "errorCode": E.UNKNOWN_TOPIC_OR_PARTITION.code},
                            {"partitionIndex": own, "errorCode": 0},
                        ],
                    },
                    {
                        "name": "bar",
                        "partitions": [{"partitionIndex": 0, "errorCode": E.UNKNOWN_TOPIC_OR_PARTITION.code}],
                    },
                ],
            }
        ]
    }
    assert fetch_parts(c, {"bar": [0]}) == {("bar", 0): 1}


def test_marker_records_re_appended_offsets_and_deleted_pending_records():
    c = client()
    c.commit({("t", 0): 10, ("t", 1): 20})
    txn_commit(c, {("t", 0): 11, ("t", 1): 21, ("t", 2): 31}, producer_id=7, epoch=0)
    c.commit({("t", 1): 22})  # newer than the pending t-1 offset
    mark = len(c.records())
    marker(c, 7, True, epoch=1)
    k = lambda p: record_key("OffsetCommit", "foo", "t", p)  # noqa: E731
    pk = lambda p: record_key("TxnOffsetCommit", 7, "foo", "t", p)  # noqa: E731
    written = c.records(mark)
    assert written[0] == (
        record_key("EndTransactionMarker", 7),
        {
            "type": "EndTransactionMarker",
            "producerId": 7,
            "producerEpoch": 1,
            "transactionResult": "COMMIT",
            "coordinatorEpoch": 0,
            "transactionVersion": 2,
            "timestamp": c.now,
        },
    )
    # The materialized offsets become regular OffsetCommit records (with their original commit
    # time); t-1 lost to the newer regular commit. Then the pending records are deleted.
    assert [(key, v and v["offset"]) for key, v in written[1:]] == [
        (k(0), 11),
        (k(2), 31),
        (pk(0), None),
        (pk(1), None),
        (pk(2), None),
    ]
    assert "producerId" not in written[1][1]
    assert fetch_parts(c, {"t": [0, 1, 2]}) == {("t", 0): 11, ("t", 1): 22, ("t", 2): 31}

    # ABORT: the committed offsets are untouched, the pending records deleted.
    txn_commit(c, {("t", 0): 12, ("t", 3): 40}, producer_id=7, epoch=1)
    mark = len(c.records())
    marker(c, 7, False, epoch=2)
    assert [(key, v) for key, v in c.records(mark)[1:]] == [(pk(0), None), (pk(3), None)]
    assert fetch_parts(c, {"t": [0, 3]}) == {("t", 0): 11, ("t", 3): -1}


def test_pending_records_neither_hide_nor_lose_committed_offsets_under_compaction():
    # Kafka's cleaner never cleans past the last stable offset; a compacted state log must give
    # the same result during a transaction: the committed offset stays, the pending one too, and a
    # regular commit made during the transaction does not erase the pending offset.
    c = client()
    c.commit({("t", 0): 10})
    txn_commit(c, {("t", 0): 11, ("t", 1): 21}, producer_id=7, epoch=0)
    c.commit({("t", 1): 22})
    for compact in (False, True):
        records = compacted(c.records()) if compact else c.records()
        rebuilt = c.d.rebuilt(records).component("groups")
        assert observable(rebuilt) == observable(c.groups())
        assert observable(rebuilt)["committed"][("foo", "t", 0)][0] == 10
        assert observable(rebuilt)["pending"] == {(7, "foo", "t", 0): 11, (7, "foo", "t", 1): 21}
        assert observable(rebuilt)["newer"] == {(7, "foo", "t", 0): True, (7, "foo", "t", 1): False}


def scenario() -> GroupTestClient:
    c = client()
    c.commit({("t", 0): 10})
    txn_commit(c, {("t", 0): 11, ("t", 1): 21}, producer_id=7, epoch=0)
    marker(c, 7, True, epoch=1)  # committed
    txn_commit(c, {("t", 0): 12, ("t", 2): 32}, producer_id=7, epoch=1)
    marker(c, 7, False, epoch=2)  # aborted: the committed 11 stays
    txn_commit(c, {("t", 1): 23}, producer_id=8, epoch=0)
    c.commit({("t", 1): 24})  # newer than producer 8's offset
    marker(c, 8, True, epoch=1)  # not materialized
    txn_commit(c, {("t", 3): 43}, producer_id=7, epoch=2)  # still open
    txn_commit(c, {("u", 0): 50}, producer_id=9, epoch=3)
    marker(c, 9, True, epoch=4)
    return c


def observable(comp) -> dict:
    committed = {
        (g, t, p): (o.committed_offset, o.metadata, o.commit_timestamp_ms)
        for g, ts in comp.offsets.committed.items()
        for t, ps in ts.items()
        for p, o in ps.items()
    }
    open_ = {
        (pid, g, t, p): o.committed_offset
        for pid, gs in comp.offsets.pending.items()
        for g, ts in gs.items()
        for t, ps in ts.items()
        for p, o in ps.items()
    }
    # Which pending offsets would win against the committed one at a COMMIT (record order).
    newer = {
        (pid, g, t, p): (comp.offsets.get(g, t, p) is None or o.record_seq > comp.offsets.get(g, t, p).record_seq)
        for pid, gs in comp.offsets.pending.items()
        for g, ts in gs.items()
        for t, ps in ts.items()
        for p, o in ps.items()
    }
    producers = comp.extensions.get("txnOffsets", {}).get("producers", {})
    return {
        "committed": committed,
        "pending": open_,
        "newer": newer,
        "epochs": {pid: e for pid, (e, _) in producers.items()},
    }


@pytest.mark.parametrize("compact", [False, True])
def test_rebuilding_from_the_state_log_gives_the_same_offsets(compact):
    c = scenario()
    records = compacted(c.records()) if compact else c.records()
    rebuilt = c.d.rebuilt(records)
    assert observable(rebuilt.component("groups")) == observable(c.groups())
    assert observable(c.groups())["committed"] == {
        ("foo", "t", 0): (11, "metadata", c.now),
        ("foo", "t", 1): (24, "", c.now),
        ("foo", "u", 0): (50, "metadata", c.now),
    }
    # The rebuilt partition keeps serving: producer 7 commits its open transaction, zombies are fenced.
    c.d.failover(records)
    assert errors(txn_commit(c, {("t", 3): 44}, producer_id=7, epoch=1)) == [E.INVALID_PRODUCER_EPOCH.code]
    marker(c, 7, True, epoch=3)
    assert fetch_parts(c, {"t": [3]}, require_stable=True) == {("t", 3): 43}


def test_a_compacted_log_resolves_each_transaction_with_its_own_marker():
    # Producer 7 aborts t-5, then commits t-6: the compacted log keeps only the COMMIT marker of
    # producer 7, and t-5 must not come back as committed.
    c = client()
    txn_commit(c, {("t", 5): 1}, producer_id=7, epoch=0)
    marker(c, 7, False, epoch=1)
    txn_commit(c, {("t", 6): 2}, producer_id=7, epoch=1)
    marker(c, 7, True, epoch=2)
    log = compacted(c.records())
    assert [k for k, _ in log].count(record_key("EndTransactionMarker", 7)) == 1
    rebuilt = c.d.rebuilt(log).component("groups")
    assert rebuilt.offsets.get("foo", "t", 5) is None and rebuilt.offsets.get("foo", "t", 6).committed_offset == 2
    assert rebuilt.offsets.pending == {}


# ====================================================================== expiry and deletion
def test_pending_offsets_keep_offsets_and_groups_from_expiring():
    # testCleanupExpiredOffsetsWithPendingTransactionalOffsets, through the APIs.
    c = client(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    c.commit({("foo", 0): 100})
    txn_commit(c, {("foo", 0): 101})
    c.sleep(2 * MINUTE)
    assert fetch_parts(c, {"foo": [0]}) == {("foo", 0): 100} and c.group() is not None
    marker(c, PID, False)
    c.sleep(2 * MINUTE)
    assert c.group() is None


def test_only_pending_offsets_keep_the_group():
    c = client(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    txn_commit(c, {("foo", 0): 3})
    c.sleep(2 * MINUTE)
    assert c.group() is not None
    marker(c, PID, True)
    assert fetch_parts(c, {"foo": [0]}) == {("foo", 0): 3}
    c.sleep(2 * MINUTE)
    assert c.group() is None


def test_offset_delete_and_delete_groups_remove_pending_offsets():
    c = client()
    txn_commit(c, {("bar", 0): 1, ("bar", 1): 2})
    resp = c.send(
        "OffsetDelete", 0, {"groupId": "foo", "topics": [{"name": "bar", "partitions": [{"partitionIndex": 0}]}]}
    )[1]
    assert resp["errorCode"] == 0 and pending(c) == {(PID, "foo", "bar", 1): 2}
    assert c.send("DeleteGroups", 2, {"groupsNames": ["foo"]})[1]["results"][0]["errorCode"] == 0
    assert pending(c) == {}
    marker(c, PID, True)  # nothing left to commit
    assert fetch_parts(c, {"bar": [0, 1]}) == {("bar", 0): -1, ("bar", 1): -1}


def test_producer_state_expires_without_pending_offsets():
    c = client(producer_id_expiration_ms=10 * MINUTE, producer_id_expiration_check_interval_ms=MINUTE)
    txn_commit(c, {("bar", 0): 1}, producer_id=7, epoch=3)
    txn_commit(c, {("bar", 1): 1}, producer_id=8, epoch=0)
    marker(c, 7, True, epoch=4)
    mark = len(c.records())
    c.sleep(11 * MINUTE)
    # Producer 7 is forgotten (its marker record deleted); producer 8 has an open transaction.
    assert c.records(mark) == [(record_key("EndTransactionMarker", 7), None)]
    assert set(c.groups().extensions["txnOffsets"]["producers"]) == {"8"}
    assert errors(txn_commit(c, {("bar", 0): 2}, producer_id=7, epoch=0)) == [0]  # unknown again
    marker(c, 8, False, epoch=1)
    marker(c, 7, False, epoch=1)
    c.sleep(11 * MINUTE)
    assert "txnOffsets" not in c.groups().extensions
    assert '["txn-producer-expiration"]' not in c.timers()


def test_several_producers_pending_on_one_partition_resolve_like_kafka():
    # Kafka materializes a transactional offset only if its record is newer than the committed
    # offset's. Re-appending a materialized offset moves it later in the log, so the pending offsets
    # of other producers written after it are re-appended after it, in their order.
    c = client()
    c.commit({("t", 0): 100})
    txn_commit(c, {("t", 0): 200}, producer_id=10)
    txn_commit(c, {("t", 0): 300}, producer_id=12)
    txn_commit(c, {("t", 0): 400}, producer_id=11)
    marker(c, 10, True)  # 200: newer than 100
    txn_commit(c, {("t", 0): 600}, producer_id=10, epoch=1)
    marker(c, 11, True)  # 400: written after 200
    marker(c, 12, True)  # 300: written before 400, not materialized
    assert fetch_parts(c, {"t": [0]}, require_stable=True) == {("t", 0): "UNSTABLE"}
    assert fetch_parts(c, {"t": [0]}) == {("t", 0): 400}
    marker(c, 10, True, epoch=2)  # 600: the newest record
    assert fetch_parts(c, {"t": [0]}, require_stable=True) == {("t", 0): 600}
    for compact in (False, True):
        records = compacted(c.records()) if compact else c.records()
        rebuilt = c.d.rebuilt(records).component("groups")
        assert observable(rebuilt) == observable(c.groups())


# ====================================================================== v6: topic ids, member epochs (KIP-1319)
def txn_commit_v6(c, topics: list[tuple[str, list[tuple[int, int]]]], **body) -> dict:
    req = {
        "transactionalId": "txn",
        "groupId": c.group_id,
        "producerId": PID,
        "producerEpoch": 0,
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [
            {
                "topicId": tid,
                "partitions": [
                    {"partitionIndex": p, "committedOffset": o, "committedLeaderEpoch": -1, "committedMetadata": None}
                    for p, o in parts
                ],
            }
            for tid, parts in topics
        ],
    }
    req.update(body)
    resp = c.send("TxnOffsetCommit", 6, req)
    return resp[1] if isinstance(resp, tuple) else resp


def test_txn_offset_commit_v6_names_topics_by_id():
    """KafkaApis.handleTxnOffsetCommitRequest (4.4): each id resolved with the metadata, an unknown
    one answered UNKNOWN_TOPIC_ID, a partition the topic lacks UNKNOWN_TOPIC_OR_PARTITION, the
    answer named by id; the pending offsets are kept under the topic's name."""
    from tests.group.test_group_offsets import with_topic_ids

    c = client()
    ids = with_topic_ids(c, bar=2, baz=1)
    zar = "ZarZarZarZarZarZarZarQ"
    resp = txn_commit_v6(c, [(ids["bar"], [(0, 10), (2, 30)]), (zar, [(0, 60)]), (ids["baz"], [(0, 40)])])
    assert resp == {
        "throttleTimeMs": 0,
        "topics": [
            {
                "topicId": ids["bar"],
                "partitions": [
                    {"partitionIndex": 2, "errorCode": E.UNKNOWN_TOPIC_OR_PARTITION.code},
                    {"partitionIndex": 0, "errorCode": 0},
                ],
            },
            {"topicId": zar, "partitions": [{"partitionIndex": 0, "errorCode": E.UNKNOWN_TOPIC_ID.code}]},
            {"topicId": ids["baz"], "partitions": [{"partitionIndex": 0, "errorCode": 0}]},
        ],
    }
    assert pending(c) == {(PID, "foo", "bar", 0): 10, (PID, "foo", "baz", 0): 40}
    # Only unknown ids: the coordinator is not asked (no group is created).
    other = client()
    assert errors(txn_commit_v6(other, [(zar, [(0, 1)])])) == [E.UNKNOWN_TOPIC_ID.code] and other.group() is None


def test_txn_offset_commit_v6_with_unknown_group_id():
    """OffsetMetadataManagerTest (KIP-1319): a group that does not exist with a generation/epoch
    >= 0 is GROUP_ID_NOT_FOUND from v6, ILLEGAL_GENERATION before."""
    from tests.group.test_group_offsets import with_topic_ids

    c = client()
    ids = with_topic_ids(c, bar=1)
    resp = txn_commit_v6(c, [(ids["bar"], [(0, 1)])], memberId="member", generationIdOrMemberEpoch=10)
    assert resp["topics"] == [
        {"topicId": ids["bar"], "partitions": [{"partitionIndex": 0, "errorCode": E.GROUP_ID_NOT_FOUND.code}]}
    ]
    assert c.group() is None and c.records() == []
    assert errors(txn_commit(c, {("bar", 0): 1}, member_id="member", generation=10, version=5)) == [
        E.ILLEGAL_GENERATION.code
    ]


def test_consumer_group_transactional_offset_commit_v6_with_stale_member_epoch():
    """A consumer-protocol member's epoch newer than its own is STALE_MEMBER_EPOCH from v6 (KIP-1319),
    ILLEGAL_GENERATION before; its current epoch commits."""
    from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient

    c = ConsumerGroupTestClient(topics={"bar": 1}, transaction_partition_verification_enable=False)
    joined = c.join("m1", ["bar"])
    epoch = joined["memberEpoch"]
    tid = c.d.component("groups").metadata.topic_id("bar")
    resp = txn_commit_v6(c, [(tid, [(0, 5)])], memberId="m1", generationIdOrMemberEpoch=epoch + 1)
    assert resp["topics"] == [
        {"topicId": tid, "partitions": [{"partitionIndex": 0, "errorCode": E.STALE_MEMBER_EPOCH.code}]}
    ]
    body = {
        "transactionalId": "txn",
        "groupId": c.group_id,
        "producerId": PID,
        "producerEpoch": 0,
        "generationIdOrMemberEpoch": epoch + 1,
        "memberId": "m1",
        "groupInstanceId": None,
        "topics": [
            {"name": "bar", "partitions": [{"partitionIndex": 0, "committedOffset": 5, "committedMetadata": None}]}
        ],
    }
    assert errors(c.send("TxnOffsetCommit", 5, body)) == [E.ILLEGAL_GENERATION.code]
    resp = txn_commit_v6(c, [(tid, [(0, 5)])], memberId="m1", generationIdOrMemberEpoch=epoch)
    assert errors(resp) == [0]


def test_txn_offset_commit_v6_error_response_echoes_the_topic_ids():
    """TxnOffsetCommitRequest.getErrorResponse: a whole-request error names each topic as sent."""
    from coordinator.protocol.table import API_TABLE

    spec = next(s for s in API_TABLE if s.name == "TxnOffsetCommit")
    assert spec.max_version == 6
    body = {"topics": [{"topicId": "ZarZarZarZarZarZarZarQ", "partitions": [{"partitionIndex": 3}]}]}
    resp = spec.error_response(6, body, E.NOT_COORDINATOR, None)
    assert resp["topics"] == [
        {
            "topicId": "ZarZarZarZarZarZarZarQ",
            "partitions": [{"partitionIndex": 3, "errorCode": E.NOT_COORDINATOR.code}],
        }
    ]
