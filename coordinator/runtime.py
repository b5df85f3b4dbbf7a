"""One coordinator partition: its coordinators, timers, a logical clock, and their outputs.

This is the sans-IO core's centre (Kafka's CoordinatorRuntime for one partition). Given a request
and a time it calls the handler that owns the API; the handler returns a `CoordinatorResult`
(coordinator/result.py) and `apply` applies it: records are appended and replayed, timer operations
applied, outputs queued. Nothing here reads a clock or does I/O: time comes in with each request
(its append time) and with each batch (the batch time). The runtime is given a builder of its
coordinators, as Kafka's runtime is given a shard builder: coordinators.py builds the service's and
binds them (`coordinators.CoordinatorPartition`, what the rest of the project uses).

A component is a class with (coordinator/component.py):
    name                      key of its state in the snapshot
    HANDLERS: dict            API name -> handler(component, request), a literal class-body table
    TIMER_HANDLERS: dict      timer kind -> handler(component, timer), likewise
    REPLAYERS: dict           record kind -> replayer(component, kind, ids, value), likewise
    __init__(partition)       empty state
    to_json() / load_json(d)  its part of the snapshot
    chunk_maps() (optional)   its per-entity `LazyMap`s, stored one chunk per entity
    rest_json() / load_rest(d) (optional)  the rest, one partition-wide chunk (default: to_json)
    bind_rest(fetch) (optional)  instead of load_rest: read that chunk (fetch()) only when needed,
                              and return UNCHANGED from rest_json if it was not read
    after_replay()            what Kafka keeps only in memory (timers) after a load, as a result
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from .api import ApiSpec, lookup
from .chunks import EMPTY_SOURCE, UNCHANGED, ChunkCorrupt, ChunkSource, OverlaySource, chunk_key
from .component import Component, ComponentsBuilder, Partition
from .config import CoordinatorConfig
from .envelope import Rejection
from .errors import ApiError, Errors
from .messages import DataRecord, Event, InternalRequest, Outputs, ReplyTo, Request, Response, StateRecord
from .protocol.loader import shape
from .records import parse_record_key
from .result import Cancel, CoordinatorResult, Defer, Schedule
from .routing import coordinator_partition
from .timers import Timer, Timers

# Version of the snapshot's data model (the dict this module produces). Bump it and add a
# migration in state/ when the model changes incompatibly.
SNAPSHOT_SCHEMA = 1

# The partition-wide chunks: the partition's own part, and each component's non-entity part.
PARTITION_CHUNK = chunk_key("Partition")


def component_chunk(name: str) -> str:
    return chunk_key("Component", name)


class PartitionRuntime:
    # Tests set this: a request answered with an ApiError is checked to have left the partition's
    # state exactly as it was. The check encodes what the partition touched, twice per request, so
    # it stops once a partition object has encoded `verify_api_errors_budget` bytes that way (the
    # tests' driver rebuilds the partition per batch, so every request it sends is checked).
    verify_api_errors = False
    verify_api_errors_budget = 4_000_000
    # Tests set this too: a handler, timer handler, replayer or load hook that queues an output,
    # sets a timer or defers work itself, instead of returning it in its result, fails.
    verify_effects = False

    # What makes the coordinators, given by a subclass (as Kafka's runtime is given a shard
    # builder): coordinators.CoordinatorPartition gives the service's.
    @staticmethod
    def build_components(partition: Partition) -> dict[str, Component]:
        raise NotImplementedError("a subclass gives the runtime its coordinators")

    # Component classes added after the coordinators (tests plug in components of their own).
    extra_components: tuple[type[Component], ...] = ()

    # The component that authorises requests before dispatch, as KafkaApis does before it calls a
    # coordinator (coordinators.py names it: the `acls` component, coordinator/authorization.py):
    # `authorize(spec, request)` -> None or a verdict (response / body / merge),
    # `park(reply, request, body)` keeps a parked request's pending merge,
    # `answer_parked(reply, body)` -> its answer merged. None: no authorisation.
    authorizer: str | None = None

    def __init__(
        self,
        partition_id: int,
        config: CoordinatorConfig | None = None,
        snapshot: dict | None = None,
        chunks: ChunkSource | None = None,
    ):
        """An empty partition, or one loaded from a full `snapshot` dict (formats 1 and 2), or one
        reading its entities lazily from `chunks` (format 3, see coordinator/chunks.py)."""
        self.partition_id = int(partition_id)
        self.config = config or CoordinatorConfig()
        self.chunks = chunks if chunks is not None else EMPTY_SOURCE
        self.clock_ms = 0
        head = self.chunks.get(PARTITION_CHUNK) if chunks is not None else None
        self.timers = Timers(self.chunks, head and head.get("timers"))
        # Work for the start of the next micro-batch, i.e. after this batch's outputs are durable
        # (Spark commits a batch only after its sink writes succeed): key -> [kind, payload].
        self.deferred: dict[str, list] = {}
        self.out = Outputs()
        self.firing: Timer | None = None  # the timer being fired, for crash reports
        self._verified = 0  # bytes encoded by verify_api_errors
        self.components: dict[str, Any] = self.build_components(self)
        for cls in self.extra_components:
            self.components[cls.name] = cls(self)
        self._owners: _Owners | None = None  # timer and record kind -> component (see _owners_of)
        self._reply_to_re = re.compile(self.config["coordinator.reply.to.pattern"])
        if head is not None:
            self._load_head(head)
        if snapshot is not None:
            self._load(snapshot)

    # ----------------------------------------------------------------- snapshot
    def to_json(self) -> dict:
        return {
            "schema": SNAPSHOT_SCHEMA,
            "partition": self.partition_id,
            "clock": self.clock_ms,
            "timers": self.timers.to_json(),
            "deferred": self.deferred,
            "components": {name: c.to_json() for name, c in self.components.items()},
        }

    def _load(self, snap: dict) -> None:
        if snap.get("schema") != SNAPSHOT_SCHEMA:
            raise ValueError(f"snapshot schema {snap.get('schema')} needs migration to {SNAPSHOT_SCHEMA}")
        if snap.get("partition", self.partition_id) != self.partition_id:
            raise ValueError("snapshot belongs to another coordinator partition")
        self.clock_ms = int(snap.get("clock", 0))
        self.timers = Timers.from_json(snap.get("timers", {}))
        self.deferred = snap.get("deferred", {})
        for name, data in snap.get("components", {}).items():
            if name in self.components:
                self.components[name].load_json(data)

    def _load_head(self, head: dict) -> None:
        if head.get("schema") != SNAPSHOT_SCHEMA:
            raise ValueError(f"chunked state schema {head.get('schema')} needs migration to {SNAPSHOT_SCHEMA}")
        if head.get("partition", self.partition_id) != self.partition_id:
            raise ValueError("state belongs to another coordinator partition")
        self.clock_ms = int(head.get("clock", 0))
        self.deferred = head.get("deferred", {})
        for name, c in self.components.items():
            key = component_chunk(name)
            if hasattr(c, "bind_rest"):  # the component reads its part when it first needs it
                c.bind_rest(lambda key=key: self.chunks.get(key))
                continue
            rest = self.chunks.get(key)
            if rest is not None:
                getattr(c, "load_rest", c.load_json)(rest)

    def dirty_chunks(self) -> dict:
        """{chunk key: JSON value, or None for a deleted chunk} for everything this partition may
        have changed since it was loaded: the entities it decoded or wrote, and the partition-wide
        chunks. Unchanged entries are fine (the writer drops those whose bytes did not change).
        Costs O(entities touched), whatever the partition holds."""
        out = {
            PARTITION_CHUNK: {
                "schema": SNAPSHOT_SCHEMA,
                "partition": self.partition_id,
                "clock": self.clock_ms,
                "deferred": self.deferred,
                "timers": self.timers.meta(),
            }
        }
        out.update(self.timers.dirty_items())
        for name, c in self.components.items():
            rest = getattr(c, "rest_json", c.to_json)()
            if rest is not UNCHANGED:
                out[component_chunk(name)] = rest
            for lazy in getattr(c, "chunk_maps", tuple)():
                out.update(lazy.dirty_items())
        return out

    def checkpoint(self) -> ChunkSource:
        """The partition's state as it is now, as a chunk source a new partition can be loaded from
        (`CoordinatorPartition(id, config, chunks=...)`), at O(entities touched): no payload is
        copied. E.g. to resume a batch after a failing item from the state before that item."""
        return OverlaySource(self.chunks, self.dirty_chunks())

    def snapshot(self) -> ChunkSource:
        """The state as it is now, sharing nothing with this partition (for `restore`)."""
        return self.checkpoint()

    @classmethod
    def restore(cls, snapshot: ChunkSource, config: CoordinatorConfig) -> PartitionRuntime:
        head = snapshot.get(PARTITION_CHUNK)
        if head is None:  # a snapshot always has it
            raise ChunkCorrupt(PARTITION_CHUNK, "the snapshot has no partition chunk")
        return cls(head["partition"], config, chunks=snapshot)

    def logical_state(self) -> dict:
        """The snapshot without the clock and timers: what must be equal between a run that was
        killed and restarted and one that was not (their batch boundaries differ)."""
        snap = self.to_json()
        snap["components"].pop("metrics", None)  # counts batches and their times
        snap["components"].pop("channel", None)  # its epochs are batch times
        # (client/drill/reference.py's `logical` leaves out the same for a checkpointed snapshot)
        return snap["components"]

    # ----------------------------------------------------------------- context for components
    # Components read the partition (its clock, config, timers, metadata) but change it only by
    # returning a `CoordinatorResult`: `apply` is the one way an effect happens. `respond` and
    # `emit_event` below are the runtime's own (answers to rejected input, failures in batch.py).
    def owns(self, key: str | None) -> bool:
        return coordinator_partition(key, self.config["coordinator.partitions"]) == self.partition_id

    def respond(self, reply: ReplyTo, body: dict) -> None:
        if reply.reply_to is not None and self.reply_target_problem(reply.reply_to) is not None:
            # Checked when the request arrived; a parked answer whose topic has gone since then
            # goes to the service's response topic rather than nowhere (or into the wrong topic).
            reply = _default_target(reply)
        self.out.responses.append(Response(reply, body))

    @property
    def reply_to_re(self) -> re.Pattern:
        """`coordinator.reply.to.pattern`: the topics clients may name for their answers."""
        return self._reply_to_re

    def reply_target_problem(self, reply_to: str | None) -> str | None:
        """Why `reply_to` may not receive answers, or None if it may (None = the service's own
        response topic). A client picks this topic, so it must match the configured pattern, be a
        legal Kafka topic name, name none of the service's own or Kafka's internal topics, and
        exist (once topic metadata has arrived: a missing topic would stall the sink)."""
        if reply_to is None:
            return None
        if not self._reply_to_re.fullmatch(reply_to):
            return f"replyTo must name a response topic matching {self._reply_to_re.pattern!r}"
        if not _LEGAL_TOPIC.fullmatch(reply_to) or reply_to in (".", ".."):
            return "replyTo is not a legal Kafka topic name"
        if reply_to.startswith("__") or reply_to in self.config["coordinator.internal.topics"]:
            return "replyTo may not name an internal topic"
        metadata = self.components.get("metadata")
        if metadata is not None and metadata.available and not metadata.exists(reply_to):
            return f"replyTo topic {reply_to!r} does not exist"
        return None

    def emit_event(self, key: str, event: str, **fields: Any) -> None:
        body = {"event": event, "timeMs": self.clock_ms, "coordinatorPartition": self.partition_id}
        body.update(fields)
        self.out.events.append(Event(key, body))

    def run_deferred(self, skip: Callable[[Timer], bool] = lambda t: False) -> None:
        # Only the work deferred by earlier batches: work a deferred handler defers in turn waits
        # for the next batch, after this batch's outputs are durable.
        for key in list(self.deferred):
            if key not in self.deferred:
                continue
            kind, payload = self.deferred.pop(key)
            timer = Timer(key, self.clock_ms, kind, payload)
            if skip(timer):
                continue
            self.fire(timer)

    def component(self, name: str):
        return self.components[name]

    # ----------------------------------------------------------------- time
    @property
    def grace_ms(self) -> int:
        return self.config["coordinator.timer.grace.ms"]

    @property
    def read_margin_ms(self) -> int:
        return self.config["coordinator.timer.read.margin.ms"]

    @property
    def batch_time_horizon(self) -> bool:
        return self.config["coordinator.timer.batch.time.horizon"]

    def advance_to(
        self, now_ms: int, horizon_ms: int | None = None, skip: Callable[[Timer], bool] = lambda t: False
    ) -> None:
        """Fire, in deadline order, every timer due by `now_ms` but not past `horizon_ms`, then move
        the clock to `now_ms`. A timer runs with the clock at its deadline (or later, never
        backwards), so what it does does not depend on how late the batch ran.

        The horizon is how far time is known to be complete: the stream passes the batch time less
        `coordinator.timer.grace.ms`, because a request appended just before the batch time may only
        be read by the next batch, and must still be applied before a later deadline fires."""
        limit = now_ms if horizon_ms is None else min(now_ms, horizon_ms)
        while True:
            timer = self.timers.pop_due(limit)
            if timer is None:
                break
            self.clock_ms = max(self.clock_ms, timer.deadline_ms)
            if skip(timer):
                self.emit_event(
                    timer.key,
                    "TimerDropped",
                    timer=timer.key,
                    kind=timer.kind,
                    reason="its handler failed; see the TimerFailed event",
                )
                continue
            self.fire(timer)
        self.clock_ms = max(self.clock_ms, now_ms)

    def fire(self, timer: Timer) -> None:
        name = (self._owners or self._owners_of()).timers.get(timer.kind)
        if name is None:
            raise KeyError(f"no handler for timer kind {timer.kind!r}")
        owner = self.components[name]
        self.firing = timer
        before = self._effects() if self.verify_effects else None
        result = owner.TIMER_HANDLERS[timer.kind](owner, timer)
        if before is not None:
            self._check_no_effects(before, f"timer handler {timer.kind!r}")
        if result is not None:
            self.apply(result)
        self.firing = None

    def next_deadline(self) -> int | None:
        """When the partition next needs to run: the earliest deadline plus the read margin. A
        record appended then (the timer waker's wake) lets the batch that reads it fire the timer
        (`batch.timer_horizon`)."""
        deadline = self.timers.next_deadline()
        if deadline is not None:
            deadline += self.read_margin_ms
        if self.deferred:  # as soon as possible: the next batch
            deadline = self.clock_ms + 1 if deadline is None else min(deadline, self.clock_ms + 1)
        return deadline

    # ----------------------------------------------------------------- requests
    def handle(self, item: Request | Rejection) -> None:
        """Apply one request (or answer one rejected input). The clock must already have been
        advanced to the request's time with `advance_to`."""
        if isinstance(item, Rejection):
            self._reject(item)
            return
        request = item
        spec = lookup(request.api_key)
        assert spec is not None, "parse_request only lets registered APIs through"
        if request.reply.reply_to is not None:  # (None: the service's own response topic)
            problem = self.reply_target_problem(request.reply.reply_to)
            if problem is not None:
                self._reject(
                    Rejection(Errors.INVALID_REQUEST, problem, _default_target(request.reply), spec, request.body)
                )
                return
        body, merge = request.body, None  # the request as sent: error answers are built from it
        authorizer = None
        if request.principal is not None and not spec.internal and self.authorizer is not None:
            # KafkaApis' authorisation, before the coordinator (coordinator/authorization.py).
            authorizer = self.components[self.authorizer]
            verdict = authorizer.authorize(spec, request)
            if verdict is not None:
                if verdict.response is not None:
                    self.respond(request.reply, shape(spec.name + "Response", request.api_version, verdict.response))
                    return
                if verdict.body is not None:
                    request.body = verdict.body
                merge = verdict.merge
        if spec.routing_field is not None and not self.owns(body.get(spec.routing_field)):
            self.respond(request.reply, spec.error_response(request.api_version, body, Errors.NOT_COORDINATOR, None))
            return
        self.out.applied.append((spec.name, request.time_ms))
        owner = self.components[spec.component]
        handler = owner.HANDLERS[spec.name]
        mark = self.out.mark()
        before = None
        if self.verify_api_errors and self._verified < self.verify_api_errors_budget:
            before = self._fingerprint()
            self._verified += sum(len(v) for v in before.values())
        effects = self._effects() if self.verify_effects else None
        try:
            result = handler(owner, request)
            if effects is not None:
                self._check_no_effects(effects, f"{spec.name}'s handler")
        except ApiError as e:
            # A handler that raises has returned no result, so nothing of it was applied.
            self.out.rollback(mark)
            changes = self._state_changes(before) if before is not None else []
            if changes:
                raise AssertionError(
                    f"{spec.name} raised {e.error.name} after changing the partition's state: "
                    + "; ".join(changes)[:2000]
                ) from e
            self.respond(request.reply, spec.error_response(request.api_version, body, e.error, e.message))
            return
        if merge is not None:  # the denied items of an authorised request, into the handler's answer
            if isinstance(result, CoordinatorResult):
                if result.response is not None:
                    result.response = shape(spec.name + "Response", request.api_version, merge(result.response))
                elif authorizer is not None:  # parked: merged when its answer is sent
                    authorizer.park(request.reply, request, body)
            elif result is not None:
                result = shape(spec.name + "Response", request.api_version, merge(result))
        if isinstance(result, CoordinatorResult):
            self.apply(result, request.reply)
        elif result is not None:  # shorthand of a handler that changes nothing: its response body
            self.respond(request.reply, result)

    def apply(self, result: CoordinatorResult, reply: ReplyTo | None = None) -> None:
        """Apply what a handler computed: append its records and replay them (unless it is one of
        Kafka's in-memory-only results), apply its timer operations, queue its outputs, and
        answer the request (`reply`) with its response, if it has one."""
        out = self.out
        if result.records:
            replay = result.replay_records
            for record in result.records:
                out.records.append(record)
                if replay:
                    self.replay(record)
        # (Each list is tested before it is walked: most results fill one or two of them.)
        if result.timers:
            self._apply_timers(result.timers)
        if result.events:
            for e in result.events:
                self.emit_event(e.key, e.event, **e.fields)
        if result.replies:
            for r in result.replies:
                body = (
                    r.body
                    if self.authorizer is None
                    else self.components[self.authorizer].answer_parked(r.reply, r.body)
                )
                self.respond(r.reply, body)
        if result.requests:
            out.requests.extend(result.requests)
        if result.data:
            out.data.extend(result.data)
        if result.steps is not None:
            for step in result.steps:  # each step is computed from the state the previous one left
                self.apply(step, reply)
        if result.response is not None:
            if reply is None:
                raise ValueError("a timer's result cannot carry a response")
            self.respond(reply, result.response)

    def _apply_timers(self, ops: list) -> None:
        for op in ops:
            if isinstance(op, Schedule):
                self.timers.schedule(op.key, op.deadline_ms, op.kind, op.payload)
            elif isinstance(op, Cancel):
                self.timers.cancel(op.key)
            elif isinstance(op, Defer):
                self.deferred[op.key] = [op.kind, op.payload or {}]

    def replay(self, record: StateRecord) -> None:
        """Apply one state-log record to the state: the only way records change it. Its kind picks
        the component and the replayer (the components' REPLAYERS tables)."""
        kind, ids = parse_record_key(record.key)
        name = (self._owners or self._owners_of()).records.get(kind)
        if name is None:
            raise ValueError(f"no component replays state-log record {record.key!r}")
        owner = self.components[name]
        before = self._effects() if self.verify_effects else None
        owner.REPLAYERS[kind](owner, kind, ids, record.value)
        if before is not None:
            self._check_no_effects(before, f"the replayer of {kind!r} records")

    def _effects(self) -> tuple:
        """What a component could change at once without a result: the queued outputs, the timers
        (every schedule takes a new sequence number, every cancel shrinks them) and deferred work."""
        return self.out.mark(), self.timers.next_seq, len(self.timers), _canonical(self.deferred)

    def _check_no_effects(self, before: tuple, who: str) -> None:
        if self._effects() != before:
            raise AssertionError(f"{who} applied an effect itself instead of returning it in its result")

    def _owners_of(self) -> _Owners:
        """Which component handles each timer kind and replays each record kind: the same for every
        partition with the same builder and extra components (a builder builds the same classes
        every time), so computed once per pair of them."""
        key = (type(self).build_components, self.extra_components)
        owners = _OWNERS.get(key)
        if owners is None:
            owners = _OWNERS[key] = _Owners(
                {kind: name for name, c in reversed(self.components.items()) for kind in c.TIMER_HANDLERS},
                {kind: name for name, c in reversed(self.components.items()) for kind in c.REPLAYERS},
            )
        self._owners = owners
        return owners

    def _fingerprint(self) -> dict[str, str]:
        """The canonical JSON of every chunk this partition has read or written so far (what
        `dirty_chunks` would write), the clock aside: O(entities touched), not O(state)."""
        chunks = self.dirty_chunks()
        out = {k: _canonical(v) for k, v in chunks.items()}
        head = chunks[PARTITION_CHUNK]
        out[PARTITION_CHUNK] = _canonical({k: v for k, v in head.items() if k != "clock"})
        return out

    def _state_changes(self, before: dict[str, str]) -> list[str]:
        """The chunks whose content differs from `before` (a chunk first read since then is
        compared with its stored value)."""
        after = self._fingerprint()
        changed = []
        for key in sorted(before.keys() | after.keys()):
            old = before[key] if key in before else _canonical(self.chunks.get(key))
            new = after[key] if key in after else _canonical(self.chunks.get(key))
            if old != new:
                changed.append(f"{key}: {_first_difference(old, new)}")
        return changed

    def _reject(self, rejection: Rejection) -> None:
        reply = rejection.reply
        if reply is not None:
            problem = self.reply_target_problem(reply.reply_to)
            if problem is not None:  # the replyTo check comes first, for rejections too
                reply = _default_target(reply)
                rejection = Rejection(
                    Errors.INVALID_REQUEST,
                    problem,
                    reply,
                    rejection.spec,
                    rejection.body,
                    rejection.key,
                    rejection.source,
                )
            self.respond(reply, rejection.response_body())
        else:
            self.emit_event(
                rejection.key or "",
                "RequestRejected",
                errorCode=rejection.error.code,
                errorName=rejection.error.name,
                errorMessage=rejection.message,
                requestPartition=rejection.source[0],
                requestOffset=rejection.source[1],
            )

    def drain(self) -> Outputs:
        out, self.out = self.out, Outputs()
        return out

    # ----------------------------------------------------------------- state log
    @classmethod
    def from_records(
        cls, partition_id: int, records: list[StateRecord], config: CoordinatorConfig | None = None, now_ms: int = 0
    ) -> PartitionRuntime:
        """Rebuild a partition by replaying its state-log records in log order, as a Kafka
        coordinator loads __consumer_offsets / __transaction_state."""
        part = cls(partition_id, config)
        part.clock_ms = now_ms
        for record in records:
            part.replay(record)
        for c in part.components.values():
            before = part._effects() if part.verify_effects else None
            loaded = c.after_replay()
            if before is not None:
                part._check_no_effects(before, f"{c.name}'s after_replay")
            if loaded is not None:
                part.apply(loaded)
        return part


class _Owners(NamedTuple):
    timers: dict[str, str]  # timer kind -> component name
    records: dict[str, str]  # state-log record kind -> component name


_OWNERS: dict[tuple[ComponentsBuilder, tuple[type[Component], ...]], _Owners] = {}  # by builder and extra components


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _first_difference(a: str, b: str) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"...{a[max(0, i - 100) : i + 100]}... became ...{b[max(0, i - 100) : i + 100]}..."


# Kafka's Topic.validate: at most 249 characters of [a-zA-Z0-9._-].
_LEGAL_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")


def _default_target(reply: ReplyTo) -> ReplyTo:
    return ReplyTo(reply.api_key, reply.api_version, reply.correlation_id, reply.client_id, None)


__all__ = [
    "PartitionRuntime",
    "SNAPSHOT_SCHEMA",
    "ApiSpec",
    "StateRecord",
    "Event",
    "DataRecord",
    "InternalRequest",
]
