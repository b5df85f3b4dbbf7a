"""Follow a topic from a background thread of the driver (the metrics exporter's metrics topic, the
dashboard's events topic): assign every partition, position, poll until stopped, and reconnect
after any failure (a broker away must never kill the thread)."""

from __future__ import annotations

import threading
from collections.abc import Callable

# The followers' fetch.max.wait.ms. The broker answers a fetch as soon as a record arrives, so a long
# wait delays nothing: it only sets how often an idle follower asks again (kafka-python's 500 ms
# made each follower's I/O thread about 0.003 of a core while the service is idle).
FETCH_MAX_WAIT_MS = 5000


def follow_topic(
    bootstrap: str,
    topic: str,
    stop: threading.Event,
    position: Callable,
    on_record: Callable,
    *,
    after_poll: Callable[[], None] | None = None,
    on_error: Callable[[Exception], None] | None = None,
    missing_topic_wait_s: float = 1.0,
) -> None:
    """Run until `stop` is set. `position(consumer, partitions)` places a fresh consumer (it is made
    again after every failure), `on_record(record)` takes each record, `after_poll()` runs after
    each poll (a failure there reconnects too), `on_error(exception)` hears each failure."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = None
    while not stop.is_set():
        try:
            if consumer is None:
                consumer = KafkaConsumer(
                    bootstrap_servers=bootstrap,
                    group_id=None,
                    enable_auto_commit=False,
                    fetch_max_wait_ms=FETCH_MAX_WAIT_MS,
                    request_timeout_ms=10000,  # more than the fetch wait (kafka-python checks it)
                )
                parts = consumer.partitions_for_topic(topic)
                if not parts:
                    consumer.close()
                    consumer = None
                    stop.wait(missing_topic_wait_s)
                    continue
                partitions = [TopicPartition(topic, p) for p in sorted(parts)]
                consumer.assign(partitions)
                position(consumer, partitions)
            for records in consumer.poll(timeout_ms=500).values():
                for r in records:
                    on_record(r)
            if after_poll is not None:
                after_poll()
        except Exception as e:  # noqa: BLE001 - broker away: keep what we have, reconnect
            if on_error is not None:
                on_error(e)
            if consumer is not None:
                try:
                    consumer.close()
                except Exception:  # noqa: BLE001
                    pass
            consumer = None
            stop.wait(2.0)
    if consumer is not None:
        consumer.close()


def run_reconnecting(worker, what: str) -> None:
    """A driver thread's loop (the timer waker, the end-offsets responder): connect when it has no
    clients, run one round, and after any failure close its clients and try again a second later,
    logging once when `what` fails and once when it works again (a broker away must never kill it).
    `worker` has `_halt` (an Event), `_consumer` (None: not connected), `_connect`, `run_once` and
    `_close`."""
    import logging

    log = logging.getLogger(type(worker).__module__)
    failed = False
    while not worker._halt.is_set():
        try:
            if worker._consumer is None:
                worker._connect()
            worker.run_once()
            if failed:
                log.info("%s work again", what)
            failed = False
        except Exception as e:  # noqa: BLE001 - the broker may be unavailable for a while
            if not failed:
                log.warning("%s failed (retried every second with new clients): %s", what, e)
            failed = True
            worker._close()
            worker._halt.wait(1.0)
    worker._close()
