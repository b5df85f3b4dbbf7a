"""State-log record keys: what compaction of the state-log topic keeps one value per.

A key is a compact JSON array naming the record type and the entity, e.g.
    ["OffsetCommit","my-group","orders",3]      ["GroupMetadata","my-group"]
so ids containing any character stay unambiguous, and any client can parse it. The record value
is a JSON object whose "type" repeats the record type, or null (a tombstone) when the entity is
gone. Record types follow the names of Kafka's __consumer_offsets / __transaction_state records.
"""

from __future__ import annotations

import json

from .compact_json import compact_encoder

# json.dumps([...], separators=(",", ":"), ensure_ascii=False), without its cost per call.
_encode_key = compact_encoder(ensure_ascii=False)


def record_key(record_type: str, *ids) -> str:
    return _encode_key([record_type, *ids])


# json's C scanner, called directly: a key is parsed for every record replayed, and json.loads
# spends more in its Python layers (loads, decode, raw_decode) than the scanner spends parsing.
_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def parse_record_key(key: str) -> tuple[str, list]:
    try:
        parts, end = _scan_once(key, 0)
    except StopIteration:
        end = -1
    if end != len(key) or type(parts) is not list or not parts:
        parts = json.loads(key)  # not a compact key: json's own answer, or its error
    return parts[0], parts[1:]
