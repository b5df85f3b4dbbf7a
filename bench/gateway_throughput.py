#!/usr/bin/env python3
"""OffsetCommit throughput through the gateway and straight to the broker, many requests in flight.

    .venv/bin/python bench/gateway_throughput.py [--connections 4] [--in-flight 100] [--seconds 20]
                                                 [--rounds 2] [--paths broker,gateway,service,echo]

One broker, one coordinator job and one gateway (started here). Each path gets the same load, one
after the other, `--rounds` times, in the same run: `--connections` connections each keeping
`--in-flight` raw OffsetCommit v8 requests in flight (a simple group's commit, generation -1, one
partition; the connection's requests cycle over 20 groups of its own; the gateways' `max_in_flight`
is raised to match), for `--seconds` after a
warm-up of 3 s (not counted):
- broker: Kafka's own group coordinator;
- gateway: the gateway, i.e. the coordinator service behind it;
- service: the coordinator service without the gateway: the same number of JSON OffsetCommit
  envelopes in flight (client.request_client, a kafka-python producer and consumer, as the gateway's
  bridge uses), to tell what the gateway costs from what the service costs;
- echo: a second gateway whose request topic is served by an instant responder (a thread here
  answering every envelope at once, no Spark): the gateway's own ceiling, its bridge's Kafka round
  trip included.
Printed per path: answers per second, round-trip p50/p99, and for the gateway the CPU its process
used per request (all its threads: the event loop, the bridge's producer and consumer) and its share
of one core. Answers carrying an error code are counted and printed (there were none).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

from deploy.kafka_local import LocalKafka, free_port  # noqa: E402
from gateway.codec import decode_response, encode_request  # noqa: E402
from tests.integration.gateway_process import Gateway  # noqa: E402
from tests.integration.harness import StreamJob, _to_toml, simple_commit, wait_topics_known  # noqa: E402

TOPIC, PARTITIONS = "bench-gw-commits", 8
GROUPS_PER_CONNECTION = 20
WARMUP = 3.0
OFFSET_COMMIT, VERSION = 8, 8
TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def commit_frame(path: str, conn: int, n: int, cid: int) -> bytes:
    group = f"bench-{path}-{conn}-{n % GROUPS_PER_CONNECTION}"
    body = simple_commit(group, {TOPIC: {n % PARTITIONS: n}})
    payload = encode_request(OFFSET_COMMIT, VERSION, cid, f"bench-{conn}", body)
    return len(payload).to_bytes(4, "big") + payload


class Tally:
    def __init__(self):
        self.latencies: list[float] = []  # of the answers counted (after the warm-up)
        self.errors: collections.Counter[int] = collections.Counter()
        self.total = 0  # answers, the warm-up's included
        self.counting_from = self.until = 0.0

    def answered(self, sent: float, now: float, error: int) -> None:
        self.total += 1
        if error:
            self.errors[error] += 1
        if self.counting_from <= now <= self.until:
            self.latencies.append(now - sent)


async def kafka_connection(host: str, port: int, path: str, conn: int, in_flight: int, tally: Tally, stop: float):
    """One connection keeping `in_flight` OffsetCommits in flight until `stop` (loop time)."""
    loop = asyncio.get_running_loop()
    reader, writer = await asyncio.open_connection(host, port)
    room = asyncio.Semaphore(in_flight)
    sent_at: collections.deque[tuple[int, float]] = collections.deque()
    done = False

    async def send() -> None:
        nonlocal done
        n = 0
        while loop.time() < stop:
            await room.acquire()
            sent_at.append((n, loop.time()))
            writer.write(commit_frame(path, conn, n, n))
            n += 1
            if n % 16 == 0:
                await writer.drain()
        done = True

    sender = asyncio.create_task(send())
    while not (done and not sent_at):
        size = int.from_bytes(await reader.readexactly(4), "big")
        header, body = decode_response(await reader.readexactly(size), OFFSET_COMMIT, VERSION)
        n, sent = sent_at.popleft()
        assert header["correlationId"] == n, (header["correlationId"], n)
        error = max((p["errorCode"] for t in body["topics"] for p in t["partitions"]), default=0)
        tally.answered(sent, loop.time(), error)
        room.release()
    await sender
    writer.close()


async def kafka_load(address: str, path: str, connections: int, in_flight: int, seconds: float) -> Tally:
    host, _, port = address.rpartition(":")
    loop = asyncio.get_running_loop()
    tally = Tally()
    tally.counting_from = loop.time() + WARMUP
    tally.until = tally.counting_from + seconds
    await asyncio.gather(
        *(kafka_connection(host, int(port), path, c, in_flight, tally, tally.until) for c in range(connections))
    )
    return tally


async def prime_broker(address: str, connections: int, timeout: float = 120) -> None:
    """Commit once for every group of the broker path until none is answered an error: the broker
    creates __consumer_offsets on first use and answers NOT_COORDINATOR until it is loaded."""
    host, _, port = address.rpartition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    pending = [(c, n) for c in range(connections) for n in range(GROUPS_PER_CONNECTION)]
    deadline = time.monotonic() + timeout
    while pending:
        # FindCoordinator makes the broker create __consumer_offsets (an OffsetCommit does not)
        payload = encode_request(10, 4, 0, "b", {"keyType": 0, "coordinatorKeys": ["bench"]})
        writer.write(len(payload).to_bytes(4, "big") + payload)
        await reader.readexactly(int.from_bytes(await reader.readexactly(4), "big"))
        for c, n in pending:
            writer.write(commit_frame("broker", c, n, n))
        failed = []
        for c, n in pending:
            size = int.from_bytes(await reader.readexactly(4), "big")
            _, body = decode_response(await reader.readexactly(size), OFFSET_COMMIT, VERSION)
            if any(p["errorCode"] for t in body["topics"] for p in t["partitions"]):
                failed.append((c, n))
        pending = failed
        if pending:
            if time.monotonic() > deadline:
                raise TimeoutError("the broker's group coordinator does not take commits")
            await asyncio.sleep(0.5)
    writer.close()


def service_load(job: StreamJob, connections: int, in_flight: int, seconds: float) -> Tally:
    """The same number of JSON OffsetCommits in flight, straight to the service (no gateway)."""
    tally = Tally()
    start = time.monotonic()
    tally.counting_from = start + WARMUP
    tally.until = tally.counting_from + seconds

    def one(conn: int) -> None:
        client = job.client(f"bench-service-{conn}")
        try:
            window: collections.deque[tuple[int, float]] = collections.deque()
            n = 0
            while True:
                now = time.monotonic()
                if now < tally.until and len(window) < in_flight:
                    group = f"bench-service-{conn}-{n % GROUPS_PER_CONNECTION}"
                    body = simple_commit(group, {TOPIC: {n % PARTITIONS: n}})
                    window.append((client.send("OffsetCommit", VERSION, body, key=group), now))
                    n += 1
                    continue
                if not window:
                    return
                cid, sent = window.popleft()
                answer = client.wait(cid, timeout=60)
                error = max(p["errorCode"] for t in answer["response"]["topics"] for p in t["partitions"])
                tally.answered(sent, time.monotonic(), error)
        finally:
            client.close()

    threads = [threading.Thread(target=one, args=(c,)) for c in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return tally


class EchoService:
    """Answers every request envelope on its topic at once (OffsetCommit: every partition error 0;
    anything else, e.g. the gateway's FindCoordinator probe: an empty answer)."""

    TOPIC = "bench-echo-requests"

    def __init__(self, bootstrap: str):
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic(self.TOPIC, 2, 1)])
        admin.close()
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, fetch_max_wait_ms=500)
        tps = [TopicPartition(self.TOPIC, p) for p in range(2)]
        self.consumer.assign(tps)
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=1)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            for records in self.consumer.poll(timeout_ms=100).values():
                for rec in records:
                    envelope = json.loads(rec.value)
                    response: dict = {}
                    if envelope["apiKey"] == "OffsetCommit":
                        response = {
                            "throttleTimeMs": 0,
                            "topics": [
                                {
                                    "name": t["name"],
                                    "partitions": [
                                        {"partitionIndex": p["partitionIndex"], "errorCode": 0} for p in t["partitions"]
                                    ],
                                }
                                for t in envelope["request"]["topics"]
                            ],
                        }
                    answer = {"correlationId": envelope["correlationId"], "response": response}
                    self.producer.send(envelope["replyTo"], key=rec.key, value=json.dumps(answer).encode())

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.producer.close(timeout=5)
        self.consumer.close()


def echo_gateway(job: StreamJob, work: Path, settings: dict) -> Gateway:
    """A gateway of its own whose request topic the echo service serves."""
    config = work / "echo.toml"
    settings = tomllib.loads(job.config_file.read_text())
    # (the reply topic is "<responses>.gateway": one of its own, not the other gateway's)
    settings["topics"].update(requests=EchoService.TOPIC, responses="bench-echo-responses")
    config.write_text(_to_toml(settings))
    return Gateway(config, work / "echo-gateway", client_id="bench-echo-gateway", settings=settings)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--in-flight", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--paths", default="broker,gateway,service,echo")
    args = ap.parse_args()
    paths = args.paths.split(",")
    work = Path(tempfile.mkdtemp(prefix="bench-gateway-throughput-"))
    broker = LocalKafka(work / "kafka", free_port(), free_port()).start()
    job = gateway = echo = echo_gw = None
    try:
        job = StreamJob(broker.bootstrap, work / "job", "bench-gwt").start()
        wait_topics_known(job, {TOPIC: PARTITIONS})
        # The gateway reads at most `max_in_flight` requests ahead per connection (100 by default):
        # raised to the load's in-flight count, so that what is in flight is in flight at the gateway.
        gw_settings = {"max_in_flight": max(100, args.in_flight)}
        gateway = Gateway(job.config_file, work / "gateway", client_id="bench-gateway", settings=gw_settings)
        if "echo" in paths:
            echo = EchoService(broker.bootstrap)
            echo_gw = echo_gateway(job, work, gw_settings)
        if "broker" in paths:
            asyncio.run(prime_broker(broker.bootstrap, args.connections))
        results: dict[str, list[tuple[float, Tally, float | None]]] = collections.defaultdict(list)
        for r in range(args.rounds):
            for path in paths:
                watched = echo_gw if path == "echo" else gateway
                assert watched is not None
                cpu_before = process_cpu(watched.proc.pid)
                if path == "service":
                    tally = service_load(job, args.connections, args.in_flight, args.seconds)
                else:
                    address = {"gateway": gateway.bootstrap, "broker": broker.bootstrap}.get(path)
                    address = address or watched.bootstrap
                    tally = asyncio.run(kafka_load(address, path, args.connections, args.in_flight, args.seconds))
                cpu = process_cpu(watched.proc.pid) - cpu_before
                in_gateway = path in ("gateway", "echo")
                rate = len(tally.latencies) / args.seconds
                if tally.errors:
                    print(f"  {path}: error codes answered {dict(tally.errors)}", flush=True)
                results[path].append((rate, tally, cpu if in_gateway else None))
                lat = sorted(tally.latencies)
                print(
                    f"round {r} {path:8s}: {rate:7.0f}/s  p50 {statistics.median(lat) * 1000:6.0f} ms  "
                    f"p99 {lat[int(len(lat) * 0.99)] * 1000:6.0f} ms"
                    + (f"  gateway CPU {cpu:.1f} s" if in_gateway else ""),
                    flush=True,
                )
        print(
            f"\nOffsetCommit, {args.connections} connections x {args.in_flight} in flight, "
            f"{args.seconds:.0f} s per round, best of {args.rounds}:"
        )
        best = {path: max(rows, key=lambda row: row[0]) for path, rows in results.items()}
        for path, (rate, tally, cpu) in best.items():
            lat = sorted(tally.latencies)
            extra = ""
            if cpu is not None:
                extra = (
                    f"  gateway CPU {cpu / tally.total * 1e6:5.0f} us/request, {cpu / (args.seconds + WARMUP):.2f} core"
                )
            print(
                f"  {path:8s} {rate:7.0f}/s  p50 {statistics.median(lat) * 1000:6.0f} ms  "
                f"p99 {lat[int(len(lat) * 0.99)] * 1000:6.0f} ms{extra}"
            )
        if "broker" in best:
            for path in best:
                if path != "broker":
                    print(f"  {path} / broker: {best[path][0] / best['broker'][0]:.2f}x")
        if "gateway" in best and "service" in best:
            print(f"  gateway / service without it: {best['gateway'][0] / best['service'][0]:.2f}x")
        if "echo" in best and "broker" in best:
            print("  (echo / broker: what the gateway itself reaches with an instant service behind it)")
    finally:
        if echo_gw is not None:
            echo_gw.stop()
        if echo is not None:
            echo.close()
        if gateway is not None:
            gateway.stop()
        if job is not None:
            job.stop()
        broker.stop(timeout=5)


if __name__ == "__main__":
    main()
