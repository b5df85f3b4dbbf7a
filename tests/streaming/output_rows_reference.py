"""The sink rows of a batch's outputs as streaming/step.py built them before its output path was
made cheaper (commit 3d7376c), kept verbatim as the reference the randomized equivalence test
(test_output_rows_equivalence.py) holds the current `output_rows` to, byte for byte."""

from __future__ import annotations

from json import encoder as json_encoder

from coordinator import Errors
from coordinator.messages import Outputs, ReplyTo, response_envelope
from streaming.step import (
    MAX_EVENT_KEY_CHARS,
    RECORD_OVERHEAD_BYTES,
    StepSettings,
    _encode,
    _is_response_topic,
    _json_bytes,
    _text,
    dead_letter_row,
    sent_by_broker,
)
from streaming.trust import cached_key, format_stamp, safe_text, signed_headers

_quote = json_encoder.encode_basestring


def _response_bytes(reply: ReplyTo, body: dict) -> bytes:
    """_json_bytes(response_envelope(reply, body)), without building the envelope: its text is
    put together around the body's (the same text, for the types a ReplyTo holds)."""
    cid, api, version, client = reply.correlation_id, reply.api_key, reply.api_version, reply.client_id
    if type(cid) is not int or type(version) is not int or type(api) is not str or type(client) is not str:
        return _json_bytes(response_envelope(reply, body))
    text = (
        f'{{"correlationId":{cid},"apiKey":{_quote(api)},"apiVersion":{version},'
        f'"clientId":{_quote(client)},"response":{_encode(body)}}}'
    )
    return text.encode("utf-8", "backslashreplace")


# Room for a record's framing in a batch, under a topic's max.message.bytes.
def output_rows(
    out: Outputs, coordinator_partition: int, s: StepSettings, topic_limits: dict[str, int] | None = None
) -> list[tuple]:
    """The sink rows for a batch's outputs. `topic_limits` are the max.message.bytes of reply topics
    (from the topic metadata): an answer a reply topic cannot take is replaced by an error."""
    rows: list[tuple] = []
    oversized: list[dict] = []
    dead: list[tuple[str, dict]] = []
    limits = topic_limits or {}
    quarantined = s.quarantined_topics
    max_record = s.max_record_bytes
    topic_limit: dict[str | None, int] = {}  # by topic, computed once per call

    def too_big(key: str | None, value: bytes | None, topic: str | None = None) -> int | None:
        """The limit `key` and `value` exceed, or None if they fit (the common case: nothing built)."""
        limit = topic_limit.get(topic)
        if limit is None:
            limit = max_record
            if topic in limits:
                limit = min(limit, max(limits[topic] - RECORD_OVERHEAD_BYTES, 1024))
            topic_limit[topic] = limit
        size = len(value or b"")
        if size + len(key or "") <= limit and (key is None or key.isascii()):
            return None  # an ASCII key is one byte per character
        size += len((key or "").encode("utf-8", "backslashreplace"))
        return None if size <= limit else limit

    def fits(key: str | None, value: bytes | None, what: dict, topic: str | None = None) -> bool:
        limit = too_big(key, value, topic)
        if limit is None:
            return True
        size = len(value or b"") + len((key or "").encode("utf-8", "backslashreplace"))
        oversized.append({**what, "bytes": size, "maxRecordBytes": limit})
        return False

    def writable(topic: str, key: str | None, value: bytes | None, what: dict) -> bool:
        if topic in quarantined:
            dead.append(
                (
                    key or "",
                    {
                        **what,
                        "reason": f"the sink could not write to topic {topic!r}",
                        "topic": topic,
                        "value": _text(value),
                    },
                )
            )
            return False
        return True

    responses_topic = s.responses_topic
    for r in out.responses:
        reply = r.reply
        client = safe_text(reply.client_id)
        topic = reply.reply_to or responses_topic
        if topic != responses_topic and not _is_response_topic(
            topic, s
        ):  # the core checks replyTo; this is the last line
            dead.append(
                (
                    client,
                    {
                        "what": "response",
                        "reason": f"unsafe response topic {topic[:300]!r}",
                        "apiKey": reply.api_key,
                        "correlationId": reply.correlation_id,
                    },
                )
            )
            continue
        value = _response_bytes(reply, r.body)
        if too_big(client, value, topic) is not None and not fits(
            client,
            value,
            {"what": "response", "apiKey": reply.api_key, "correlationId": reply.correlation_id, "topic": topic},
            topic,
        ):
            # Kafka has no such limit on responses; answer with an error rather than stop the query.
            value = _json_bytes(
                response_envelope(
                    reply,
                    {
                        "throttleTimeMs": 0,
                        "errorCode": Errors.UNKNOWN_SERVER_ERROR.code,
                        "errorMessage": f"the response is larger than {oversized[-1]['maxRecordBytes']} bytes",
                    },
                )
            )
        if topic not in quarantined or writable(
            topic, client, value, {"what": "response", "correlationId": reply.correlation_id}
        ):
            rows.append((topic, client, value, None, []))
    for e in out.events:
        key = safe_text(e.key if len(e.key) <= MAX_EVENT_KEY_CHARS else e.key[:MAX_EVENT_KEY_CHARS] + "…")
        value = _json_bytes(e.body)
        if fits(key, value, {"what": "event", "name": e.body.get("event")}):
            rows.append((s.events_topic, key, value, None, []))
    state_log_topic = s.state_log_topic
    for rec in out.records:
        record_value = None if rec.value is None else _json_bytes(rec.value)  # None: a tombstone
        key = safe_text(rec.key)
        if too_big(key, record_value) is None or fits(
            key, record_value, {"what": "state record", "recordKey": key[:MAX_EVENT_KEY_CHARS]}
        ):
            rows.append((state_log_topic, key, record_value, coordinator_partition, []))
    for q in out.requests:
        value = _json_bytes(q.envelope)
        key = safe_text(q.key)
        if fits(key, value, {"what": "internal request", "apiKey": q.envelope.get("apiKey")}):
            stamp = None if q.stamp is None else format_stamp(*q.stamp)
            headers = signed_headers(cached_key(s.internal_key_file), key.encode("utf-8"), value, stamp)
            rows.append((s.internal_topic, key, value, None, [{"key": k, "value": v} for k, v in headers]))
    for d in out.data:
        if sent_by_broker(d, s.txn_markers):
            continue  # write_broker_markers sends it
        data_key = safe_text(d.key)  # None: a record without a key
        if writable(d.topic, data_key, d.value, {"what": "transaction marker", "partition": int(d.partition)}):
            rows.append(
                (
                    d.topic,
                    data_key,
                    d.value,
                    int(d.partition),
                    [{"key": safe_text(k), "value": v} for k, v in d.headers],
                )
            )
    for what in oversized:
        rows.append(
            (
                s.events_topic,
                "",
                _json_bytes({"event": "RecordTooLarge", "coordinatorPartition": coordinator_partition, **what}),
                None,
                [],
            )
        )
    for key, letter in dead:
        rows.append(dead_letter_row(s, coordinator_partition, key, letter))
    return rows
