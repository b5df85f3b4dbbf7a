"""Wall-clock measurements of the core's costly steps (assignment compute time), for metrics only.

The core never reads a clock: `measure` does nothing until the process that runs the core installs
one (`install(time.perf_counter_ns)`, done by the stream's step). The totals live in this process,
outside the coordinator state, so they never reach the state or change what a batch computes;
`take()` hands over and resets what was measured since the last call (docs/operations.md, Metrics).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

_clock: Callable[[], int] | None = None
_totals: dict[str, list[int]] = {}  # name -> [count, total ns]


def install(clock: Callable[[], int] | None) -> None:
    """Use `clock` (nanoseconds) from now on; None stops measuring."""
    global _clock
    _clock = clock


@contextmanager
def measure(name: str) -> Iterator[None]:
    if _clock is None:
        yield
        return
    start = _clock()
    try:
        yield
    finally:
        entry = _totals.setdefault(name, [0, 0])
        entry[0] += 1
        entry[1] += _clock() - start


def take() -> dict[str, list[int]]:
    """{name: [count, total ns]} measured since the last call, and start afresh."""
    global _totals
    out, _totals = _totals, {}
    return out
