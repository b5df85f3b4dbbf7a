"""The state function of `applyInPandasWithState`: one call per coordinator partition per batch.

It decodes the partition's state, hands the batch's request records and the batch time to the
pure core, encodes the new state, re-arms the single Spark timeout at the partition's next
deadline, and turns the core's outputs into sink rows (the `topic` column picks the topic).
Everything it uses arrives through `StepSettings`, which pickles into the Python workers.
"""

from __future__ import annotations

import gc
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from json import encoder as json_encoder
from operator import attrgetter, is_

import pandas as pd

import state as state_codec
from coordinator import CoordinatorConfig, CoordinatorPartition, Errors, perf
from coordinator.batch import InputRecord, run_batch
from coordinator.chunks import ChunkCorrupt
from coordinator.compact_json import compact_chunks, compact_encoder
from coordinator.messages import Outputs, response_envelope
from coordinator.routing import coordinator_partition
from coordinator.txn.markers import parse_marker
from coordinator.txn.metadata import KAFKA_CLIENT

from .timer_waker import deadline_value, is_wake
from .trust import (
    MAC_HEADER,
    cached_key,
    format_stamp,
    parse_stamp,
    safe_text,
    signed_headers,
    verify,
    verify_principal,
)

# The Spark state row. FROZEN once a checkpoint exists: evolve the payload (state/), never this.
STATE_SCHEMA = "format int, payload binary"
OUTPUT_SCHEMA = "topic string, key string, value binary, partition int, headers array<struct<key:string,value:binary>>"
OUTPUT_COLUMNS = ["topic", "key", "value", "partition", "headers"]


@dataclass(frozen=True)
class StepSettings:
    coordinator: dict  # CoordinatorConfig values by Kafka name
    responses_topic: str
    events_topic: str
    state_log_topic: str
    requests_topic: str
    internal_topic: str = "coordinator-internal"
    dead_letters_topic: str = "coordinator-dead-letters"
    metrics_topic: str = "coordinator-metrics"
    # Each call's next deadline, for the driver's timer waker (streaming/timer_waker.py).
    timers_topic: str = "coordinator-timers"
    # The file holding the key that signs and verifies the internal channel (trust.py): each Python
    # worker reads it, so the key is never part of the plan, nor pickled into it.
    internal_key_file: str = ""
    # The gateway's key, which signs the principal of its bridged requests (trust.sign_principal);
    # read by each worker like the internal key. "": no request may carry a principal.
    principal_key_file: str = ""
    # Largest record the sink may write (the sink's max.request.size and the topics'
    # max.message.bytes are set to it): a bigger one would fail the sink and stop the query.
    max_record_bytes: int = 16 << 20
    # Output topics the sink failed to write to (the supervisor fills this in before a restart):
    # rows for them become dead letters, so a replayed batch does not fail the same way again.
    quarantined_topics: tuple = ()
    # [txn] markers: "auto" (per producer: the markers of Kafka clients' transactions as "broker",
    # the others as "json"), "json" (marker records written by the sink) or "broker" (WriteTxnMarkers
    # sent by the state function before it returns, streaming/txn_markers.py) to `bootstrap`.
    txn_markers: str = "auto"
    bootstrap: str = ""
    # Whether the query runs with Spark's processing-time timeouts (the checkpoint decides:
    # streaming/state_timeouts.py); without them a partition's timers are started by wake records.
    spark_timeouts: bool = True


# Event keys echo request-record keys; a hostile key must not make an event too large.
MAX_EVENT_KEY_CHARS = 1024


# json.dumps(obj, ensure_ascii=False, separators=(",", ":")), without its cost per call.
_encode = compact_encoder(ensure_ascii=False)


def _json_bytes(obj) -> bytes:
    # backslashreplace turns a stray lone surrogate into a JSON \u escape instead of failing.
    return _encode(obj).encode("utf-8", "backslashreplace")


# json's C encoder behind _encode, called directly where a loop encodes a value per output.
_chunks = compact_chunks(ensure_ascii=False)
_join = "".join


# A batch's responses and state records are encoded as whole columns by C functions (map, zip,
# json's encoder), and become rows that way when every row is plainly fine: the responses all to
# one topic they may go to, no tombstone among the records, every key an ASCII str (safe_text keeps
# it; one byte a character), and the longest value with the longest key under the limit (then every
# row fits). Any other batch is checked row by row; the rows are the same either way
# (tests/streaming/test_output_rows_equivalence.py).
_REPLY, _BODY, _KEY, _VALUE = attrgetter("reply"), attrgetter("body"), attrgetter("key"), attrgetter("value")
_IS_NONE = partial(is_, None)
_INT, _STR = {int}, {str}
_quote = json_encoder.encode_basestring  # a JSON string as _chunks writes it (ensure_ascii off)
# response_envelope's text around the values of its fields, in its order.
_ENVELOPE_TEXT = ('{"correlationId":', ',"apiKey":', ',"apiVersion":', ',"clientId":', ',"response":', "}")


def _utf8_column(texts) -> list[bytes]:
    return list(map(str.encode, texts, repeat("utf-8"), repeat("backslashreplace")))


def _json_column(values) -> list[bytes]:
    """`_json_bytes` of each value."""
    return _utf8_column(map(_join, map(_chunks, values, repeat(0))))


def _response_column(responses: list, apis, versions, cids, clients) -> list[bytes]:
    """`_json_bytes(response_envelope(r.reply, r.body))` of each response: when the correlation ids
    and versions are ints and the API names and client ids strs (as parsed requests have them), the
    envelope's text put together around each body's (json writes an int as str() does)."""
    if set(map(type, cids + versions)) != _INT or set(map(type, apis + clients)) != _STR:
        return [_json_bytes(response_envelope(r.reply, r.body)) for r in responses]
    n = len(responses)
    cid, api, version, client, response, end = _ENVELOPE_TEXT
    pieces = zip(
        repeat(cid, n),
        map(str, cids),
        repeat(api, n),
        map(_quote, apis),
        repeat(version, n),
        map(str, versions),
        repeat(client, n),
        map(_quote, clients),
        repeat(response, n),
        map(_join, map(_chunks, map(_BODY, responses), repeat(0))),
        repeat(end, n),
        strict=True,
    )
    return _utf8_column(map(_join, pieces))


def _plain_keys(keys) -> bool:
    """Whether every key is an ASCII str."""
    return set(map(type, keys)) <= _STR and _join(keys).isascii()


def _all_fit(keys, values: list[bytes], limit: int) -> bool:
    return max(map(len, values), default=0) + max(map(len, keys), default=0) <= limit


def _column_rows(topic: str, keys, values: list[bytes], partition: int | None) -> Iterator[tuple]:
    """(topic, key, value, partition, []) for each key and value (a list of headers of its own)."""
    n = len(values)
    return zip(repeat(topic, n), keys, values, repeat(partition, n), map(list, repeat((), n)), strict=True)


# Room for a record's framing in a batch, under a topic's max.message.bytes.
RECORD_OVERHEAD_BYTES = 512


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

    def limit_of(topic: str | None) -> int:
        limit = topic_limit.get(topic)
        if limit is None:
            limit = max_record
            if topic in limits:
                limit = min(limit, max(limits[topic] - RECORD_OVERHEAD_BYTES, 1024))
            topic_limit[topic] = limit
        return limit

    def too_big(key: str | None, value: bytes | None, topic: str | None = None) -> int | None:
        """The limit `key` and `value` exceed, or None if they fit."""
        limit = limit_of(topic)
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

    # Responses and state records go as whole columns when they can (see _column_rows); else row by
    # row, where a row whose key is an ASCII str and that fits takes one test, and anything else
    # goes through safe_text, too_big and fits.
    responses_topic = s.responses_topic
    responses_limit = limit_of(responses_topic)
    append = rows.append
    responses: list = out.responses
    values: list[bytes] = []
    if responses:
        apis, versions, cids, clients, reply_tos = zip(*map(_REPLY, responses), strict=True)
        values = _response_column(responses, apis, versions, cids, clients)
        targets = set(reply_tos)
        if len(targets) == 1 and _plain_keys(clients):
            topic = next(iter(targets)) or responses_topic
            if (
                (topic == responses_topic or _is_response_topic(topic, s))
                and topic not in quarantined
                and _all_fit(clients, values, limit_of(topic))
            ):
                rows.extend(_column_rows(topic, clients, values, None))
                responses = []
    for r, value in zip(responses, values, strict=False):  # (none left when the columns were taken)
        api, version, cid, client_id, reply_to = reply = r.reply
        ascii_key = type(client_id) is str and client_id.isascii()
        client = client_id if ascii_key else safe_text(client_id)
        topic = reply_to or responses_topic
        if topic != responses_topic and not _is_response_topic(
            topic, s
        ):  # the core checks replyTo; this is the last line
            dead.append(
                (
                    client,
                    {
                        "what": "response",
                        "reason": f"unsafe response topic {topic[:300]!r}",
                        "apiKey": api,
                        "correlationId": cid,
                    },
                )
            )
            continue
        if ascii_key and len(value) + len(client) <= (responses_limit if topic is responses_topic else limit_of(topic)):
            pass
        elif too_big(client, value, topic) is not None and not fits(
            client,
            value,
            {"what": "response", "apiKey": api, "correlationId": cid, "topic": topic},
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
        if topic not in quarantined or writable(topic, client, value, {"what": "response", "correlationId": cid}):
            append((topic, client, value, None, []))
    for e in out.events:
        key = safe_text(e.key if len(e.key) <= MAX_EVENT_KEY_CHARS else e.key[:MAX_EVENT_KEY_CHARS] + "…")
        value = _json_bytes(e.body)
        if fits(key, value, {"what": "event", "name": e.body.get("event")}):
            rows.append((s.events_topic, key, value, None, []))
    state_log_topic = s.state_log_topic
    log_limit = limit_of(None)
    records = out.records
    encoded: list[bytes] | None = None  # every record's value, when none is a tombstone
    if records:
        keys, values = list(map(_KEY, records)), list(map(_VALUE, records))
        if not any(map(_IS_NONE, values)) and _plain_keys(keys):
            encoded = _json_column(values)
            if _all_fit(keys, encoded, log_limit):
                rows.extend(_column_rows(state_log_topic, keys, encoded, coordinator_partition))
                records = []
    for i, rec in enumerate(records):
        key, record = rec.key, rec.value
        record_value = None  # a tombstone
        if record is not None:
            record_value = encoded[i] if encoded is not None else _json_bytes(record)
            if type(key) is str and key.isascii() and len(record_value) + len(key) <= log_limit:
                append((state_log_topic, key, record_value, coordinator_partition, []))
                continue
        key = safe_text(key)
        if too_big(key, record_value) is None or fits(
            key, record_value, {"what": "state record", "recordKey": key[:MAX_EVENT_KEY_CHARS]}
        ):
            append((state_log_topic, key, record_value, coordinator_partition, []))
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


def _is_response_topic(topic: str, s: StepSettings) -> bool:
    if topic == s.responses_topic:
        return True
    own = {
        s.requests_topic,
        s.events_topic,
        s.state_log_topic,
        s.internal_topic,
        s.dead_letters_topic,
        s.metrics_topic,
        s.timers_topic,
    }
    return (
        topic.startswith(s.responses_topic + ".")
        and topic not in own
        and len(topic) <= 249
        and _LEGAL_TOPIC.fullmatch(topic) is not None
    )


_LEGAL_TOPIC = re.compile(r"[A-Za-z0-9._-]+")


def _text(value: bytes | None, limit: int = 4096) -> str | None:
    """Some of a value for a dead letter, readable whatever its bytes."""
    return None if value is None else value[:limit].decode("utf-8", "replace")


def dead_letter_row(s: StepSettings, coordinator_partition: int, key: str, letter: dict) -> tuple:
    body = {"event": "DeadLetter", "coordinatorPartition": coordinator_partition, **letter}
    return (s.dead_letters_topic, safe_text(key)[:MAX_EVENT_KEY_CHARS], _json_bytes(body), None, [])


def metrics_row(
    s: StepSettings, coordinator_partition: int, record: dict, state_bytes: int, wall: dict[str, list[int]]
) -> tuple:
    """The partition's metrics record (coordinator/metrics.py) with the size of the state this batch
    wrote, keyed by coordinator partition (the topic is compacted: the newest record counts). The
    wall-clock part (`wallClock`) is the one thing a replay does not repeat exactly: see
    docs/operations.md, Metrics."""
    body = {**record, "stateBytes": state_bytes}
    if wall:
        body["wallClock"] = {name: {"count": count, "totalNs": ns} for name, (count, ns) in sorted(wall.items())}
    return (s.metrics_topic, str(coordinator_partition), _json_bytes(body), None, [])


def deadline_row(s: StepSettings, coordinator_partition: int, deadline: int | None, batch_time: int) -> tuple:
    """The partition's next deadline after this call (none: no timer), for the timer waker; written
    by every call, so the waker never acts on a deadline the partition has since passed."""
    return (
        s.timers_topic,
        str(coordinator_partition),
        deadline_value(coordinator_partition, deadline, batch_time),
        None,
        [],
    )


def records_from_frames(
    pdfs: Iterator[pd.DataFrame], s: StepSettings | None = None, coordinator_partition_id: int | None = None
) -> tuple[list[InputRecord], list[dict]]:
    """The batch's records for the core, and the internal-channel records whose MAC did not verify
    (forged: never handed to the core; listed only by the partition that owns their key, as a
    broadcast reaches every partition). The MAC is verified here, with the key the worker reads
    from the checkpoint directory (`s.internal_key_file`)."""
    records: list[InputRecord] = []
    forged: list[dict] = []
    secret: bytes | None = None
    principal_secret: bytes | None = None
    for pdf in pdfs:
        if pdf.empty:
            continue
        n = len(pdf)
        # Columns as Python lists at once (iterating a Series goes through pandas per element).
        columns = [pdf[c].tolist() for c in ("key", "value", "value_size", "ts_ms", "src_partition", "src_offset")]
        flags = [
            pdf[c].tolist() if c in pdf else [d] * n
            for c, d in (
                ("key_valid", True),
                ("internal", False),
                ("mac", None),
                ("stamp", None),
                ("principal_mac", None),
            )
        ]
        rows = zip(zip(*columns, strict=True), zip(*flags, strict=True), strict=True)
        for (key, value, size, ts, part, off), (key_valid, internal, mac, raw_stamp, principal_mac) in rows:
            if type(key) is not str:
                key = None if key is None or (isinstance(key, float) and pd.isna(key)) else str(key)
            if type(value) is not bytes:
                value = None if value is None else bytes(value)
            stamp = None
            principal_verified = False
            if principal_mac is not None:
                principal_mac = _text_or_none(principal_mac)
            if principal_mac is not None and not bool(internal):
                if principal_secret is None:
                    principal_secret = (
                        cached_key(s.principal_key_file) if s is not None and s.principal_key_file else b""
                    )
                principal_verified = (
                    bool(principal_secret)
                    and bool(key_valid)
                    and _whole(value, size)
                    and verify_principal(principal_secret, (key or "").encode("utf-8"), value, principal_mac)
                )
            if bool(internal):
                if secret is None:
                    secret = cached_key(s.internal_key_file) if s is not None and s.internal_key_file else b""
                raw = None if raw_stamp is None or (isinstance(raw_stamp, float) and pd.isna(raw_stamp)) else raw_stamp
                raw_bytes = None if raw is None else str(raw).encode("utf-8")
                stamp = parse_stamp(raw_bytes)
                genuine = (
                    bool(secret)
                    and bool(key_valid)
                    and (raw_bytes is None or stamp is not None)
                    and _whole(value, size)
                    and verify(secret, (key or "").encode("utf-8"), value, _text_or_none(mac), raw_bytes)
                )
                if not genuine:
                    if s is None or _owner(key, s) == coordinator_partition_id:
                        forged.append(
                            {
                                "recordKey": (key or "")[:MAX_EVENT_KEY_CHARS],
                                "requestPartition": int(part),
                                "requestOffset": int(off),
                            }
                        )
                    continue
            if type(size) is not int:
                size = None if size is None or pd.isna(size) else int(size)
            records.append(
                InputRecord(
                    key,
                    value,
                    ts if type(ts) is int else int(ts),
                    part if type(part) is int else int(part),
                    off if type(off) is int else int(off),
                    size,
                    internal if internal is False else bool(internal),
                    key_valid if key_valid is True else bool(key_valid),
                    stamp,
                    principal_verified,
                )
            )
    return records, forged


def _owner(key: str | None, s: StepSettings) -> int:
    return coordinator_partition(key, CoordinatorConfig(s.coordinator)["coordinator.partitions"])


def _whole(value: bytes | None, size) -> bool:
    """Whether the value is all there (the query cuts values above the request limit)."""
    if size is None or (type(size) is not int and pd.isna(size)):
        return True
    return len(value or b"") == int(size)


def _text_or_none(v) -> str | None:
    return None if v is None or (isinstance(v, float) and pd.isna(v)) else str(v)


def run_isolated(load, records: list[InputRecord], batch_time: int, read_until: int | None = None):
    """`run_batch`, with a backstop for a failure of the runtime itself (the core isolates what
    fails inside a handler or timer). A failure to load the state is raised: a damaged state must
    stop the query loudly. Otherwise the records that make the batch fail on their own are found,
    left out and returned as dead letters, so that a replay after a restart does not fail again."""
    loaded = []

    def tracked_load():
        p = load()
        loaded.append(True)
        return p

    try:
        partition, out = run_batch(tracked_load, records, batch_time, read_until)
        return partition, out, []
    except ChunkCorrupt:
        raise  # damaged state, not input: stop loudly, name the chunk
    except Exception:
        if not loaded:
            raise
    culprits = []
    for r in records:
        try:
            run_batch(load, [r], batch_time, read_until)
        except Exception as e:  # noqa: BLE001 - reported as a dead letter
            culprits.append((r, f"{type(e).__name__}: {e}"[:500]))
    bad = {id(r) for r, _ in culprits}
    partition, out = run_batch(load, [r for r in records if id(r) not in bad], batch_time, read_until)
    return partition, out, culprits


def sent_by_broker(d, mode: str) -> bool:
    """Whether a marker DataRecord goes to the broker as a control record (WriteTxnMarkers) rather
    than to the sink as a JSON record: always in "broker" mode, never in "json" mode, and in "auto"
    mode when a Kafka client (through the gateway) initialized the transaction's producer."""
    if mode == "broker":
        return True
    if mode != "auto":
        return False
    marker = parse_marker(d.headers, d.value)
    return marker is not None and marker.get("clientKind") == KAFKA_CLIENT


def write_broker_markers(out: Outputs, coordinator_partition: int, s: StepSettings, batch_time: int) -> list[tuple]:
    """Have the broker write the batch's markers that `sent_by_broker` picks as control records,
    and wait for them (a failure raises: the batch fails and its replay sends them again). Returns
    an event row per marker."""
    from .txn_markers import markers_of, writer_for

    markers = markers_of([d for d in out.data if sent_by_broker(d, s.txn_markers)])
    if not markers:
        return []
    rows: list[tuple] = []
    for r in writer_for(s.bootstrap).write(markers):
        rows.append(
            (
                s.events_topic,
                safe_text(r.get("transactionalId") or ""),
                _json_bytes(
                    {
                        "event": "TransactionMarkerWritten",
                        "coordinatorPartition": coordinator_partition,
                        "timeMs": batch_time,
                        "transactionalId": r.get("transactionalId"),
                        "topic": r["topic"],
                        "partition": r["partition"],
                        "producerId": r["producerId"],
                        "producerEpoch": r["producerEpoch"],
                        "result": "COMMIT" if r["commit"] else "ABORT",
                        "outcome": r["outcome"],
                        "errorCode": r["errorCode"],
                    }
                ),
                None,
                [],
            )
        )
    return rows


_TIME_MS, _INTERNAL = attrgetter("time_ms"), attrgetter("internal")


def make_step(settings: StepSettings):
    config = CoordinatorConfig(settings.coordinator)

    def step(key, pdfs: Iterator[pd.DataFrame], gstate) -> Iterator[pd.DataFrame]:
        # Python's cyclic garbage collector, left on, runs every few hundred allocations and now and
        # then walks every object of the worker (pandas, pyarrow, pyspark, the partition): about a
        # fifth of a batch's time. A batch's objects die with it (refcounts free nearly all of
        # them), so the collector waits for the batch to end and then runs as it would anyway.
        enabled = gc.isenabled()
        gc.disable()
        try:
            frame = run(key, pdfs, gstate)
        finally:
            if enabled:
                gc.enable()
        if frame is not None:
            yield frame

    def run(key, pdfs: Iterator[pd.DataFrame], gstate) -> pd.DataFrame | None:
        cp = int(key[0])
        batch_time = int(gstate.getCurrentProcessingTimeMs())
        records, forged = records_from_frames(pdfs, settings, cp)
        # The latest append time the batch read, the wakes' included: how far its timers may fire.
        read_until = max(map(_TIME_MS, records), default=None)
        # A wake record only starts the batch (its partition's timers are due): no request.
        if any(map(_INTERNAL, records)):
            records = [r for r in records if not is_wake(r.key, r.internal)]
        blob = tuple(gstate.get) if gstate.exists else None
        # Parsed once per batch (header only, for format 3) and shared by every re-run: immutable.
        stored = None if blob is None else state_codec.StoredState(int(blob[0]), bytes(blob[1]))

        def load() -> CoordinatorPartition:
            if stored is None:
                return CoordinatorPartition(cp, config)
            return stored.load(cp, config)

        perf.install(time.perf_counter_ns)  # wall-clock costs for the metrics, outside the state
        perf.take()
        partition, out, culprits = run_isolated(load, records, batch_time, read_until)
        new_blob = state_codec.encode_partition(partition)
        if stored is None or not stored.same(new_blob):
            gstate.update(new_blob)
        deadline = partition.next_deadline()
        if deadline is not None and settings.spark_timeouts:
            gstate.setTimeoutDuration(max(1, deadline - batch_time))
        rows = output_rows(out, cp, settings, partition.component("metadata").max_message_bytes)
        rows.append(deadline_row(settings, cp, deadline, batch_time))
        if settings.txn_markers != "json":
            rows.extend(write_broker_markers(out, cp, settings, batch_time))
        for f in forged:
            rows.append(
                (
                    settings.events_topic,
                    safe_text(f["recordKey"]),
                    _json_bytes(
                        {
                            "event": "ForgedInternalRecord",
                            "coordinatorPartition": cp,
                            "timeMs": batch_time,
                            "reason": f"a record on {settings.internal_topic} without a valid {MAC_HEADER} header",
                            **f,
                        }
                    ),
                    None,
                    [],
                )
            )
        if out.metrics is not None:
            rows.append(metrics_row(settings, cp, out.metrics, len(new_blob[1]), perf.take()))
        for r, reason in culprits:
            rows.append(
                dead_letter_row(
                    settings,
                    cp,
                    r.key or "",
                    {
                        "what": "request",
                        "reason": reason,
                        "requestPartition": r.partition,
                        "requestOffset": r.offset,
                        "internal": r.internal,
                        "value": _text(r.value),
                    },
                )
            )
        if not rows:
            return None
        # Python objects in every column (a partition is an int or None): PySpark's serializer
        # pads the output with all-None rows, which a typed column (Int32) makes pandas warn
        # about on every batch (tests/streaming/test_output_frames.py).
        return pd.DataFrame(rows, columns=OUTPUT_COLUMNS, dtype=object)

    return step


def make_identity_step(settings: StepSettings):
    """The same pipeline without the coordinator: answer each request with an empty response
    (only its envelope read). The floor the benchmark compares the real step against
    (`[stream] step = "identity"`); never used in production."""

    def step(key, pdfs: Iterator[pd.DataFrame], gstate) -> Iterator[pd.DataFrame]:
        rows: list[tuple] = []
        for r in records_from_frames(pdfs, settings, int(key[0]))[0]:
            try:
                env = json.loads(r.value or b"")  # None: not JSON (ValueError) as any other
                reply = {
                    "correlationId": env["correlationId"],
                    "apiKey": env.get("apiKey"),
                    "apiVersion": env.get("apiVersion"),
                    "clientId": env.get("clientId", ""),
                    "response": {"errorCode": 0},
                }
            except (ValueError, KeyError, TypeError):
                continue
            rows.append((settings.responses_topic, reply["clientId"], _json_bytes(reply), None, []))
        gstate.update((0, b""))
        if rows:
            yield pd.DataFrame(rows, columns=OUTPUT_COLUMNS, dtype=object)  # as in make_step

    return step
