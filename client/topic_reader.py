"""Read the service's output topics: events, the state log, raw records (for tools and tests)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

from kafka import KafkaConsumer, TopicPartition


def read_records(
    bootstrap_servers: str,
    topic: str,
    *,
    partitions: list[int] | None = None,
    timeout_s: float = 10.0,
    until: Callable[[list], bool] | None = None,
) -> list:
    """All records of `topic` (optionally some partitions) from the beginning up to the end offsets
    as of the call, or, with `until`, until it holds for the records read so far (or timeout)."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap_servers, group_id=None, enable_auto_commit=False, fetch_max_wait_ms=100
    )
    try:
        deadline = time.time() + timeout_s
        parts = None
        while time.time() < deadline and not parts:
            parts = consumer.partitions_for_topic(topic)
            if not parts:
                time.sleep(0.2)
        if not parts:
            raise RuntimeError(f"topic {topic} not found")
        tps = [TopicPartition(topic, p) for p in sorted(parts) if partitions is None or p in partitions]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
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


def read_json(bootstrap_servers: str, topic: str, **kw) -> list[dict]:
    """Record values of `topic` as JSON objects (tombstones skipped)."""
    return [json.loads(r.value) for r in read_records(bootstrap_servers, topic, **kw) if r.value is not None]


def events(bootstrap_servers: str, topic: str = "coordinator-events", **kw) -> list[dict]:
    return read_json(bootstrap_servers, topic, **kw)


def state_log(bootstrap_servers: str, topic: str, partition: int, **kw) -> Iterator[tuple[str, dict | None]]:
    """(key, value-or-None) of one coordinator partition's state-log records, in log order."""
    for r in read_records(bootstrap_servers, topic, partitions=[partition], **kw):
        yield r.key.decode("utf-8"), None if r.value is None else json.loads(r.value)
