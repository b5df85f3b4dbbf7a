"""What goes in and out of a coordinator partition: requests, reply handles and outputs.

Everything here is plain data that survives a JSON round trip, because parked replies and
timers live in the partition's encoded state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


class ReplyTo(NamedTuple):
    """Where and how to answer a request; stored when a response is parked (JoinGroup, SyncGroup).
    A named tuple (immutable, as the frozen dataclass it was): one is built for every request, and
    a frozen dataclass sets each field through object.__setattr__."""

    api_key: str
    api_version: int
    correlation_id: int
    client_id: str = ""
    reply_to: str | None = None  # response topic override; None = the configured response topic

    def to_json(self) -> dict:
        return self._asdict()

    @staticmethod
    def from_json(d: dict) -> ReplyTo:
        return ReplyTo(**d)


@dataclass
class Request:
    """A validated request, ready for a handler."""

    reply: ReplyTo
    body: dict
    time_ms: int  # the broker's append time of the request record
    key: str | None = None  # the record key (routing key)
    source: tuple[int, int] = (-1, -1)  # (request-topic partition, offset), for diagnostics
    # The client's socket address as Kafka prints it ("/10.0.0.1"), when a gateway relays the
    # request (the envelope's optional `clientHost`); "" otherwise. Never stored in a parked reply.
    client_host: str = ""
    # The request came through the Kafka-protocol gateway (the envelope's optional `kafkaClient`):
    # from an unmodified Kafka client, whose transactions need real control records as markers.
    kafka_client: bool = False
    # The client's authenticated principal ("User:alice"), when a gateway with a SASL listener relays
    # the request and signs it (the envelope's `principal`, taken only from a record whose
    # coordinator-principal-mac verifies); None on the JSON path, which has no authentication.
    principal: str | None = None
    # The publisher of an internal record's stamp (coordinator/channel.py), e.g. "acl-publisher";
    # None for a client's record or an unstamped internal one. Set by the batch, never stored.
    publisher: str | None = None

    @property
    def api_key(self) -> str:
        return self.reply.api_key

    @property
    def api_version(self) -> int:
        return self.reply.api_version


@dataclass
class Response:
    reply: ReplyTo
    body: dict


@dataclass
class Event:
    """A timer-driven or state-change event for the events topic."""

    key: str
    body: dict


@dataclass
class StateRecord:
    """One record of the state log (the role of __consumer_offsets / __transaction_state).

    `key` is unique per entity so that compaction keeps the latest value; `value` None is a
    tombstone."""

    key: str
    value: dict | None


@dataclass
class InternalRequest:
    """A request one coordinator partition sends to another through the request topic."""

    key: str
    envelope: dict
    # (publisher, epoch, sequence), set when the batch ends (coordinator/channel.py)
    stamp: tuple[str, int, int] | None = None


@dataclass
class DataRecord:
    """A record written into a data topic partition (transaction markers)."""

    topic: str
    partition: int
    key: str | None
    value: bytes | None
    headers: list[tuple[str, bytes]] = field(default_factory=list)


@dataclass(init=False)  # the __init__ below is cheaper than a generated one; one is built per partition load
class Outputs:
    responses: list[Response]
    events: list[Event]
    records: list[StateRecord]
    requests: list[InternalRequest]
    data: list[DataRecord]
    # (API name, request time) of every request applied, for metrics (coordinator/metrics.py).
    applied: list[tuple[str, int]]
    # The partition's metrics record of this batch (None: the batch did nothing), set by run_batch.
    metrics: dict | None

    def __init__(
        self,
        responses: list[Response] | None = None,
        events: list[Event] | None = None,
        records: list[StateRecord] | None = None,
        requests: list[InternalRequest] | None = None,
        data: list[DataRecord] | None = None,
        applied: list[tuple[str, int]] | None = None,
        metrics: dict | None = None,
    ):
        self.responses = [] if responses is None else responses
        self.events = [] if events is None else events
        self.records = [] if records is None else records
        self.requests = [] if requests is None else requests
        self.data = [] if data is None else data
        self.applied = [] if applied is None else applied
        self.metrics = metrics

    def __len__(self) -> int:
        return len(self.responses) + len(self.events) + len(self.records) + len(self.requests) + len(self.data)

    def mark(self) -> tuple[int, ...]:
        """Where the outputs end now, for `rollback`."""
        return (len(self.responses), len(self.events), len(self.records), len(self.requests), len(self.data))

    def rollback(self, mark: tuple[int, ...]) -> None:
        """Drop every output added since `mark`."""
        del self.responses[mark[0] :]
        del self.events[mark[1] :]
        del self.records[mark[2] :]
        del self.requests[mark[3] :]
        del self.data[mark[4] :]


def response_envelope(reply: ReplyTo, body: dict[str, Any]) -> dict:
    return {
        "correlationId": reply.correlation_id,
        "apiKey": reply.api_key,
        "apiVersion": reply.api_version,
        "clientId": reply.client_id,
        "response": body,
    }
