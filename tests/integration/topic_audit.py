"""Checks that no client record reached a topic it must not reach."""

from __future__ import annotations

import json

from kafka import KafkaConsumer, TopicPartition

from client.topic_reader import read_records
from coordinator.records import parse_record_key


class TopicAudit:
    """Every topic's end offsets (internal ones included) when created; `grown_topics` tells which
    topics have records since, or did not exist then."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.before = self._ends()

    def _ends(self) -> dict[str, int]:
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None, exclude_internal_topics=False)
        try:
            topics = consumer.topics()
            tps = [TopicPartition(t, p) for t in topics for p in (consumer.partitions_for_topic(t) or ())]
            ends: dict[str, int] = {}
            for tp, end in consumer.end_offsets(tps).items():
                ends[tp.topic] = ends.get(tp.topic, 0) + end
            return ends
        finally:
            consumer.close()

    def grown_topics(self) -> set[str]:
        now = self._ends()
        return {t for t, end in now.items() if t not in self.before or end > self.before[t]}


def service_records_only(job) -> bool:
    """Every record of the state log is one of the service's own: a record key it writes, a JSON
    object (or tombstone) that is not a response envelope."""
    for r in read_records(job.bootstrap, job.topics["state_log"], timeout_s=30):
        kind, _ = parse_record_key(r.key.decode("utf-8"))
        assert kind, r.key
        if r.value is not None:
            value = json.loads(r.value)
            assert isinstance(value, dict) and "correlationId" not in value and "response" not in value, value
    return True
