"""One coordinator partition's timers, kept in its state.

Spark gives each key a single processing-time timeout, so every timer of the partition (session
timeouts, rebalance timeouts, transaction timeouts, retention sweeps) lives here, keyed by name, and
the partition re-arms the Spark timeout at the earliest deadline. A timer with the same key
replaces the previous one, as Kafka's `CoordinatorTimer.schedule` does.
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

    def to_json(self) -> list:
        return [self.deadline_ms, self.kind, self.payload]


class Timers:
    """Timers by key, with a lazily cleaned heap so that popping due timers stays O(log n)."""

    def __init__(self) -> None:
        self._timers: dict[str, Timer] = {}
        self._heap: list[tuple[int, str]] = []

    def schedule(self, key: str, deadline_ms: int, kind: str, payload: dict | None = None) -> None:
        timer = Timer(key, int(deadline_ms), kind, payload or {})
        self._timers[key] = timer
        heapq.heappush(self._heap, (timer.deadline_ms, key))

    def cancel(self, key: str) -> None:
        self._timers.pop(key, None)

    def get(self, key: str) -> Timer | None:
        return self._timers.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._timers

    def __len__(self) -> int:
        return len(self._timers)

    def __iter__(self):
        return iter(sorted(self._timers.values(), key=lambda t: (t.deadline_ms, t.key)))

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            deadline, key = heap[0]
            timer = self._timers.get(key)
            if timer is not None and timer.deadline_ms == deadline:
                return
            heapq.heappop(heap)

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> Timer | None:
        """The earliest timer with deadline <= now (ties broken by key, for determinism)."""
        self._drop_stale()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, key = heapq.heappop(self._heap)
        return self._timers.pop(key)

    def to_json(self) -> dict:
        return {k: t.to_json() for k, t in sorted(self._timers.items())}

    @staticmethod
    def from_json(d: dict) -> "Timers":
        timers = Timers()
        for key, (deadline, kind, payload) in d.items():
            timers.schedule(key, deadline, kind, payload)
        return timers
