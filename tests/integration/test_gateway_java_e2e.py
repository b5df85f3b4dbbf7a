"""Real transaction markers and real Kafka clients through the gateway, in the default deployment.

The test run's shared job, in the default marker mode ([txn] markers = "auto"): the service's
transaction coordinator decides the markers; those of producers initialized by a Kafka client (a
request marked `kafkaClient`, as the gateway marks every request) the broker writes as control
records (WriteTxnMarkers), so that any read_committed consumer honours them; those of the project's
JSON clients are JSON marker records, for client/read_committed.py. The gateway is gateway_process's
(one for this module and test_gateway_e2e while both run against the shared job). Every topic,
group and transactional id is this module's own (prefix `gwjava-`).

- test_broker_markers_*: the service's coordinator (JSON requests marked `kafkaClient`, as a
  gateway relays them) + transactional record batches written straight to the broker (Produce v11
  with the producer id the service handed out), read back by kafka-python's read_committed
  KafkaConsumer. Needs no gateway.
- test_json_transaction_*: in the same job, the project's JSON transactional producer commits and
  aborts; client/read_committed.py reads the commit, and the markers are JSON records.
- test_java_groups_*: two groups of three Java consumers (kafka-clients 4.4.0, tests/integration/java)
  through the gateway at the same time, one group.protocol=classic and one =consumer (KIP-848):
  they consume and commit, one member of each is SIGKILLed, the other two take over its partitions
  (both groups wait out their victim's session together); in each group every record is consumed,
  and a record is consumed twice only if its first consumer had not committed past it
  (at-least-once).
- test_java_transactions_*: a Java transactional producer through the gateway commits one
  transaction and aborts another; Java's and kafka-python's read_committed consumers see exactly
  the committed records.
- test_kafka_share_groups_tool_*: Kafka 4.4.0's kafka-share-groups.sh (ShareGroupCommand, the
  kafka-tools jar) lists the service's share groups with their state through the gateway
  (ListGroups with the type filter). What its --describe and kafka-streams-groups.sh cannot do
  through the gateway, and why: docs/gateway.md.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.producer.produce import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from client import ReadCommittedConsumer, TransactionalProducer
from client.topic_reader import end_offsets, read_records
from coordinator.errors import Errors
from coordinator.txn.markers import parse_marker
from deploy.kafka_local import KAFKA_JARS
from streaming.txn_markers import BrokerMarkerWriter

from .gateway_process import Gateway, gateway_fixture, run_concurrently  # noqa: F401 - fixtures
from .harness import wait_topics_known
from .java_client import JVM_OPTS, JavaMember, assignments, compile_java_client, consumed, run_java

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("plain")]

GROUP_PARTITIONS = 6  # of each Java group's data topic
RAW_OUT, JSON_OUT, TXN_OUT = "gwjava-raw-txn-out", "gwjava-json-txn-out", "gwjava-txn-out"
# The Java groups' topics, by group.protocol.
GROUP_TOPICS = {"classic": "gwjava-classic-in", "consumer": "gwjava-consumer-in"}
TOPICS = {RAW_OUT: 2, JSON_OUT: 2, TXN_OUT: 2, **{t: GROUP_PARTITIONS for t in GROUP_TOPICS.values()}}
WAIT = 180  # seconds: a takeover waits out a member's session on a shared, loaded machine
# The consumer-protocol group's session, set as its group config (this module's own job used to set
# it job-wide): shorter than Kafka's 45 s so that a killed member is noticed sooner, yet long enough
# for a heartbeat's answer to come back on a loaded machine: a consumer-protocol member heartbeats
# again only once answered, and a first answer was measured taking 11 s under load (a 10 s session
# then expired while the member was alive, and its OffsetFetch failed with UNKNOWN_MEMBER_ID).
# Heartbeats every second. The classic members ask for 6 s sessions themselves (GatewayClient.java).
# The shared job keeps Kafka's group.initial.rebalance.delay.ms (3 s; this module's job had 0): the
# classic group's first rebalance waits that long for more members, which the waits for a stable
# group of three cover.
CONSUMER_GROUP_CONFIG = {"consumer.session.timeout.ms": "30000", "consumer.heartbeat.interval.ms": "1000"}
GROUP_RESOURCE = 32  # IncrementalAlterConfigs resourceType GROUP (KIP-848)


def java_group(protocol: str) -> str:
    return f"gwjava-{protocol}-group"


@pytest.fixture(scope="module", autouse=True)
def topics_and_group_config(job, client):
    """This module's topics, known to every coordinator partition of the job before any request names
    them, and the consumer-protocol group's configs, set before its members join. The job must be in
    the default marker mode, which the module is about."""
    assert job.cfg.txn_markers == "auto"
    group = java_group("consumer")
    resp = client.request(
        "IncrementalAlterConfigs",
        1,
        {
            "resources": [
                {
                    "resourceType": GROUP_RESOURCE,
                    "resourceName": group,
                    "configs": [
                        {"name": k, "configOperation": 0, "value": v} for k, v in CONSUMER_GROUP_CONFIG.items()
                    ],
                }
            ],
            "validateOnly": False,
        },
        key=group,
        timeout=60,
    )
    assert [(r["errorCode"], r["errorMessage"]) for r in resp["responses"]] == [(0, None)], resp
    wait_topics_known(job, TOPICS)


@pytest.fixture(scope="module")
def java(tmp_path_factory) -> str:
    """The classpath of the compiled Java client."""
    return compile_java_client(tmp_path_factory.mktemp("java-classes"))


@pytest.fixture(scope="module")
def client(job):
    c = job.client("gwjava-txn-client")
    yield c
    c.close()


class RawTransactionalProducer:
    """Writes transactional record batches with a producer id and epoch from the service's
    coordinator, as a TV1 Kafka producer does (Produce v11: the broker does not verify). Its
    requests say `kafkaClient`, as the gateway's do: its markers must be control records."""

    def __init__(self, bootstrap: str, client, tid: str):
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        self.client, self.tid = client, tid
        r = self.call(
            "InitProducerId",
            4,
            {"transactionalId": tid, "transactionTimeoutMs": 60000, "producerId": -1, "producerEpoch": -1},
        )
        self.pid, self.epoch = r["producerId"], r["producerEpoch"]
        self.seq: dict[tuple[str, int], int] = {}

    def call(self, api: str, version: int, body: dict, error=lambda r: r["errorCode"]) -> dict:
        deadline = time.monotonic() + 60
        while True:
            cid = self.client.next_correlation_id()
            envelope = {
                "apiKey": api,
                "apiVersion": version,
                "correlationId": cid,
                "clientId": self.client.client_id,
                "kafkaClient": True,
                "request": body,
            }
            if self.client.reply_to:
                envelope["replyTo"] = self.client.reply_to
            self.client.send_raw(json.dumps(envelope).encode(), key=self.tid)
            r = self.client.wait(cid, 30, startup=True)["response"]
            code = error(r)
            if (
                code
                in (
                    Errors.CONCURRENT_TRANSACTIONS.code,
                    Errors.COORDINATOR_LOAD_IN_PROGRESS.code,
                    Errors.UNKNOWN_TOPIC_OR_PARTITION.code,
                )
                and time.monotonic() < deadline
            ):
                time.sleep(0.05)
                continue
            assert code == 0, f"{api}: {Errors.for_code(code).name}"
            return r

    def add(self, topic: str, partition: int) -> None:
        self.call(
            "AddPartitionsToTxn",
            3,
            {
                "v3AndBelowTransactionalId": self.tid,
                "v3AndBelowProducerId": self.pid,
                "v3AndBelowProducerEpoch": self.epoch,
                "v3AndBelowTopics": [{"name": topic, "partitions": [partition]}],
            },
            error=lambda r: max(
                [p["partitionErrorCode"] for t in r["resultsByTopicV3AndBelow"] for p in t["resultsByPartition"]],
                default=0,
            ),
        )

    def produce(self, topic: str, partition: int, values: list[bytes]) -> None:
        seq = self.seq.get((topic, partition), 0)
        b = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=0,
            is_transactional=True,
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=seq,
            batch_size=1 << 20,
        )
        for i, v in enumerate(values):
            b.append(i, timestamp=int(time.time() * 1000), key=None, value=v, headers=[])
        self.seq[(topic, partition)] = seq + len(values)
        Data = ProduceRequest.TopicProduceData
        request = ProduceRequest(
            version=11,
            transactional_id=self.tid,
            acks=-1,
            timeout_ms=10000,
            topic_data=[
                Data(name=topic, partition_data=[Data.PartitionProduceData(index=partition, records=bytes(b.build()))])
            ],
        )
        manager = self.admin._manager

        async def send():
            return await manager.send(request, node_id=1)

        response = manager.run(send)
        codes = [p.error_code for t in response.responses for p in t.partition_responses]
        assert codes == [0], f"produce: {response}"

    def end(self, commit: bool) -> None:
        self.call(
            "EndTxn",
            4,
            {"transactionalId": self.tid, "producerId": self.pid, "producerEpoch": self.epoch, "committed": commit},
        )

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
    tp = TopicPartition(RAW_OUT, 1)
    tid = "gwjava-raw-txn-1"
    since = end_offsets(kafka.bootstrap, job.topics["events"])  # the shared job's events: only ours count
    producer = RawTransactionalProducer(kafka.bootstrap, client, tid)
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
    # A replayed batch sends its markers again: the broker takes the copy and readers are unaffected.
    writer = BrokerMarkerWriter(kafka.bootstrap)
    try:
        copy = writer.write(
            [
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "producerId": producer.pid,
                    "producerEpoch": producer.epoch,
                    "commit": True,
                    "transactionalId": tid,
                }
            ]
        )
    finally:
        writer.close()
    assert [r["outcome"] for r in copy] == ["written"]
    assert read_partition(kafka.bootstrap, tp, "read_committed") == [b"c1", b"c2", b"c3"]
    # The data is all there; the aborted records are what read_committed leaves out (the control
    # records themselves are never handed to an application).
    assert read_partition(kafka.bootstrap, tp, "read_uncommitted") == [b"c1", b"c2", b"a1", b"a2", b"c3"]

    # The service says which markers the broker acknowledged.
    def marker_events(records):
        return [
            e
            for e in (json.loads(r.value) for r in records if r.value is not None)
            if e.get("event") == "TransactionMarkerWritten" and e.get("transactionalId") == tid
        ]

    written = marker_events(
        read_records(
            kafka.bootstrap,
            job.topics["events"],
            timeout_s=60,
            start=since,
            until=lambda records: len(marker_events(records)) >= 3,
        )
    )
    assert [(e["result"], e["outcome"], e["partition"]) for e in written[:3]] == [
        ("COMMIT", "written", 1),
        ("ABORT", "written", 1),
        ("COMMIT", "written", 1),
    ]


def test_json_transaction_commit_read_by_the_json_read_committed_reader(job, kafka):
    """The default mode serves the project's JSON clients too: JSON markers for their producers."""
    with TransactionalProducer(
        kafka.bootstrap,
        "gwjava-json-txn-1",
        requests_topic=job.topics["requests"],
        responses_topic=job.topics["responses"],
    ) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(4):
            producer.send(JSON_OUT, f"json-c{i}", partition=i % 2)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(JSON_OUT, "json-a0", partition=0)
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(JSON_OUT, "json-c4", partition=1)
        producer.commit_transaction()
    reader = ReadCommittedConsumer(kafka.bootstrap, [JSON_OUT])
    try:
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while b"json-c4" not in values:
            assert time.monotonic() < deadline, f"read_committed delivered only {values}"
            values += [r.value for r in reader.poll(timeout_ms=200)]
    finally:
        reader.close()
    assert sorted(values) == sorted(f"json-c{i}".encode() for i in range(5))
    # The markers are JSON records (the broker wrote no control record for them).
    markers = [
        parse_marker([(k, v) for k, v in r.headers], r.value)
        for r in read_records(
            kafka.bootstrap, JSON_OUT, timeout_s=60, until=lambda rs: sum(1 for r in rs if r.headers) >= 4
        )
    ]
    assert sorted((m["type"], m["clientKind"]) for m in markers if m) == [
        ("ABORT", "json"),
        ("COMMIT", "json"),
        ("COMMIT", "json"),
        ("COMMIT", "json"),
    ]


# ----------------------------------------------------------------------------- Java consumer groups
def produce_values(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for i, v in enumerate(values):
            producer.send(topic, v.encode(), partition=i % GROUP_PARTITIONS)
        producer.flush()
    finally:
        producer.close()


def committed_past(lines: list[str]) -> list[tuple[int, int, int]]:
    """(line index, partition, next offset) of every successful commit in one member's lines."""
    out = []
    for i, line in enumerate(lines):
        if line.startswith("COMMITTED "):
            for pair in line.split(" ", 2)[2].split(","):
                p, o = pair.split("=")
                out.append((i, int(p), int(o)))
    return out


def at_least_once_violations(lines_by_member: dict[str, list[str]]) -> list[tuple[int, int]]:
    """(partition, offset) of records delivered more than once where more than one delivery was
    followed by its member's commit past it: a record whose consumer committed past it must never
    be delivered again."""
    committed_deliveries: Counter = Counter()
    for lines in lines_by_member.values():
        commits = committed_past(lines)
        for i, line in enumerate(lines):
            if line.startswith("RECORD "):
                _, _, p, o, _ = line.split(" ", 4)
                p, o = int(p), int(o)
                if any(j > i and cp == p and co > o for j, cp, co in commits):
                    committed_deliveries[(p, o)] += 1
    return sorted(k for k, n in committed_deliveries.items() if n > 1)


def wait_until(condition, timeout: float, what: str, details=lambda: ""):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} not within {timeout}s {details()}"
        time.sleep(0.2)


def stable_assignment(members: list[JavaMember], partitions: int) -> dict | None:
    """Each member's latest assignment, if together they own every partition exactly once and
    each has at least one."""
    latest: dict[str, list[int]] = {}
    for m in members:
        latest.update(assignments(m.snapshot()))
    owned = sorted(p for ps in latest.values() for p in ps)
    if len(latest) == len(members) and owned == list(range(partitions)) and all(latest.values()):
        return latest
    return None


def group_takeover(protocol: str, bootstrap: str, gateway: Gateway, java: str, logs: Path) -> None:
    """One group.protocol's group through a takeover: its failures name `protocol`."""
    group, topic = java_group(protocol), GROUP_TOPICS[protocol]
    first = [f"{protocol}-{i}" for i in range(300)]
    names = [f"{protocol}-m{i}" for i in range(3)]
    members = [JavaMember(java, "consume", gateway.bootstrap, group, topic, protocol, n, log_dir=logs) for n in names]
    try:
        lines = lambda: {m.args[-1]: m.snapshot() for m in members}  # noqa: E731
        details = lambda: f"\nassignments {[assignments(m.snapshot()) for m in members]}\n{gateway.tail(15)}"  # noqa: E731
        wait_until(
            lambda: stable_assignment(members, GROUP_PARTITIONS), WAIT, f"{protocol}: a stable group of three", details
        )
        # Records are produced only once each member owns a partition: produced before, the first
        # member to join (a KIP-848 group assigns it every partition at once) may consume them all
        # before the others join, and the victim would then never have anything to commit.
        produce_values(bootstrap, topic, first)
        victim = members[0]
        # The victim has consumed and committed something before it dies.
        victim.wait_for(lambda line: line.startswith("COMMITTED "), WAIT, f"commit of the {protocol} victim")
        victim.kill()
        survivors = members[1:]
        second = [f"{protocol}-{i}" for i in range(300, 600)]
        produce_values(bootstrap, topic, second)
        wait_until(
            lambda: stable_assignment(survivors, GROUP_PARTITIONS),
            WAIT,
            f"{protocol}: the survivors' takeover",
            details,
        )

        def all_consumed():
            values = {v for m in members for (_, _, _, v) in consumed(m.snapshot())}
            return values >= set(first + second)

        wait_until(all_consumed, WAIT, f"{protocol}: every record consumed", details)
        by_member = lines()
        assert at_least_once_violations(by_member) == [], f"{protocol}: committed records delivered again"
        # The survivors took over every partition of the victim's.
        victim_parts = set(assignments(by_member[names[0]])[names[0]])
        survivor_records = {(p, o) for m in survivors for (_, p, o, _) in consumed(m.snapshot())}
        assert victim_parts and all(any(p == vp for p, _ in survivor_records) for vp in victim_parts), (
            f"{protocol}: the survivors did not consume every partition of the victim's {sorted(victim_parts)}"
        )
        deliveries = Counter((p, o) for m in members for (_, p, o, _) in consumed(m.snapshot()))
        print(
            f"\n{protocol}: {len(deliveries)} records, {sum(deliveries.values()) - len(deliveries)} "
            f"delivered twice (at-least-once after the kill), victim owned {sorted(victim_parts)}"
        )
    finally:
        for m in members:
            m.stop()


def test_java_groups_classic_and_consumer_protocol_take_over_after_kill(gateway, java, kafka, tmp_path):
    """Both protocols at once: their victims die at about the same time, so that the classic group's
    6 s session and the consumer group's 30 s one are waited out together."""
    run_concurrently(
        {
            protocol: lambda protocol=protocol: group_takeover(protocol, kafka.bootstrap, gateway, java, tmp_path)
            for protocol in GROUP_TOPICS
        }
    )


# ------------------------------------------------------------------------------ Java transactions
def test_java_transactions_commit_and_abort_for_read_committed(gateway, java, kafka):
    lines = run_java(java, "produce-txn", gateway.bootstrap, "gwjava-txn-1", TXN_OUT, "7", "5")
    assert lines == ["COMMITTED 7", "ABORTED 5"]
    # Java's read_committed consumer, through the gateway.
    out = run_java(java, "read-committed", gateway.bootstrap, TXN_OUT)
    assert out[-1] == "END 7"
    assert sorted(line.split(" ", 4)[4] for line in out if line.startswith("RECORD ")) == sorted(
        f"committed-{i}" for i in range(7)
    )
    # kafka-python's, straight from the broker: the markers are real control records.
    values = []
    for p in range(TOPICS[TXN_OUT]):
        values += read_partition(kafka.bootstrap, TopicPartition(TXN_OUT, p), "read_committed")
    assert sorted(values) == sorted(f"committed-{i}".encode() for i in range(7))
    everything = []
    for p in range(TOPICS[TXN_OUT]):
        everything += read_partition(kafka.bootstrap, TopicPartition(TXN_OUT, p), "read_uncommitted")
    assert len(everything) == 12  # the aborted records are in the log, and hidden


# ------------------------------------------------------------------------------ Kafka's group tools
SHARE_GROUP = "gwjava-share-group"
SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"


def test_kafka_share_groups_tool_lists_the_services_share_groups(gateway, client):
    """kafka-share-groups.sh --list --state through the gateway: the service's share group, with the
    state the coordinator gives it (Empty once its member left), and no group of another type."""
    member = {"groupId": SHARE_GROUP, "memberId": "gwjava-share-member-0000", "rackId": None}
    joined = client.request(
        "ShareGroupHeartbeat",
        1,
        {**member, "memberEpoch": 0, "subscribedTopicNames": [GROUP_TOPICS["consumer"]]},
        key=SHARE_GROUP,
        timeout=60,
    )
    assert joined["errorCode"] == 0, joined
    left = client.request(
        "ShareGroupHeartbeat",
        1,
        {**member, "memberEpoch": -1, "subscribedTopicNames": None},
        key=SHARE_GROUP,
        timeout=60,
    )
    assert left["errorCode"] == 0, left
    tool = subprocess.run(
        ["java", *JVM_OPTS, "-cp", f"{KAFKA_JARS}/*", SHARE_GROUP_COMMAND]
        + ["--bootstrap-server", gateway.bootstrap, "--list", "--state"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    rows = [line.split() for line in tool.stdout.splitlines() if line.strip()]
    # Kafka's tools print their errors on stdout and exit 0: the rows are the proof.
    assert rows and rows[0] == ["GROUP", "STATE"], tool.stdout + tool.stderr[-2000:]
    assert [SHARE_GROUP, "Empty"] in rows[1:]
    assert not {r[0] for r in rows[1:]} & {java_group(p) for p in GROUP_TOPICS}
