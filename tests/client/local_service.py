"""The coordinator core served in-process on the wall clock, for fast tests of the clients.

Requests go through a CoreDriver per coordinator partition (the real envelope parsing and
`run_batch`, one request per batch, the state encoded between batches, exactly the core the Spark
job runs), timers fire on a ticker thread as
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

from client.request_client import ResponseTimeout
from coordinator import CoordinatorConfig, CoordinatorPartition, coordinator_partition
from coordinator.messages import response_envelope
from tests.core_driver import CoreDriver


class LocalService:
    def __init__(self, config: CoordinatorConfig | None = None, tick_s: float = 0.01, **overrides: Any):
        self.config = (
            (config or CoordinatorConfig()).with_overrides(**overrides)
            if overrides
            else (config or CoordinatorConfig())
        )
        self._lock = threading.RLock()
        self._drivers: dict[int, CoreDriver] = {}  # one per coordinator partition
        self._deadlines: dict[int, int | None] = {}
        self._clients: dict[str, LocalClient] = {}
        self.events: list[dict] = []
        self.records: dict[int, list[tuple[str, dict | None]]] = {}
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, args=(tick_s,), name="local-service", daemon=True)
        self._ticker.start()

    # ------------------------------------------------------------------ core
    def _driver(self, p: int) -> CoreDriver:
        d = self._drivers.get(p)
        if d is None:
            d = self._drivers[p] = CoreDriver(partition=p, config=self.config, start_ms=0)
        return d

    def _run(self, p: int, key: str | None, raw: bytes | None, now: int, internal: bool = False) -> None:
        """One batch of partition `p` at `now`: the request `raw`, or none (timers due fire)."""
        d = self._driver(p)
        out = d.advance_to(now) if raw is None else d.send_raw(raw, key=key, at=now, internal=internal)
        self._deadlines[p] = d.next_deadline()
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
            self._run(target, q.key, json.dumps(q.envelope).encode(), now, internal=True)

    def submit(self, key: str | None, raw: bytes) -> None:
        with self._lock:
            now = int(time.time() * 1000)
            self._run(coordinator_partition(key, self.config["coordinator.partitions"]), key, raw, now)

    def _tick(self, tick_s: float) -> None:
        while not self._stop.wait(tick_s):
            with self._lock:
                now = int(time.time() * 1000)
                for p, deadline in list(self._deadlines.items()):
                    if deadline is not None and deadline <= now:
                        self._run(p, None, None, now)

    def partition(self, key: str) -> CoordinatorPartition:
        p = coordinator_partition(key, self.config["coordinator.partitions"])
        with self._lock:
            return self._driver(p).partition

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
        envelope = {
            "apiKey": api_key,
            "apiVersion": api_version,
            "correlationId": cid,
            "clientId": self.client_id,
            "request": body,
        }
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

    def request(
        self, api_key: str, api_version: int, body: dict, *, key: str | None = None, timeout: float = 30.0
    ) -> dict:
        return self.wait(self.send(api_key, api_version, body, key=key), timeout)["response"]

    def close(self) -> None:
        self.closed = True
