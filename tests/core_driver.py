"""Drive one coordinator partition in-process with a controllable clock (no Spark, no Kafka).

    d = CoreDriver(group_id="g")          # the partition that owns "g"
    r = d.send("JoinGroup", 9, {...})     # the response body, or None if it was parked
    d.advance(3000)                       # move the clock; due timers fire
    d.response(cid)                       # a response that was parked and has now been sent
    d.records / d.events                  # everything the partition has emitted so far
    d.inject(records)                     # seed state: records appended and replayed
    d.failover()                          # a coordinator load: rebuilt from the state log

Every request goes through the real envelope parsing and `run_batch`, one request per batch by
default, and the partition is rebuilt from its encoded state between batches (as in the stream),
so a test also proves that the state survives encoding.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import state
from coordinator import CoordinatorConfig, CoordinatorPartition, coordinator_partition
from coordinator.api import lookup
from coordinator.batch import InputRecord, run_batch
from coordinator.messages import Outputs, StateRecord
from coordinator.result import CoordinatorResult

# Core tests compute every target assignment at once (as Kafka's own GroupMetadataManagerTest
# mostly does, its groups built without an assignment time); tests of the assignment interval
# (Kafka 4.3+, 1 s by default) and of a new streams group's initial rebalance delay (3 s) set them.
CORE_TEST_SETTINGS = {
    "group.consumer.assignment.interval.ms": 0,
    "group.share.assignment.interval.ms": 0,
    "group.streams.assignment.interval.ms": 0,
    "group.streams.initial.rebalance.delay.ms": 0,
}


class CoreDriver:
    def __init__(
        self,
        group_id: str | None = None,
        *,
        partition: int | None = None,
        config: CoordinatorConfig | None = None,
        start_ms: int = 1_000_000,
        client_id: str = "client",
        roundtrip: bool = True,
        **overrides: Any,
    ):
        self.config = config or CoordinatorConfig(CORE_TEST_SETTINGS)
        if overrides:
            self.config = self.config.with_overrides(**overrides)
        n = self.config["coordinator.partitions"]
        self.partition_id = partition if partition is not None else coordinator_partition(group_id, n)
        self.now = start_ms
        self.client_id = client_id
        self.roundtrip = roundtrip
        self._state = CoordinatorPartition(self.partition_id, self.config)
        self._blob = state.encode(self._state.to_json())
        self._offset = 0
        self._cid = 0
        self.responses: dict[int, dict] = {}  # correlation id -> response body
        self.response_envelopes: list[tuple[Any, dict]] = []  # (ReplyTo, body) in emission order
        self.events: list[dict] = []
        self.records: list[tuple[str, dict | None]] = []  # the state log: written and injected
        self.injected: set[int] = set()  # indexes in `records` of the records `inject` appended
        self.internal_requests: list[tuple[str, dict]] = []
        self.data: list = []

    # ------------------------------------------------------------------ state
    @property
    def partition(self) -> CoordinatorPartition:
        """The partition's current state (decoded fresh, read-only by convention)."""
        return self._load()

    def stored(self) -> state.StoredState:
        """The partition's state as the stream stores it between batches (encoded chunks)."""
        return state.StoredState(*self._blob)

    def component(self, name: str):
        return self.partition.component(name)

    def _load(self) -> CoordinatorPartition:
        if not self.roundtrip:
            return self._state
        # As the stream loads it: entities decoded lazily from the stored chunks.
        return state.StoredState(*self._blob).load(self.partition_id, self.config)

    def _run(self, records: list[InputRecord], batch_time: int) -> Outputs:
        if self.roundtrip:
            stored = state.StoredState(*self._blob)
            part, out = run_batch(lambda: stored.load(self.partition_id, self.config), records, batch_time)
            self._blob = state.encode_partition(part)
        else:
            part, out = run_batch(self._load, records, batch_time)
        self._state = part
        self._collect(out)
        return out

    def _collect(self, out: Outputs) -> None:
        for r in out.responses:
            self.responses[r.reply.correlation_id] = r.body
            self.response_envelopes.append((r.reply, r.body))
        self.events += [e.body for e in out.events]
        self.records += [(r.key, r.value) for r in out.records]
        self.internal_requests += [(r.key, r.envelope) for r in out.requests]
        self.data += out.data

    def _continue_with(self, part: CoordinatorPartition) -> Outputs:
        """The partition the next batch starts from; what it has queued is emitted."""
        out = part.drain()
        self._state = part
        self._blob = state.encode(part.to_json())
        self._collect(out)
        return out

    # ------------------------------------------------------------------ seeding and loading
    def inject(self, records: Iterable[tuple[str, dict | None]]) -> Outputs:
        """Append state-log records and replay them into the partition, through the runtime's one
        way to change state (`CoordinatorPartition.apply`), as Kafka's tests `replay` records to
        build a group or a transaction."""
        part = self._load()
        part.clock_ms = max(part.clock_ms, self.now)
        records = [StateRecord(k, v) for k, v in records]
        part.apply(CoordinatorResult(records=records))
        self.injected.update(range(len(self.records), len(self.records) + len(records)))
        return self._continue_with(part)

    def rebuilt(
        self, records: Iterable[tuple[str, dict | None]] | None = None, *, now_ms: int | None = None
    ) -> CoordinatorPartition:
        """A partition loaded (at `now_ms`, default now) from state-log records (default: every
        record written so far), as a Kafka coordinator loads its partition of __consumer_offsets
        / __transaction_state."""
        records = self.records if records is None else records
        return CoordinatorPartition.from_records(
            self.partition_id,
            [StateRecord(k, v) for k, v in records],
            self.config,
            now_ms=self.now if now_ms is None else now_ms,
        )

    def failover(self, records: Iterable[tuple[str, dict | None]] | None = None) -> Outputs:
        """Lose the live state and continue from a partition loaded from the state log (a
        coordinator failover); returns what the load queued."""
        return self._continue_with(self.rebuilt(records))

    def call(self, fn: Callable[[CoordinatorPartition], Any]) -> Any:
        """Run `fn` on the live partition and keep what it emits: for the tests that, like Kafka's,
        call into a classic group or a manager directly (Kafka keeps classic groups in memory only
        and its tests change them in place)."""
        part = self._load()
        part.clock_ms = max(part.clock_ms, self.now)
        result = fn(part)
        self._continue_with(part)
        return result

    # ------------------------------------------------------------------ requests
    def envelope(
        self,
        api: str,
        version: int,
        body: dict,
        *,
        correlation_id: int | None = None,
        client_id: str | None = None,
        client_host: str | None = None,
        kafka_client: bool = False,
        principal: str | None = None,
    ) -> tuple[int, bytes]:
        if correlation_id is None:
            self._cid += 1
            correlation_id = self._cid
        env = {
            "apiKey": api,
            "apiVersion": version,
            "correlationId": correlation_id,
            "clientId": self.client_id if client_id is None else client_id,
            "request": body,
        }
        if client_host is not None:  # as the gateway relays a Kafka client's request
            env["clientHost"] = client_host
        if kafka_client:  # as gateway/bridge.py marks every request it relays
            env["kafkaClient"] = True
        if principal is not None:  # as a SASL gateway signs its client's principal
            env["principal"] = principal
        return correlation_id, json.dumps(env).encode()

    def send(
        self,
        api: str,
        version: int,
        body: dict,
        *,
        key: str | None = None,
        at: int | None = None,
        client_id: str | None = None,
        client_host: str | None = None,
        kafka_client: bool = False,
        principal: str | None = None,
    ) -> dict | None:
        """Send one request at time `at` (default: now) in a batch of its own; return its
        response, or None if the coordinator parked it. `principal`: as a SASL gateway's signed
        bridged request names its client (the record's principal MAC taken as verified)."""
        cid, raw = self.envelope(
            api,
            version,
            body,
            client_id=client_id,
            client_host=client_host,
            kafka_client=kafka_client,
            principal=principal,
        )
        # Internal APIs (UpdateMetadata, WriteTxnMarkers) come from the coordinator's own
        # authenticated channel in the stream; the driver plays that channel for them.
        self.send_raw(raw, key=key, at=at, principal_verified=principal is not None)
        return self.responses.get(cid)

    def send_raw(
        self,
        raw: bytes | None,
        *,
        key: str | None = None,
        at: int | None = None,
        internal: bool | None = None,
        stamp: tuple[str, int, int] | None = None,
        principal_verified: bool = False,
    ) -> Outputs:
        """`internal` None: on the internal channel if the envelope names an internal API (the
        driver plays the coordinator's own channel for UpdateMetadata and WriteTxnMarkers).
        `stamp`: an internal record's (publisher, epoch, sequence) (coordinator/channel.py)."""
        if at is not None:
            self.now = max(self.now, at)
        if internal is None:
            internal = _names_internal_api(raw)
        rec = InputRecord(
            key, raw, self.now, 0, self._offset, internal=internal, stamp=stamp, principal_verified=principal_verified
        )
        self._offset += 1
        return self._run([rec], self.now)

    def send_batch(self, items: list[tuple[str, int, dict]], at: int | None = None) -> list[int]:
        """Several requests in one batch, all appended at the same time; returns correlation ids."""
        if at is not None:
            self.now = max(self.now, at)
        cids, recs = [], []
        for api, version, body in items:
            cid, raw = self.envelope(api, version, body)
            cids.append(cid)
            recs.append(InputRecord(None, raw, self.now, 0, self._offset))
            self._offset += 1
        self._run(recs, self.now)
        return cids

    def response(self, correlation_id: int) -> dict | None:
        return self.responses.get(correlation_id)

    @property
    def last_cid(self) -> int:
        return self._cid

    # ------------------------------------------------------------------ time
    def advance(self, ms: int) -> Outputs:
        """Move the clock forward by `ms` and run an empty batch (timers due by then fire)."""
        self.now += ms
        return self._run([], self.now)

    def advance_to(self, t: int) -> Outputs:
        self.now = max(self.now, t)
        return self._run([], self.now)

    def next_deadline(self) -> int | None:
        return self._state.next_deadline()

    def events_named(self, name: str) -> list[dict]:
        return [e for e in self.events if e.get("event") == name]


def _names_internal_api(raw: bytes | None) -> bool:
    try:
        spec = lookup(json.loads(raw).get("apiKey"))
    except (TypeError, ValueError, AttributeError):
        return False
    return spec is not None and spec.internal


def call_handler(part: CoordinatorPartition, api: str, request) -> Any:
    """What the handler of `api` returns for `request`, without the runtime applying it."""
    spec = lookup(api)
    assert spec is not None, api
    owner = part.component(spec.component)
    return owner.HANDLERS[api](owner, request)


class _Path:
    """Stands in for a component: records the attribute path a table entry follows, and the call."""

    def __init__(self, path: tuple[str, ...] = ()):
        self.path, self.called = path, None

    def __getattr__(self, name: str) -> _Path:
        child = _Path((*self.path, name))
        self.__dict__.setdefault("children", []).append(child)
        return child

    def __call__(self, *args: Any) -> None:
        self.called = args

    def calls(self):
        if self.called is not None:
            yield self.path
        for child in self.__dict__.get("children", []):
            yield from child.calls()


REPLAYER_ARGS = ("Kind", ["id"], None)  # what a replayer gets after the component


def dispatch_targets(table: dict, component: Any, args: tuple = (None,)) -> dict[str, Any]:
    """key -> what the table's entry calls on `component` (a bound method of the component or of
    one of its managers, or a module function given the component), found by running the entry
    on a recorder: the handler each API, timer kind or record kind reaches."""
    out = {}
    for key, entry in table.items():
        probe = _Path()
        entry(probe, *args)
        [path] = list(probe.calls()) or [None]
        target = component
        for name in path or ():
            target = getattr(target, name)
        out[key] = target if path else entry
    return out
