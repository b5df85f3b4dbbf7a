"""KIP-890 verification without a round trip: AddOffsetsToTxn's TxnOffsetsAdded notice lets the
group's partition verify the TxnOffsetCommit that follows locally (coordinator/group/txn_offsets.py),
with the answer the transaction coordinator would give. Without the notice (it is still on its way,
another epoch, the transaction ended) the partition asks, as before. The transaction's partition and
the group's partition are two CoreDrivers (tests/txn/test_txn_cross_partition.py's Cluster)."""

from __future__ import annotations

import json

from coordinator.errors import Errors
from coordinator.group import txn_offsets
from tests.txn.test_txn_cross_partition import GROUP, TID, Cluster
from tests.txn.txn_helpers import Producer

E = Errors


def commit_errors(r: dict) -> set[int]:
    return {p["errorCode"] for t in r["topics"] for p in t["partitions"]}


def questions(c: Cluster) -> int:
    """TxnVerification requests the group's partition has sent so far."""
    return sum(1 for _, env in c.grp.internal_requests if env["apiKey"] == "TxnVerification")


def notices(c: Cluster) -> dict:
    return txn_offsets._state(c.grp.component("groups")).get("added", {})


def commit_now(c: Cluster, p: Producer, offsets: dict, epoch: int | None = None, version: int = 4) -> dict | None:
    """A TxnOffsetCommit whose answer is in the same batch (None: it was parked to ask)."""
    topics: dict[str, list] = {}
    for (t, part), o in offsets.items():
        topics.setdefault(t, []).append({"partitionIndex": part, "committedOffset": o, "committedMetadata": ""})
    return c.grp.send(
        "TxnOffsetCommit",
        version,
        {
            "transactionalId": p.tid,
            "groupId": GROUP,
            "producerId": p.producer_id,
            "producerEpoch": p.epoch if epoch is None else epoch,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        },
        key=GROUP,
    )


def started(c: Cluster) -> Producer:
    p = Producer(c.txn, TID)
    p.init()
    assert p.add_offsets(GROUP)["errorCode"] == 0
    c.deliver()  # the notice reaches the group's partition
    return p


def end(c: Cluster, p: Producer, commit: bool) -> None:
    assert p.end(commit, version=4)["errorCode"] == 0
    c.deliver()  # the marker reaches the group's partition
    c.next_batch()  # the transaction completes


def test_the_usual_commit_is_verified_locally_and_committed_by_the_marker():
    c = Cluster()
    p = started(c)
    assert notices(c) == {str(p.producer_id): [TID, p.epoch]}
    r = commit_now(c, p, {("in", 0): 7, ("in", 1): 8})
    assert r is not None and commit_errors(r) == {0}
    assert questions(c) == 0  # nothing asked: no extra micro-batch
    assert c.fetch() == {0: "UNSTABLE", 1: "UNSTABLE"}
    end(c, p, True)
    assert c.fetch() == {0: 7, 1: 8}
    assert notices(c) == {}  # the marker ended it, with a tombstone in the state log
    assert (txn_offsets.added_key(p.producer_id), None) in c.grp.records


def test_v5_commit_is_verified_locally_too():
    c = Cluster()
    p = started(c)
    r = commit_now(c, p, {("in", 0): 3}, version=5)
    assert r is not None and commit_errors(r) == {0} and questions(c) == 0


def test_a_commit_before_the_notice_asks_and_the_notice_still_serves_later_commits():
    c = Cluster()
    p = Producer(c.txn, TID)
    p.init()
    assert p.add_offsets(GROUP)["errorCode"] == 0
    # The notice has not arrived (same batch, or still on the internal channel): ask and wait.
    assert commit_now(c, p, {("in", 0): 1}) is None and questions(c) == 1
    c.deliver()  # the question, then the notice and the answer
    assert commit_errors(c.grp.response_envelopes[-1][1]) == {0}
    assert notices(c) == {str(p.producer_id): [TID, p.epoch]}
    r = commit_now(c, p, {("in", 1): 2})
    assert r is not None and commit_errors(r) == {0} and questions(c) == 1
    end(c, p, True)
    assert c.fetch() == {0: 1, 1: 2}


def test_a_notice_serves_only_its_own_producer_and_epoch():
    c = Cluster()
    p = started(c)
    # Another epoch of the same producer: asked, and the transaction coordinator fences it.
    r = commit_now(c, p, {("in", 0): 1}, epoch=p.epoch + 1)
    assert r is None and questions(c) == 1
    c.deliver()
    assert commit_errors(c.grp.response_envelopes[-1][1]) == {E.INVALID_PRODUCER_EPOCH.code}
    # Another producer id under the same transactional id: asked, INVALID_PRODUCER_ID_MAPPING.
    other = Producer(c.txn, TID)
    other.producer_id, other.epoch = p.producer_id + 1000, p.epoch
    assert commit_now(c, other, {("in", 0): 1}) is None and questions(c) == 2
    c.deliver()
    assert commit_errors(c.grp.response_envelopes[-1][1]) == {E.INVALID_PRODUCER_ID_MAPPING.code}
    assert not c.grp.component("groups").offsets.has_pending(GROUP)


def test_a_fenced_producer_is_asked_about_and_answered_invalid_producer_epoch():
    c = Cluster()
    zombie = started(c)
    # A new instance of the application fences the producer: its transaction is aborted with a
    # bumped epoch, and the abort's marker reaches the group's partition (dropping the notice)
    # before the new instance is answered.
    fresh = Producer(c.txn, TID)
    assert fresh.init()["errorCode"] == E.CONCURRENT_TRANSACTIONS.code
    c.deliver()
    assert notices(c) == {}
    c.next_batch()
    assert fresh.init()["errorCode"] == 0
    assert commit_now(c, zombie, {("in", 0): 5}) is None  # no notice: asked
    c.deliver()
    assert commit_errors(c.grp.response_envelopes[-1][1]) == {E.INVALID_PRODUCER_EPOCH.code}
    assert not c.grp.component("groups").offsets.has_pending(GROUP)
    # The new instance's transaction is verified locally again.
    assert fresh.add_offsets(GROUP)["errorCode"] == 0
    c.deliver()
    r = commit_now(c, fresh, {("in", 0): 6})
    assert r is not None and commit_errors(r) == {0}
    end(c, fresh, True)
    assert c.fetch() == {0: 6, 1: -1}


def test_after_an_aborted_or_committed_transaction_the_next_one_gets_its_own_notice():
    c = Cluster()
    p = started(c)
    assert commit_errors(commit_now(c, p, {("in", 0): 1}) or {}) == {0}
    end(c, p, False)  # aborted: the offset is dropped, the notice with it
    assert c.fetch() == {0: -1, 1: -1} and notices(c) == {}
    # Transaction version 1: the next transaction has the same epoch. Without its own notice the
    # commit is asked about (and the transaction coordinator says it is not in a transaction).
    assert commit_now(c, p, {("in", 0): 2}) is None
    c.deliver()
    assert commit_errors(c.grp.response_envelopes[-1][1]) == {E.TRANSACTION_ABORTABLE.code}
    assert p.add_offsets(GROUP)["errorCode"] == 0
    c.deliver()
    asked = questions(c)
    assert commit_errors(commit_now(c, p, {("in", 0): 3}) or {}) == {0} and questions(c) == asked
    end(c, p, True)
    assert c.fetch() == {0: 3, 1: -1} and notices(c) == {}
    # And once more after a commit.
    assert p.add_offsets(GROUP)["errorCode"] == 0
    c.deliver()
    assert commit_errors(commit_now(c, p, {("in", 1): 4}) or {}) == {0} and questions(c) == asked
    end(c, p, True)
    assert c.fetch() == {0: 3, 1: 4}


def test_a_notice_for_another_partition_is_dropped():
    c = Cluster()
    other = (c.grp.partition_id + 1) % 50
    c.grp.send(
        "TxnOffsetsAdded",
        0,
        {"transactionalId": TID, "producerId": 5, "producerEpoch": 0, "partitionIndex": other},
        key=GROUP,
    )
    assert notices(c) == {}
    assert c.grp.events_named("TxnOffsetsAddedDropped")[0]["partitionIndex"] == other


def test_a_rebuilt_partition_has_the_notices_and_answers_the_same():
    c = Cluster()
    p = started(c)
    live = c.grp.component("groups")
    rebuilt = c.grp.rebuilt().component("groups")
    assert (
        txn_offsets._state(rebuilt).get("added")
        == txn_offsets._state(live).get("added")
        == {str(p.producer_id): [TID, p.epoch]}
    )
    # The failed-over partition verifies locally as the live one did.
    c.grp.failover()
    r = commit_now(c, p, {("in", 0): 9})
    assert r is not None and commit_errors(r) == {0} and questions(c) == 0
    end(c, p, True)
    rebuilt = c.grp.rebuilt().component("groups")
    assert "added" not in txn_offsets._state(rebuilt) and "added" not in txn_offsets._state(c.grp.component("groups"))
    assert c.fetch() == {0: 9, 1: -1}


def test_a_parked_commit_goes_on_when_the_notice_arrives_and_the_late_answer_is_dropped():
    # The stream's sink may append the notice after AddOffsetsToTxn's answer: the client's commit
    # comes first, is parked to ask, and goes on when the notice is read.
    c = Cluster()
    p = Producer(c.txn, TID)
    p.init()
    assert p.add_offsets(GROUP)["errorCode"] == 0
    [(key, notice)] = [(k, e) for k, e in c.txn.internal_requests if e["apiKey"] == "TxnOffsetsAdded"]
    assert commit_now(c, p, {("in", 0): 4}) is None and questions(c) == 1
    c.grp.send_raw(json.dumps(notice).encode(), key=key)
    [(_, answer)] = c.grp.response_envelopes
    assert commit_errors(answer) == {0}
    assert c.fetch() == {0: "UNSTABLE", 1: -1}
    # The question's answer comes later and finds nothing parked: no second response.
    answered = len(c.grp.response_envelopes)
    c.deliver()
    assert len(c.grp.response_envelopes) == answered
    end(c, p, True)
    assert c.fetch() == {0: 4, 1: -1}


def test_a_notice_resumes_only_the_commits_of_its_own_producer_and_epoch():
    c = Cluster()
    p = Producer(c.txn, TID)
    p.init()
    assert p.add_offsets(GROUP)["errorCode"] == 0
    [(key, notice)] = [(k, e) for k, e in c.txn.internal_requests if e["apiKey"] == "TxnOffsetsAdded"]
    assert commit_now(c, p, {("in", 0): 4}, epoch=p.epoch + 1) is None
    c.grp.send_raw(json.dumps(notice).encode(), key=key)
    assert c.grp.response_envelopes == []  # still waiting for the transaction coordinator
    c.deliver()
    assert commit_errors(c.grp.response_envelopes[-1][1]) == {E.INVALID_PRODUCER_EPOCH.code}
