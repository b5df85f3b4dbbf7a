"""Read the service's output topics: events, the state log, raw records (for tools and tests)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

from kafka import KafkaConsumer, TopicPartition


def _partitions(consumer: KafkaConsumer, topic: str, deadline: float) -> set[int]:
    """The topic's partitions, waited for until `deadline` (time.time()): a topic just created may
    not be in the consumer's metadata yet."""
    while True:
        parts = consumer.partitions_for_topic(topic)
        if parts:
            return parts
        if time.time() >= deadline:
            raise RuntimeError(f"topic {topic} not found")
        time.sleep(0.2)


def read_records(
    bootstrap_servers: str,
    topic: str,
    *,
    partitions: list[int] | None = None,
    timeout_s: float = 10.0,
    until: Callable[[list], bool] | None = None,
    start: dict[int, int] | None = None,
) -> list:
    """All records of `topic` (optionally some partitions) from the beginning (or from the offsets
    `start` gives, partition -> offset, e.g. `end_offsets` taken earlier) up to the end offsets as of
    the call, or, with `until`, until it holds for the records read so far (or timeout)."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap_servers, group_id=None, enable_auto_commit=False, fetch_max_wait_ms=100
    )
    try:
        deadline = time.time() + timeout_s
        parts = _partitions(consumer, topic, deadline)
        tps = [TopicPartition(topic, p) for p in sorted(parts) if partitions is None or p in partitions]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        for tp in tps:
            if start and tp.partition in start:
                consumer.seek(tp, start[tp.partition])
        end = consumer.end_offsets(tps)
        out: list = []
        while time.time() < deadline:
            for recs in consumer.poll(timeout_ms=200).values():
                out.extend(recs)
            if until is not None:
                if until(out):
                    break
            elif all(consumer.position(tp) >= end[tp] for tp in tps):
                break
        return out
    finally:
        consumer.close()


def end_offsets(bootstrap_servers: str, topic: str, timeout_s: float = 10.0) -> dict[int, int]:
    """partition -> the offset the next record of `topic` gets: where to `start` reading only what
    comes after now (a test on a shared job reads just its own part of the service's topics)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, group_id=None, enable_auto_commit=False)
    try:
        parts = _partitions(consumer, topic, time.time() + timeout_s)
        return {tp.partition: o for tp, o in consumer.end_offsets([TopicPartition(topic, p) for p in parts]).items()}
    finally:
        consumer.close()


def read_json(bootstrap_servers: str, topic: str, **kw) -> list[dict]:
    """Record values of `topic` as JSON objects (tombstones skipped)."""
    return [json.loads(r.value) for r in read_records(bootstrap_servers, topic, **kw) if r.value is not None]


def events(bootstrap_servers: str, topic: str = "coordinator-events", **kw) -> list[dict]:
    return read_json(bootstrap_servers, topic, **kw)


def state_log(bootstrap_servers: str, topic: str, partition: int, **kw) -> Iterator[tuple[str, dict | None]]:
    """(key, value-or-None) of one coordinator partition's state-log records, in log order."""
    for r in read_records(bootstrap_servers, topic, partitions=[partition], **kw):
        yield r.key.decode("utf-8"), None if r.value is None else json.loads(r.value)
