"""Real transaction markers ([txn] markers = "broker") and real Kafka clients through the gateway.

One job for the module, in "broker" marker mode: the service's transaction coordinator decides the
markers and the broker writes them as control records (WriteTxnMarkers), so that any read_committed
consumer honours them.

- test_broker_markers_*: the service's coordinator (JSON requests) + transactional record batches
  written straight to the broker (Produce v11 with the producer id the service handed out), read
  back by kafka-python's read_committed KafkaConsumer. Needs no gateway.
"""
from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import NewTopic
from kafka.protocol.producer.produce import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from client.topic_reader import events
from coordinator.errors import Errors

pytestmark = pytest.mark.integration

PARTITIONS = 4
TOPICS = {"raw-txn-out": 2}


@pytest.fixture(scope="module")
def job(kafka, job_factory):
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()])
    finally:
        admin.close()
    return job_factory(stream={"metadata_refresh_ms": 1000}, txn={"markers": "broker"},
                       coordinator={"coordinator.partitions": PARTITIONS})


@pytest.fixture(scope="module")
def client(job):
    c = job.client("gw-txn-client")
    yield c
    c.close()


class RawTransactionalProducer:
    """Writes transactional record batches with a producer id and epoch from the service's
    coordinator, as a TV1 Kafka producer does (Produce v11: the broker does not verify)."""

    def __init__(self, bootstrap: str, client, tid: str):
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        self.client, self.tid = client, tid
        r = self.call("InitProducerId", 4, {"transactionalId": tid, "transactionTimeoutMs": 60000,
                                            "producerId": -1, "producerEpoch": -1})
        self.pid, self.epoch = r["producerId"], r["producerEpoch"]
        self.seq: dict[tuple[str, int], int] = {}

    def call(self, api: str, version: int, body: dict, error=lambda r: r["errorCode"]) -> dict:
        deadline = time.monotonic() + 60
        while True:
            r = self.client.request(api, version, body, key=self.tid)
            code = error(r)
            if code in (Errors.CONCURRENT_TRANSACTIONS.code, Errors.COORDINATOR_LOAD_IN_PROGRESS.code,
                        Errors.UNKNOWN_TOPIC_OR_PARTITION.code) and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            assert code == 0, f"{api}: {Errors.for_code(code).name}"
            return r

    def add(self, topic: str, partition: int) -> None:
        self.call("AddPartitionsToTxn", 3, {
            "v3AndBelowTransactionalId": self.tid, "v3AndBelowProducerId": self.pid,
            "v3AndBelowProducerEpoch": self.epoch,
            "v3AndBelowTopics": [{"name": topic, "partitions": [partition]}]},
            error=lambda r: max([p["partitionErrorCode"] for t in r["resultsByTopicV3AndBelow"]
                                 for p in t["resultsByPartition"]], default=0))

    def produce(self, topic: str, partition: int, values: list[bytes]) -> None:
        seq = self.seq.get((topic, partition), 0)
        b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True, producer_id=self.pid,
                                      producer_epoch=self.epoch, base_sequence=seq, batch_size=1 << 20)
        for i, v in enumerate(values):
            b.append(i, timestamp=int(time.time() * 1000), key=None, value=v, headers=[])
        self.seq[(topic, partition)] = seq + len(values)
        Data = ProduceRequest.TopicProduceData
        request = ProduceRequest(version=11, transactional_id=self.tid, acks=-1, timeout_ms=10000, topic_data=[
            Data(name=topic, partition_data=[Data.PartitionProduceData(index=partition, records=bytes(b.build()))])])
        manager = self.admin._manager

        async def send():
            return await manager.send(request, node_id=1)
        response = manager.run(send)
        codes = [p.error_code for t in response.responses for p in t.partition_responses]
        assert codes == [0], f"produce: {response}"

    def end(self, commit: bool) -> None:
        self.call("EndTxn", 4, {"transactionalId": self.tid, "producerId": self.pid,
                                "producerEpoch": self.epoch, "committed": commit})

    def close(self) -> None:
        self.admin.close()


def read_partition(bootstrap: str, tp: TopicPartition, isolation: str, timeout_s: float = 60) -> list[bytes]:
    """Everything a consumer of `isolation` can read from `tp`, once the read_committed end (the last
    stable offset) has caught up with the log end: no transaction is left open there."""
    deadline = time.monotonic() + timeout_s
    committed = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed")
    uncommitted = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_uncommitted")
    try:
        while committed.end_offsets([tp])[tp] < uncommitted.end_offsets([tp])[tp]:
            assert time.monotonic() < deadline, "a transaction stayed open on the partition"
            time.sleep(0.1)
        reader = committed if isolation == "read_committed" else uncommitted
        end = uncommitted.end_offsets([tp])[tp]
        reader.assign([tp])
        reader.seek_to_beginning(tp)
        values = []
        while reader.position(tp) < end:
            assert time.monotonic() < deadline, "could not read the partition to its end"
            for records in reader.poll(timeout_ms=500).values():
                values.extend(r.value for r in records)
        return values
    finally:
        committed.close()
        uncommitted.close()


def test_broker_markers_commit_and_abort_for_read_committed(job, client, kafka):
    tp = TopicPartition("raw-txn-out", 1)
    producer = RawTransactionalProducer(kafka.bootstrap, client, "raw-txn-1")
    try:
        producer.add(tp.topic, tp.partition)
        producer.produce(tp.topic, tp.partition, [b"c1", b"c2"])
        producer.end(commit=True)
        producer.add(tp.topic, tp.partition)
        producer.produce(tp.topic, tp.partition, [b"a1", b"a2"])
        producer.end(commit=False)
        producer.add(tp.topic, tp.partition)
        producer.produce(tp.topic, tp.partition, [b"c3"])
        producer.end(commit=True)
    finally:
        producer.close()
    assert read_partition(kafka.bootstrap, tp, "read_committed") == [b"c1", b"c2", b"c3"]
    # The data is all there; the aborted records are what read_committed leaves out (the control
    # records themselves are never handed to an application).
    assert read_partition(kafka.bootstrap, tp, "read_uncommitted") == [b"c1", b"c2", b"a1", b"a2", b"c3"]
    # The service says which markers the broker acknowledged.
    deadline = time.monotonic() + 30
    while True:
        written = [e for e in events(kafka.bootstrap, job.topics["events"])
                   if e.get("event") == "TransactionMarkerWritten" and e.get("transactionalId") == "raw-txn-1"]
        if len(written) >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert [(e["result"], e["outcome"], e["partition"]) for e in written[:3]] == [
        ("COMMIT", "written", 1), ("ABORT", "written", 1), ("COMMIT", "written", 1)]
