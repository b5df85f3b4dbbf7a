"""One coordinator partition's timers, kept in its state.

Spark gives each key a single processing-time timeout, so every timer of the partition (session
timeouts, rebalance timeouts, transaction timeouts, retention sweeps) lives here, keyed by name, and
the partition re-arms the Spark timeout at the earliest deadline. A timer with the same key
replaces the previous one, as Kafka's `CoordinatorTimer.schedule` does.

Timers due at the same time fire in the order they were scheduled (a timer rescheduled counts as
newly scheduled), as tasks of one tick of Kafka's timing wheel expire in insertion order. The
schedule sequence is part of the snapshot (older snapshots without it load in key order).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass


@dataclass(frozen=True)
class Timer:
    key: str
    deadline_ms: int
    kind: str  # selects the handler
    payload: dict
    seq: int = 0  # schedule order: breaks ties between equal deadlines

    def to_json(self) -> list:
        return [self.deadline_ms, self.kind, self.payload, self.seq]


class Timers:
    """Timers by key, with a lazily cleaned heap so that popping due timers stays O(log n)."""

    def __init__(self) -> None:
        self._timers: dict[str, Timer] = {}
        self._heap: list[tuple[int, int, str]] = []
        self._next_seq = 0

    def schedule(self, key: str, deadline_ms: int, kind: str, payload: dict | None = None,
                 seq: int | None = None) -> None:
        if seq is None:
            seq = self._next_seq
        self._next_seq = max(self._next_seq, seq + 1)
        timer = Timer(key, int(deadline_ms), kind, payload or {}, seq)
        self._timers[key] = timer
        heapq.heappush(self._heap, (timer.deadline_ms, seq, key))

    def cancel(self, key: str) -> None:
        self._timers.pop(key, None)

    def get(self, key: str) -> Timer | None:
        return self._timers.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._timers

    def __len__(self) -> int:
        return len(self._timers)

    def __iter__(self):
        return iter(sorted(self._timers.values(), key=lambda t: (t.deadline_ms, t.seq)))

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            deadline, seq, key = heap[0]
            timer = self._timers.get(key)
            if timer is not None and timer.deadline_ms == deadline and timer.seq == seq:
                return
            heapq.heappop(heap)

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> Timer | None:
        """The earliest timer with deadline <= now (ties broken by schedule order)."""
        self._drop_stale()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, _, key = heapq.heappop(self._heap)
        return self._timers.pop(key)

    def schedule_view(self) -> dict:
        """{key: (deadline, kind, payload)}: what is scheduled, without the tie-break sequence
        (which depends on scheduling history, e.g. live versus rebuilt from the state log)."""
        return {k: (t.deadline_ms, t.kind, t.payload) for k, t in sorted(self._timers.items())}

    def to_json(self) -> dict:
        return {k: t.to_json() for k, t in sorted(self._timers.items())}

    @staticmethod
    def from_json(d: dict) -> "Timers":
        timers = Timers()
        for key, value in d.items():
            deadline, kind, payload = value[:3]
            timers.schedule(key, deadline, kind, payload, value[3] if len(value) > 3 else None)
        return timers
