"""KIP-932 share groups end to end: three ShareConsumer clients (client/share_consumer.py) join a
share group through the real broker and the real Spark job, consume two partitions (so at least
one partition is shared), one member stops heartbeating while it holds acquired records (its
session expires and the others take over, its records are redelivered once their lock expires),
the topic grows a partition (the group's metadata changes: new epoch, new assignment), and every
record ends acknowledged: the share coordinator's state (ReadShareGroupState) and
DescribeShareGroupOffsets show every start offset at the end of its partition."""

from __future__ import annotations

import threading
import time

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewPartitions, NewTopic

from client.share_consumer import ShareConsumer

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("plain")]

TOPIC = "share-e2e-orders"
GROUP = "share-e2e-group"
SESSION_MS = 6000
LOCK_MS = 10000


def wait_until(what: str, check, timeout: float = 120, every: float = 0.5):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


def describe(cc) -> dict:
    resp = cc.request(
        "ShareGroupDescribe", 1, {"groupIds": [GROUP], "includeAuthorizedOperations": False}, key=GROUP, timeout=30
    )
    assert "groups" in resp, resp
    [g] = resp["groups"]
    return g


def assignment_of(g: dict) -> dict[str, set[int]]:
    return {
        m["memberId"]: {p for tp in m["assignment"]["topicPartitions"] for p in tp["partitions"]} for m in g["members"]
    }


class Worker:
    """A consumer's poll / acknowledge loop in a thread; remembers what it acknowledged."""

    def __init__(self, consumer: ShareConsumer, ack: bool = True):
        self.c, self.ack = consumer, ack
        self.acked: list[tuple[int, int, bytes]] = []
        self.delivered: list = []
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            while not self.stop.is_set():
                records = self.c.poll()
                self.delivered += records
                if records and self.ack:
                    self.acked += [(r.partition, r.offset, r.value) for r in self.c.acknowledge(records)]
                if not records:
                    self.stop.wait(0.3)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.errors.append(e)

    def halt(self):
        self.stop.set()
        self.thread.join(timeout=60)


def test_share_group_joins_member_loss_topology_change_and_acknowledgements(job):
    admin = KafkaAdminClient(bootstrap_servers=job.bootstrap)
    admin.create_topics([NewTopic(TOPIC, 2, 1)])
    producer = KafkaProducer(bootstrap_servers=job.bootstrap)
    produced = {(p, f"r{p}-{i}".encode()) for p in range(2) for i in range(20)}
    for p, value in sorted(produced):
        producer.send(TOPIC, value=value, partition=p)
    producer.flush()
    cc = job.client("share-e2e-client")
    consumers = {
        n: ShareConsumer(
            job.client(f"share-e2e-{n}"),
            GROUP,
            [TOPIC],
            bootstrap_servers=job.bootstrap,
            auto_offset_reset="earliest",
            max_records=15,
            record_lock_duration_ms=LOCK_MS,
            response_timeout_s=10,
        )
        for n in ("a", "b", "c")
    }
    workers: dict[str, Worker] = {}
    try:
        # 1. Three members join; both partitions are assigned, one of them to two members at least.
        for c in consumers.values():
            c.start()
        # The share-partitions are initialized one by one (their owners answer in later batches), and
        # only initialized ones are assigned: wait until both are.
        g = wait_until(
            "three members with assignments covering both partitions",
            lambda: (
                lambda g: (
                    g
                    if g["errorCode"] == 0
                    and len(g["members"]) == 3
                    and all(assignment_of(g).values())
                    and set().union(*assignment_of(g).values()) == {0, 1}
                    else None
                )
            )(describe(cc)),
        )
        owners = assignment_of(g)
        assert set().union(*owners.values()) == {0, 1}
        assert sum(len(p) for p in owners.values()) > 2  # a partition is shared
        assert g["groupState"] == "Stable" and g["assignorName"] == "simple"
        epoch_before = g["groupEpoch"]

        # 2. c acquires records and never acknowledges them; then it is lost (stops heartbeating).
        workers["c"] = Worker(consumers["c"], ack=False)
        wait_until("c to acquire records", lambda: workers["c"].delivered or workers["c"].errors, timeout=120)
        assert not workers["c"].errors, workers["c"].errors
        workers["c"].halt()
        held_by_c = {(r.partition, r.offset) for r in workers["c"].delivered}
        consumers["c"].kill()
        for n in ("a", "b"):
            workers[n] = Worker(consumers[n])
        g = wait_until(
            "c's session to expire and a and b to take over both partitions",
            lambda: (
                lambda g: (
                    g
                    if len(g["members"]) == 2
                    and set().union(*assignment_of(g).values()) == {0, 1}
                    and all(m["memberEpoch"] == g["groupEpoch"] for m in g["members"])
                    else None
                )
            )(describe(cc)),
            timeout=SESSION_MS / 1000 + 90,
        )
        assert g["groupEpoch"] > epoch_before
        assert consumers["c"].member_id not in assignment_of(g)

        # 3. Topology change: the topic grows a partition, with records of its own.
        admin.create_partitions({TOPIC: NewPartitions(3)})
        producer.close()
        producer = KafkaProducer(bootstrap_servers=job.bootstrap)  # a fresh view of the partitions
        wait_until("the producer to see 3 partitions", lambda: len(producer.partitions_for(TOPIC) or ()) == 3)
        more = {(2, f"r2-{i}".encode()) for i in range(10)}
        for p, value in sorted(more):
            producer.send(TOPIC, value=value, partition=p)
        producer.flush()
        produced |= more
        g = wait_until(
            "the new partition to be assigned",
            lambda: (lambda g: g if set().union(*assignment_of(g).values()) == {0, 1, 2} else None)(describe(cc)),
            timeout=120,
        )

        # 4. Every record acknowledged: c's records redelivered after their lock, then accepted.
        def all_acked():
            acked = {(p, v) for w in (workers["a"], workers["b"]) for p, _, v in w.acked}
            return acked >= produced

        wait_until("every record acknowledged", all_acked, timeout=240, every=1)
        redelivered = [
            r for w in (workers["a"], workers["b"]) for r in w.delivered if (r.partition, r.offset) in held_by_c
        ]
        assert redelivered and all(r.delivery_count >= 2 for r in redelivered)
        assert not any(w.errors for w in workers.values()), [w.errors for w in workers.values()]

        # The share coordinator's state and DescribeShareGroupOffsets: start offsets at the end.
        ends = {0: 20, 1: 20, 2: 10}
        tid = consumers["a"].names.topic_id(TOPIC)

        def offsets_at_end():
            resp = cc.request(
                "DescribeShareGroupOffsets",
                0,
                {"groups": [{"groupId": GROUP, "topics": [{"topicName": TOPIC, "partitions": [0, 1, 2]}]}]},
                key=GROUP,
                timeout=30,
            )
            starts = {p["partitionIndex"]: p["startOffset"] for p in resp["groups"][0]["topics"][0]["partitions"]}
            return starts if starts == ends else None

        wait_until("start offsets at the end of each partition", offsets_at_end, timeout=120, every=1)
        states: dict[int, tuple[int, int]] = {}  # partition -> (state epoch, leader epoch)
        for w in workers.values():
            w.halt()  # no more claims: the leader epochs stay put for the reads below
        for p, end in ends.items():
            # Each consumer's claim raised the share-partition's leader epoch: read with the latest.
            summary = cc.request(
                "ReadShareGroupStateSummary",
                0,
                {"groupId": GROUP, "topics": [{"topicId": tid, "partitions": [{"partition": p, "leaderEpoch": 0}]}]},
                key=f"{GROUP}:{tid}:{p}",
                timeout=30,
            )["results"][0]["partitions"][0]
            read = cc.request(
                "ReadShareGroupState",
                0,
                {
                    "groupId": GROUP,
                    "topics": [
                        {"topicId": tid, "partitions": [{"partition": p, "leaderEpoch": summary["leaderEpoch"]}]}
                    ],
                },
                key=f"{GROUP}:{tid}:{p}",
                timeout=30,
            )["results"][0]["partitions"][0]
            assert (read["errorCode"], read["startOffset"]) == (0, end)
            assert all(b["deliveryState"] in (2, 4) for b in read["stateBatches"])
            states[p] = (read["stateEpoch"], summary["leaderEpoch"])

        # KIP-1226 lag (DescribeShareGroupOffsets v1): 5 more records on partition 0, 2 of them
        # delivered completely as a share-partition leader writes it (WriteShareGroupState v1); the
        # driver's responder answers the partition's end offset (a real ListOffsets): 25 - 20 - 2.
        for i in range(5):
            producer.send(TOPIC, value=f"lag-{i}".encode(), partition=0)
        producer.flush()
        state_epoch, leader_epoch = states[0]
        written = cc.request(
            "WriteShareGroupState",
            1,
            {
                "groupId": GROUP,
                "topics": [
                    {
                        "topicId": tid,
                        "partitions": [
                            {
                                "partition": 0,
                                "stateEpoch": state_epoch,
                                "leaderEpoch": leader_epoch,
                                "startOffset": 20,
                                "deliveryCompleteCount": 2,
                                "stateBatches": [
                                    {"firstOffset": 22, "lastOffset": 23, "deliveryState": 2, "deliveryCount": 1}
                                ],
                            }
                        ],
                    }
                ],
            },
            key=f"{GROUP}:{tid}:0",
            timeout=30,
        )["results"][0]["partitions"][0]
        assert written["errorCode"] == 0, written
        lagged = cc.request(
            "DescribeShareGroupOffsets",
            1,
            {"groups": [{"groupId": GROUP, "topics": [{"topicName": TOPIC, "partitions": [0]}]}]},
            key=GROUP,
            timeout=60,
        )["groups"][0]["topics"][0]["partitions"][0]
        assert (lagged["errorCode"], lagged["startOffset"], lagged["lag"]) == (0, 20, 25 - 20 - 2), lagged
    finally:
        for w in workers.values():
            w.halt()
        for n, c in consumers.items():
            if n != "c":
                c.stop()
        producer.close()
        cc.close()
        admin.close()


def test_the_end_offsets_responder_against_the_broker(job):
    """The driver's end-offsets responder (streaming/end_offsets.py) on a channel of this test's own
    (not the job's, whose queries it must not answer), against the real broker: a signed query is
    answered with the partitions' end offsets, a partition or topic the broker does not have
    LEADER_NOT_AVAILABLE (no leader, as Kafka's metadata cache), a forged query not at all."""
    import json

    from kafka import KafkaConsumer, TopicPartition

    from coordinator.group.share.offsets_admin import END_OFFSETS_QUERY, end_offsets_key
    from streaming.end_offsets import EndOffsetsResponder
    from streaming.trust import signed_headers

    channel, topic, secret = "share-e2e-end-offsets-channel", "share-e2e-end-offsets", bytes(range(32))
    admin = KafkaAdminClient(bootstrap_servers=job.bootstrap)
    producer = KafkaProducer(bootstrap_servers=job.bootstrap, acks="all")
    admin.create_topics([NewTopic(channel, 1, 1), NewTopic(topic, 2, 1)])
    responder = EndOffsetsResponder(job.bootstrap, channel, 10, secret, epoch=1)
    consumer = KafkaConsumer(bootstrap_servers=job.bootstrap, group_id=None)
    try:
        for _ in range(4):
            producer.send(topic, b"x", partition=1)
        responder.start()
        assert responder.ready.wait(60)
        asked = [{"topicName": topic, "partitions": [0, 1, 9]}, {"topicName": f"{topic}-none", "partitions": [0]}]
        key = end_offsets_key(3).encode()
        for i, (queried, mac_key) in enumerate(((asked[:1], bytes(32)), (asked, secret))):  # forged, then genuine
            value = json.dumps(
                {
                    "apiKey": END_OFFSETS_QUERY,
                    "apiVersion": 0,
                    "correlationId": i,
                    "clientId": "share-admin-3",
                    "request": {"queryId": i, "fromPartition": 3, "topics": queried},
                }
            ).encode()
            stamp = f"partition-3/1/{i}".encode()
            producer.send(channel, key=key, value=value, headers=signed_headers(mac_key, key, value, stamp))
        producer.flush()
        consumer.assign([TopicPartition(channel, 0)])
        consumer.seek_to_beginning()

        def answers():
            got = [r for rs in consumer.poll(500).values() for r in rs if not r.key.startswith(key)]
            return got or None

        [answer] = wait_until("the responder's answer", answers, timeout=60, every=0)
        body = json.loads(answer.value)["request"]
        assert body == {
            "queryId": 1,
            "topics": [
                {
                    "topicName": topic,
                    "partitions": [
                        {"partitionIndex": 0, "offset": 0, "errorCode": 0},
                        {"partitionIndex": 1, "offset": 4, "errorCode": 0},
                        {"partitionIndex": 9, "offset": -1, "errorCode": 5},
                    ],
                },
                {"topicName": f"{topic}-none", "partitions": [{"partitionIndex": 0, "offset": -1, "errorCode": 5}]},
            ],
        }
        assert {k for k, _ in answer.headers} == {"coordinator-mac", "coordinator-seq"}
        # (The forged query came first: had it been answered, the first answer read would be its own.)
        wait_until("the responder to count its one answer", lambda: responder.answers_sent == 1, timeout=10, every=0.05)
    finally:
        responder.stop()
        consumer.close()
        producer.close()
        admin.delete_topics([channel, topic])
        admin.close()
