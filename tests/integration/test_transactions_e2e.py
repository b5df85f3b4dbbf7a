"""Transactions end to end through the real broker and the real Spark job: a consume-transform-produce
loop (3 commits, 1 abort) read back by a read_committed reader with its offsets in the group, a
fenced zombie, a transaction aborted by its timeout, and a SIGKILL between Prepare and Complete.
Prints the begin -> commit -> visible latency of the loop's transactions."""

from __future__ import annotations

import json
import statistics
import threading
import time

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

from client import ProducerFencedError, ReadCommittedConsumer, TransactionalError, TransactionalProducer
from client.topic_reader import events, read_records, state_log
from coordinator import coordinator_partition
from coordinator.txn.markers import parse_marker

pytestmark = pytest.mark.integration

PARTITIONS = 10  # coordinator partitions: fewer state rows per micro-batch on a small machine
TOPICS = {"etl-in": 2, "etl-out": 2, "zombie-out": 2, "timeout-out": 1, "kill-out": 2}
ETL_TID, ETL_GROUP = "etl-tid", "etl-group"  # different coordinator partitions (1 and 5)
LATENCIES: list[dict] = []


@pytest.fixture(scope="module")
def job(kafka, job_factory):
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()])
    finally:
        admin.close()
    assert coordinator_partition(ETL_TID, PARTITIONS) != coordinator_partition(ETL_GROUP, PARTITIONS)
    # The metadata publisher runs before the query starts: the topics above are known from the
    # first micro-batch on.
    return job_factory(
        stream={"metadata_refresh_ms": 1000},
        coordinator={
            "coordinator.partitions": PARTITIONS,
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
        },
    )


@pytest.fixture(scope="module")
def client(job):
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


def committed_offsets(client, group: str, topic: str, partitions: list[int], timeout: float = 60) -> dict:
    """OffsetFetch with requireStable, retried while a transaction's offsets are pending
    (UNSTABLE_OFFSET_COMMIT), as Kafka's consumer does."""
    deadline = time.monotonic() + timeout
    while True:
        r = client.request(
            "OffsetFetch",
            9,
            {
                "groups": [{"groupId": group, "topics": [{"name": topic, "partitionIndexes": partitions}]}],
                "requireStable": True,
            },
            key=group,
            timeout=60,
        )
        parts = r["groups"][0]["topics"][0]["partitions"]
        if all(p["errorCode"] == 0 for p in parts):
            return {p["partitionIndex"]: p["committedOffset"] for p in parts}
        assert {p["errorCode"] for p in parts} <= {0, 88}, r  # UNSTABLE_OFFSET_COMMIT
        if time.monotonic() > deadline:
            raise TimeoutError(f"offsets of {group} still unstable: {r}")
        time.sleep(0.1)


def markers_in(bootstrap: str, topic: str) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for r in read_records(bootstrap, topic, timeout_s=20):
        m = parse_marker(r.headers, r.value)
        if m is not None:
            out.setdefault(r.partition, []).append(m)
    return out


# ---------------------------------------------------------------------------------- the loop
def test_consume_transform_produce_loop(job, client):
    feeder = KafkaProducer(bootstrap_servers=job.bootstrap, acks="all")
    for i in range(20):
        feeder.send("etl-in", key=b"k%d" % i, value=b"order-%02d" % i, partition=i % 2)
    feeder.flush()
    feeder.close()

    out = Collector(job.bootstrap, "etl-out")
    source = ReadCommittedConsumer(job.bootstrap, ["etl-in"])
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
                p.send("etl-out", value, key=r.key)
                values.add(value)
                position[r.partition] = r.offset + 1
            sent = time.monotonic()
            p.send_offsets_to_transaction({("etl-in", part): off for part, off in position.items()}, ETL_GROUP)
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
                position = committed_offsets(client, ETL_GROUP, "etl-in", [0, 1])
                position = {part: max(off, 0) for part, off in position.items()}
                for part, off in position.items():
                    source.seek("etl-in", part, off)
                buffered = []
        # Exactly the committed transactions' records, each once; the aborted ones never.
        time.sleep(1.0)
        delivered = out.values()
        assert sorted(delivered) == sorted(expected) and len(delivered) == 15
        assert not aborted & set(delivered)
        # The group's committed offsets are where the loop stands (all of it committed: stable).
        assert sum(position.values()) == 15
        assert committed_offsets(client, ETL_GROUP, "etl-in", [0, 1]) == position
        # Every output partition has a marker per transaction that wrote to it: 3 COMMIT, 1 ABORT.
        results = {m["type"] for ms in markers_in(job.bootstrap, "etl-out").values() for m in ms}
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
def test_a_zombie_producer_is_fenced(job):
    out = Collector(job.bootstrap, "zombie-out")
    zombie = producer(job, "zombie-tid")
    fresh = producer(job, "zombie-tid")
    try:
        zombie.init_transactions()
        zombie.begin_transaction()
        zombie.send("zombie-out", b"zombie-1", partition=0)
        zombie.flush()
        # A new instance with the same transactional id: its InitProducerId aborts the zombie's
        # transaction (CONCURRENT_TRANSACTIONS until done, retried) and bumps the epoch.
        fresh.init_transactions()
        assert fresh.producer_id == zombie.producer_id and fresh.producer_epoch > zombie.producer_epoch
        zombie.send("zombie-out", b"zombie-2", partition=0)  # its partition is still "added" locally
        zombie.flush()  # the write reaches Kafka, but read_committed readers never deliver it
        with pytest.raises(ProducerFencedError):
            zombie.send("zombie-out", b"zombie-3", partition=1)  # a new partition: AddPartitionsToTxn
            zombie.flush()
        with pytest.raises(TransactionalError):
            zombie.commit_transaction()
        fresh.begin_transaction()
        fresh.send("zombie-out", b"fresh-1", partition=0)
        fresh.commit_transaction()
        out.wait_for({b"fresh-1"})
        time.sleep(0.5)
        assert out.values() == [b"fresh-1"]
        assert out.reader.partition_state("zombie-out", 0).fenced == 1
        fenced = events(
            job.bootstrap,
            job.topics["events"],
            timeout_s=30,
            until=lambda recs: any(
                b"ProducerFenced" in (r.value or b"") and b"zombie-tid" in (r.value or b"") for r in recs
            ),
        )
        assert any(e["event"] == "ProducerFenced" and e["transactionalId"] == "zombie-tid" for e in fenced)
    finally:
        zombie.close()
        fresh.close()
        out.stop()


# ---------------------------------------------------------------------------------- timeout
def test_a_transaction_left_open_is_aborted_when_it_times_out(job):
    out = Collector(job.bootstrap, "timeout-out")
    p = producer(job, "timeout-tid", transaction_timeout_ms=2000)
    plain = KafkaProducer(bootstrap_servers=job.bootstrap, acks="all")
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send("timeout-out", b"open-1", partition=0)
        p.send("timeout-out", b"open-2", partition=0)
        p.flush()
        plain.send("timeout-out", b"plain-1", partition=0)  # held behind the open transaction
        plain.flush()
        time.sleep(0.5)
        assert out.values() == []
        found = events(
            job.bootstrap,
            job.topics["events"],
            timeout_s=60,
            until=lambda recs: any(b"TransactionAbortedByTimeout" in (r.value or b"") for r in recs),
        )
        aborted = [e for e in found if e["event"] == "TransactionAbortedByTimeout"]
        assert aborted and aborted[0]["transactionalId"] == "timeout-tid" and aborted[0]["transactionTimeoutMs"] == 2000
        out.wait_for({b"plain-1"}, timeout=30)
        time.sleep(0.5)
        assert out.values() == [b"plain-1"]  # the aborted records are dropped, the LSO moved on
        with pytest.raises(TransactionalError):
            p.commit_transaction()
    finally:
        p.close()
        plain.close()
        out.stop()


# ---------------------------------------------------------------------------------- SIGKILL
def txn_statuses(job, tid: str, timeout_s: float = 20) -> list[int]:
    """transactionStatus of every state-log record of `tid`, in log order."""
    cp = coordinator_partition(tid, PARTITIONS)
    key = json.dumps(["TransactionLog", tid], separators=(",", ":"))
    return [
        v["transactionStatus"]
        for k, v in state_log(job.bootstrap, job.topics["state_log"], cp, timeout_s=timeout_s)
        if k == key and v is not None
    ]


def test_sigkill_between_prepare_and_complete(job, client):
    """A SIGKILL right after EndTxn is answered never loses or reverses the commit decision.

    Where the kill lands is not up to the test: aim it between PrepareCommit and CompleteCommit
    (wait until the state log shows PrepareCommit), but every landing must end the same way. The
    EndTxn answer and the PrepareCommit record leave in the same micro-batch, so the client may see
    the answer before the state-log record is durable; that batch is not committed, and its replay
    (same input, same state, deterministic) makes the same decision."""
    tid, group = "kill-tid", "kill-group"
    p = producer(job, tid)
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send("kill-out", b"kill-1", partition=0)
        p.send("kill-out", b"kill-2", partition=1)
        p.send_offsets_to_transaction({("etl-in", 0): 3}, group)
        pid = p.producer_id
        p.commit_transaction()  # EndTxn answered: PrepareCommit is decided, markers on their way
        aim_until = time.monotonic() + 15
        while time.monotonic() < aim_until and not {2, 4} & set(txn_statuses(job, tid, timeout_s=2)):
            time.sleep(0.1)
        job.kill()
    finally:
        p.close()
    statuses = txn_statuses(job, tid)
    landed = {
        1: "before PrepareCommit was durable (the batch replays)",
        2: "between PrepareCommit and CompleteCommit",
        4: "after CompleteCommit",
    }.get(statuses[-1] if statuses else None, "elsewhere")
    print(
        f"\nstate log of {tid} when killed: {statuses} (1 = Ongoing, 2 = PrepareCommit, "
        f"4 = CompleteCommit): the kill landed {landed}"
    )
    assert statuses and 3 not in statuses and 5 not in statuses  # never an abort, wherever it landed

    job.start()
    deadline = time.monotonic() + 120
    while True:
        r = client.request("DescribeTransactions", 0, {"transactionalIds": [tid]}, key=tid, timeout=120)
        state = r["transactionStates"][0]["transactionState"]
        if state == "CompleteCommit" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert state == "CompleteCommit" and r["transactionStates"][0]["topics"] == []
    after = txn_statuses(job, tid)
    assert after[-1] == 4 and 2 in after and 3 not in after and 5 not in after, after
    # Every data partition has its COMMIT marker (copies allowed: same decision), no ABORT.
    markers = markers_in(job.bootstrap, "kill-out")
    for partition in (0, 1):
        mine = [m for m in markers.get(partition, []) if m["producerId"] == pid]
        assert mine and {m["type"] for m in mine} == {"COMMIT"}, markers
        print(
            f"kill-out-{partition}: {len(mine)} COMMIT marker(s) of producer {pid} (copies come from a "
            f"replayed micro-batch)"
        )
    reader = ReadCommittedConsumer(job.bootstrap, ["kill-out"])
    try:
        got: list[bytes] = []
        end = time.monotonic() + 30
        while len(got) < 2 and time.monotonic() < end:
            got += [r.value for r in reader.poll(timeout_ms=200)]
        assert sorted(got) == [b"kill-1", b"kill-2"]
    finally:
        reader.close()
    # The group's offset was committed by the WriteTxnMarkers request, replayed or not.
    assert committed_offsets(client, group, "etl-in", [0]) == {0: 3}
