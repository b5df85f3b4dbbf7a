"""A small request client: send a request record, await its response.

    with CoordinatorClient("127.0.0.1:9092", client_id="billing-1") as c:
        resp = c.request("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["my-group"]})

Responses are keyed by clientId, so they all land in one partition of the response topic (the
Kafka producer's default partitioner: toPositive(murmur2(utf8(clientId))) % partitions). The client
reads only that partition, from its end at start-up, and keeps the first response per correlation
id: the service's sink is at-least-once, so a response may arrive twice after a crash and replay.
Use a client id unique to each running client instance (the default is random).

A client may be created before the service is up (right after `deploy/run-local.sh`): it waits up
to `startup_timeout` (120 s) for the broker and the topics, and until its first answer arrives
`request` waits up to that same deadline for a response, whatever its `timeout`, then says what to
check (ServiceUnavailable). After that, requests wait `timeout` as usual.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as kafka_errors
from kafka.partitioner.default import murmur2

# kafka-python 3 raises KafkaTimeoutError when it cannot bootstrap; older ones NoBrokersAvailable.
NO_BROKER = tuple(
    getattr(kafka_errors, n) for n in ("KafkaTimeoutError", "NoBrokersAvailable") if hasattr(kafka_errors, n)
)


RECONNECT_BACKOFF_MAX_MS = 1000  # Kafka's default reconnect.backoff.max.ms


def local_client_host(bootstrap_servers: str) -> str:
    """This machine's address toward the first bootstrap broker, as Kafka prints a client's socket
    address ("/10.0.0.7"): what a JSON client may send as the envelope's `clientHost`."""
    host, _, port = bootstrap_servers.split(",")[0].strip().rpartition(":")
    with socket.create_connection((host.strip("[]"), int(port)), timeout=10) as s:
        return f"/{s.getsockname()[0]}"


class ResponseTimeout(TimeoutError):
    pass


class ServiceUnavailable(ResponseTimeout):
    """The service never answered this client, not even once in its start-up allowance."""


def response_partition(client_id: str, partitions: int) -> int:
    return (murmur2(client_id.encode("utf-8")) & 0x7FFFFFFF) % partitions


class CoordinatorClient:
    def __init__(
        self,
        bootstrap_servers: str,
        client_id: str | None = None,
        *,
        requests_topic: str = "coordinator-requests",
        responses_topic: str = "coordinator-responses",
        reply_to: str | None = None,
        start_correlation_id: int = 1,
        startup_timeout: float = 120.0,
        client_host: str | None = None,
    ):
        self.bootstrap_servers = bootstrap_servers
        # The envelope's `clientHost`: this client's address as Kafka prints a socket's ("/10.0.0.7",
        # `local_client_host()`); describes show it as the member's clientHost. None: not sent ("").
        self.client_host = client_host
        self.client_id = client_id or f"py-{uuid.uuid4().hex[:12]}"
        self.requests_topic = requests_topic
        self.responses_topic = reply_to or responses_topic
        self.reply_to = reply_to
        self.duplicates = 0
        self._next_cid = start_correlation_id
        self._lock = threading.Condition()
        self._responses: dict[int, dict] = {}
        self._startup_deadline = time.monotonic() + startup_timeout
        self.startup_timeout = startup_timeout
        # kafka-python backs off up to 30 s between attempts to reach a broker that is not up yet
        # (Kafka's Java clients: 1 s); a client started with the service would then find it late.
        self._producer = self._until_broker(
            lambda: KafkaProducer(
                bootstrap_servers=bootstrap_servers,
                acks="all",
                linger_ms=0,
                client_id=f"{self.client_id}-producer",
                reconnect_backoff_max_ms=RECONNECT_BACKOFF_MAX_MS,
            )
        )
        self._consumer = self._until_broker(
            lambda: KafkaConsumer(
                bootstrap_servers=bootstrap_servers,
                group_id=None,
                enable_auto_commit=False,
                client_id=f"{self.client_id}-consumer",
                fetch_max_wait_ms=100,
                reconnect_backoff_max_ms=RECONNECT_BACKOFF_MAX_MS,
            )
        )
        partitions = self._wait_partitions(self.responses_topic, max(5.0, self._startup_deadline - time.monotonic()))
        self.partition = TopicPartition(self.responses_topic, response_partition(self.client_id, len(partitions)))
        self._consumer.assign([self.partition])
        self._consumer.seek_to_end(self.partition)
        self._consumer.position(self.partition)  # resolve "end" now, before any request is sent
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name=f"responses-{self.client_id}", daemon=True)
        self._thread.start()

    def _until_broker(self, make):
        """A Kafka client, retried while no broker answers (the service may be starting)."""
        while True:
            try:
                return make()
            except NO_BROKER:
                if time.monotonic() >= self._startup_deadline:
                    raise ServiceUnavailable(
                        f"no Kafka broker at {self.bootstrap_servers} in {self.startup_timeout:.0f}s: is the "
                        f"service running? (deploy/run-local.sh starts it)"
                    ) from None
                time.sleep(0.5)

    def _wait_partitions(self, topic: str, timeout_s: float = 30) -> set[int]:
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            parts = self._consumer.partitions_for_topic(topic)
            if parts:
                return parts
            time.sleep(0.2)
        raise ServiceUnavailable(
            f"topic {topic} not found on {self.bootstrap_servers} in {timeout_s:.0f}s: "
            f"the service creates it when it starts (deploy/run-local.sh)"
        )

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                batches = self._consumer.poll(timeout_ms=100)
            except Exception:  # noqa: BLE001 - closed underneath us
                if self._stop.is_set():
                    return
                raise
            for records in batches.values():
                for rec in records:
                    self._on_record(rec)

    def _on_record(self, rec) -> None:
        """A record of the response partition (a bench that times answers looks at it here)."""
        self._accept(rec.key, rec.value)

    def _accept(self, key: bytes | None, value: bytes | None) -> None:
        if key is None or key.decode("utf-8", "replace") != self.client_id or value is None:
            return  # another client's response in the same partition
        try:
            envelope = json.loads(value)
            cid = envelope["correlationId"]
        except (ValueError, KeyError, TypeError):
            return
        with self._lock:
            if cid in self._responses:
                self.duplicates += 1
                return
            self._responses[cid] = envelope
            self._lock.notify_all()

    # ------------------------------------------------------------------ API
    def next_correlation_id(self) -> int:
        with self._lock:
            cid = self._next_cid
            self._next_cid = cid + 1 if cid < 2**31 - 1 else 0
            return cid

    def send(
        self,
        api_key: str,
        api_version: int,
        body: dict[str, Any],
        *,
        key: str | None = None,
        correlation_id: int | None = None,
        flush: bool = True,
    ) -> int:
        """Send a request; returns its correlation id. `key` is the routing key (group or
        transactional id); by default the body's groupId / transactionalId / key. With
        flush=False the record may wait in the producer's buffer until `flush()`."""
        cid = self.next_correlation_id() if correlation_id is None else correlation_id
        if key is None:
            key = body.get("groupId") or body.get("transactionalId") or body.get("key")
        envelope = {
            "apiKey": api_key,
            "apiVersion": api_version,
            "correlationId": cid,
            "clientId": self.client_id,
            "request": body,
        }
        if self.reply_to:
            envelope["replyTo"] = self.reply_to
        if self.client_host is not None:
            envelope["clientHost"] = self.client_host
        self.send_raw(json.dumps(envelope).encode(), key=key, flush=flush)
        return cid

    def send_raw(self, value: bytes | None, *, key: str | None = None, flush: bool = True) -> None:
        self._producer.send(self.requests_topic, key=None if key is None else key.encode("utf-8"), value=value)
        if flush:
            self._producer.flush()

    def flush(self) -> None:
        self._producer.flush()

    def wait(self, correlation_id: int, timeout: float = 30.0, *, startup: bool = False) -> dict:
        """The response envelope for `correlation_id`. With startup=True (as `request` does), until
        this client's first answer the wait extends to the start-up deadline: requests sent while
        the service starts are answered once it runs (they wait in the request topic)."""
        started = time.monotonic()
        with self._lock:
            # Until this client's first answer the service may still be starting.
            waiting_for_service = startup and not self._responses
            deadline = max(started + timeout, self._startup_deadline) if waiting_for_service else started + timeout
            while correlation_id not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0:
                    if not self._responses and waiting_for_service:
                        raise ServiceUnavailable(
                            f"no response to correlation id {correlation_id}: the coordinator service has not "
                            f"answered this client at all (waited {time.monotonic() - started:.0f}s). Is it "
                            f"running and reading {self.requests_topic}? `python -m streaming.status` tells."
                        )
                    raise ResponseTimeout(f"no response to correlation id {correlation_id} in {timeout}s")
                self._lock.wait(left)
            return self._responses[correlation_id]

    def request(
        self, api_key: str, api_version: int, body: dict[str, Any], *, key: str | None = None, timeout: float = 30.0
    ) -> dict:
        """Send a request and return its response body (the envelope's `response`)."""
        cid = self.send(api_key, api_version, body, key=key)
        return self.wait(cid, timeout, startup=True)["response"]

    def responses(self) -> dict[int, dict]:
        with self._lock:
            return dict(self._responses)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._producer.close()
        self._consumer.close()

    def __enter__(self) -> CoordinatorClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
