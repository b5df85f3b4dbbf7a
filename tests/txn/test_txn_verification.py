"""KIP-890 transaction verification of TxnOffsetCommit, in the core: the group's partition asks the
transactional id's partition (TxnVerification on the internal channel), parks the request, and
goes on when the answer (TxnVerificationResult) arrives. Kafka: `UnifiedLog.
maybeStartTransactionVerification` (skipped for an ongoing transaction), `AddPartitionsToTxnManager`
(the question, verifyOnly for TxnOffsetCommit v0-4, an add for v5, and the mapping of the answer),
`TransactionCoordinator.handleVerifyPartitionsInTransaction`, `GroupCoordinatorService.
commitTransactionalOffsets` (a timed-out write → COORDINATOR_NOT_AVAILABLE)."""

from __future__ import annotations

import json

import pytest

from coordinator import coordinator_partition
from coordinator.errors import Errors
from coordinator.group.txn_offsets import _verification_timer_key
from coordinator.txn.metadata import TransactionState
from tests.core_driver import CoreDriver
from tests.txn.test_txn_cross_partition import GROUP, TID, Cluster
from tests.txn.txn_helpers import Producer, same_partition_ids

E = Errors


def commit_error(r: dict) -> int:
    codes = {p["errorCode"] for t in r["topics"] for p in t["partitions"]}
    assert len(codes) == 1, r
    return codes.pop()


def send_parked(c: Cluster, p: Producer, offsets: dict, version: int = 4) -> None:
    """A TxnOffsetCommit that the group partition parks (no answer yet)."""
    topics: dict = {}
    for (t, part), o in offsets.items():
        topics.setdefault(t, []).append({"partitionIndex": part, "committedOffset": o, "committedMetadata": ""})
    r = c.grp.send(
        "TxnOffsetCommit",
        version,
        {
            "transactionalId": p.tid,
            "groupId": GROUP,
            "producerId": p.producer_id,
            "producerEpoch": p.epoch,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        },
        key=GROUP,
    )
    assert r is None


@pytest.mark.parametrize(
    "version, expected", [(0, E.INVALID_TXN_STATE), (3, E.INVALID_TXN_STATE), (4, E.TRANSACTION_ABORTABLE)]
)
def test_txn_offset_commit_for_a_partition_not_in_the_transaction(version, expected):
    # AddPartitionsToTxnManager: TRANSACTION_ABORTABLE from the verification becomes
    # INVALID_TXN_STATE for clients older than TxnOffsetCommit v4 (`defaultError`).
    c = Cluster()
    p = Producer(c.txn, TID)
    p.init()
    p.add(("out", 0))  # a transaction, but AddOffsetsToTxn was never called
    r = c.txn_offset_commit(p, {("in", 0): 5}, version=version)
    assert commit_error(r) == expected.code
    assert not c.grp.component("groups").offsets.has_pending(GROUP)
    assert c.grp.component("groups").groups.get(GROUP) is None  # the group was not even created


def test_verified_txn_offset_commit_is_stored_after_the_round_trip():
    c = Cluster()
    p = Producer(c.txn, TID)
    p.init()
    p.add_offsets(GROUP)
    send_parked(c, p, {("in", 0): 5, ("in", 1): 6})
    [(key, env)] = c.grp.internal_requests
    assert key == TID and env["apiKey"] == "TxnVerification"
    assert env["request"] == {
        "transactionalId": TID,
        "producerId": p.producer_id,
        "producerEpoch": p.epoch,
        "verifyOnly": True,
        "partitionIndex": c.grp.partition_id,
        "verificationId": 0,
    }
    assert c.grp.events_named("TxnOffsetCommitVerifying")[0]["verificationId"] == 0
    assert not c.grp.component("groups").offsets.has_pending(GROUP)  # nothing before the answer
    c.deliver()
    reply, body = c.grp.response_envelopes[-1]
    assert reply.api_key == "TxnOffsetCommit" and commit_error(body) == 0
    assert c.fetch() == {0: "UNSTABLE", 1: "UNSTABLE"}
    # The answer completed the parked request; nothing is left waiting.
    assert not c.grp.component("groups").extensions["txnOffsets"].get("verifying")
    assert _verification_timer_key(0) not in c.grp.partition.timers


def test_a_second_commit_of_the_same_transaction_needs_no_verification():
    # UnifiedLog.hasOngoingTransaction: the partition already holds this producer's records at
    # this epoch, so it was verified for this transaction already.
    c = Cluster()
    p = Producer(c.txn, TID)
    p.init()
    p.add_offsets(GROUP)
    assert commit_error(c.txn_offset_commit(p, {("in", 0): 5})) == 0
    asked = len(c.grp.internal_requests)
    r = c.grp.send(
        "TxnOffsetCommit",
        4,
        {
            "transactionalId": TID,
            "groupId": GROUP,
            "producerId": p.producer_id,
            "producerEpoch": p.epoch,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "topics": [
                {"name": "in", "partitions": [{"partitionIndex": 1, "committedOffset": 7, "committedMetadata": ""}]}
            ],
        },
        key=GROUP,
    )
    assert r is not None and commit_error(r) == 0 and len(c.grp.internal_requests) == asked
    # After the transaction ended the next one is verified again.
    assert p.end(True)["errorCode"] == 0
    c.deliver()
    c.next_batch()
    assert commit_error(c.txn_offset_commit(p, {("in", 0): 9})) == E.TRANSACTION_ABORTABLE.code


def test_version_5_adds_the_offsets_partition_to_the_transaction():
    # KIP-890 part 2: no AddOffsetsToTxn; the group coordinator adds its partition.
    c = Cluster()
    p = Producer(c.txn, TID)
    p.init()
    send_parked(c, p, {("in", 0): 11}, version=5)
    assert c.grp.internal_requests[-1][1]["request"]["verifyOnly"] is False
    c.deliver()
    assert commit_error(c.grp.response_envelopes[-1][1]) == 0
    md = c.txn.component("transactions").txns[TID]
    assert md.state == TransactionState.ONGOING
    assert md.topic_partitions == {("__consumer_offsets", c.grp.partition_id)}
    assert md.client_transaction_version == 2
    # EndTxn sends the marker to the group's partition, which commits the offset.
    assert p.end(True)["errorCode"] == 0
    c.deliver()
    c.next_batch()
    assert c.fetch() == {0: 11, 1: -1}


def test_verification_errors_of_the_transaction_coordinator():
    c = Cluster()
    p = Producer(c.txn, TID)
    p.init()
    p.add_offsets(GROUP)
    stale = Producer(c.txn, TID)
    stale.producer_id, stale.epoch = p.producer_id, p.epoch - 1 if p.epoch > 0 else 7
    # An epoch other than the transaction's: PRODUCER_FENCED, answered INVALID_PRODUCER_EPOCH.
    assert commit_error(c.txn_offset_commit(stale, {("in", 0): 1})) == E.INVALID_PRODUCER_EPOCH.code
    # Another producer id: INVALID_PRODUCER_ID_MAPPING.
    other = Producer(c.txn, TID)
    other.producer_id, other.epoch = p.producer_id + 1000, p.epoch
    assert commit_error(c.txn_offset_commit(other, {("in", 0): 1})) == E.INVALID_PRODUCER_ID_MAPPING.code
    # Once the transaction ended (its marker reached the group's partition before the client,
    # answered, can send anything; the question arrives a batch later, when it is complete): the
    # offsets partition is no longer in a transaction.
    assert p.end(True, version=4)["errorCode"] == 0
    c.deliver()
    assert commit_error(c.txn_offset_commit(p, {("in", 0): 1})) == E.TRANSACTION_ABORTABLE.code
    assert not c.grp.component("groups").offsets.has_pending(GROUP)


def test_verification_timeout_answers_coordinator_not_available():
    c = Cluster()
    p = Producer(c.txn, TID)
    p.init()
    p.add_offsets(GROUP)
    send_parked(c, p, {("in", 0): 5})
    timeout = c.grp.partition.config["transaction.verification.timeout.ms"]
    c.grp.advance(timeout - 1)
    assert c.grp.response_envelopes == []
    c.grp.advance(1)
    [(reply, body)] = c.grp.response_envelopes
    assert commit_error(body) == E.COORDINATOR_NOT_AVAILABLE.code
    # The late answer finds nothing parked and is dropped: no second response, nothing stored.
    c.deliver()
    assert len(c.grp.response_envelopes) == 1
    assert not c.grp.component("groups").offsets.has_pending(GROUP)


def test_on_the_same_coordinator_partition_the_answer_is_immediate():
    d = CoreDriver(TID)
    [tid] = same_partition_ids(1, d.partition_id, "same-")
    group = next(f"group-{i}" for i in range(10_000) if coordinator_partition(f"group-{i}") == d.partition_id)
    p = Producer(d, tid)
    p.init()

    def commit(version=3):
        return d.send(
            "TxnOffsetCommit",
            version,
            {
                "transactionalId": tid,
                "groupId": group,
                "producerId": p.producer_id,
                "producerEpoch": p.epoch,
                "generationIdOrMemberEpoch": -1,
                "memberId": "",
                "groupInstanceId": None,
                "topics": [
                    {"name": "in", "partitions": [{"partitionIndex": 0, "committedOffset": 3, "committedMetadata": ""}]}
                ],
            },
            key=group,
        )

    assert commit_error(commit()) == E.INVALID_TXN_STATE.code
    p.add_offsets(group)
    assert commit_error(commit()) == 0 and d.internal_requests == []


def test_verification_can_be_disabled():
    c = Cluster(transaction_partition_verification_enable=False)
    p = Producer(c.txn, TID)
    p.init()
    r = c.txn_offset_commit(p, {("in", 0): 5})  # no AddOffsetsToTxn: stored, as before KIP-890
    assert commit_error(r) == 0 and c.grp.internal_requests == []


def test_verification_messages_are_internal():
    # A client cannot ask on a partition's behalf, nor answer for the transaction coordinator.
    c = Cluster()
    for api, body, key in [
        ("TxnVerificationResult", {"verificationId": 0, "transactionalId": TID, "errorCode": 0}, GROUP),
        (
            "TxnVerification",
            {
                "transactionalId": TID,
                "producerId": 1,
                "producerEpoch": 0,
                "verifyOnly": True,
                "partitionIndex": 0,
                "verificationId": 0,
            },
            TID,
        ),
    ]:
        d = c.grp if api == "TxnVerificationResult" else c.txn
        raw = json.dumps(
            {"apiKey": api, "apiVersion": 0, "correlationId": 77, "clientId": "intruder", "request": body}
        ).encode()
        d.send_raw(raw, key=key, internal=False)
        assert d.response_envelopes[-1][1]["errorCode"] == E.CLUSTER_AUTHORIZATION_FAILED.code


@pytest.mark.parametrize("partition", [-1, 50, 2**31 - 1])
def test_a_question_about_a_partition_that_does_not_exist_is_dropped(partition):
    # Bad input never stalls a partition (there is no partition to answer).
    c = Cluster()
    out = c.txn.send_raw(
        json.dumps(
            {
                "apiKey": "TxnVerification",
                "apiVersion": 0,
                "correlationId": 1,
                "clientId": "group-coordinator-x",
                "request": {
                    "transactionalId": TID,
                    "producerId": 1,
                    "producerEpoch": 0,
                    "verifyOnly": True,
                    "partitionIndex": partition,
                    "verificationId": 3,
                },
            }
        ).encode(),
        key=TID,
        internal=True,
    )
    assert out.requests == [] and out.responses == []
    assert c.txn.events_named("TxnVerificationDropped")[0]["partitionIndex"] == partition


def test_an_answer_nobody_waits_for_is_dropped():
    c = Cluster()
    out = c.grp.send_raw(
        json.dumps(
            {
                "apiKey": "TxnVerificationResult",
                "apiVersion": 0,
                "correlationId": 1,
                "clientId": "transaction-coordinator-x",
                "request": {"verificationId": 12345, "transactionalId": TID, "errorCode": 0},
            }
        ).encode(),
        key=GROUP,
        internal=True,
    )
    assert out.responses == [] and out.records == []
