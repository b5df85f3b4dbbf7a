"""What a handler returns and only the runtime applies: Kafka's `CoordinatorResult`.

A request handler or timer handler computes a `CoordinatorResult` (state-log records, its
response, events, timers to set or cancel, answers to parked requests, requests to other
partitions, data records) without changing the partition. `CoordinatorPartition.apply` then
appends the records and replays them into the state (records change state only through replay),
applies the timer operations and queues the outputs. A handler that raises `ApiError` has returned
nothing, so nothing was applied: the error changes nothing. A handler that changes nothing (a
describe, list or fetch) may return just its response body, shorthand for
`CoordinatorResult(response=body)`.

Kafka's one exception is explicit: `replay_records=False` (Kafka's `CoordinatorResult(records,
response, appendFuture, replayRecords=false)`) for classic groups, whose live state Kafka keeps
only in memory and mutates in the handler; their GroupMetadata records serve coordinator load.

A request whose later writes depend on what its earlier records do to the state (WriteTxnMarkers:
the offsets a marker materializes decide the records that follow it) returns its `steps`: an
iterator of results that the runtime applies one by one, resuming the iterator only once the
previous result is applied, as Kafka chains write operations. Nothing is applied by the handler
itself; a step runs after changes, so it never raises `ApiError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from .messages import DataRecord, InternalRequest, ReplyTo, Response, StateRecord


# The timer operations and events are named tuples: several are made per request, and a tuple is
# far cheaper to build than a frozen dataclass (whose __init__ sets each field through
# object.__setattr__).
class Schedule(NamedTuple):
    """Set (or replace) the timer `key`."""

    key: str
    deadline_ms: int
    kind: str
    payload: dict | None = None


class Cancel(NamedTuple):
    """Cancel the timer `key` (nothing if it is not set)."""

    key: str


class Defer(NamedTuple):
    """Run timer handler `kind` at the start of the next micro-batch (after this batch's outputs
    are durable); the same key replaces."""

    key: str
    kind: str
    payload: dict | None = None


TimerOp = Schedule | Cancel | Defer


class PendingEvent(NamedTuple):
    """An event for the events topic; the runtime stamps it with the time and partition."""

    key: str
    event: str
    fields: dict


class CoordinatorResult:
    __slots__ = ("response", "records", "replay_records", "events", "timers", "replies", "requests", "data", "steps")

    def __init__(
        self,
        response: dict | None = None,  # None: no answer now (parked, or a timer's result)
        records: list[StateRecord] | None = None,
        replay_records: bool = True,
        events: list[PendingEvent] | None = None,
        timers: list[TimerOp] | None = None,
        replies: list[Response] | None = None,  # answers to requests parked earlier
        requests: list[InternalRequest] | None = None,
        data: list[DataRecord] | None = None,
        # Results applied after this one's effects, one at a time, before its response (see above).
        steps: Iterator[CoordinatorResult] | None = None,
    ):
        # Hand-written (not a dataclass): a result is built for nearly every request.
        self.response = response
        self.records: list[StateRecord] = [] if records is None else records
        self.replay_records = replay_records
        self.events: list[PendingEvent] = [] if events is None else events
        self.timers: list[TimerOp] = [] if timers is None else timers
        self.replies: list[Response] = [] if replies is None else replies
        self.requests: list[InternalRequest] = [] if requests is None else requests
        self.data: list[DataRecord] = [] if data is None else data
        self.steps = steps

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"CoordinatorResult({fields})"

    # -------------------------------------------------------------- building
    def record(self, key: str, value: dict | None) -> CoordinatorResult:
        self.records.append(StateRecord(key, value))
        return self

    def emit(self, key: str, event: str, **fields: Any) -> CoordinatorResult:
        self.events.append(PendingEvent(key, event, fields))
        return self

    def schedule(self, key: str, deadline_ms: int, kind: str, payload: dict | None = None) -> CoordinatorResult:
        self.timers.append(Schedule(key, deadline_ms, kind, payload))
        return self

    def cancel(self, key: str) -> CoordinatorResult:
        self.timers.append(Cancel(key))
        return self

    def defer(self, key: str, kind: str, payload: dict | None = None) -> CoordinatorResult:
        self.timers.append(Defer(key, kind, payload))
        return self

    def reply(self, reply: ReplyTo, body: dict) -> CoordinatorResult:
        self.replies.append(Response(reply, body))
        return self

    def send_request(
        self, routing_key: str, api_key: str, api_version: int, body: dict, correlation_id: int, client_id: str
    ) -> CoordinatorResult:
        self.requests.append(
            InternalRequest(
                routing_key,
                {
                    "apiKey": api_key,
                    "apiVersion": api_version,
                    "correlationId": correlation_id,
                    "clientId": client_id,
                    "request": body,
                },
            )
        )
        return self

    def write_data(self, record: DataRecord) -> CoordinatorResult:
        self.data.append(record)
        return self

    def merge(self, other: CoordinatorResult | None) -> CoordinatorResult:
        """Append `other`'s effects after this result's (its response, if any, wins). Both must
        agree on replaying their records."""
        if other is None:
            return self
        if other.records and self.records and other.replay_records != self.replay_records:
            raise ValueError("cannot merge results that disagree on replaying their records")
        if other.steps is not None or self.steps is not None:
            raise ValueError("cannot merge results with steps")
        if other.records:
            self.replay_records = other.replay_records
        self.records.extend(other.records)
        self.events.extend(other.events)
        self.timers.extend(other.timers)
        self.replies.extend(other.replies)
        self.requests.extend(other.requests)
        self.data.extend(other.data)
        if other.response is not None:
            self.response = other.response
        return self

    def is_empty(self) -> bool:
        return not (
            self.response is not None
            or self.records
            or self.events
            or self.timers
            or self.replies
            or self.requests
            or self.data
            or self.steps is not None
        )
