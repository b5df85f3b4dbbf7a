"""State-log record keys: what compaction of the state-log topic keeps one value per.

A key is a compact JSON array naming the record type and the entity, e.g.
    ["OffsetCommit","my-group","orders",3]      ["GroupMetadata","my-group"]
so ids containing any character stay unambiguous, and any client can parse it. The record value
is a JSON object whose "type" repeats the record type, or null (a tombstone) when the entity is
gone. Record types follow the names of Kafka's __consumer_offsets / __transaction_state records.
"""

from __future__ import annotations

import json


def record_key(record_type: str, *ids) -> str:
    return json.dumps([record_type, *ids], separators=(",", ":"), ensure_ascii=False)


def parse_record_key(key: str) -> tuple[str, list]:
    parts = json.loads(key)
    return parts[0], parts[1:]
