"""The coordinator core served in-process on the wall clock, for fast tests of the clients.

Requests go through the real envelope parsing and `run_batch` (one request per batch, the state
encoded between batches, exactly the core the Spark job runs), timers fire on a ticker thread as
soon as they are due, and responses reach the `LocalClient` named by their clientId. What it leaves
out is the transport (Kafka topics) and Spark's micro-batches: the client's protocol logic runs
against the real coordinator in milliseconds instead of seconds. The end-to-end tests
(`tests/integration/`) run the same clients through the real broker and job.
"""
from __future__ import annotations

import itertools
import json
import threading
import time
from typing import Any

import state
from client.request_client import ResponseTimeout
from coordinator import CoordinatorConfig, CoordinatorPartition, coordinator_partition
from coordinator.batch import InputRecord, run_batch
from coordinator.messages import response_envelope


class LocalService:
    def __init__(self, config: CoordinatorConfig | None = None, tick_s: float = 0.01, **overrides: Any):
        self.config = (config or CoordinatorConfig()).with_overrides(**overrides) if overrides else \
            (config or CoordinatorConfig())
        self._lock = threading.RLock()
        self._blobs: dict[int, tuple] = {}
        self._deadlines: dict[int, int | None] = {}
        self._offsets = itertools.count()
        self._clients: dict[str, LocalClient] = {}
        self.events: list[dict] = []
        self.records: dict[int, list[tuple[str, dict | None]]] = {}
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, args=(tick_s,), name="local-service", daemon=True)
        self._ticker.start()

    # ------------------------------------------------------------------ core
    def _run(self, p: int, records: list[InputRecord], now: int) -> None:
        blob = self._blobs.get(p)
        stored = None if blob is None else state.StoredState(*blob)

        def load() -> CoordinatorPartition:
            if stored is None:
                return CoordinatorPartition(p, self.config)
            return stored.load(p, self.config)  # lazily, as the stream does

        part, out = run_batch(load, records, now)
        self._blobs[p] = state.encode_partition(part)
        self._deadlines[p] = part.next_deadline()
        self.events += [e.body for e in out.events]
        self.records.setdefault(p, []).extend((r.key, r.value) for r in out.records)
        for r in out.responses:
            client = self._clients.get(r.reply.client_id)
            if client is not None:
                client._accept(response_envelope(r.reply, r.body))
        # Internal requests (WriteTxnMarkers, the KIP-890 verification round trip) go to their
        # partitions as the stream's signed internal channel delivers them, each in a batch of its own.
        for q in out.requests:
            target = coordinator_partition(q.key, self.config["coordinator.partitions"])
            self._run(target, [InputRecord(q.key, json.dumps(q.envelope).encode(), now, 0, next(self._offsets),
                                           internal=True)], now)

    def submit(self, key: str | None, raw: bytes) -> None:
        with self._lock:
            now = int(time.time() * 1000)
            p = coordinator_partition(key, self.config["coordinator.partitions"])
            self._run(p, [InputRecord(key, raw, now, 0, next(self._offsets))], now)

    def _tick(self, tick_s: float) -> None:
        while not self._stop.wait(tick_s):
            with self._lock:
                now = int(time.time() * 1000)
                for p, deadline in list(self._deadlines.items()):
                    if deadline is not None and deadline <= now:
                        self._run(p, [], now)

    def partition(self, key: str) -> CoordinatorPartition:
        p = coordinator_partition(key, self.config["coordinator.partitions"])
        with self._lock:
            return CoordinatorPartition(p, self.config, state.decode(*self._blobs[p]))

    def group(self, group_id: str):
        return self.partition(group_id).component("groups").groups.get(group_id)

    def events_named(self, name: str, group_id: str | None = None) -> list[dict]:
        with self._lock:
            return [e for e in self.events if e["event"] == name and (group_id is None or e.get("groupId") == group_id)]

    # ------------------------------------------------------------------ clients
    def client(self, client_id: str) -> LocalClient:
        c = LocalClient(self, client_id)
        self._clients[client_id] = c
        return c

    def close(self) -> None:
        self._stop.set()
        self._ticker.join(timeout=5)


class LocalClient:
    """The `CoordinatorClient` interface (send / wait / request / close) over a LocalService."""

    def __init__(self, service: LocalService, client_id: str):
        self.service = service
        self.client_id = client_id
        self._cids = itertools.count(1)
        self._cond = threading.Condition()
        self._responses: dict[int, dict] = {}
        self.closed = False

    def _accept(self, envelope: dict) -> None:
        with self._cond:
            self._responses.setdefault(envelope["correlationId"], envelope)
            self._cond.notify_all()

    def send(self, api_key: str, api_version: int, body: dict, *, key: str | None = None) -> int:
        if self.closed:
            raise RuntimeError("client closed")
        cid = next(self._cids)
        if key is None:
            key = body.get("groupId") or body.get("transactionalId") or body.get("key")
        envelope = {"apiKey": api_key, "apiVersion": api_version, "correlationId": cid,
                    "clientId": self.client_id, "request": body}
        self.service.submit(key, json.dumps(envelope).encode())
        return cid

    def wait(self, correlation_id: int, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            while correlation_id not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ResponseTimeout(f"no response to correlation id {correlation_id} in {timeout}s")
                self._cond.wait(left)
            return self._responses[correlation_id]

    def request(self, api_key: str, api_version: int, body: dict, *, key: str | None = None,
                timeout: float = 30.0) -> dict:
        return self.wait(self.send(api_key, api_version, body, key=key), timeout)["response"]

    def close(self) -> None:
        self.closed = True
