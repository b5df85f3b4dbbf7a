"""Wakes the coordinator partitions whose timers fall due, so that an idle job runs no micro-batch.

Spark runs a stateful query with processing-time timeouts at every trigger even when no record
arrived (a "no-data" micro-batch), only to look for timed-out states: an idle job cost about one
core doing that. The session turns those batches off
(`spark.sql.streaming.noDataMicroBatches.enabled=false`, streaming/session.py): a micro-batch runs
only when a record arrives. Timers must still fire without traffic, so:

- after every call of the state function, the coordinator partition writes its next deadline (the
  earliest timer plus the read margin, `CoordinatorPartition.next_deadline`, or none) to the compacted
  timers topic, keyed by coordinator partition (streaming/step.py, `deadline_row`);
- this thread, in the driver, follows that topic and, when a partition's deadline is reached by the
  driver's clock (the clock Spark takes the batch time from), appends a signed wake record for that
  partition to the internal channel. The record starts a micro-batch whose time is at or after the
  deadline: the partition runs (its record is data; Spark's own timeout is due too) and its timers
  fire. The state function drops wake records before the core sees them: they carry no request.

The batch that reads a wake fires the timers due by the wake's append time (coordinator/batch.py,
`timer_horizon`); while the query is catching up (its newest batch did not reach the latest offsets)
the waker holds its wakes, since requests appended before those deadlines may still be unread.

A wake record is only a trigger: losing one delays a timer until the next wake or request (a wake
not followed by a new deadline from its partition is sent again after `REWAKE_MS`), and a replayed
or duplicated one costs one micro-batch, nothing else.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from coordinator.routing import key_for_partition

from .topic_follower import run_reconnecting
from .trust import MAC_HEADER, sign

log = logging.getLogger(__name__)

WAKE_KEY_PREFIX = "__coordinator_wake__"
# A wake whose partition has not reported a new deadline this long after is sent again (the batch
# it started may have failed and been retried, or the record may not have been written).
REWAKE_MS = 5000


def wake_key(partition: int, partitions: int) -> str:
    """A key routed to `partition` (the wake record must start that partition)."""
    return key_for_partition(partition, partitions, prefix=f"{WAKE_KEY_PREFIX}-")


def is_wake(key: str | None, internal: bool) -> bool:
    """Whether a verified internal record is a wake record (a client's record never is: only the
    internal channel's records, whose MAC verified, are `internal`)."""
    return internal and key is not None and key.startswith(WAKE_KEY_PREFIX)


def deadline_value(partition: int, next_deadline_ms: int | None, batch_time_ms: int) -> bytes:
    return json.dumps(
        {"coordinatorPartition": partition, "nextDeadlineMs": next_deadline_ms, "batchTimeMs": batch_time_ms},
        separators=(",", ":"),
    ).encode()


class Deadlines:
    """What the waker knows: each partition's newest reported deadline, and the wakes it sent.
    Pure (the clock is passed in) so that its decisions are tested without Kafka."""

    def __init__(self, rewake_ms: int = REWAKE_MS):
        self.rewake_ms = rewake_ms
        self.next: dict[int, int | None] = {}
        self.reported_at: dict[int, int] = {}  # batch time of the newest report per partition
        self.woken: dict[int, tuple[int, int]] = {}  # partition -> (deadline woken for, when)

    def report(self, partition: int, next_deadline_ms: int | None, batch_time_ms: int) -> None:
        # Records of one partition arrive in batch order on the one-partition topic; a replayed
        # batch reports the same thing again. An older batch time is ignored all the same.
        if batch_time_ms < self.reported_at.get(partition, -1):
            return
        self.reported_at[partition] = batch_time_ms
        self.next[partition] = next_deadline_ms
        woken = self.woken.get(partition)
        if woken is not None and (next_deadline_ms is None or next_deadline_ms != woken[0]):
            del self.woken[partition]

    def due(self, now_ms: int) -> list[int]:
        """The partitions to wake now: deadline reached, and not woken for it already (or woken
        long enough ago that the wake is presumed lost)."""
        out = []
        for partition, deadline in self.next.items():
            if deadline is None or deadline > now_ms:
                continue
            woken = self.woken.get(partition)
            if woken is not None and woken[0] == deadline and now_ms - woken[1] < self.rewake_ms:
                continue
            out.append(partition)
        return out

    def woke(self, partitions: list[int], now_ms: int) -> None:
        for p in partitions:
            deadline = self.next.get(p)
            if deadline is not None:
                self.woken[p] = (deadline, now_ms)

    def next_wake_ms(self, now_ms: int) -> int | None:
        """When `due` may next return something (None: nothing scheduled)."""
        times = []
        for partition, deadline in self.next.items():
            if deadline is None:
                continue
            woken = self.woken.get(partition)
            if woken is not None and woken[0] == deadline:
                times.append(woken[1] + self.rewake_ms)
            else:
                times.append(deadline)
        return min(times) if times else None


class TimerWaker(threading.Thread):
    """The driver's thread: follows the timers topic, sends wake records when deadlines fall due."""

    # Longest sleep between polls of the timers topic (kafka-python's poll returns as soon as
    # records arrive: a new deadline is seen when it is written, whatever this is).
    MAX_POLL_MS = 1000
    # The consumer's fetch.max.wait.ms: the broker answers as soon as a deadline is written, so this
    # only sets how often an idle waker asks again (at 1 s: ~0.002 of a core of its I/O thread).
    FETCH_MAX_WAIT_MS = 5000
    # How often a waker holding due wakes (the query catching up) asks whether it may send them.
    HOLD_POLL_MS = 250

    def __init__(
        self,
        bootstrap: str,
        timers_topic: str,
        internal_topic: str,
        partitions: int,
        internal_key: bytes,
        clock=time.time,
        caught_up: Callable[[], bool] = lambda: True,
    ):
        super().__init__(name="timer-waker", daemon=True)
        self.bootstrap, self.timers_topic, self.internal_topic = bootstrap, timers_topic, internal_topic
        self.partitions, self._key, self._clock = partitions, internal_key, clock
        # A wake is a record appended now: the batch that reads it fires every timer due by now
        # (coordinator/batch.py, timer_horizon). While the query catches up over several batches,
        # requests appended earlier may still be unread, so wakes wait until it has caught up.
        self._caught_up = caught_up
        self.deadlines = Deadlines()
        self.wakes_sent = 0
        self._keys = [wake_key(p, partitions) for p in range(partitions)]
        self._halt = threading.Event()
        self._consumer: Any = None
        self._producer: Any = None

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _connect(self) -> None:
        from kafka import KafkaConsumer, KafkaProducer, TopicPartition

        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            client_id="coordinator-timer-waker",
            enable_auto_commit=False,
            group_id=None,
            fetch_max_wait_ms=self.FETCH_MAX_WAIT_MS,
        )
        partitions = consumer.partitions_for_topic(self.timers_topic) or {0}
        tps = [TopicPartition(self.timers_topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)  # compacted: the newest report per partition
        self._consumer = consumer
        self._producer = KafkaProducer(
            bootstrap_servers=self.bootstrap, acks="all", client_id="coordinator-timer-waker"
        )

    def _close(self) -> None:
        for client in (self._consumer, self._producer):
            if client is None:
                continue
            try:
                client.close()
            except Exception as e:  # noqa: BLE001 - closing a broken client
                log.debug("closing %s: %s", client, e)
        self._consumer = self._producer = None

    def _read(self, timeout_ms: int) -> None:
        assert self._consumer is not None
        for records in self._consumer.poll(timeout_ms=max(0, timeout_ms)).values():
            for r in records:
                try:
                    body = json.loads(r.value)
                    self.deadlines.report(
                        int(body["coordinatorPartition"]), body.get("nextDeadlineMs"), int(body["batchTimeMs"])
                    )
                except (ValueError, KeyError, TypeError) as e:
                    log.warning("timers topic: unreadable record at offset %s: %s", r.offset, e)

    def _wake(self, partitions: list[int]) -> None:
        assert self._producer is not None
        now = self._now_ms()
        for p in partitions:
            key = self._keys[p].encode()
            value = json.dumps({"wake": p, "deadlineMs": self.deadlines.next.get(p), "sentMs": now}).encode()
            self._producer.send(
                self.internal_topic, key=key, value=value, headers=[(MAC_HEADER, sign(self._key, key, value))]
            )
        self._producer.flush()
        self.deadlines.woke(partitions, now)
        self.wakes_sent += len(partitions)

    def run_once(self) -> None:
        """Read what arrived (waiting at most until the next deadline), then wake what is due."""
        now = self._now_ms()
        nxt = self.deadlines.next_wake_ms(now)
        if nxt is None:
            wait = self.MAX_POLL_MS
        elif nxt <= now and not self._caught_up():
            wait = self.HOLD_POLL_MS
        else:
            wait = min(self.MAX_POLL_MS, nxt - now)
        self._read(wait)
        due = self.deadlines.due(self._now_ms())
        if due and self._caught_up():
            self._wake(due)

    def run(self) -> None:
        run_reconnecting(self, "timer wake-ups")

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=10)
