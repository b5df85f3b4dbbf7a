"""The coordinator bridge: JSON requests to the service, its answers back to the waiting callers.

One producer writes request envelopes to the request topic (librdkafka's, through confluent-kafka:
kafka-python's `send` was a third of the event loop's time per request, and its network thread
another core-fraction; librdkafka's partitioner is set to Java's murmur2, so that a key goes to the
partition a Java or kafka-python client would write it to); one consumer thread reads the
gateway's reply topic (every partition: the answers are keyed by each Kafka client's own clientId)
and resolves the caller waiting for that correlation id. The gateway numbers its requests itself,
so a correlation id is unique among its requests in flight; the service's sink is at-least-once,
so an answer to an id no longer waited for (a duplicate, a late answer) is dropped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import threading
import time
from typing import TypeVar

from confluent_kafka import KafkaError as ProduceError
from confluent_kafka import KafkaException, Producer
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

from coordinator.compact_json import compact_encoder
from deploy.topics import wait_for_broker
from streaming.trust import PRINCIPAL_MAC_HEADER, read_key, sign_principal

from .config import GatewayConfig
from .security import UpstreamSecurity

log = logging.getLogger("gateway.bridge")
INT32_MAX = 2**31 - 1
T = TypeVar("T")
# json.dumps with separators builds a new encoder per call: a quarter of the event loop's time per
# request (py-spy, bench/gateway_throughput.py's echo path). Same text, one encoder.
_encode = compact_encoder(ensure_ascii=True)


def _started(part: T | None) -> T:
    """The event loop or Kafka client `CoordinatorBridge.start` made."""
    if part is None:
        raise RuntimeError("the coordinator bridge is not started")
    return part


class BridgeTimeout(TimeoutError):
    pass


def _expire(future: asyncio.Future, message: str) -> None:
    if not future.done():
        future.set_exception(BridgeTimeout(message))


class BridgeRequestTooLarge(ValueError):
    """A request the service cannot carry: its envelope is larger than the service takes
    (`coordinator.request.max.bytes`). Answered INVALID_REQUEST with the message the service gives
    an oversized request on the JSON path, never sent."""

    def __init__(self, size: int, limit: int):
        super().__init__(f"request of {size} bytes exceeds the limit of {limit} bytes")
        self.size, self.limit = size, limit


# Room for the record's key and framing above the largest envelope, in the producer's request.
PRODUCE_OVERHEAD_BYTES = 64 * 1024


class CoordinatorBridge:
    def __init__(self, cfg: GatewayConfig):
        self.cfg = cfg
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[int, asyncio.Future[dict]] = {}
        self._next_cid = random.randrange(INT32_MAX)  # a restart does not reuse the last run's ids
        self._producer: Producer | None = None
        self._consumer: KafkaConsumer | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reports: threading.Thread | None = None  # serves the producer's delivery reports
        self.ready = asyncio.Event()
        self.duplicates = 0
        self.security = UpstreamSecurity.from_config(cfg)
        # signs the principal of a bridged request (streaming/trust.py); None: no principal is sent
        self._principal_key = read_key(cfg.principal_key_file) if cfg.principal_key_file else None

    # ------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        await self._loop.run_in_executor(None, self._start_clients)
        self._thread = threading.Thread(target=self._poll, name="gateway-responses", daemon=True)
        self._thread.start()
        self._reports = threading.Thread(target=self._serve_reports, name="gateway-delivery", daemon=True)
        self._reports.start()
        self._probe_task = asyncio.create_task(self._probe())

    def _start_clients(self) -> None:
        cfg = self.cfg
        secured = self.security.kafka_client_config(cfg)
        wait_for_broker(cfg.bootstrap_servers, cfg.startup_timeout_s, **secured)
        admin = KafkaAdminClient(bootstrap_servers=cfg.bootstrap_servers, client_id=f"{cfg.client_id}-admin", **secured)
        try:
            # The service creates its request topic (LogAppendTime); never let a producer's metadata
            # request auto-create it with the broker's defaults.
            deadline = time.monotonic() + cfg.startup_timeout_s
            while cfg.requests_topic not in (topics := set(admin.list_topics())):
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the request topic {cfg.requests_topic} does not exist: is the coordinator service running?"
                    )
                log.info("waiting for the service's request topic %s", cfg.requests_topic)
                time.sleep(1)
            if cfg.reply_to not in topics:
                try:
                    admin.create_topics(
                        [
                            NewTopic(
                                cfg.reply_to,
                                cfg.reply_to_partitions,
                                cfg.reply_to_replication[0],
                                topic_configs={
                                    "max.message.bytes": str(cfg.reply_to_max_bytes),
                                    "min.insync.replicas": str(cfg.reply_to_replication[1]),
                                },
                            )
                        ]
                    )
                except TopicAlreadyExistsError:
                    pass
        finally:
            admin.close()
        self._producer = Producer(
            {
                "bootstrap.servers": cfg.bootstrap_servers,
                "acks": "all",
                "linger.ms": 1,
                "client.id": f"{cfg.client_id}-producer",
                # Every envelope the service takes fits (call() refuses larger ones before sending).
                "message.max.bytes": max(1 << 20, cfg.request_max_bytes + PRODUCE_OVERHEAD_BYTES),
                "partitioner": "murmur2_random",  # Java's partition for a key (kafka-python's too)
                "max.in.flight.requests.per.connection": 5,  # kafka-python's and Java's default
                "message.timeout.ms": 120_000,  # Java's delivery.timeout.ms
                "delivery.report.only.error": True,  # a report per failed request only
                **self.security.librdkafka_config(cfg),
            }
        )
        self._consumer = KafkaConsumer(
            bootstrap_servers=cfg.bootstrap_servers,
            group_id=None,
            enable_auto_commit=False,
            fetch_max_wait_ms=500,  # the broker answers as soon as a reply arrives: this only paces polling while idle
            client_id=f"{cfg.client_id}-consumer",
            **secured,
        )
        deadline = time.monotonic() + 60
        while not (parts := self._consumer.partitions_for_topic(cfg.reply_to)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"reply topic {cfg.reply_to} has no partitions")
            time.sleep(0.2)
        tps = [TopicPartition(cfg.reply_to, p) for p in sorted(parts)]
        self._consumer.assign(tps)
        self._consumer.seek_to_end(*tps)
        for tp in tps:
            self._consumer.position(tp)  # resolve "end" before the first request is sent
        self._producer.list_topics(cfg.requests_topic, timeout=cfg.startup_timeout_s)  # its metadata now

    async def _probe(self) -> None:
        """Ready once the service answers on the reply topic (it accepts a replyTo only once its
        topic metadata lists the topic, a few seconds after the gateway created it). Each probe
        waits longer than the last (3 s doubling to 30 s): on a loaded machine a round trip can
        take longer than any fixed wait, and an answer that comes after its probe gave up counts
        for nothing."""
        timeout_s = 3.0
        while not self.ready.is_set():
            try:
                await self.call(
                    "FindCoordinator",
                    4,
                    {"keyType": 0, "coordinatorKeys": ["gateway-probe"]},
                    key="gateway-probe",
                    client_id=self.cfg.client_id,
                    client_host=None,
                    timeout_s=timeout_s,
                    wait_ready=False,
                )
                self.ready.set()
                log.info("the coordinator service answers on %s", self.cfg.reply_to)
            except BridgeTimeout:
                log.info("waiting for the coordinator service to answer on %s", self.cfg.reply_to)
                timeout_s = min(timeout_s * 2, 30.0)

    def close(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        if self._reports:
            self._reports.join(timeout=5)
        if self._producer:
            self._producer.flush(5)
        if self._consumer:
            self._consumer.close()

    # ------------------------------------------------------------ requests
    def _correlation_id(self) -> int:
        cid = self._next_cid
        self._next_cid = cid + 1 if cid < INT32_MAX else 0
        return cid

    async def call(
        self,
        api: str,
        version: int,
        body: dict,
        *,
        key: str,
        client_id: str,
        client_host: str | None,
        timeout_s: float,
        wait_ready: bool = True,
        principal: str | None = None,
    ) -> dict:
        """Send one request envelope and return the service's response body."""
        loop = _started(self._loop)
        deadline = loop.time() + timeout_s
        if wait_ready and not self.ready.is_set():
            try:
                await asyncio.wait_for(self.ready.wait(), timeout_s)
            except TimeoutError:
                raise BridgeTimeout("the coordinator service has not answered the gateway yet") from None
        cid = self._correlation_id()
        envelope = {
            "apiKey": api,
            "apiVersion": version,
            "correlationId": cid,
            "clientId": client_id,
            "replyTo": self.cfg.reply_to,
            "kafkaClient": True,
            "request": body,
        }
        if client_host is not None:
            envelope["clientHost"] = client_host
        headers: list[tuple[str, str | bytes | None]] = []
        if principal is not None and self._principal_key is not None:
            # The service takes the principal only from a record whose header verifies (a JSON
            # client writing the request topic has no key); the MAC covers the record's key and value.
            envelope["principal"] = principal
        value = _encode(envelope).encode()
        if "principal" in envelope and self._principal_key is not None:
            headers.append((PRINCIPAL_MAC_HEADER, sign_principal(self._principal_key, key.encode("utf-8"), value)))
        if len(value) > self.cfg.request_max_bytes:
            raise BridgeRequestTooLarge(len(value), self.cfg.request_max_bytes)
        future: asyncio.Future[dict] = loop.create_future()
        self._pending[cid] = future
        try:
            size = len(value)

            def failed(error, _message) -> None:  # the producer's thread: a request not written
                loop.call_soon_threadsafe(self._fail, cid, error, size)

            try:
                _started(self._producer).produce(
                    self.cfg.requests_topic,
                    value=value,
                    key=key.encode("utf-8"),
                    headers=headers or None,
                    on_delivery=failed,
                )
            except KafkaException as e:  # raised by produce() itself: e.g. a key too large for a record
                error = e.args[0] if e.args else None
                raise (
                    BridgeRequestTooLarge(len(value) + len(key), self.cfg.request_max_bytes)
                    if isinstance(error, ProduceError) and error.code() == ProduceError.MSG_SIZE_TOO_LARGE
                    else BridgeTimeout(f"request not written: {e}")
                ) from None
            except BufferError as e:  # the producer's queue is full
                raise BridgeTimeout(f"request not written: {e}") from None
            # (a timer handle: asyncio.wait_for costs a task and more callbacks per request)
            timer = loop.call_at(deadline, _expire, future, f"no answer to {api} in {timeout_s:.1f}s")
            try:
                answer = await future
            finally:
                timer.cancel()
        finally:
            self._pending.pop(cid, None)
        return answer["response"]

    def _fail(self, cid: int, error, size: int = 0) -> None:
        future = self._pending.get(cid)
        if future is not None and not future.done():
            log.warning("request %d not written: %s", cid, error)
            too_large = isinstance(error, ProduceError) and error.code() == ProduceError.MSG_SIZE_TOO_LARGE
            if too_large:  # the broker's limit: retrying cannot help
                future.set_exception(BridgeRequestTooLarge(size, self.cfg.request_max_bytes))
            else:
                future.set_exception(BridgeTimeout(f"request not written: {error}"))

    def _serve_reports(self) -> None:
        """The producer's delivery reports (failures only), handed to the event loop."""
        producer = _started(self._producer)
        while not self._stop.is_set():
            producer.poll(0.2)

    def _deliver(self, answers: list[tuple[int, dict]]) -> None:
        for cid, envelope in answers:
            future = self._pending.get(cid)
            if future is None or future.done():
                self.duplicates += 1
                continue
            future.set_result(envelope)

    def _poll(self) -> None:
        loop, consumer = _started(self._loop), _started(self._consumer)
        while not self._stop.is_set():
            try:
                batches = consumer.poll(timeout_ms=100)
            except Exception:  # noqa: BLE001
                if self._stop.is_set():
                    return
                log.exception("polling %s", self.cfg.reply_to)
                time.sleep(0.5)
                continue
            answers = []
            for records in batches.values():
                for rec in records:
                    try:
                        envelope = json.loads(rec.value)
                        cid = envelope["correlationId"]
                        envelope["response"]
                    except (TypeError, ValueError, KeyError):
                        continue
                    answers.append((cid, envelope))
            if answers:  # one wake-up of the event loop per poll, not one per answer
                loop.call_soon_threadsafe(self._deliver, answers)
