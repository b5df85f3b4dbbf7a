"""Whether the query runs with Spark's processing-time timeouts: decided by the checkpoint.

With timer wake-ups (`[stream] timer_wakeups`, streaming/timer_waker.py) every timer starts its own
micro-batch through a wake record, so Spark's timeouts are not needed for timers to fire. They
still cost every micro-batch a second call of the Python state function per task: after the data
pass, `applyInPandasWithState` runs a timed-out pass over the task's states, and it calls the
Python worker even when no state timed out (FlatMapGroupsInPandasWithStateExec.processTimedOutState:
an empty round trip, ~60 ms per task, ~15 % of a quiet micro-batch).

`GroupStateTimeout.NoTimeout` has no such pass, but it is part of the state schema: with a timeout,
Spark stores each state row with a `timeoutTimestamp` column, without one it does not, and a
checkpoint's state schema never changes (Spark's schema check refuses a restart that changes it).
So the checkpoint decides: a checkpoint whose state was written with timeouts keeps them (its
schema file names `timeoutTimestamp`); a new checkpoint runs without them when timer wake-ups are
on. A checkpoint written without timeouts cannot run with `timer_wakeups = false` (nothing would
fire its timers): that is refused at start with the reason.
"""

from __future__ import annotations

from pathlib import Path

# Spark writes the state schema of operator 0 (the only stateful operator) with its partition 0.
SCHEMA_FILE = Path("state") / "0" / "0" / "_metadata" / "schema"
TIMEOUT_COLUMN = b'"name":"timeoutTimestamp"'


class CheckpointTimeoutMismatch(RuntimeError):
    """The checkpoint's state has no timeout column but the configuration needs Spark's timeouts."""


def checkpoint_has_timeouts(checkpoint: Path) -> bool | None:
    """True/False when the checkpoint's state schema was written with/without Spark's timeouts,
    None when it has no state schema yet (a new checkpoint, or one whose first batch did not end)."""
    try:
        schema = (Path(checkpoint) / SCHEMA_FILE).read_bytes()
    except FileNotFoundError:
        return None
    return TIMEOUT_COLUMN in schema


def spark_timeouts(checkpoint: Path, timer_wakeups: bool) -> bool:
    """Whether the query must be planned with `GroupStateTimeout.ProcessingTimeTimeout`."""
    written = checkpoint_has_timeouts(checkpoint)
    if written is None:
        return not timer_wakeups
    if not written and not timer_wakeups:
        raise CheckpointTimeoutMismatch(
            f"the checkpoint {checkpoint} was created with timer wake-ups ([stream] timer_wakeups = true): "
            "its state has no Spark timeouts, so it cannot run with timer_wakeups = false (no timer would "
            "fire); set timer_wakeups = true, or start a new checkpoint"
        )
    return written
