#!/usr/bin/env python3
"""Micro-batches per protocol flow, against the client's own hops.

    .venv/bin/python bench/flow_batches.py [--flows classic,consumer,txn,share,streams] [--runs 3]

Starts a broker and a coordinator job of its own (tests/integration/harness.py's broker_and_job),
then runs each flow with the project's own clients (client/) over a client that records, for every
request it sends, the request record's offset in the request topic and the timestamp of the
answer record the sink wrote. The job's status file (streaming/status.py: Spark's progress reports,
batch id, start, duration, end offsets) says which micro-batch read each request (the first whose
end offset covers it) and which one answered it (the one running when the answer was written).

Per flow, printed:
- hops: the sequential request/response round trips the client itself made until the flow was
  done (a retry the client makes counts: it is a hop of the client's);
- batches: the micro-batches the service spent answering them: per hop, answering batch − reading
  batch + 1, summed (the batches a client's own think time adds between two hops do not count);
- spanned: micro-batches from the one that read the first request to the one that wrote the last
  answer (think time included, for information);
- extra = batches − hops: micro-batches the service spent beyond one per hop (an internal round
  trip, a parked request, a timer).

The flows (each on groups and ids of its own, `--runs` times; the table shows the median):
- classic: a classic consumer (JoinGroup, the member-id round trip of JoinGroup v4+, SyncGroup)
  until Stable. The job runs with `group.initial.rebalance.delay.ms` 0: the delay is a wait Kafka
  imposes by configuration (3 s by default), not a hop;
- consumer: a KIP-848 member, ConsumerGroupHeartbeat until it has acknowledged its assignment
  (the heartbeat that reports owning it is answered: its epoch is stable);
- txn: a JSON transaction: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit
  (the group and the transactional id on different coordinator partitions, so that the KIP-890
  verification crosses partitions), EndTxn (commit; its markers go out in the batch that answers
  it);
- share: a share member, ShareGroupHeartbeat until it has its assignment;
- streams: a streams member, StreamsGroupHeartbeat until it has acknowledged its tasks;
- copier: Kafka's own `org.apache.kafka.tools.TransactionalMessageCopier` (kafka-tools 4.4.0, a
  real Java producer and consumer, transaction version 1) through the gateway (`python -m
  gateway`), copying 20 records in one transaction: its relayed coordinator requests
  (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn) are read back
  from the request topic (the gateway's envelopes, by transactional id and group) and their
  answers from the gateway's reply topic (by correlation id). FindCoordinator is answered by the
  gateway itself and costs no micro-batch: it is not counted. Needs the kafka-tools jar in the
  Maven cache (`mvn dependency:get -Dartifact=org.apache.kafka:kafka-tools:4.4.0
  -Dtransitive=false`); the flow is skipped with a note when it is missing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from client import ConsumerGroupMember  # noqa: E402
from client.classic_group import ClassicGroupMember  # noqa: E402
from client.request_client import CoordinatorClient  # noqa: E402
from client.share_consumer import ShareConsumer  # noqa: E402
from client.streams_member import StreamsGroupMember  # noqa: E402
from client.topic_reader import read_records  # noqa: E402
from client.transactional_producer import TransactionalProducer  # noqa: E402
from coordinator.routing import coordinator_partition  # noqa: E402
from streaming.status import iso_ms, read_status, status_path  # noqa: E402
from tests.integration.gateway_process import Gateway  # noqa: E402
from tests.integration.harness import broker_and_job, create_data_topics, wait_topics_known  # noqa: E402

TOPIC, PARTITIONS = "flow-in", 4
OUT_TOPIC = "flow-out"
WAIT_S = 120.0


class HopClient(CoordinatorClient):
    """A CoordinatorClient that remembers every request it sent (body, request record's topic,
    partition, offset) and when each answer was written (the answer record's timestamp)."""

    def __init__(self, *args, **kw):
        self._send_lock = threading.Lock()
        self._last_meta = None
        self.sent: dict[int, dict] = {}  # correlation id -> {api, body, topic, partition, offset, sent_at}
        self.answered: dict[int, dict] = {}  # correlation id -> {ts (ms), at (s), response}
        super().__init__(*args, **kw)

    def send(self, api_key, api_version, body, *, key=None, correlation_id=None, flush=True) -> int:
        with self._send_lock:
            sent_at = time.time()
            cid = super().send(api_key, api_version, body, key=key, correlation_id=correlation_id, flush=True)
            meta = self._last_meta
            assert meta is not None
            self.sent[cid] = {
                "api": api_key,
                "body": body,
                "topic": meta.topic,
                "partition": meta.partition,
                "offset": meta.offset,
                "sent_at": sent_at,
            }
            return cid

    def send_raw(self, value, *, key=None, flush=True) -> None:
        future = self._producer.send(self.requests_topic, key=None if key is None else key.encode("utf-8"), value=value)
        self._last_meta = future.get(timeout=30)

    def _on_record(self, rec) -> None:
        if rec.key is not None and rec.key.decode("utf-8", "replace") == self.client_id and rec.value:
            try:
                env = json.loads(rec.value)
                self.answered.setdefault(
                    env["correlationId"], {"ts": rec.timestamp, "at": time.time(), "response": env.get("response")}
                )
            except (ValueError, KeyError, TypeError):
                pass
        super()._on_record(rec)

    def hops(self, cids: list[int]) -> list[dict]:
        """The requests `cids` as `measure` takes them."""
        return [{**self.sent[c], "ts": self.answered[c]["ts"]} for c in cids]

    def hops_until(self, done) -> list[int]:
        """The correlation ids, in order, of the requests up to the first answered one for which
        `done(api, body, response)` holds (empty if none does yet)."""
        cids = sorted(self.sent)
        for i, cid in enumerate(cids):
            a = self.answered.get(cid)
            if a is not None and done(self.sent[cid]["api"], self.sent[cid]["body"], a["response"]):
                return cids[: i + 1]
        return []


class Batches(threading.Thread):
    """The job's micro-batches, accumulated from its status file (it keeps only recent ones)."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path, self.halt = path, threading.Event()
        self.by_id: dict[int, dict] = {}
        self.start()

    def run(self) -> None:
        while not self.halt.wait(0.3):
            self.poll()

    def poll(self) -> None:
        for b in (read_status(self.path) or {}).get("batches", []):
            if b["batchId"] not in self.by_id:
                b = dict(b)
                b["endOffsets"] = [json.loads(e) if isinstance(e, str) else e for e in b.get("endOffsets") or []]
                b["start_ms"] = iso_ms(b["timestamp"])
                self.by_id[b["batchId"]] = b

    def reading(self, topic: str, partition: int, offset: int) -> int | None:
        """The first batch whose end offsets cover the record."""
        for bid in sorted(self.by_id):
            for end in self.by_id[bid]["endOffsets"]:
                off = ((end or {}).get(topic) or {}).get(str(partition))
                if off is not None and off > offset:
                    return bid
        return None

    def running_at(self, ts_ms: int) -> int | None:
        """The batch that was running when a record was written at `ts_ms` (the last that started
        before it)."""
        started = [bid for bid, b in self.by_id.items() if b["start_ms"] <= ts_ms]
        return max(started) if started else None

    def wait_past(self, ts_ms: int, timeout: float = 30) -> None:
        """Until the status shows a batch that started after `ts_ms` (so the batches up to it are known)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll()
            if any(b["start_ms"] > ts_ms for b in self.by_id.values()):
                return
            time.sleep(0.3)
        raise TimeoutError(f"no micro-batch started after {ts_ms} in {timeout}s")


def measure(hops: list[dict], batches: Batches) -> dict:
    """`hops`: the client's requests in order, each {api, topic, partition, offset} of its request
    record and `ts`, when its answer record was written."""
    batches.wait_past(max(h["ts"] for h in hops))
    per_hop = []
    for h in hops:
        read = batches.reading(h["topic"], h["partition"], h["offset"])
        wrote = batches.running_at(h["ts"])
        if read is None or wrote is None:
            raise RuntimeError(f"no batch found for {h['api']} (offset {h['offset']}, answer at {h['ts']})")
        per_hop.append((h["api"], read, wrote))
    return {
        "hops": len(hops),
        "batches": sum(w - r + 1 for _, r, w in per_hop),
        "spanned": per_hop[-1][2] - per_hop[0][1] + 1,
        "detail": " ".join(f"{api}:{w - r + 1}" for api, r, w in per_hop),
    }


def _run(hc: HopClient, cids: list[int], batches: Batches) -> dict:
    return measure(hc.hops(cids), batches)


def wait_for(cond, what: str, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.02)
    raise TimeoutError(f"{what} not reached in {timeout}s")


# ------------------------------------------------------------------------------------- flows
def classic_flow(job, hc: HopClient, tag: str) -> list[int]:
    member = ClassicGroupMember(
        None, f"flow-classic-{tag}", [TOPIC], client=hc, partitions_for=lambda t: PARTITIONS
    ).start()
    try:
        member.wait_stable(timeout=WAIT_S)
        return wait_for(
            lambda: hc.hops_until(lambda api, b, r: api == "SyncGroup" and r and r.get("errorCode") == 0),
            "the classic member's SyncGroup",
        )
    finally:
        member.close(leave=True)


def _acknowledged(api: str, owned_field: str):
    def done(a, body, resp) -> bool:
        return a == api and bool(body.get(owned_field)) and resp is not None and resp.get("errorCode") == 0

    return done


def consumer_flow(job, hc: HopClient, tag: str) -> list[int]:
    member = ConsumerGroupMember(hc, f"flow-consumer-{tag}", [TOPIC]).start()
    try:
        return wait_for(
            lambda: hc.hops_until(_acknowledged("ConsumerGroupHeartbeat", "topicPartitions")),
            "the KIP-848 member's acknowledged assignment",
        )
    finally:
        member.stop(leave=True)


def share_flow(job, hc: HopClient, tag: str) -> list[int]:
    member = ShareConsumer(hc, f"flow-share-{tag}", [TOPIC], bootstrap_servers=job.bootstrap).start()

    def assigned(api, body, resp) -> bool:
        return (
            api == "ShareGroupHeartbeat"
            and resp is not None
            and resp.get("errorCode") == 0
            and bool((resp.get("assignment") or {}).get("topicPartitions"))
        )

    try:
        return wait_for(lambda: hc.hops_until(assigned), "the share member's assignment")
    finally:
        member.stop()
        member.close()


def streams_flow(job, hc: HopClient, tag: str) -> list[int]:
    topology = {
        "epoch": 0,
        "subtopologies": [
            {
                "subtopologyId": "0",
                "sourceTopics": [TOPIC],
                "sourceTopicRegex": [],
                "stateChangelogTopics": [],
                "repartitionSinkTopics": [],
                "repartitionSourceTopics": [],
                "copartitionGroups": [],
            }
        ],
    }
    member = StreamsGroupMember(hc, f"flow-streams-{tag}", topology, process_id=f"process-{tag}").start()
    try:
        return wait_for(
            lambda: hc.hops_until(_acknowledged("StreamsGroupHeartbeat", "activeTasks")),
            "the streams member's acknowledged tasks",
        )
    finally:
        member.stop(leave=True)


def txn_flow(job, hc: HopClient, tag: str) -> list[int]:
    n = job.cfg.coordinator_partitions
    tid = f"flow-txn-{tag}"
    group = next(
        f"flow-txn-group-{tag}-{i}"
        for i in range(10_000)
        if coordinator_partition(f"flow-txn-group-{tag}-{i}", n) != coordinator_partition(tid, n)
    )
    producer = TransactionalProducer(
        job.bootstrap,
        tid,
        coordinator_client=hc,
        requests_topic=job.topics["requests"],
        responses_topic=job.topics["responses"],
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(OUT_TOPIC, b"copied", partition=0)
        producer.flush()
        producer.send_offsets_to_transaction({(TOPIC, 0): 1}, group)
        producer.commit_transaction()
    finally:
        producer.close()
    return wait_for(
        lambda: hc.hops_until(lambda api, b, r: api == "EndTxn" and r is not None and r.get("errorCode") == 0),
        "EndTxn's answer",
    )


TXN_APIS = ("InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn")
COPIER_IN, COPIER_RECORDS = "flow-copier-in", 20
KAFKA_TOOLS = Path.home() / ".m2/repository/org/apache/kafka/kafka-tools/4.4.0/kafka-tools-4.4.0.jar"


def _end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    try:
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        return {tp.partition: o for tp, o in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def copier_flow(job, gateway: Gateway, tag: str) -> list[dict]:
    """One TransactionalMessageCopier transaction through the gateway; its relayed coordinator
    requests in order, with their answers' times."""
    from kafka import KafkaProducer

    n = job.cfg.coordinator_partitions
    tid = f"flow-copier-{tag}"
    group = next(
        f"flow-copier-group-{tag}-{i}"
        for i in range(10_000)
        if coordinator_partition(f"flow-copier-group-{tag}-{i}", n) != coordinator_partition(tid, n)
    )
    producer = KafkaProducer(bootstrap_servers=job.bootstrap)
    for i in range(COPIER_RECORDS):
        producer.send(COPIER_IN, value=f"{tag}-{i}".encode(), partition=0)
    producer.flush()
    producer.close()
    reply_topic = f"{job.topics['responses']}.gateway"
    requests_from, replies_from = (
        _end_offsets(job.bootstrap, job.topics["requests"]),
        _end_offsets(job.bootstrap, reply_topic),
    )
    classpath = ":".join([str(KAFKA_TOOLS), *sorted(str(p) for p in (ROOT / ".cache/jars/kafka").glob("*.jar"))])
    subprocess.run(
        [
            "java",
            "-cp",
            classpath,
            "org.apache.kafka.tools.TransactionalMessageCopier",
            "--broker-list",
            gateway.bootstrap,
            "--input-topic",
            COPIER_IN,
            "--input-partition",
            "0",
            "--output-topic",
            OUT_TOPIC,
            "--consumer-group",
            group,
            "--transactional-id",
            tid,
            "--max-messages",
            str(COPIER_RECORDS),
            "--transaction-size",
            str(COPIER_RECORDS),
        ],
        check=True,
        timeout=300,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sent = []
    for r in read_records(job.bootstrap, job.topics["requests"], start=requests_from, timeout_s=30):
        try:
            env = json.loads(r.value)
        except (TypeError, ValueError):
            continue
        body = env.get("request") or {}
        if (
            env.get("apiKey") in TXN_APIS
            and env.get("replyTo") == reply_topic
            and (
                body.get("transactionalId") == tid
                or body.get("groupId") == group
                or body.get("v3AndBelowTransactionalId") == tid
                or any(t.get("transactionalId") == tid for t in body.get("transactions") or [])
            )
        ):
            sent.append(
                {
                    "api": env["apiKey"],
                    "cid": env["correlationId"],
                    "topic": r.topic,
                    "partition": r.partition,
                    "offset": r.offset,
                    "appended": r.timestamp,
                }
            )
    sent.sort(key=lambda h: (h["appended"], h["partition"], h["offset"]))
    answers: dict[int, int] = {}
    wanted = {h["cid"] for h in sent}
    for r in read_records(
        job.bootstrap,
        reply_topic,
        start=replies_from,
        timeout_s=30,
        until=lambda recs: wanted <= {json.loads(x.value).get("correlationId") for x in recs if x.value},
    ):
        cid = json.loads(r.value).get("correlationId")
        if cid in wanted:
            answers.setdefault(cid, r.timestamp)
    return [{**h, "ts": answers[h["cid"]]} for h in sent]


FLOWS = {
    "classic": ("classic join to Stable", classic_flow),
    "consumer": ("KIP-848 join to Stable", consumer_flow),
    "txn": ("JSON transaction", txn_flow),
    "share": ("share join", share_flow),
    "streams": ("streams join", streams_flow),
    "copier": ("TransactionalMessageCopier via the gateway", None),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", default=",".join(FLOWS))
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    names = [f for f in args.flows.split(",") if f]
    coordinator = {
        "coordinator.partitions": 10,
        "group.initial.rebalance.delay.ms": 0,
        "group.consumer.heartbeat.interval.ms": 1000,
        "group.consumer.min.heartbeat.interval.ms": 500,
        "group.share.heartbeat.interval.ms": 1000,
        "group.share.min.heartbeat.interval.ms": 500,
        "group.streams.heartbeat.interval.ms": 1000,
        "group.streams.min.heartbeat.interval.ms": 500,
    }
    results: dict[str, list[dict]] = {}
    if "copier" in names and not KAFKA_TOOLS.exists():
        print(f"copier: skipped, {KAFKA_TOOLS} missing (mvn dependency:get, see the module's docstring)")
        names.remove("copier")
    with broker_and_job("flow-batches", stream={"metadata_refresh_ms": 1000}, coordinator=coordinator) as (_, job):
        wait_topics_known(job, {TOPIC: PARTITIONS, OUT_TOPIC: 1})
        create_data_topics(job.bootstrap, {COPIER_IN: 1})
        batches = Batches(status_path(job.cfg.checkpoint))
        gateway = Gateway(job.config_file, job.workdir / "gateway") if "copier" in names else None
        try:
            for run in range(args.runs):
                for name in names:
                    tag = f"{run}-{time.time_ns()}"
                    if name == "copier":
                        assert gateway is not None
                        try:
                            hops = copier_flow(job, gateway, tag)
                        except (subprocess.SubprocessError, KeyError, TimeoutError) as e:
                            print(f"  run {run} copier failed: {e!r}\n{gateway.tail()}", flush=True)
                            continue
                        results.setdefault(name, []).append(measure(hops, batches))
                    else:
                        hc = HopClient(
                            job.bootstrap,
                            f"flow-{name}-{tag}",
                            requests_topic=job.topics["requests"],
                            responses_topic=job.topics["responses"],
                        )
                        try:
                            flow = FLOWS[name][1]
                            assert flow is not None
                            results.setdefault(name, []).append(_run(hc, flow(job, hc, tag), batches))
                        finally:
                            hc.close()
                    r = results[name][-1]
                    print(f"  run {run} {name}: {r['hops']} hops, {r['batches']} batches ({r['detail']})", flush=True)
        finally:
            batches.halt.set()
            if gateway is not None:
                gateway.stop()
    print()
    print(f"| flow | client hops | micro-batches | spanned | extra | per hop (median of {args.runs}) |")
    print("|---|---|---|---|---|---|")
    for name in names:
        rs = results.get(name)
        if not rs:
            print(f"| {FLOWS[name][0]} | failed | | | | |")
            continue
        med = lambda k: statistics.median(r[k] for r in rs)  # noqa: E731
        detail = sorted(rs, key=lambda r: r["batches"])[len(rs) // 2]["detail"]
        print(
            f"| {FLOWS[name][0]} | {med('hops'):g} | {med('batches'):g} | {med('spanned'):g} "
            f"| {med('batches') - med('hops'):g} | {detail} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
