"""Keeps the coordinator query running: restarts it on the same checkpoint after it fails.

A query that terminates with an exception (broker unavailable, a sink failure, a task that failed
its retries) is logged with a classification, then started again by calling `start_query()` anew,
after an exponential backoff (`[stream] restart_backoff_initial_ms` doubling up to
`restart_backoff_max_ms`). A query that stayed up `restart_healthy_after_ms` resets the backoff and
the failure count; `restart_max_attempts` consecutive failures make the supervisor give up (exit
code 1), and so does a failure classified as permanent (a state schema or configuration that cannot
be used: restarting cannot help, an operator must act) or a `PermanentFailure` raised by
`start_query` (run_stream.py raises it when the checkpoint guard refuses the checkpoint).

Extension point: `failure_handlers`, each `(exception text) -> Decision | None`, are consulted in
order before every restart; the first that returns a decision wins. A handler may change what the
next `start_query()` builds (e.g. quarantine an output topic the sink cannot write to, by updating
settings that `start_query` reads) and return `Decision.restart(..., immediately=True)`; or return
`Decision.give_up(...)`. Without a decision the built-in classification applies.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

log = logging.getLogger("supervisor")


class Query(Protocol):
    """What the supervisor needs of a pyspark StreamingQuery."""

    @property
    def isActive(self) -> bool: ...

    def exception(self): ...

    def stop(self) -> None: ...


class PermanentFailure(RuntimeError):
    """Raised by `start_query` when starting again cannot help (e.g. a damaged checkpoint)."""


@dataclass(frozen=True)
class Decision:
    gives_up: bool
    reason: str
    immediately: bool = False  # restart without waiting for the backoff (the cause was handled)

    @classmethod
    def restart(cls, reason: str, *, immediately: bool = False) -> Decision:
        return cls(False, reason, immediately)

    @classmethod
    def give_up(cls, reason: str) -> Decision:
        return cls(True, reason)


FailureHandler = Callable[[str], "Decision | None"]


# (category, permanent, pattern) in order: the first match classifies a failure. Permanent ones are
# not retried: the same configuration fails the same way every time. A damaged checkpoint is not:
# the checkpoint guard runs before the restart and rolls the damage back or refuses to start.
CLASSES: list[tuple[str, bool, re.Pattern]] = [
    (
        "damaged-checkpoint",
        False,
        re.compile(
            r"Log file was malformed|Incomplete log file|JsonEOFException|JsonParseException|"
            r"CANNOT_READ_STREAMING_STATE_FILE|ChecksumException|Stream ended prematurely|"
            r"Multiple streaming queries are concurrently using",
            re.I,
        ),
    ),
    (
        "state-schema-changed",
        True,
        re.compile(
            r"STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE|STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE|"
            r"StateSchemaNotCompatible|STREAMING_STATEFUL_OPERATOR_NOT_MATCH|"
            r"STATE_STORE_INCORRECT_NUM_STATE_STORES|mismatch.*shuffle partitions",
            re.I,
        ),
    ),
    (
        "broker-unavailable",
        False,
        re.compile(
            r"TimeoutException|not present in metadata|DisconnectException|Connection refused|"
            r"NetworkException|NotLeaderOrFollower|LeaderNotAvailable|"
            r"Timed out waiting for a node assignment|could not be established",
            re.I,
        ),
    ),
    # Requests were deleted (retention) before the query read them: every restart fails the same way.
    ("requests-lost", True, re.compile(r"KAFKA_DATA_LOSS|Some data may have been lost", re.I)),
    (
        "sink-rejected-record",
        False,
        re.compile(
            r"InvalidTopicException|RecordTooLargeException|TopicAuthorizationException|"
            r"UnknownTopicOrPartition",
            re.I,
        ),
    ),
    ("state-store", False, re.compile(r"CANNOT_LOAD_STATE_STORE|StateStore|RocksDB", re.I)),
    ("python-worker", False, re.compile(r"PythonException|Python worker", re.I)),
]


def classify(text: str) -> tuple[str, bool]:
    """(category, permanent) of a failure's exception text."""
    for category, permanent, pattern in CLASSES:
        if pattern.search(text):
            return category, permanent
    return "other", False


@dataclass(frozen=True)
class RestartPolicy:
    initial_backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    healthy_after_s: float = 60.0
    max_attempts: int = 20  # consecutive failures before giving up; 0: never give up

    @classmethod
    def from_config(cls, stream: dict) -> RestartPolicy:
        return cls(
            initial_backoff_s=int(stream.get("restart_backoff_initial_ms", 1000)) / 1000,
            max_backoff_s=int(stream.get("restart_backoff_max_ms", 30000)) / 1000,
            healthy_after_s=int(stream.get("restart_healthy_after_ms", 60000)) / 1000,
            max_attempts=int(stream.get("restart_max_attempts", 20)),
        )

    def backoff(self, failures: int) -> float:
        """Wait before the restart that follows the `failures`-th consecutive failure (1-based)."""
        return min(self.max_backoff_s, self.initial_backoff_s * 2 ** max(0, failures - 1))


def failure_text(exc) -> str:
    """The whole text of a failure, for the handlers and the classification: the message and, for
    a pyspark StreamingQueryException, the JVM stack trace with its "Caused by:" chain (where the
    Kafka client's exception usually is)."""
    if exc is None:
        return "query stopped without an exception"
    text = str(exc)
    trace = getattr(exc, "_stackTrace", None)  # pyspark.errors CapturedException (pinned pyspark)
    if trace and str(trace) not in text:
        text += "\n\nJVM stacktrace:\n" + str(trace)
    return text


def summary(text: str, max_lines: int = 12) -> str:
    """The message and the distinct "Caused by:" lines of a failure text: what the log shows."""
    lines = text.strip().splitlines()
    head = lines[0] if lines else ""
    causes = list(dict.fromkeys(line.strip() for line in lines[1:] if line.strip().startswith("Caused by:")))
    return "\n  ".join([head] + causes[:max_lines])


class Supervisor:
    def __init__(
        self,
        start_query: Callable[[], Query],
        policy: RestartPolicy,
        *,
        stopping: threading.Event,
        failure_handlers: Sequence[FailureHandler] = (),
        on_tick: Callable[[Query], None] | None = None,
        poll_s: float = 1.0,
        stop_query: Callable[[Query], None] | None = None,
    ):
        self.start_query, self.policy, self.stopping = start_query, policy, stopping
        self.failure_handlers = list(failure_handlers)
        self.on_tick, self.poll_s = on_tick, poll_s
        self.stop_query = stop_query or (lambda q: q.stop())
        self.restarts = 0  # queries started after the first
        self.failures: list[tuple[float, str, str]] = []  # (monotonic time, category, first line)

    def run(self) -> int:
        """Run until stopped (0) or until giving up (1)."""
        consecutive = 0
        while not self.stopping.is_set():
            started_at = time.monotonic()
            try:
                query = self.start_query()
            except PermanentFailure as e:
                log.error("cannot start the query: %s", e)
                return 1
            except Exception as e:  # noqa: BLE001 - e.g. the broker is down while starting
                text = failure_text(e)
            else:
                failed = self._watch(query)
                if failed is None:  # stopping
                    self.stop_query(query)
                    return 0
                text = failed
            if time.monotonic() - started_at >= self.policy.healthy_after_s:
                consecutive = 0
            consecutive += 1
            decision = self._decide(text)
            self.failures.append((time.monotonic(), decision.reason, summary(text, 0)))
            if decision.gives_up:
                log.error("query failed (%s); giving up: %s", decision.reason, summary(text))
                return 1
            if self.policy.max_attempts and consecutive >= self.policy.max_attempts:
                log.error(
                    "query failed %d times in a row (last: %s); giving up ([stream] restart_max_attempts = %d): %s",
                    consecutive,
                    decision.reason,
                    self.policy.max_attempts,
                    summary(text),
                )
                return 1
            delay = 0.0 if decision.immediately else self.policy.backoff(consecutive)
            log.error(
                "query failed (%s, failure %d in a row); restarting on the same checkpoint in %.1f s: %s",
                decision.reason,
                consecutive,
                delay,
                summary(text),
            )
            if self.stopping.wait(delay):
                return 0
            self.restarts += 1
            log.info("restarting the query (restart %d)", self.restarts)
        return 0

    def _watch(self, query: Query) -> str | None:
        """Block until the query terminates (its failure text) or a stop is asked (None)."""
        while not self.stopping.is_set():
            if not query.isActive:
                return failure_text(query.exception())
            if self.on_tick:
                self.on_tick(query)
            self.stopping.wait(self.poll_s)
        return None

    def _decide(self, text: str) -> Decision:
        for handler in self.failure_handlers:
            try:
                decision = handler(text)
            except Exception as e:  # noqa: BLE001 - a broken handler must not stop the service
                log.exception("failure handler %r failed: %s", handler, e)
                continue
            if decision is not None:
                return decision
        category, permanent = classify(text)
        return Decision.give_up(category) if permanent else Decision.restart(category)
