"""Apply one micro-batch of request records to a coordinator partition.

Order: requests are applied by append time, then request-topic partition and offset (append times
are made non-decreasing within each request-topic partition first, so a partition's own order is
never changed). Before each request, timers due by its time fire; after the last one, timers due by
the batch time fire. Timers never fire past the batch time less `coordinator.timer.grace.ms` (0 in
the pure core): see `CoordinatorPartition.advance_to`.

Crash isolation: if a handler or timer raises anything but `ApiError`, that is a bug, and the
partition may be half-changed. The batch is then re-run from the state it started with, skipping
the failing item (its request gets UNKNOWN_SERVER_ERROR, and an event names it), so a bad request
never corrupts state or stops the stream. Re-running is deterministic, so a replayed batch ends
identically.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Callable

from .api import lookup
from .envelope import Rejection, parse_request
from .errors import Errors
from .messages import Outputs, Request
from .runtime import CoordinatorPartition
from .timers import Timer


@dataclass
class InputRecord:
    key: str | None
    value: bytes | None
    time_ms: int  # LogAppendTime of the request record
    partition: int = 0  # request-topic partition
    offset: int = 0
    value_size: int | None = None  # full size if `value` was truncated upstream


def order_records(records: list[InputRecord]) -> list[tuple[int, InputRecord]]:
    """(effective time, record) in application order."""
    by_source = sorted(records, key=lambda r: (r.partition, r.offset))
    effective: list[tuple[int, InputRecord]] = []
    running: dict[int, int] = {}
    for r in by_source:
        t = max(running.get(r.partition, r.time_ms), r.time_ms)
        running[r.partition] = t
        effective.append((t, r))
    effective.sort(key=lambda e: (e[0], e[1].partition, e[1].offset))
    return effective


class _ItemFailed(Exception):
    def __init__(self, ident, exc: BaseException):
        super().__init__(str(exc))
        self.ident = ident
        self.detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:500]


def run_batch(load: Callable[[], CoordinatorPartition], records: list[InputRecord],
              batch_time_ms: int, max_attempts: int = 64) -> tuple[CoordinatorPartition, Outputs]:
    """Apply `records` and the timers due by `batch_time_ms` to the partition `load()` returns.

    `load` must return a fresh partition from the same starting state each time it is called."""
    ordered = order_records(records)
    poisoned: dict[object, str] = {}
    for _ in range(max_attempts):
        partition = load()
        max_bytes = partition.config["coordinator.request.max.bytes"]
        try:
            _apply(partition, ordered, batch_time_ms, poisoned, max_bytes)
            return partition, partition.drain()
        except _ItemFailed as failed:
            poisoned[failed.ident] = failed.detail
    raise RuntimeError("too many failing items in one batch")


def _apply(partition: CoordinatorPartition, ordered, batch_time_ms: int,
           poisoned: dict, max_bytes: int) -> None:
    def skip_timer(timer: Timer) -> bool:
        return ("timer", timer.key, timer.deadline_ms) in poisoned

    horizon = batch_time_ms - partition.grace_ms

    def advance(now_ms: int) -> None:
        try:
            partition.advance_to(now_ms, horizon, skip_timer)
        except Exception as e:  # noqa: BLE001 - a bug in a timer handler
            raise _ItemFailed(_current_timer(partition), e) from e

    try:
        partition.run_deferred(skip_timer)
    except Exception as e:  # noqa: BLE001 - a bug in a deferred handler
        raise _ItemFailed(_current_timer(partition), e) from e
    for t, rec in ordered:
        advance(t)
        item = parse_request(rec.value, key=rec.key, time_ms=t, source=(rec.partition, rec.offset),
                             max_bytes=max_bytes, value_size=rec.value_size)
        ident = ("request", rec.partition, rec.offset)
        if ident in poisoned:
            _answer_crashed(partition, item, poisoned[ident])
            continue
        try:
            partition.handle(item)
        except Exception as e:  # noqa: BLE001 - a bug in a handler
            raise _ItemFailed(ident, e) from e
    advance(horizon)
    for ident, detail in poisoned.items():
        if ident[0] == "timer":
            partition.emit_event(ident[1], "TimerFailed", timer=ident[1], deadlineMs=ident[2],
                                 detail=detail)


def _current_timer(partition: CoordinatorPartition):
    timer = getattr(partition, "firing", None)
    return ("timer", timer.key, timer.deadline_ms) if timer else ("timer", "?", -1)


def _answer_crashed(partition: CoordinatorPartition, item: Request | Rejection, detail: str) -> None:
    if isinstance(item, Rejection):
        return
    partition.emit_event(item.key or "", "RequestFailed", apiKey=item.api_key,
                         correlationId=item.reply.correlation_id, detail=detail)
    spec = lookup(item.api_key)
    partition.respond(item.reply, spec.error_response(
        item.api_version, item.body, Errors.UNKNOWN_SERVER_ERROR,
        "the coordinator failed to process this request"))
