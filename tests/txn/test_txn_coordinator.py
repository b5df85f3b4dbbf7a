"""Kafka's TransactionCoordinatorTest, through real requests on one coordinator partition.

Test names follow Kafka's (snake_case). Kafka's tests build a TransactionMetadata in a given state;
`seed` does the same here. Kafka's "...WhenCoordinatorLoading" tests have no counterpart: a
coordinator partition here is never loading (its state comes with the micro-batch).
"""

from __future__ import annotations

import pytest

from coordinator.errors import Errors
from coordinator.routing import coordinator_partition
from coordinator.txn.coordinator import TransactionCoordinator
from coordinator.txn.metadata import NO_PRODUCER_EPOCH, SHORT_MAX, TV_0, TV_2, TransactionState
from tests.core_driver import CoreDriver
from tests.txn.txn_helpers import TID, Producer, driver, records_of, same_partition_ids, seed, txn

S = TransactionState
PID, EPOCH = 10, 1
E = Errors


def init(d, tid=TID, timeout=60000, version=5, **body):
    return d.send("InitProducerId", version, {"transactionalId": tid, "transactionTimeoutMs": timeout, **body})


def end(d, commit, epoch, version=5, pid=PID, tid=TID):
    return d.send(
        "EndTxn", version, {"transactionalId": tid, "producerId": pid, "producerEpoch": epoch, "committed": commit}
    )


def add(d, epoch, parts=(("topic1", 0),), pid=PID, tid=TID, version=3):
    r = d.send(
        "AddPartitionsToTxn",
        version,
        {
            "v3AndBelowTransactionalId": tid,
            "v3AndBelowProducerId": pid,
            "v3AndBelowProducerEpoch": epoch,
            "v3AndBelowTopics": [{"name": t, "partitions": [p]} for t, p in parts],
        },
    )
    return {
        (t["name"], p["partitionIndex"]): p["partitionErrorCode"]
        for t in r["resultsByTopicV3AndBelow"]
        for p in t["resultsByPartition"]
    }


def other_partition(tid=TID) -> CoreDriver:
    return CoreDriver(partition=(coordinator_partition(tid, 50) + 1) % 50)


@pytest.fixture
def server_tv0(monkeypatch):
    monkeypatch.setattr(TransactionCoordinator, "server_transaction_version", TV_0)


# ============================================================================ InitProducerId
def test_should_return_invalid_request_when_transactional_id_is_empty():
    for d in (driver(""), other_partition("")):
        r = init(d, tid="")
        assert r == {"throttleTimeMs": 0, "errorCode": E.INVALID_REQUEST.code, "producerId": -1, "producerEpoch": -1}


def test_should_accept_init_pid_and_return_next_pid_when_transactional_id_is_null():
    d = CoreDriver(partition=7)  # any partition answers an idempotent producer
    first = d.send("InitProducerId", 4, {"transactionalId": None, "transactionTimeoutMs": 0})
    second = d.send("InitProducerId", 4, {"transactionalId": None, "transactionTimeoutMs": 0})
    assert (first["errorCode"], first["producerId"], first["producerEpoch"]) == (0, 7000, 0)
    assert (second["producerId"], second["producerEpoch"]) == (7001, 0)
    assert d.component("transactions").txns == {}  # no state for idempotent producers


def test_should_init_pid_with_epoch_zero_for_new_transactional_id():
    d = driver()
    r = init(d)
    assert r["errorCode"] == 0 and r["producerEpoch"] == 0
    assert r["producerId"] == coordinator_partition(TID, 50) * 1000
    [rec] = records_of(d)
    assert rec["transactionStatus"] == S.EMPTY.id and rec["producerEpoch"] == 0 and rec["transactionPartitions"] is None


def test_should_generate_new_producer_id_if_no_state_and_producer_id_and_epoch_provided():
    d = driver()
    r = init(d, producerId=PID, producerEpoch=EPOCH)
    assert r["errorCode"] == 0 and r["producerEpoch"] == 0 and r["producerId"] != PID


def test_should_generate_new_producer_id_if_epochs_exhausted():
    d = driver()
    seed(d, state=S.EMPTY, producer_epoch=SHORT_MAX - 1, last_epoch=SHORT_MAX - 2, prev_producer_id=PID)
    r = init(d)
    assert r["errorCode"] == 0 and r["producerId"] != PID and r["producerEpoch"] == 0
    assert txn(d).prev_producer_id == PID and txn(d).last_producer_epoch == NO_PRODUCER_EPOCH


def test_should_respond_with_not_coordinator_on_init_pid_when_not_coordinator():
    r = init(other_partition())
    assert (r["errorCode"], r["producerId"], r["producerEpoch"]) == (E.NOT_COORDINATOR.code, -1, -1)


@pytest.mark.parametrize("timeout", [0, -1, 900001])
def test_should_return_invalid_transaction_timeout(timeout):
    assert init(driver(), timeout=timeout)["errorCode"] == E.INVALID_TRANSACTION_TIMEOUT.code


def test_transaction_max_timeout_is_accepted():
    assert init(driver(), timeout=900000)["errorCode"] == 0


@pytest.mark.parametrize("pid,epoch", [(-1, 3), (5, -1)])
def test_producer_id_and_epoch_must_come_together(pid, epoch):
    assert init(driver(), producerId=pid, producerEpoch=epoch)["errorCode"] == E.INVALID_REQUEST.code


@pytest.mark.parametrize(
    "state,tv",
    [
        (S.EMPTY, TV_0),
        (S.COMPLETE_ABORT, TV_0),
        (S.COMPLETE_ABORT, TV_2),
        (S.COMPLETE_COMMIT, TV_0),
        (S.COMPLETE_COMMIT, TV_2),
    ],
)
def test_should_increment_epoch_and_update_metadata_on_handle_init_pid_when_existing_transaction(state, tv):
    d = driver()
    seed(
        d,
        state=state,
        producer_epoch=EPOCH,
        last_epoch=EPOCH - 1,
        timeout_ms=1000,
        tv=tv,
        start=d.now - 10 if state != S.EMPTY else -1,
    )
    r = init(d, timeout=2000)
    assert (r["errorCode"], r["producerId"], r["producerEpoch"]) == (0, PID, EPOCH + 1)
    m = txn(d)
    assert (m.state, m.txn_timeout_ms, m.txn_start_timestamp, m.topic_partitions) == (S.EMPTY, 2000, -1, set())
    assert records_of(d)[-1]["transactionTimeoutMs"] == 2000


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_should_wait_for_commit_to_complete_on_handle_init_pid_and_existing_transaction_in_prepare_state(state):
    d = driver()
    seed(d, state=state, producer_epoch=EPOCH, partitions=[("topic1", 0)])
    assert init(d)["errorCode"] == E.CONCURRENT_TRANSACTIONS.code
    assert records_of(d) == []


def test_should_not_bump_epoch_with_pending_transaction():
    d = driver()
    seed(d, state=S.ONGOING, producer_epoch=EPOCH, partitions=[("topic1", 0)], pending=S.PREPARE_COMMIT)
    assert init(d)["errorCode"] == E.CONCURRENT_TRANSACTIONS.code
    assert txn(d).producer_epoch == EPOCH


def test_should_abort_transaction_on_handle_init_pid_when_existing_transaction_in_ongoing_state(server_tv0):
    d = driver()
    seed(d, state=S.ONGOING, producer_epoch=EPOCH, last_epoch=EPOCH - 1, partitions=[("topic1", 0)])
    r = init(d)
    assert (r["errorCode"], r["producerId"], r["producerEpoch"]) == (E.CONCURRENT_TRANSACTIONS.code, -1, -1)
    [prepare] = records_of(d)
    # The fenced epoch (+1) is written with the abort, lastProducerEpoch -1, client TV 0.
    assert (prepare["transactionStatus"], prepare["producerEpoch"], prepare["clientTransactionVersion"]) == (
        S.PREPARE_ABORT.id,
        EPOCH + 1,
        0,
    )
    assert txn(d).last_producer_epoch == NO_PRODUCER_EPOCH
    assert [(m.topic, m.partition, m.headers) for m in d.data] == [("topic1", 0, [("__txn_marker", b"ABORT")])]
    # The client retries: once the abort completed, the epoch is bumped a second time.
    r = init(d)
    assert (r["errorCode"], r["producerId"], r["producerEpoch"]) == (0, PID, EPOCH + 2)


def test_init_pid_during_ongoing_transaction_with_transaction_version_2():
    d = driver()
    seed(d, state=S.ONGOING, producer_epoch=EPOCH, partitions=[("topic1", 0)], tv=TV_0)
    assert init(d)["errorCode"] == E.CONCURRENT_TRANSACTIONS.code
    [prepare] = records_of(d)
    assert (prepare["producerEpoch"], prepare["clientTransactionVersion"]) == (EPOCH + 1, 2)  # one bump
    assert [e["event"] for e in d.events if e["event"] in ("ProducerFenced", "TransactionPrepared")] == [
        "TransactionPrepared",
        "ProducerFenced",
    ]
    assert init(d)["producerEpoch"] == EPOCH + 2


def test_should_use_last_epoch_to_fence_when_epochs_are_exhausted(server_tv0):
    d = driver()
    seed(d, state=S.ONGOING, producer_epoch=SHORT_MAX - 1, last_epoch=SHORT_MAX - 2, partitions=[("topic1", 0)])
    assert init(d)["errorCode"] == E.CONCURRENT_TRANSACTIONS.code
    [prepare] = records_of(d)
    assert (prepare["transactionStatus"], prepare["producerId"], prepare["producerEpoch"]) == (
        S.PREPARE_ABORT.id,
        PID,
        SHORT_MAX,
    )
    r = init(d)  # after the abort completed: the epoch is exhausted, so a new producer id
    assert r["errorCode"] == 0 and r["producerId"] != PID and r["producerEpoch"] == 0


def test_should_not_cause_epoch_overflow_when_init_pid_during_ongoing_txn_v2():
    d = driver()
    seed(
        d, state=S.ONGOING, producer_epoch=SHORT_MAX - 1, last_epoch=SHORT_MAX - 2, partitions=[("topic1", 0)], tv=TV_2
    )
    assert init(d)["errorCode"] == E.CONCURRENT_TRANSACTIONS.code
    assert txn(d).state == S.PREPARE_ABORT and txn(d).producer_epoch == SHORT_MAX


def test_init_producer_id_with_no_last_producer_data():
    d = driver()
    seed(d, state=S.EMPTY, producer_epoch=EPOCH + 1, partitions=(), start=-1)
    assert init(d, producerId=PID, producerEpoch=EPOCH)["errorCode"] == E.PRODUCER_FENCED.code


def test_fence_producer_when_mapping_exists_with_different_producer_id():
    d = driver()
    seed(
        d,
        state=S.EMPTY,
        producer_id=PID + 1,
        prev_producer_id=PID,
        producer_epoch=EPOCH,
        last_epoch=EPOCH - 1,
        start=-1,
    )
    assert init(d, producerId=PID, producerEpoch=EPOCH)["errorCode"] == E.PRODUCER_FENCED.code


def test_init_producer_id_with_current_epoch_provided():
    d = driver()
    seed(d, state=S.EMPTY, producer_epoch=10, last_epoch=9, prev_producer_id=PID, start=-1)
    r = init(d, producerId=PID, producerEpoch=10)
    assert (r["errorCode"], r["producerId"], r["producerEpoch"]) == (0, PID, 11)
    # The producer retries after a lost response: same answer, nothing bumped.
    r = init(d, producerId=PID, producerEpoch=10)
    assert (r["errorCode"], r["producerId"], r["producerEpoch"]) == (0, PID, 11)


def test_init_producer_id_stale_current_epoch_provided():
    d = driver()
    seed(d, state=S.EMPTY, producer_epoch=10, last_epoch=9, prev_producer_id=PID, start=-1)
    assert init(d, producerId=PID, producerEpoch=10)["producerEpoch"] == 11
    assert init(d)["producerEpoch"] == 12  # another producer instance, no expected epoch: last epoch forgotten
    r = init(d, producerId=PID, producerEpoch=10)
    assert (r["errorCode"], r["producerId"], r["producerEpoch"]) == (E.PRODUCER_FENCED.code, -1, -1)


def test_retry_init_producer_id_after_producer_id_rotation():
    d = driver()
    seed(d, state=S.EMPTY, producer_epoch=SHORT_MAX - 1, last_epoch=SHORT_MAX - 2, prev_producer_id=PID, start=-1)
    r = init(d, producerId=PID, producerEpoch=SHORT_MAX - 1)
    new_pid = r["producerId"]
    assert r["errorCode"] == 0 and new_pid != PID and r["producerEpoch"] == 0
    # The response was lost: the retry with the old id and exhausted epoch gets the same answer.
    r = init(d, producerId=PID, producerEpoch=SHORT_MAX - 1)
    assert (r["errorCode"], r["producerId"], r["producerEpoch"]) == (0, new_pid, 0)


def test_init_producer_id_with_invalid_epoch_after_producer_id_rotation():
    d = driver()
    seed(d, state=S.EMPTY, producer_epoch=SHORT_MAX - 1, last_epoch=SHORT_MAX - 2, prev_producer_id=PID, start=-1)
    assert init(d, producerId=PID, producerEpoch=SHORT_MAX - 1)["errorCode"] == 0
    assert init(d, producerId=PID, producerEpoch=SHORT_MAX - 2)["errorCode"] == E.PRODUCER_FENCED.code


def test_exhausted_epoch_with_another_expected_epoch_is_an_unknown_server_error():
    # Kafka 4.3: prepareIncrementProducerEpoch throws, answered with Errors.forException.
    d = driver()
    seed(d, state=S.EMPTY, producer_epoch=SHORT_MAX - 1, last_epoch=SHORT_MAX - 2, start=-1)
    r = init(d, producerId=PID, producerEpoch=SHORT_MAX - 2)
    assert (r["errorCode"], r["producerId"]) == (E.UNKNOWN_SERVER_ERROR.code, -1)
    assert d.events_named("RequestFailed") == [] and records_of(d) == [] and txn(d).pending_state is None


def test_producer_fenced_is_invalid_producer_epoch_before_init_producer_id_v4():
    d = driver()
    seed(d, state=S.EMPTY, producer_id=PID + 1, producer_epoch=EPOCH, start=-1)
    assert init(d, version=3, producerId=PID, producerEpoch=EPOCH)["errorCode"] == E.INVALID_PRODUCER_EPOCH.code
    assert init(d, version=4, producerId=PID, producerEpoch=EPOCH)["errorCode"] == E.PRODUCER_FENCED.code


def test_restarted_producer_fences_the_zombie():
    d = driver()
    zombie = Producer(d)
    zombie.init()
    assert zombie.add_error(("orders", 0)) == 0
    fresh = Producer(d)
    assert fresh.init()["errorCode"] == E.CONCURRENT_TRANSACTIONS.code  # zombie's transaction aborted
    assert fresh.init()["errorCode"] == 0 and fresh.epoch == zombie.epoch + 2
    assert zombie.end(True)["errorCode"] == E.PRODUCER_FENCED.code
    assert zombie.add_error(("orders", 1)) == E.PRODUCER_FENCED.code


# ============================================================================ AddPartitionsToTxn
def test_should_respond_with_invalid_pid_mapping_on_add_partitions_to_transaction_when_transactional_id_not_present():
    assert add(driver(), 1, pid=0) == {("topic1", 0): E.INVALID_PRODUCER_ID_MAPPING.code}


def test_should_respond_with_invalid_request_add_partitions_to_transaction_when_transactional_id_is_empty():
    for d in (driver(""), other_partition("")):
        assert add(d, 1, tid="") == {("topic1", 0): E.INVALID_REQUEST.code}


def test_should_respond_with_invalid_request_add_partitions_to_transaction_when_transactional_id_is_null():
    r = driver().send(
        "AddPartitionsToTxn",
        3,
        {
            "v3AndBelowTransactionalId": None,
            "v3AndBelowProducerId": 0,
            "v3AndBelowProducerEpoch": 1,
            "v3AndBelowTopics": [{"name": "topic1", "partitions": [0]}],
        },
    )
    # The request does not fit the schema, so there are no partitions to answer for (Kafka would
    # fail to deserialize it): the response says why at the top level.
    assert r["resultsByTopicV3AndBelow"] == [] and r["errorCode"] == E.INVALID_REQUEST.code
    assert "must not be null" in r["errorMessage"]


def test_should_respond_with_not_coordinator_on_add_partitions_when_not_coordinator():
    assert add(other_partition(), 1) == {("topic1", 0): E.NOT_COORDINATOR.code}


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_should_respond_with_concurrent_transactions_on_add_partitions_when_state_is_prepare(state):
    d = driver()
    seed(d, state=state, producer_id=0, producer_epoch=0, tv=TV_2)
    assert add(d, 0, pid=0) == {("topic1", 0): E.CONCURRENT_TRANSACTIONS.code}


def test_should_respond_with_producer_fenced_on_add_partitions_when_epochs_are_different():
    d = driver()
    seed(d, state=S.PREPARE_COMMIT, producer_id=0, producer_epoch=10, last_epoch=9, tv=TV_2)
    assert add(d, 0, pid=0) == {("topic1", 0): E.PRODUCER_FENCED.code}


def test_pending_transition_is_reported_before_a_producer_id_mismatch():
    d = driver()  # Kafka 4.3 checks the pending transition first
    seed(d, state=S.PREPARE_COMMIT, producer_id=5, producer_epoch=1, pending=S.COMPLETE_COMMIT)
    assert add(d, 1, pid=6) == {("topic1", 0): E.CONCURRENT_TRANSACTIONS.code}


@pytest.mark.parametrize(
    "state,tv",
    [
        (S.EMPTY, TV_0),
        (S.ONGOING, TV_0),
        (S.COMPLETE_COMMIT, TV_0),
        (S.COMPLETE_COMMIT, TV_2),
        (S.COMPLETE_ABORT, TV_0),
        (S.COMPLETE_ABORT, TV_2),
    ],
)
def test_should_respond_with_success_on_add_partitions(state, tv):
    # shouldAppendNewMetadataToLogOnAddPartitionsWhenPartitionsAdded, ...WhenStateIsOngoing/CompleteCommit/CompleteAbort
    d = driver()
    seed(d, state=state, producer_epoch=EPOCH, last_epoch=EPOCH - 1, tv=tv, start=d.now - 5)
    assert add(d, EPOCH) == {("topic1", 0): 0}
    [rec] = records_of(d)
    assert rec["transactionStatus"] == S.ONGOING.id and rec["transactionPartitions"] == [
        {"topic": "topic1", "partitionIds": [0]}
    ]
    expected_start = d.now - 5 if state == S.ONGOING else d.now
    assert rec["transactionStartTimestampMs"] == expected_start and rec["clientTransactionVersion"] == 0


def test_should_respond_with_errors_none_on_add_partition_when_no_errors_and_partitions_the_same():
    d = driver()
    seed(d, state=S.ONGOING, producer_id=0, producer_epoch=0, partitions=[("topic1", 0)])
    assert add(d, 0, pid=0) == {("topic1", 0): 0}
    assert records_of(d) == []  # nothing written


def test_add_partitions_unions_partitions_and_keeps_the_start_time():
    d = driver()
    p = Producer(d)
    p.init()
    p.add(("a", 0))
    started = txn(d).txn_start_timestamp
    d.now += 100
    assert p.add_error(("a", 0), ("b", 3)) == 0
    assert txn(d).topic_partitions == {("a", 0), ("b", 3)} and txn(d).txn_start_timestamp == started


def test_producer_fenced_is_invalid_producer_epoch_before_add_partitions_v2():
    d = driver()
    seed(d, state=S.ONGOING, producer_epoch=5)
    assert add(d, 4, version=1) == {("topic1", 0): E.INVALID_PRODUCER_EPOCH.code}
    assert add(d, 4, version=2) == {("topic1", 0): E.PRODUCER_FENCED.code}


def test_clients_may_not_add_internal_topics_and_unknown_partitions_fail_the_request():
    d = driver()
    seed(d, state=S.ONGOING, producer_epoch=5)
    assert add(d, 5, parts=[("__consumer_offsets", 0), ("ok", 1)]) == {
        ("__consumer_offsets", 0): E.TOPIC_AUTHORIZATION_FAILED.code,
        ("ok", 1): E.OPERATION_NOT_ATTEMPTED.code,
    }
    assert add(d, 5, parts=[("ok", -1), ("bad name!", 0), ("ok", 1)]) == {
        ("ok", -1): E.UNKNOWN_TOPIC_OR_PARTITION.code,
        ("bad name!", 0): E.UNKNOWN_TOPIC_OR_PARTITION.code,
        ("ok", 1): E.OPERATION_NOT_ATTEMPTED.code,
    }
    assert txn(d).topic_partitions == set() and records_of(d) == []


def verify(d, epoch, parts, pid=0, tid=TID):
    r = d.send(
        "AddPartitionsToTxn",
        5,
        {
            "transactions": [
                {
                    "transactionalId": tid,
                    "producerId": pid,
                    "producerEpoch": epoch,
                    "verifyOnly": True,
                    "topics": [{"name": t, "partitions": [p]} for t, p in parts],
                }
            ]
        },
    )
    assert r["errorCode"] == 0
    [res] = r["resultsByTransaction"]
    return {
        (t["name"], p["partitionIndex"]): p["partitionErrorCode"]
        for t in res["topicResults"]
        for p in t["resultsByPartition"]
    }


def test_verify_partition_handling():
    d = driver()
    parts = [("topic1", 0)]
    seed(d, state=S.PREPARE_COMMIT, producer_id=1, producer_epoch=0, partitions=parts)
    assert verify(d, 0, parts) == {("topic1", 0): E.INVALID_PRODUCER_ID_MAPPING.code}
    seed(d, state=S.PREPARE_COMMIT, producer_id=0, producer_epoch=0, partitions=parts)
    assert verify(d, 1, parts) == {("topic1", 0): E.PRODUCER_FENCED.code}
    assert verify(d, 0, parts) == {("topic1", 0): E.CONCURRENT_TRANSACTIONS.code}
    # The pending state does not matter: only whether the partition is in the transaction.
    seed(d, state=S.ONGOING, producer_id=0, producer_epoch=0, pending=S.COMPLETE_COMMIT)
    assert verify(d, 0, parts) == {("topic1", 0): E.TRANSACTION_ABORTABLE.code}
    assert records_of(d) == []


def test_should_respond_with_errors_none_on_add_partition_when_ongoing_verify_only_and_partitions_the_same():
    d = driver()
    seed(d, state=S.ONGOING, producer_id=0, producer_epoch=0, partitions=[("topic1", 0)])
    assert verify(d, 0, [("topic1", 0)]) == {("topic1", 0): 0}


def test_should_respond_with_invalid_txn_state_when_verify_only_and_partition_not_present():
    d = driver()  # Kafka 4.x answers TRANSACTION_ABORTABLE (the test kept its old name)
    seed(d, state=S.EMPTY, producer_id=0, producer_epoch=0, partitions=[("topic1", 0)])
    assert verify(d, 0, [("topic1", 0), ("topic2", 0)]) == {
        ("topic1", 0): 0,
        ("topic2", 0): E.TRANSACTION_ABORTABLE.code,
    }


def test_batched_add_partitions_answers_per_transaction():
    d = driver()
    p = Producer(d)
    p.init()
    foreign = next(f"x{i}" for i in range(1000) if coordinator_partition(f"x{i}", 50) != d.partition_id)
    r = d.send(
        "AddPartitionsToTxn",
        4,
        {
            "transactions": [
                {
                    "transactionalId": TID,
                    "producerId": p.producer_id,
                    "producerEpoch": p.epoch,
                    "verifyOnly": False,
                    "topics": [{"name": "t", "partitions": [0, 1]}],
                },
                {
                    "transactionalId": foreign,
                    "producerId": 1,
                    "producerEpoch": 0,
                    "verifyOnly": False,
                    "topics": [{"name": "t", "partitions": [2]}],
                },
            ]
        },
    )
    assert r == {
        "throttleTimeMs": 0,
        "errorCode": 0,
        "resultsByTransaction": [
            {
                "transactionalId": TID,
                "topicResults": [
                    {
                        "name": "t",
                        "resultsByPartition": [
                            {"partitionIndex": 0, "partitionErrorCode": 0},
                            {"partitionIndex": 1, "partitionErrorCode": 0},
                        ],
                    }
                ],
            },
            {
                "transactionalId": foreign,
                "topicResults": [
                    {
                        "name": "t",
                        "resultsByPartition": [{"partitionIndex": 2, "partitionErrorCode": E.NOT_COORDINATOR.code}],
                    }
                ],
            },
        ],
    }
    # A broker's add (v4+) is a TV2 client add.
    assert records_of(d)[-1]["clientTransactionVersion"] == 2


# ============================================================================ AddOffsetsToTxn
def test_add_offsets_to_txn_adds_the_group_offsets_partition():
    d = driver()
    p = Producer(d)
    p.init()
    assert p.add_offsets("my-group") == {"throttleTimeMs": 0, "errorCode": 0}
    assert txn(d).topic_partitions == {("__consumer_offsets", coordinator_partition("my-group", 50))}
    assert txn(d).client_transaction_version == 0


def test_add_offsets_to_txn_errors_are_those_of_add_partitions():
    d = driver()
    assert Producer(d).add_offsets("g")["errorCode"] == E.INVALID_PRODUCER_ID_MAPPING.code
    seed(d, state=S.ONGOING, producer_epoch=3)
    assert (
        d.send("AddOffsetsToTxn", 1, {"transactionalId": TID, "producerId": PID, "producerEpoch": 2, "groupId": "g"})[
            "errorCode"
        ]
        == E.INVALID_PRODUCER_EPOCH.code
    )
    assert (
        d.send("AddOffsetsToTxn", 2, {"transactionalId": TID, "producerId": PID, "producerEpoch": 2, "groupId": "g"})[
            "errorCode"
        ]
        == E.PRODUCER_FENCED.code
    )
    assert (
        other_partition().send(
            "AddOffsetsToTxn", 4, {"transactionalId": TID, "producerId": PID, "producerEpoch": 3, "groupId": "g"}
        )["errorCode"]
        == E.NOT_COORDINATOR.code
    )


# ============================================================================ EndTxn
def request_epoch(tv):
    return EPOCH - 1 if tv == TV_2 else EPOCH  # TV2 bumped the epoch: a retry carries epoch - 1


def v(tv):
    return 5 if tv == TV_2 else 4


@pytest.mark.parametrize("tv", [TV_0, TV_2])
def test_should_reply_with_invalid_pid_mapping_on_end_txn_when_txn_id_doesnt_exist(tv):
    assert end(driver(), True, 0, version=v(tv))["errorCode"] == E.INVALID_PRODUCER_ID_MAPPING.code


@pytest.mark.parametrize("tv", [TV_0, TV_2])
def test_should_reply_with_invalid_pid_mapping_on_end_txn_when_pid_dosent_match_mapped(tv):
    d = driver()
    seed(d, state=S.ONGOING, producer_id=10, producer_epoch=0)
    assert end(d, True, 0, pid=0, version=v(tv))["errorCode"] == E.INVALID_PRODUCER_ID_MAPPING.code


@pytest.mark.parametrize("tv", [TV_0, TV_2])
def test_should_reply_with_producer_fenced_on_end_txn_when_epoch_is_not_same_as_transaction(tv):
    d = driver()
    seed(d, state=S.ONGOING, producer_epoch=EPOCH, last_epoch=EPOCH - 1)
    assert end(d, True, 0, version=v(tv))["errorCode"] == E.PRODUCER_FENCED.code


@pytest.mark.parametrize("is_retry", [False, True])
def test_end_txn_when_status_is_complete_commit_and_result_is_commit_in_v1(is_retry):
    d = driver()
    seed(d, state=S.COMPLETE_COMMIT, producer_epoch=EPOCH, last_epoch=EPOCH - 1)
    r = end(d, True, EPOCH - 1 if is_retry else EPOCH, version=4)
    assert r["errorCode"] == (E.PRODUCER_FENCED.code if is_retry else 0)
    assert records_of(d) == []


@pytest.mark.parametrize("is_retry", [False, True])
def test_end_txn_when_status_is_complete_commit_and_result_is_commit_in_v2(is_retry):
    d = driver()
    seed(d, state=S.COMPLETE_COMMIT, producer_epoch=EPOCH, last_epoch=EPOCH - 1, tv=TV_2)
    r = end(d, True, EPOCH - 1 if is_retry else EPOCH)
    if is_retry:
        assert (r["errorCode"], r["producerId"], r["producerEpoch"]) == (0, PID, EPOCH)
    else:
        assert (r["errorCode"], r["producerId"], r["producerEpoch"]) == (E.INVALID_TXN_STATE.code, -1, -1)
    assert records_of(d) == []


@pytest.mark.parametrize("is_retry", [False, True])
def test_end_txn_when_status_is_complete_abort_and_result_is_abort_in_v1(is_retry):
    d = driver()
    seed(d, state=S.COMPLETE_ABORT, producer_epoch=EPOCH, last_epoch=EPOCH - 1)
    r = end(d, False, EPOCH - 1 if is_retry else EPOCH, version=4)
    assert r == {"throttleTimeMs": 0, "errorCode": E.PRODUCER_FENCED.code if is_retry else 0}


@pytest.mark.parametrize("is_retry", [False, True])
def test_should_return_ok_on_end_txn_when_status_is_complete_abort_and_result_is_abort_in_v2(is_retry):
    d = driver()
    seed(d, state=S.COMPLETE_ABORT, producer_epoch=EPOCH, last_epoch=EPOCH - 1, tv=TV_2, start=0)
    r = end(d, False, EPOCH - 1 if is_retry else EPOCH)
    assert r["errorCode"] == 0
    if is_retry:
        assert records_of(d) == []
    else:
        prepare = records_of(d)[0]
        assert (prepare["transactionStatus"], prepare["producerEpoch"], prepare["transactionStartTimestampMs"]) == (
            S.PREPARE_ABORT.id,
            EPOCH + 1,
            d.now,
        )
        assert (r["producerId"], r["producerEpoch"]) == (PID, EPOCH + 1)
        assert txn(d).state == S.COMPLETE_ABORT  # no partitions: completed at once


@pytest.mark.parametrize("tv", [TV_0, TV_2])
def test_should_return_invalid_txn_request_on_end_txn_request_when_status_is_complete_abort_and_result_is_not_abort(tv):
    d = driver()
    seed(d, state=S.COMPLETE_ABORT, producer_epoch=EPOCH, last_epoch=EPOCH - 1, tv=tv)
    assert end(d, True, request_epoch(tv), version=v(tv))["errorCode"] == E.INVALID_TXN_STATE.code


def test_should_return_invalid_txn_request_on_end_txn_request_when_status_is_complete_commit_and_result_is_not_commit():
    d = driver()
    seed(d, state=S.COMPLETE_COMMIT, producer_epoch=EPOCH, last_epoch=EPOCH - 1)
    assert end(d, False, EPOCH, version=4)["errorCode"] == E.INVALID_TXN_STATE.code


@pytest.mark.parametrize("is_retry", [False, True])
def test_end_txn_request_when_status_is_complete_commit_and_result_is_abort_in_v1(is_retry):
    d = driver()
    seed(d, state=S.COMPLETE_COMMIT, producer_epoch=EPOCH, last_epoch=EPOCH - 1)
    r = end(d, False, EPOCH - 1 if is_retry else EPOCH, version=4)
    assert r["errorCode"] == (E.PRODUCER_FENCED if is_retry else E.INVALID_TXN_STATE).code


@pytest.mark.parametrize("is_retry", [False, True])
def test_end_txn_request_when_status_is_complete_commit_and_result_is_abort_in_v2(is_retry):
    d = driver()
    seed(d, state=S.COMPLETE_COMMIT, producer_epoch=EPOCH, last_epoch=EPOCH - 1, tv=TV_2, start=0)
    r = end(d, False, EPOCH - 1 if is_retry else EPOCH)
    if is_retry:
        assert r["errorCode"] == E.INVALID_TXN_STATE.code
    else:
        assert r["errorCode"] == 0
        prepare = records_of(d)[0]
        assert (prepare["producerEpoch"], prepare["transactionStartTimestampMs"]) == (EPOCH + 1, d.now)


@pytest.mark.parametrize("tv", [TV_0, TV_2])
def test_should_return_concurrent_transactions_on_end_txn_request_when_status_is_prepare_commit(tv):
    d = driver()
    seed(d, state=S.PREPARE_COMMIT, producer_epoch=EPOCH, last_epoch=EPOCH - 1, tv=tv)
    assert end(d, True, request_epoch(tv), version=v(tv))["errorCode"] == E.CONCURRENT_TRANSACTIONS.code


@pytest.mark.parametrize("tv", [TV_0, TV_2])
def test_should_return_invalid_txn_request_on_end_txn_request_when_status_is_prepare_abort(tv):
    d = driver()
    seed(d, state=S.PREPARE_ABORT, producer_epoch=EPOCH, tv=tv)
    assert end(d, True, request_epoch(tv), version=v(tv))["errorCode"] == E.INVALID_TXN_STATE.code


def test_end_txn_request_when_empty_transaction_state_for_abort_in_v1():
    d = driver()
    seed(d, state=S.EMPTY, producer_epoch=EPOCH, start=-1)
    assert end(d, False, EPOCH, version=4)["errorCode"] == E.INVALID_TXN_STATE.code


@pytest.mark.parametrize("is_retry", [False, True])
def test_end_txn_request_when_empty_transaction_state_for_abort_in_v2(is_retry):
    d = driver()
    seed(d, state=S.EMPTY, producer_epoch=EPOCH, start=-1, tv=TV_2)
    r = end(d, False, EPOCH - 1 if is_retry else EPOCH)
    if is_retry:
        assert r["errorCode"] == E.PRODUCER_FENCED.code
    else:
        assert (r["errorCode"], r["producerEpoch"]) == (0, EPOCH + 1)
        assert records_of(d)[0]["transactionStartTimestampMs"] == d.now


@pytest.mark.parametrize("is_retry", [False, True])
def test_end_txn_request_when_empty_transaction_state_for_commit_in_v2(is_retry):
    d = driver()
    seed(d, state=S.EMPTY, producer_epoch=EPOCH, start=-1, tv=TV_2)
    r = end(d, True, EPOCH - 1 if is_retry else EPOCH)
    assert r["errorCode"] == (E.PRODUCER_FENCED if is_retry else E.INVALID_TXN_STATE).code


def test_should_return_invalid_txn_request_on_end_txn_v2_if_not_end_txn_v2_retry():
    d = driver()
    seed(d, state=S.PREPARE_COMMIT, producer_epoch=EPOCH, tv=TV_2)
    assert end(d, True, EPOCH)["errorCode"] == E.PRODUCER_FENCED.code  # the next EndTxn, not a retry
    seed(d, state=S.COMPLETE_COMMIT, producer_epoch=EPOCH, tv=TV_2)
    assert end(d, True, EPOCH)["errorCode"] == E.INVALID_TXN_STATE.code


def test_should_return_ok_on_end_txn_v2_if_end_txn_v2_retry_epoch_overflow():
    d = driver()
    seed(
        d,
        state=S.PREPARE_COMMIT,
        producer_id=PID,
        prev_producer_id=PID,
        next_producer_id=11,
        producer_epoch=SHORT_MAX,
        last_epoch=SHORT_MAX - 1,
        tv=TV_2,
    )
    assert end(d, True, SHORT_MAX - 1)["errorCode"] == E.CONCURRENT_TRANSACTIONS.code
    seed(d, state=S.COMPLETE_COMMIT, producer_id=11, prev_producer_id=PID, producer_epoch=0, tv=TV_2)
    r = end(d, True, SHORT_MAX - 1)
    assert (r["errorCode"], r["producerId"], r["producerEpoch"]) == (0, 11, 0)


def test_end_txn_v2_epoch_overflow_moves_to_a_new_producer_id():
    d = driver()
    seed(d, state=S.ONGOING, producer_epoch=SHORT_MAX - 1, partitions=[("t", 0)], tv=TV_2)
    r = end(d, True, SHORT_MAX - 1)
    new_pid = r["producerId"]
    assert r["errorCode"] == 0 and new_pid != PID and r["producerEpoch"] == 0
    prepare = records_of(d)[0]
    assert (prepare["producerId"], prepare["producerEpoch"], prepare["nextProducerId"]) == (PID, SHORT_MAX, new_pid)
    assert [m.key for m in d.data] == [f'["TxnMarker","COMMIT",{PID},{SHORT_MAX}]']
    d.advance(1)
    complete = records_of(d)[-1]
    assert (
        complete["transactionStatus"],
        complete["producerId"],
        complete["producerEpoch"],
        complete["previousProducerId"],
        complete["nextProducerId"],
    ) == (S.COMPLETE_COMMIT.id, new_pid, 0, PID, -1)
    # The next transaction runs under the new producer id.
    assert add(d, 0, pid=new_pid, parts=[("t", 1)]) == {("t", 1): 0}


@pytest.mark.parametrize("tv", [TV_0, TV_2])
@pytest.mark.parametrize("commit", [True, False])
def test_should_append_prepare_to_log_on_end_txn_when_status_is_ongoing(tv, commit):
    d = driver()
    seed(d, state=S.ONGOING, producer_epoch=EPOCH, partitions=[("topic1", 0)], tv=TV_0)
    r = end(d, commit, EPOCH, version=v(tv))
    assert r["errorCode"] == 0
    prepare = records_of(d)[0]
    assert prepare["transactionStatus"] == (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT).id
    assert prepare["producerEpoch"] == (EPOCH + 1 if tv == TV_2 else EPOCH)
    assert prepare["clientTransactionVersion"] == tv
    if tv == TV_2:
        assert (r["producerId"], r["producerEpoch"]) == (PID, EPOCH + 1)
    else:
        assert "producerId" not in r


@pytest.mark.parametrize("tv", [TV_0, TV_2])
def test_should_respond_with_invalid_request_on_end_txn_when_transactional_id_is_empty(tv):
    assert end(other_partition(""), True, 0, tid="", version=v(tv))["errorCode"] == E.INVALID_REQUEST.code


@pytest.mark.parametrize("tv", [TV_0, TV_2])
def test_should_respond_with_not_coordinator_on_end_txn_when_is_not_coordinator_for_id(tv):
    assert end(other_partition(), True, 0, version=v(tv))["errorCode"] == E.NOT_COORDINATOR.code


@pytest.mark.parametrize("tv", [TV_0, TV_2])
def test_should_return_invalid_epoch_on_end_txn_when_epoch_is_larger(tv):
    d = driver()
    seed(d, state=S.COMPLETE_COMMIT, producer_epoch=1, last_epoch=1, tv=tv)
    assert end(d, True, 2, version=v(tv))["errorCode"] == E.PRODUCER_FENCED.code


@pytest.mark.parametrize("tv", [TV_0, TV_2])
def test_should_return_invalid_epoch_on_end_txn_when_epoch_is_smaller(tv):
    d = driver()
    seed(d, state=S.COMPLETE_COMMIT, producer_epoch=2, last_epoch=1, tv=tv)
    assert end(d, True, 0 if tv == TV_2 else 1, version=v(tv))["errorCode"] == E.PRODUCER_FENCED.code


def test_producer_fenced_is_invalid_producer_epoch_before_end_txn_v2():
    d = driver()
    seed(d, state=S.ONGOING, producer_epoch=5)
    assert end(d, True, 4, version=1)["errorCode"] == E.INVALID_PRODUCER_EPOCH.code
    assert end(d, True, 4, version=2)["errorCode"] == E.PRODUCER_FENCED.code


def test_end_txn_while_markers_are_in_flight_is_concurrent_transactions():
    # Kafka keeps the pending state Complete* while markers are in flight: every EndTxn of the
    # current producer gets CONCURRENT_TRANSACTIONS, whatever the result it asks for.
    d = driver()
    seed(d, state=S.ONGOING, producer_epoch=EPOCH, partitions=[("t", 0)])
    cids = d.send_batch(
        [
            ("EndTxn", 4, {"transactionalId": TID, "producerId": PID, "producerEpoch": EPOCH, "committed": True}),
            ("EndTxn", 4, {"transactionalId": TID, "producerId": PID, "producerEpoch": EPOCH, "committed": True}),
            ("EndTxn", 4, {"transactionalId": TID, "producerId": PID, "producerEpoch": EPOCH, "committed": False}),
            ("InitProducerId", 5, {"transactionalId": TID, "transactionTimeoutMs": 1000}),
        ]
    )
    assert [d.response(c)["errorCode"] for c in cids] == [0] + [E.CONCURRENT_TRANSACTIONS.code] * 3
    # Next batch: the transaction is complete, a retry succeeds and the wrong result is refused.
    assert end(d, True, EPOCH, version=4)["errorCode"] == 0
    assert end(d, False, EPOCH, version=4)["errorCode"] == E.INVALID_TXN_STATE.code


# ============================================================================ Describe / List
def test_describe_transactions():
    d = driver()
    p = Producer(d)
    p.init()
    p.add(("b", 1), ("a", 0), ("a", 2))
    foreign = next(f"x{i}" for i in range(1000) if coordinator_partition(f"x{i}", 50) != d.partition_id)
    r = d.send("DescribeTransactions", 0, {"transactionalIds": [TID, "", foreign, "unknown-" + TID]})
    ok, empty, not_coord, missing = r["transactionStates"]
    assert ok == {
        "errorCode": 0,
        "transactionalId": TID,
        "transactionState": "Ongoing",
        "transactionTimeoutMs": 60000,
        "transactionStartTimeMs": d.now,
        "producerId": p.producer_id,
        "producerEpoch": p.epoch,
        "topics": [{"topic": "a", "partitions": [0, 2]}, {"topic": "b", "partitions": [1]}],
    }
    assert empty["errorCode"] == E.INVALID_REQUEST.code and not_coord["errorCode"] == E.NOT_COORDINATOR.code
    if coordinator_partition("unknown-" + TID, 50) == d.partition_id:
        assert missing["errorCode"] == E.TRANSACTIONAL_ID_NOT_FOUND.code
    assert missing["transactionState"] == "" and missing["producerId"] == 0 and missing["topics"] == []


def test_describe_unknown_transactional_id_is_not_found():
    d = driver()
    [tid] = same_partition_ids(1, d.partition_id, "missing")
    [state] = d.send("DescribeTransactions", 0, {"transactionalIds": [tid]})["transactionStates"]
    assert state["errorCode"] == E.TRANSACTIONAL_ID_NOT_FOUND.code


def test_list_transactions_filters():
    d = driver()
    a, b, c = same_partition_ids(3, d.partition_id)
    pa, pb, pc = Producer(d, a), Producer(d, b), Producer(d, c)
    for p in (pa, pb, pc):
        p.init()
    pa.add(("t", 0))
    d.now += 5000
    pb.add(("t", 1))

    def lst(version=1, **body):
        req = {"stateFilters": [], "producerIdFilters": []}
        req.update(body)
        return d.send("ListTransactions", version, req)

    r = lst()
    assert r["errorCode"] == 0 and r["unknownStateFilters"] == []
    assert {(s["transactionalId"], s["transactionState"]) for s in r["transactionStates"]} == {
        (a, "Ongoing"),
        (b, "Ongoing"),
        (c, "Empty"),
    }
    r = lst(stateFilters=["Empty", "Bogus", "Bogus"])
    assert [s["transactionalId"] for s in r["transactionStates"]] == [c] and r["unknownStateFilters"] == ["Bogus"]
    r = lst(producerIdFilters=[pb.producer_id])
    assert r["transactionStates"] == [
        {"transactionalId": b, "producerId": pb.producer_id, "transactionState": "Ongoing"}
    ]
    # Running longer than 1 s: a started 5 s ago; b just started; c never started (start -1).
    r = lst(stateFilters=["Ongoing"], durationFilter=1000)
    assert [s["transactionalId"] for s in r["transactionStates"]] == [a]
    # Version 0 knows no duration filter: the field is ignored.
    assert len(lst(version=0, durationFilter=10**9)["transactionStates"]) == 3
    # Another partition lists its own transactions only.
    assert (
        other_partition(a).send("ListTransactions", 0, {"stateFilters": [], "producerIdFilters": []})[
            "transactionStates"
        ]
        == []
    )


def test_list_transactions_filtering_by_transactional_id_pattern():
    # TransactionStateManagerTest.testListTransactionsFiltering with KIP-1152's pattern (v2): the
    # whole id must match; null or "" lists everything; the other filters still apply.
    d = driver()
    [a1, a2] = same_partition_ids(2, d.partition_id, "orders-")
    [b1] = same_partition_ids(1, d.partition_id, "payments-")
    for tid in (a1, a2, b1):
        Producer(d, tid).init()

    def lst(version=2, **body):
        req = {"stateFilters": [], "producerIdFilters": []}
        req.update(body)
        return d.send("ListTransactions", version, req)

    def ids(r):
        assert r["errorCode"] == 0
        return [s["transactionalId"] for s in r["transactionStates"]]

    everything = sorted([a1, a2, b1])
    assert ids(lst(transactionalIdPattern="orders-.*")) == sorted([a1, a2])
    assert ids(lst(transactionalIdPattern="orders-")) == []  # matches(), not find()
    assert ids(lst(transactionalIdPattern="pay.*|" + a1)) == sorted([a1, b1])
    assert ids(lst(transactionalIdPattern=None)) == everything
    assert ids(lst(transactionalIdPattern="")) == everything
    assert ids(lst(transactionalIdPattern=".*", stateFilters=["Ongoing"])) == []
    # Before v2 the field does not exist: ignored.
    assert ids(lst(version=1, transactionalIdPattern="nothing-matches")) == everything
    # A pattern that does not compile: INVALID_REGULAR_EXPRESSION, nothing listed.
    r = lst(transactionalIdPattern="orders-(", stateFilters=["Bogus"])
    assert r == {
        "throttleTimeMs": 0,
        "errorCode": E.INVALID_REGULAR_EXPRESSION.code,
        "unknownStateFilters": ["Bogus"],
        "transactionStates": [],
    }
    # Backreferences are refused as RE2 refuses them.
    assert lst(transactionalIdPattern=r"(o)\1.*")["errorCode"] == E.INVALID_REGULAR_EXPRESSION.code


def test_list_transactions_pattern_matching_is_linear_time():
    # A pattern that makes a backtracking matcher take exponential time against a long id that
    # almost matches (2^40 paths for `re`) is answered: the matcher never backtracks.
    d = driver()
    [tid] = same_partition_ids(1, d.partition_id, "a" * 40)
    Producer(d, tid).init()
    r = d.send("ListTransactions", 2, {"stateFilters": [], "producerIdFilters": [], "transactionalIdPattern": "(a+)+b"})
    assert r["errorCode"] == 0 and r["transactionStates"] == []
