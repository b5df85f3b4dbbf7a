"""Transactions end to end through the real broker and the real Spark job: a consume-transform-produce
loop (3 commits, 1 abort) read back by a read_committed reader with its offsets in the group, a
fenced zombie, and a transaction aborted by its timeout. Prints the begin -> commit -> visible
latency of the loop's transactions.

The module runs on the test run's shared job (tests/integration/conftest.py: 10 coordinator
partitions, the timed-out transaction check every second); its topics, transactional ids and groups
are its own."""

from __future__ import annotations

import statistics
import threading
import time

import pytest
from kafka import KafkaProducer

from client import ProducerFencedError, ReadCommittedConsumer, TransactionalError, TransactionalProducer
from client.topic_reader import end_offsets, events
from coordinator import coordinator_partition

from .flows import committed_offsets, markers_in
from .harness import wait_topics_known

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("plain")]

ETL_IN, ETL_OUT = "txn-e2e-etl-in", "txn-e2e-etl-out"
ZOMBIE_OUT, TIMEOUT_OUT = "txn-e2e-zombie-out", "txn-e2e-timeout-out"
TOPICS = {ETL_IN: 2, ETL_OUT: 2, ZOMBIE_OUT: 2, TIMEOUT_OUT: 1}
ETL_TID, ETL_GROUP = "txn-e2e-loop-tid", "txn-e2e-loop-group"  # different coordinator partitions (4 and 8 of 10)
ZOMBIE_TID, TIMEOUT_TID = "txn-e2e-zombie-tid", "txn-e2e-timeout-tid"
LATENCIES: list[dict] = []


@pytest.fixture(scope="module")
def topics(job):
    """The data topics, known to every coordinator partition of the (already running) job."""
    n = job.cfg.coordinator_partitions
    assert coordinator_partition(ETL_TID, n) != coordinator_partition(ETL_GROUP, n)
    wait_topics_known(job, TOPICS)
    return TOPICS


@pytest.fixture(scope="module")
def client(job, topics):
    c = job.client("txn-e2e-client")
    yield c
    c.close()


def producer(job, tid: str, **kw) -> TransactionalProducer:
    return TransactionalProducer(
        job.bootstrap, tid, requests_topic=job.topics["requests"], responses_topic=job.topics["responses"], **kw
    )


class Collector(threading.Thread):
    """A read_committed reader polling in the background; remembers when each value was delivered."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.reader = ReadCommittedConsumer(bootstrap, [topic])
        self.delivered: list[tuple[float, tuple[int, int], bytes]] = []
        self._halt = threading.Event()
        self._lock = threading.Lock()
        self.start()

    def run(self) -> None:
        while not self._halt.is_set():
            for r in self.reader.poll(timeout_ms=50):
                with self._lock:
                    self.delivered.append((time.monotonic(), (r.partition, r.offset), r.value))

    def values(self) -> list[bytes]:
        with self._lock:
            return [v for _, _, v in self.delivered]

    def wait_for(self, values: set[bytes], timeout: float = 60) -> float:
        """When the last of `values` was delivered."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                seen = {v: t for t, _, v in self.delivered}
            if values <= set(seen):
                return max(seen[v] for v in values)
            time.sleep(0.01)
        raise TimeoutError(f"not delivered: {sorted(values - set(seen))}")

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=10)
        self.reader.close()


# ---------------------------------------------------------------------------------- the loop
def test_consume_transform_produce_loop(job, client):
    feeder = KafkaProducer(bootstrap_servers=job.bootstrap, acks="all")
    for i in range(20):
        feeder.send(ETL_IN, key=b"k%d" % i, value=b"order-%02d" % i, partition=i % 2)
    feeder.flush()
    feeder.close()

    out = Collector(job.bootstrap, ETL_OUT)
    source = ReadCommittedConsumer(job.bootstrap, [ETL_IN])
    p = producer(job, ETL_TID)
    try:
        p.init_transactions()
        buffered: list = []
        position = {0: 0, 1: 0}  # next input offset per partition (what the group commits)
        expected: set[bytes] = set()
        aborted: set[bytes] = set()
        for n, action in enumerate(["commit", "abort", "commit", "commit"]):
            begin = time.monotonic()
            p.begin_transaction()
            while len(buffered) < 5:
                buffered += source.poll(timeout_ms=200)
            batch, buffered = buffered[:5], buffered[5:]
            values = set()
            for r in batch:
                value = r.value.upper() + b"|txn-%d" % n
                p.send(ETL_OUT, value, key=r.key)
                values.add(value)
                position[r.partition] = r.offset + 1
            sent = time.monotonic()
            p.send_offsets_to_transaction({(ETL_IN, part): off for part, off in position.items()}, ETL_GROUP)
            offsets_done = time.monotonic()
            if action == "commit":
                p.commit_transaction()
                committed = time.monotonic()
                visible = out.wait_for(values)
                LATENCIES.append(
                    {
                        "txn": n,
                        "records": len(values),
                        "sendS": sent - begin,
                        "sendOffsetsS": offsets_done - sent,
                        "commitS": committed - offsets_done,
                        "beginToVisibleS": visible - begin,
                        "commitReturnToVisibleS": visible - committed,
                    }
                )
                expected |= values
            else:
                p.abort_transaction()
                aborted |= values
                # Rewind the input to the group's committed offsets, as a real loop does.
                position = committed_offsets(client, ETL_GROUP, ETL_IN, [0, 1])
                position = {part: max(off, 0) for part, off in position.items()}
                for part, off in position.items():
                    source.seek(ETL_IN, part, off)
                buffered = []
        # Exactly the committed transactions' records, each once; the aborted ones never: once a
        # plain record written after them arrives in every partition, whatever of theirs a
        # read_committed reader would deliver has been delivered (it reads each partition in order).
        out.wait_for(expected)
        sentinels = {b"after-the-loop-%d" % part for part in range(TOPICS[ETL_OUT])}
        plain = KafkaProducer(bootstrap_servers=job.bootstrap, acks="all")
        for part in range(TOPICS[ETL_OUT]):
            plain.send(ETL_OUT, b"after-the-loop-%d" % part, partition=part)
        plain.close()
        out.wait_for(sentinels)
        delivered = [v for v in out.values() if v not in sentinels]
        assert sorted(delivered) == sorted(expected) and len(delivered) == 15
        assert not aborted & set(delivered)
        # The group's committed offsets are where the loop stands (all of it committed: stable).
        assert sum(position.values()) == 15
        assert committed_offsets(client, ETL_GROUP, ETL_IN, [0, 1]) == position
        # Every output partition has a marker per transaction that wrote to it: 3 COMMIT, 1 ABORT.
        results = {m["type"] for ms in markers_in(job.bootstrap, ETL_OUT).values() for m in ms}
        assert results == {"COMMIT", "ABORT"}
    finally:
        p.close()
        source.close()
        out.stop()
    for row in LATENCIES:
        print(
            f"\nbegin->commit->visible, txn {row['txn']} ({row['records']} records): "
            f"begin->visible {row['beginToVisibleS'] * 1000:.0f} ms = sends {row['sendS'] * 1000:.0f} ms + "
            f"send_offsets_to_transaction {row['sendOffsetsS'] * 1000:.0f} ms + commit_transaction "
            f"{row['commitS'] * 1000:.0f} ms; visible {row['commitReturnToVisibleS'] * 1000:.0f} ms after "
            f"commit_transaction returned"
        )
    print(f"median begin->visible {statistics.median(r['beginToVisibleS'] for r in LATENCIES) * 1000:.0f} ms")


# ---------------------------------------------------------------------------------- zombie fencing
def test_a_zombie_producer_is_fenced(job, topics):
    start = end_offsets(job.bootstrap, job.topics["events"])
    out = Collector(job.bootstrap, ZOMBIE_OUT)
    zombie = producer(job, ZOMBIE_TID)
    fresh = producer(job, ZOMBIE_TID)
    try:
        zombie.init_transactions()
        zombie.begin_transaction()
        zombie.send(ZOMBIE_OUT, b"zombie-1", partition=0)
        zombie.flush()
        # A new instance with the same transactional id: its InitProducerId aborts the zombie's
        # transaction (CONCURRENT_TRANSACTIONS until done, retried) and bumps the epoch.
        fresh.init_transactions()
        assert fresh.producer_id == zombie.producer_id and fresh.producer_epoch > zombie.producer_epoch
        zombie.send(ZOMBIE_OUT, b"zombie-2", partition=0)  # its partition is still "added" locally
        zombie.flush()  # the write reaches Kafka, but read_committed readers never deliver it
        with pytest.raises(ProducerFencedError):
            zombie.send(ZOMBIE_OUT, b"zombie-3", partition=1)  # a new partition: AddPartitionsToTxn
            zombie.flush()
        with pytest.raises(TransactionalError):
            zombie.commit_transaction()
        fresh.begin_transaction()
        fresh.send(ZOMBIE_OUT, b"fresh-1", partition=0)
        fresh.commit_transaction()
        out.wait_for({b"fresh-1"})  # after zombie-2 in its partition: that one would have come first
        assert out.values() == [b"fresh-1"]
        assert out.reader.partition_state(ZOMBIE_OUT, 0).fenced == 1
        fenced = events(
            job.bootstrap,
            job.topics["events"],
            timeout_s=30,
            start=start,
            until=lambda recs: any(
                b"ProducerFenced" in (r.value or b"") and ZOMBIE_TID.encode() in (r.value or b"") for r in recs
            ),
        )
        assert any(e["event"] == "ProducerFenced" and e["transactionalId"] == ZOMBIE_TID for e in fenced)
    finally:
        zombie.close()
        fresh.close()
        out.stop()


# ---------------------------------------------------------------------------------- timeout
def test_a_transaction_left_open_is_aborted_when_it_times_out(job, topics):
    start = end_offsets(job.bootstrap, job.topics["events"])
    out = Collector(job.bootstrap, TIMEOUT_OUT)
    p = producer(job, TIMEOUT_TID, transaction_timeout_ms=2000)
    plain = KafkaProducer(bootstrap_servers=job.bootstrap, acks="all")
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send(TIMEOUT_OUT, b"open-1", partition=0)
        p.send(TIMEOUT_OUT, b"open-2", partition=0)
        p.flush()
        plain.send(TIMEOUT_OUT, b"plain-1", partition=0)  # held behind the open transaction
        plain.flush()
        time.sleep(0.5)  # a window in which nothing may arrive (an absence has no event to wait for)
        assert out.values() == []
        # Other modules' transactions may time out too: only this one's events count.
        found = events(
            job.bootstrap,
            job.topics["events"],
            timeout_s=60,
            start=start,
            until=lambda recs: any(
                b"TransactionAbortedByTimeout" in (r.value or b"") and TIMEOUT_TID.encode() in (r.value or b"")
                for r in recs
            ),
        )
        aborted = [
            e for e in found if e["event"] == "TransactionAbortedByTimeout" and e.get("transactionalId") == TIMEOUT_TID
        ]
        assert len(aborted) >= 1 and aborted[0]["transactionTimeoutMs"] == 2000
        out.wait_for({b"plain-1"}, timeout=30)  # after open-1 and open-2: they would have come first
        assert out.values() == [b"plain-1"]  # the aborted records are dropped, the LSO moved on
        with pytest.raises(TransactionalError):
            p.commit_transaction()
    finally:
        p.close()
        plain.close()
        out.stop()
