"""Apply one micro-batch of request records to a coordinator partition.

Order: requests are applied by append time, then source (client or internal channel), request-topic
partition and offset (append times are made non-decreasing within each source partition first, so a
partition's own order is never changed). Before each request, timers due by its time fire; after the
last one, timers due by the batch time fire. Timers never fire past the batch time less
`coordinator.timer.grace.ms` (0 in the pure core): see `PartitionRuntime.advance_to`.

Crash isolation: if parsing, a handler or a timer raises anything but `ApiError`, that is a bug, and
the partition may be half-changed. The batch is then re-run without the failing item (its request
gets UNKNOWN_SERVER_ERROR where it can be answered, and an event names it), so bad input never
corrupts state or stops the stream, however many items fail. A re-run does not start over: it
resumes from a snapshot taken just before the previous failure, so n failing items cost n snapshots,
not n re-runs of the whole batch. Re-running is deterministic, so a replayed batch ends identically.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass

from .api import registered
from .chunks import ChunkCorrupt, ChunkSource
from .envelope import parse_record, scan_reply
from .errors import Errors
from .messages import Event, Outputs, Request
from .runtime import PartitionRuntime
from .timers import Timer


@dataclass
class InputRecord:
    key: str | None
    value: bytes | None
    time_ms: int  # LogAppendTime of the request record
    partition: int = 0  # request-topic partition
    offset: int = 0
    value_size: int | None = None  # full size if `value` was truncated upstream
    # True only for records of the service's own authenticated internal channel (metadata
    # broadcasts, requests between coordinator partitions); see streaming/trust.py.
    internal: bool = False
    # False when the record key was not valid UTF-8 (the stream passes a repaired copy).
    key_valid: bool = True
    # An internal record's (publisher, epoch, sequence), covered by its MAC (coordinator/channel.py).
    stamp: tuple[str, int, int] | None = None
    # A request-topic record whose `coordinator-principal-mac` header verified under the gateway's
    # key (streaming/trust.py): only then may its envelope carry a `principal`.
    principal_verified: bool = False

    @property
    def source(self) -> tuple[int, int]:
        """Which log the record came from: (channel, partition); channel 1 is the internal one."""
        return (1 if self.internal else 0, self.partition)


def order_records(records: list[InputRecord]) -> list[tuple[int, InputRecord]]:
    """(effective time, record) in application order."""
    # Sorted as plain tuples (compared in C, no key function): (source, offset, position); the
    # position breaks ties as a stable sort would, and no comparison ever reaches a record.
    by_source = sorted([(r.source, r.offset, i) for i, r in enumerate(records)])
    effective: list[tuple[int, tuple[int, int], int, int, int]] = []
    running: dict[tuple[int, int], int] = {}
    for j, (source, offset, i) in enumerate(by_source):
        time_ms = records[i].time_ms
        t = running.get(source, time_ms)
        if time_ms > t:
            t = time_ms
        running[source] = t
        effective.append((t, source, offset, j, i))
    effective.sort()
    return [(t, records[i]) for t, _, _, _, i in effective]


class _ItemFailed(Exception):
    def __init__(self, ident, position: int, exc: BaseException):
        super().__init__(str(exc))
        self.ident = ident
        self.position = position  # index of the record before which the failing item ran
        self.detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:500]


@dataclass
class _Resume:
    """The partition just before record `position`: where a re-run picks up."""

    position: int
    snapshot: ChunkSource
    outputs: Outputs


def timer_horizon(partition: PartitionRuntime, batch_time_ms: int, read_until_ms: int | None) -> int:
    """How far the batch may fire timers: up to a time before which every request is known to have
    been read, so that a request appended before a deadline is applied before the timer fires.

    - `batch_time_ms − grace`: Spark takes the batch time after it asked for the latest offsets, so
      a request appended just before the batch time may only be read by the next batch;
    - `read_until_ms − read margin`, where `read_until_ms` is the latest append time of the records
      this partition's batch read (a wake record included): the batch's offsets were taken after
      that record was readable, so every record appended before it, less the time a record may stay
      unreadable, is in this batch or an earlier one.

    Never past the batch time. Without `coordinator.timer.batch.time.horizon` (the stream with the
    timer waker) only what the batch read counts: a catch-up after downtime is read over several
    batches, and the batch time would fire every timer due by now in the first of them, before
    requests appended earlier that the next ones read."""
    by_reading = None if read_until_ms is None else min(batch_time_ms, read_until_ms - partition.read_margin_ms)
    if not partition.batch_time_horizon:
        return partition.clock_ms if by_reading is None else by_reading
    horizon = batch_time_ms - partition.grace_ms
    return horizon if by_reading is None else max(horizon, by_reading)


def run_batch(
    load: Callable[[], PartitionRuntime],
    records: list[InputRecord],
    batch_time_ms: int,
    read_until_ms: int | None = None,
) -> tuple[PartitionRuntime, Outputs]:
    """Apply `records` and the timers due by `batch_time_ms` to the partition `load()` returns.
    `read_until_ms`: the latest append time of the records the batch read for this partition,
    records it does not apply (wake records) included; by default, that of `records`.

    `load` must return a fresh partition from the same starting state each time it is called.
    Never raises because of input: only if the state cannot be decoded (`load` fails, or a chunk
    the batch touches is corrupt: `ChunkCorrupt`, which names it)."""
    ordered = order_records(records)
    if read_until_ms is None and ordered:
        read_until_ms = ordered[-1][0]
    poisoned: dict[object, str] = {}
    resume: _Resume | None = None
    capture_at: int | None = None
    while True:
        if resume is None:
            partition = load()
        else:
            partition = type(partition).restore(resume.snapshot, partition.config)
            partition.out = _copy_outputs(resume.outputs)
        captured: list[_Resume] = []

        def capture(
            position: int,
            p: PartitionRuntime = partition,
            at: int | None = capture_at,
            into: list[_Resume] = captured,
        ) -> None:
            if position == at:
                into.append(_Resume(position, p.snapshot(), _copy_outputs(p.out)))

        try:
            _apply(
                partition,
                ordered,
                timer_horizon(partition, batch_time_ms, read_until_ms),
                poisoned,
                start=resume.position if resume else None,
                capture=capture,
            )
            out = partition.drain()
            partition.component("channel").stamp(out.requests, batch_time_ms)
            out.metrics = _finish_metrics(partition, out, batch_time_ms)
            return partition, out
        except _ItemFailed as failed:
            if failed.ident in poisoned:  # cannot happen: a poisoned item is never run again
                raise RuntimeError(f"item {failed.ident} failed twice") from None
            poisoned[failed.ident] = failed.detail
            if captured:
                resume = captured[0]
            # The next run takes its snapshot where this one failed (everything before it is
            # known to succeed) and skips the failing item from there.
            capture_at = failed.position


def _finish_metrics(partition: PartitionRuntime, out: Outputs, batch_time_ms: int) -> dict | None:
    """The batch's metrics record. A bug in the metrics must not cost the batch: it is reported by
    an event and the batch goes on without a record."""
    try:
        return partition.component("metrics").finish_batch(out, batch_time_ms)
    except ChunkCorrupt:
        raise
    except Exception as e:  # noqa: BLE001 - a bug in coordinator/metrics.py
        out.events.append(
            Event(
                "",
                {
                    "event": "MetricsFailed",
                    "timeMs": partition.clock_ms,
                    "coordinatorPartition": partition.partition_id,
                    "detail": "".join(traceback.format_exception_only(type(e), e)).strip()[:500],
                },
            )
        )
        return None


def _copy_outputs(out: Outputs) -> Outputs:
    return Outputs(
        list(out.responses), list(out.events), list(out.records), list(out.requests), list(out.data), list(out.applied)
    )


def _apply(
    partition: PartitionRuntime,
    ordered,
    horizon: int,
    poisoned: dict,
    start: int | None,
    capture: Callable[[int], None],
) -> None:
    max_bytes = partition.config["coordinator.request.max.bytes"]

    def skip_timer(timer: Timer) -> bool:
        return ("timer", timer.key, timer.deadline_ms) in poisoned

    def advance(now_ms: int, position: int) -> None:
        try:
            partition.advance_to(now_ms, horizon, skip_timer)
        except ChunkCorrupt:
            raise  # damaged state is not an item's fault: no item is skipped for it
        except Exception as e:  # noqa: BLE001 - a bug in a timer handler
            raise _ItemFailed(_current_timer(partition), position, e) from e

    if start is None:  # deferred work runs once, before the first record
        try:
            partition.run_deferred(skip_timer)
        except ChunkCorrupt:
            raise
        except Exception as e:  # noqa: BLE001 - a bug in a deferred handler
            raise _ItemFailed(_current_timer(partition), 0, e) from e
        start = 0
    for position in range(start, len(ordered)):
        capture(position)
        t, rec = ordered[position]
        advance(t, position)
        if rec.internal and _replayed(partition, rec):
            continue
        if poisoned:
            detail = poisoned.get(("request", rec.source, rec.offset))
            if detail is not None:
                _answer_crashed(partition, rec, t, max_bytes, detail)
                continue
        try:
            item = _parse(rec, t, max_bytes)
            if rec.stamp is not None and isinstance(item, Request):
                item.publisher = rec.stamp[0]
            partition.handle(item)
        except ChunkCorrupt:
            raise
        except Exception as e:  # noqa: BLE001 - a bug in parsing or in a handler
            raise _ItemFailed(("request", rec.source, rec.offset), position, e) from e
    capture(len(ordered))
    advance(horizon, len(ordered))
    for ident, detail in poisoned.items():
        if ident[0] == "timer":
            partition.emit_event(ident[1], "TimerFailed", timer=ident[1], deadlineMs=ident[2], detail=detail)


def _parse(rec: InputRecord, time_ms: int, max_bytes: int):
    """The record's request (or its rejection), as parse_request reads it."""
    return parse_record(
        rec.value,
        rec.key,
        time_ms,
        (rec.partition, rec.offset),
        max_bytes,
        rec.value_size,
        rec.internal,
        rec.key_valid,
        rec.principal_verified,
    )


def _replayed(partition: PartitionRuntime, rec: InputRecord) -> bool:
    """Whether an internal record is older than what its publisher sent before (dropped, and
    reported by the partition that owns its key: a broadcast reaches every partition)."""
    channel = partition.component("channel")
    problem = channel.admit(rec.stamp)
    if problem is None:
        return False
    if partition.owns(rec.key):
        publisher, epoch, sequence = rec.stamp or (None, None, None)
        last = channel.last_seen(publisher) if publisher is not None else None
        partition.emit_event(
            (rec.key or "")[:1024],
            "ReplayedInternalRecord",
            reason=problem,
            publisher=publisher,
            epoch=epoch,
            sequence=sequence,
            lastEpoch=last and last[0],
            lastSequence=last and last[1],
            requestPartition=rec.partition,
            requestOffset=rec.offset,
        )
    return True


def _current_timer(partition: PartitionRuntime):
    timer = getattr(partition, "firing", None)
    partition.firing = None
    return ("timer", timer.key, timer.deadline_ms) if timer else ("timer", "?", -1)


def _answer_crashed(partition: PartitionRuntime, rec: InputRecord, time_ms: int, max_bytes: int, detail: str) -> None:
    """A request whose handling (or parsing) raised: an event, and UNKNOWN_SERVER_ERROR where the
    request can be answered safely."""
    try:
        item = _parse(rec, time_ms, max_bytes)
    except Exception:  # noqa: BLE001 - parsing itself was what failed
        item = None
    reply = item.reply if isinstance(item, Request) else scan_reply(rec.value)
    partition.emit_event(
        rec.key or "",
        "RequestFailed",
        requestPartition=rec.partition,
        requestOffset=rec.offset,
        apiKey=reply.api_key if reply else None,
        correlationId=reply.correlation_id if reply else None,
        detail=detail,
    )
    if isinstance(item, Request):
        spec = registered(item.api_key)  # a parsed request's API is known
        partition.respond(
            item.reply,
            spec.error_response(
                item.api_version,
                item.body,
                Errors.UNKNOWN_SERVER_ERROR,
                "the coordinator failed to process this request",
            ),
        )
    elif reply is not None:
        partition.respond(
            reply,
            {
                "throttleTimeMs": 0,
                "errorCode": Errors.UNKNOWN_SERVER_ERROR.code,
                "errorMessage": "the coordinator failed to process this request",
            },
        )
