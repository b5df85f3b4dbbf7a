"""A transaction across coordinator partitions, in the core: the transaction coordinator's partition
and the group coordinator's partition are two CoreDrivers, and the internal WriteTxnMarkers requests
of the first are fed into the second, as the stream's request topic does. The data markers go to a
read_committed reader (client.read_committed) together with the producer's records. Also: topic
existence from the metadata component (AddPartitionsToTxn, markers of deleted partitions)."""

from __future__ import annotations

import json

from client.read_committed import ReadCommittedPartition, producer_headers
from coordinator import coordinator_partition
from coordinator.errors import Errors
from coordinator.routing import key_for_partition
from coordinator.txn.metadata import TransactionState
from tests.client.test_read_committed import Rec
from tests.core_driver import CoreDriver
from tests.txn.txn_helpers import Producer

E = Errors
TID, GROUP = "etl-1", "etl-group"
TOPICS = [{"topicName": "in", "numPartitions": 2}, {"topicName": "out", "numPartitions": 2}]


class Cluster:
    """The transaction coordinator's partition, the group's partition, and the data partitions."""

    def __init__(self, topics=TOPICS, **overrides):
        self.txn = CoreDriver(TID, **overrides)
        self.grp = CoreDriver(GROUP, **overrides)
        assert self.txn.partition_id != self.grp.partition_id
        self.update_metadata(topics)
        self.data: dict[tuple[str, int], list[Rec]] = {}
        self.readers: dict[tuple[str, int], ReadCommittedPartition] = {}
        self.delivered: dict[tuple[str, int], list[bytes]] = {}
        self.fed_internal = self.fed_data = self.fed_grp_internal = 0

    def update_metadata(self, topics) -> None:
        for d in (self.txn, self.grp):
            d.send("UpdateMetadata", 0, {"topicStates": topics}, key="__coordinator_broadcast__")

    def write(self, topic: str, partition: int, value: bytes, producer: Producer | None = None) -> None:
        headers = [] if producer is None else producer_headers(producer.producer_id, producer.epoch, producer.tid)
        self.append((topic, partition), value, headers)

    def append(self, tp, value, headers) -> None:
        log = self.data.setdefault(tp, [])
        rec = Rec(len(log), value, headers)
        log.append(rec)
        reader = self.readers.setdefault(tp, ReadCommittedPartition())
        self.delivered.setdefault(tp, []).extend(r.value for r in reader.add(rec))

    def deliver(self) -> None:
        """What the stream's sink does with the transaction partition's outputs: markers into the
        data partitions, internal requests into the request topic (here: straight to the group's
        partition)."""
        for marker in self.txn.data[self.fed_data :]:
            self.append((marker.topic, marker.partition), marker.value, marker.headers)
        self.fed_data = len(self.txn.data)
        # The group partition's questions (TxnVerification) first: their answers go back below.
        for key, envelope in self.grp.internal_requests[self.fed_grp_internal :]:
            assert coordinator_partition(key) == self.txn.partition_id
            self.txn.send_raw(json.dumps(envelope).encode(), key=key)
        self.fed_grp_internal = len(self.grp.internal_requests)
        for key, envelope in self.txn.internal_requests[self.fed_internal :]:
            assert coordinator_partition(key) == self.grp.partition_id
            self.grp.send_raw(json.dumps(envelope).encode(), key=key)
        self.fed_internal = len(self.txn.internal_requests)

    def next_batch(self) -> None:
        """The next micro-batch of the transaction partition: deferred completions run."""
        self.txn.advance(1)
        self.deliver()

    def txn_offset_commit(self, p: Producer, offsets: dict, epoch: int | None = None, version: int = 4) -> dict:
        topics: dict[str, list] = {}
        for (t, part), o in offsets.items():
            topics.setdefault(t, []).append({"partitionIndex": part, "committedOffset": o, "committedMetadata": ""})
        r = self.grp.send(
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
        if r is None:  # parked for the KIP-890 verification: the round trip over the internal channel
            self.deliver()
            r = self.grp.response_envelopes[-1][1]
        return r

    def fetch(self, require_stable: bool = True) -> dict:
        r = self.grp.send(
            "OffsetFetch",
            9,
            {
                "groups": [{"groupId": GROUP, "topics": [{"name": "in", "partitionIndexes": [0, 1]}]}],
                "requireStable": require_stable,
            },
            key=GROUP,
        )
        return {
            p["partitionIndex"]: p["committedOffset"] if p["errorCode"] == 0 else "UNSTABLE"
            for p in r["groups"][0]["topics"][0]["partitions"]
        }

    def state(self, tid: str = TID) -> TransactionState:
        return self.txn.component("transactions").txns[tid].state


def errors_of(r: dict) -> dict:
    return {
        (t["name"], p["partitionIndex"]): p["partitionErrorCode"]
        for t in r["resultsByTopicV3AndBelow"]
        for p in t["resultsByPartition"]
    }


def run_transaction(c: Cluster, p: Producer, values: list[tuple[int, bytes]], offsets: dict, commit: bool):
    assert all(code == 0 for code in errors_of(p.add(*{("out", part) for part, _ in values})).values())
    for part, value in values:
        c.write("out", part, value, p)
    assert p.add_offsets(GROUP)["errorCode"] == 0
    r = c.txn_offset_commit(p, offsets)
    assert all(x["errorCode"] == 0 for t in r["topics"] for x in t["partitions"]), r
    assert c.fetch() == {0: "UNSTABLE", 1: "UNSTABLE"} if len(offsets) == 2 else True
    assert p.end(commit)["errorCode"] == 0
    c.deliver()


def test_consume_transform_produce_across_coordinator_partitions():
    c = Cluster()
    p = Producer(c.txn, TID)
    assert p.init()["errorCode"] == 0
    run_transaction(c, p, [(0, b"a"), (1, b"b")], {("in", 0): 10, ("in", 1): 20}, commit=True)
    # The markers were emitted with the Prepare record; the group partition materialized the offsets.
    assert c.delivered == {("out", 0): [b"a"], ("out", 1): [b"b"]}
    assert c.fetch() == {0: 10, 1: 20}
    assert c.state() == TransactionState.PREPARE_COMMIT
    c.next_batch()
    assert c.state() == TransactionState.COMPLETE_COMMIT

    run_transaction(c, p, [(0, b"c")], {("in", 0): 11, ("in", 1): 21}, commit=False)
    c.next_batch()
    assert c.state() == TransactionState.COMPLETE_ABORT
    assert c.fetch() == {0: 10, 1: 20} and c.delivered[("out", 0)] == [b"a"]

    run_transaction(c, p, [(0, b"c2"), (1, b"d")], {("in", 0): 11, ("in", 1): 21}, commit=True)
    c.next_batch()
    assert c.fetch() == {0: 11, 1: 21}
    assert c.delivered == {("out", 0): [b"a", b"c2"], ("out", 1): [b"b", b"d"]}
    done = c.grp.events_named("TransactionalOffsetsCommitted")
    assert [e["partitions"] for e in done] == [[["in", 0, 10], ["in", 1, 20]], [["in", 0, 11], ["in", 1, 21]]]


def test_a_restarted_producer_fences_the_zombie_everywhere():
    c = Cluster()
    zombie = Producer(c.txn, TID)
    zombie.init()
    zombie.add(("out", 0))
    c.write("out", 0, b"zombie-1", zombie)
    zombie.add_offsets(GROUP)
    c.txn_offset_commit(zombie, {("in", 0): 5})
    # A new instance: InitProducerId fences the zombie and aborts its transaction (TV2: epoch + 1).
    new = Producer(c.txn, TID)
    assert new.init()["errorCode"] == E.CONCURRENT_TRANSACTIONS.code
    c.deliver()
    c.next_batch()
    assert new.init()["errorCode"] == 0 and new.epoch == zombie.epoch + 2
    assert c.fetch() == {0: -1, 1: -1}  # the zombie's pending offset was dropped by the ABORT marker
    # The zombie keeps going: its data is never delivered, its requests are fenced.
    c.write("out", 0, b"zombie-2", zombie)
    assert (
        c.txn_offset_commit(zombie, {("in", 0): 6})["topics"][0]["partitions"][0]["errorCode"]
        == E.INVALID_PRODUCER_EPOCH.code
    )
    assert zombie.add_error(("out", 1)) == E.PRODUCER_FENCED.code
    assert zombie.end(True, version=5)["errorCode"] == E.PRODUCER_FENCED.code
    run_transaction(c, new, [(0, b"new")], {("in", 0): 7}, commit=True)
    assert c.delivered[("out", 0)] == [b"new"] and c.fetch(require_stable=False)[0] == 7
    assert c.readers[("out", 0)].fenced == 1


def test_a_timed_out_transaction_is_aborted_everywhere():
    c = Cluster(transaction_abort_timed_out_transaction_cleanup_interval_ms=1000)
    p = Producer(c.txn, TID, timeout_ms=2000)
    p.init()
    p.add(("out", 1))
    c.write("out", 1, b"late", p)
    p.add_offsets(GROUP)
    c.txn_offset_commit(p, {("in", 1): 3})
    c.write("out", 1, b"plain")  # a non-transactional record behind the open transaction
    assert c.delivered.get(("out", 1), []) == []
    c.txn.advance(3000)
    c.deliver()
    assert [e["event"] for e in c.txn.events if e["event"].startswith("TransactionAbortedByTimeout")]
    assert c.delivered[("out", 1)] == [b"plain"] and c.fetch() == {0: -1, 1: -1}
    c.next_batch()
    assert c.state() == TransactionState.COMPLETE_ABORT


def test_add_partitions_knows_which_partitions_exist():
    c = Cluster()
    p = Producer(c.txn, TID)
    p.init()
    r = errors_of(p.add(("out", 1), ("out", 2), ("missing", 0)))
    assert r == {
        ("out", 1): E.OPERATION_NOT_ATTEMPTED.code,
        ("out", 2): E.UNKNOWN_TOPIC_OR_PARTITION.code,
        ("missing", 0): E.UNKNOWN_TOPIC_OR_PARTITION.code,
    }
    assert c.txn.component("transactions").txns[TID].topic_partitions == set()
    # The stream's own topics are like Kafka's internal topics.
    d = CoreDriver(TID, coordinator_internal_topics=["coordinator-state-log"])
    q = Producer(d, TID)
    q.init()
    assert errors_of(q.add(("coordinator-state-log", 0), ("coordinator-responses", 0))) == {
        ("coordinator-state-log", 0): E.TOPIC_AUTHORIZATION_FAILED.code,
        ("coordinator-responses", 0): E.TOPIC_AUTHORIZATION_FAILED.code,
    }
    # Before any metadata arrived, any legal name is taken to exist.
    assert errors_of(q.add(("anything", 3))) == {("anything", 3): 0}


def test_markers_are_not_written_to_partitions_that_no_longer_exist():
    c = Cluster()
    p = Producer(c.txn, TID)
    p.init()
    p.add(("out", 0), ("in", 1))
    p.add_offsets(GROUP)
    c.update_metadata([{"topicName": "in", "numPartitions": 2}])  # "out" was deleted
    assert p.end(True)["errorCode"] == 0
    assert [(m.topic, m.partition) for m in c.txn.data] == [("in", 1)]
    dropped = c.txn.events_named("TransactionMarkerDropped")
    assert [(e["topic"], e["partition"], e["result"]) for e in dropped] == [("out", 0, "COMMIT")]
    c.next_batch()
    assert c.state() == TransactionState.COMPLETE_COMMIT
    # Every marker gone: the transaction completes at once.
    p.add(("in", 0))
    c.update_metadata([])
    p.end(False)
    assert c.state() == TransactionState.COMPLETE_ABORT


def test_write_txn_markers_requests_name_the_group_partition():
    c = Cluster()
    p = Producer(c.txn, TID)
    p.init()
    p.add_offsets(GROUP)
    p.end(True)
    key, env = c.txn.internal_requests[-1]
    assert key == key_for_partition(c.grp.partition_id)
    marker = env["request"]["markers"][0]
    assert marker["topics"] == [{"name": "__consumer_offsets", "partitionIndexes": [c.grp.partition_id]}]
    c.deliver()
    resp = c.grp.response_envelopes[-1][1]
    assert resp == {
        "markers": [
            {
                "producerId": p.producer_id,
                "topics": [
                    {
                        "name": "__consumer_offsets",
                        "partitions": [{"partitionIndex": c.grp.partition_id, "errorCode": 0}],
                    }
                ],
            }
        ]
    }
