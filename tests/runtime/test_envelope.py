"""Reading a request record (coordinator/envelope.py): each fault of an envelope gets its own error
and message, and when a record has several, the one of highest precedence is answered; the
envelope's decoding answers as json.loads does, on its fast path and off it."""

from __future__ import annotations

import itertools
import json

import pytest

from coordinator.envelope import BROADCAST_KEY, Rejection, _loads_envelope, _reject_constant, parse_request
from coordinator.errors import Errors
from coordinator.messages import ReplyTo, Request

COMMIT = {
    "groupId": "g",
    "generationIdOrMemberEpoch": -1,
    "memberId": "",
    "groupInstanceId": None,
    "topics": [{"name": "t", "partitions": [{"partitionIndex": 0, "committedOffset": 5, "committedMetadata": None}]}],
}
INVALID, UNSUPPORTED, CLUSTER = Errors.INVALID_REQUEST, Errors.UNSUPPORTED_VERSION, Errors.CLUSTER_AUTHORIZATION_FAILED


def base() -> tuple[dict, dict]:
    """A good OffsetCommit v9 envelope, and parse_request's keyword arguments for it."""
    envelope = {"apiKey": "OffsetCommit", "apiVersion": 9, "correlationId": 7, "clientId": "c1", "request": COMMIT}
    return envelope, {"key": "g", "time_ms": 5, "source": (2, 40)}


def _set(**fields):
    def apply(envelope: dict, kw: dict) -> None:
        envelope.update(fields)

    return apply


def _drop(name):
    def apply(envelope: dict, kw: dict) -> None:
        envelope.pop(name, None)

    return apply


def _kw(**args):
    def apply(envelope: dict, kw: dict) -> None:
        kw.update(args)

    return apply


def _also(*steps):
    def apply(envelope: dict, kw: dict) -> None:
        for step in steps:
            step(envelope, kw)

    return apply


# Each fault: how to make it, its error and message, and the reply it is answered with (a ReplyTo,
# or "full": the envelope's own). In the order of their precedence: a record with several faults is
# answered for the first of them.
FAULTS = [
    ("correlationId", _set(correlationId="7"), INVALID, "envelope field 'correlationId' must be an int32", None),
    (
        "clientId",
        _set(clientId="x" * 32768),
        INVALID,
        "envelope field 'clientId' must be a string of at most 32767 UTF-8 bytes",
        ReplyTo("", -1, 7, ""),
    ),
    ("replyTo", _set(replyTo=5), INVALID, "envelope field 'replyTo' must be a string or null", "full"),
    ("apiKey", _set(apiKey=3), INVALID, "envelope field 'apiKey' must be an API name", ReplyTo("", 9, 7, "c1")),
    ("unknown api", _set(apiKey="NoSuchApi"), INVALID, "unknown apiKey 'NoSuchApi'", ReplyTo("NoSuchApi", 9, 7, "c1")),
    (
        "apiVersion",
        _set(apiVersion="9"),
        INVALID,
        "envelope field 'apiVersion' must be an integer",
        ReplyTo("OffsetCommit", -1, 7, "c1"),
    ),
    ("version", _set(apiVersion=99), UNSUPPORTED, "OffsetCommit version 99 is not supported (supported: 2-10)", "v99"),
    (
        "clientHost",
        _set(clientHost="h" * 257),
        INVALID,
        "envelope field 'clientHost' must be a string of at most 256 UTF-8 bytes",
        "full",
    ),
    (
        "clientHost address",
        _set(clientHost="10.0.0.7"),
        INVALID,
        "envelope field 'clientHost' must be an address as Kafka prints a client's: '/' and an IP address, "
        'optionally after a host name ("/10.0.0.7", "host/10.0.0.7")',
        "full",
    ),
    ("kafkaClient", _set(kafkaClient=1), INVALID, "envelope field 'kafkaClient' must be a boolean", "full"),
    ("principal", _set(principal=5), INVALID, "envelope field 'principal' must be a string", "full"),
    (
        "unsigned principal",
        _set(principal="User:alice"),
        INVALID,
        "envelope field 'principal' is accepted only from a gateway's signed record "
        "(header 'coordinator-principal-mac')",
        "full",
    ),
    ("request", _drop("request"), INVALID, "envelope field 'request' is missing", "full"),
    (
        "body",
        _set(request={**COMMIT, "groupId": None}),
        INVALID,
        "field 'groupId' must not be null in version 9",
        "full",
    ),
    ("key", _kw(key_valid=False), INVALID, "the request record's key is not valid UTF-8", "full"),
    (
        "broadcast key",
        _kw(key=BROADCAST_KEY),
        INVALID,
        f"the record key {BROADCAST_KEY!r} is reserved for the coordinator's own broadcasts",
        "full",
    ),
    (
        "internal api",
        _set(apiKey="UpdateMetadata", apiVersion=0, request={"topicStates": []}),
        CLUSTER,
        "UpdateMetadata is sent only by the coordinator itself, on its internal channel",
        ReplyTo("UpdateMetadata", 0, 7, "c1"),
    ),
]


def outcome(envelope: dict, kw: dict) -> Request | Rejection:
    return parse_request(json.dumps(envelope).encode(), **kw)


def expected_reply(reply, envelope: dict):
    if reply == "full":
        return ReplyTo("OffsetCommit", 9, 7, "c1")
    if reply == "v99":
        return ReplyTo("OffsetCommit", 99, 7, "c1")
    return reply


def test_a_good_envelope_reads_as_its_request():
    envelope, kw = base()
    request = outcome({**envelope, "replyTo": "r.x", "clientHost": "/10.0.0.7", "kafkaClient": True}, kw)
    assert isinstance(request, Request) and type(request.reply) is ReplyTo
    assert request.reply == ReplyTo("OffsetCommit", 9, 7, "c1", "r.x")
    assert (request.time_ms, request.key, request.source) == (5, "g", (2, 40))
    assert (request.client_host, request.kafka_client, request.principal, request.publisher) == (
        "/10.0.0.7",
        True,
        None,
        None,
    )
    partition = {"partitionIndex": 0, "committedOffset": 5, "committedLeaderEpoch": -1, "committedMetadata": None}
    assert request.body == {**COMMIT, "topics": [{"name": "t", "partitions": [partition]}]}
    signed = outcome({**envelope, "principal": "User:a"}, {**kw, "principal_verified": True})
    assert isinstance(signed, Request) and signed.principal == "User:a"
    # null reads as absent where the field is optional
    absent = outcome({**envelope, "clientId": None, "clientHost": None, "kafkaClient": None, "replyTo": None}, kw)
    assert isinstance(absent, Request)
    assert (absent.reply.client_id, absent.client_host, absent.kafka_client) == ("", "", False)


@pytest.mark.parametrize("name, fault, error, message, reply", FAULTS, ids=[f[0] for f in FAULTS])
def test_each_fault_gets_its_error_and_message(name, fault, error, message, reply):
    envelope, kw = base()
    fault(envelope, kw)
    rejection = outcome(envelope, kw)
    assert isinstance(rejection, Rejection), rejection
    assert (rejection.error, rejection.message) == (error, message)
    assert rejection.reply == expected_reply(reply, envelope) and type(rejection.reply) in (ReplyTo, type(None))
    assert (rejection.key, rejection.source) == (kw["key"], (2, 40))


# What each fault sets: faults that set the same thing cannot be combined.
SETS = {
    "unknown api": {"apiKey"},
    "version": {"apiVersion"},
    "clientHost address": {"clientHost"},
    "unsigned principal": {"principal"},
    "body": {"request"},
    "internal api": {"apiKey", "apiVersion", "request"},
}


def test_the_fault_of_highest_precedence_is_answered():
    """Every pair and triple of faults that can be combined: the first of FAULTS is answered."""
    combos = itertools.chain(itertools.combinations(FAULTS, 2), itertools.combinations(FAULTS, 3))
    checked = 0
    for combo in combos:
        sets = [SETS.get(f[0], {f[0]}) for f in combo]
        if any(a & b for a, b in itertools.combinations(sets, 2)):
            continue
        for order in (combo, combo[::-1]):
            envelope, kw = base()
            for _, fault, *_ in order:
                fault(envelope, kw)
            rejection = outcome(envelope, kw)
            assert isinstance(rejection, Rejection) and rejection.message == combo[0][3], [f[0] for f in order]
            checked += 1
    assert checked > 1000


# ---------------------------------------------------------------------------------------- decoding

GOOD = json.dumps({"correlationId": 1, "clientId": "é\udc80", "request": {"a": [1, 2.5, None, True]}})
RAWS = [
    GOOD.encode(),
    GOOD.encode() + b" ",
    GOOD.encode() + b"\n\t",
    GOOD.encode() + b"x",
    GOOD.encode() + b"{}",
    b" " + GOOD.encode(),
    GOOD.encode()[:-1],
    GOOD.encode("utf-16"),
    GOOD.encode("utf-16-le"),
    GOOD.encode("utf-16-be"),
    GOOD.encode("utf-32"),
    GOOD.encode("utf-32-le"),
    b"\xef\xbb\xbf" + GOOD.encode(),
    '{"s": "é"}'.encode(),
    b'{"s": "\xff"}',
    b'{"s": "\xed\xb2\x80"}',  # a lone surrogate, UTF-8-encoded
    b'{"n": NaN}',
    b'{"n": -Infinity}',
    b"{",
    b"{}",
    b"[]",
    b"null",
    b"",
    b"\x00",
    b'{"a": 1, "a": 2}',
    bytearray(GOOD.encode()),
    GOOD,
    "\ufeff" + GOOD,
    " " + GOOD,
]


def decoded(loads, raw):
    try:
        return "ok", loads(raw)
    except (ValueError, RecursionError) as e:
        return type(e).__name__, str(e)


@pytest.mark.parametrize("raw", RAWS)
def test_decoding_answers_as_json_loads(raw):
    expected = decoded(lambda r: json.loads(r, parse_constant=_reject_constant), raw)
    assert repr(decoded(_loads_envelope, raw)) == repr(expected)


def test_a_request_too_deeply_nested_is_rejected_not_raised():
    envelope, kw = base()
    raw = json.dumps(envelope).encode()[:-1] + b', "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    rejection = parse_request(raw, **kw)
    assert isinstance(rejection, Rejection) and rejection.message == "request nesting is too deep"


@pytest.mark.parametrize("raw", [b"[]", b"null", b"5", b'"x"', b"true", b'[{"correlationId": 1}]'])
def test_json_that_is_not_an_object_is_rejected_without_a_reply(raw):
    rejection = parse_request(raw, key="g", time_ms=1)
    assert isinstance(rejection, Rejection) and rejection.reply is None
    assert (rejection.error, rejection.message) == (INVALID, "request envelope must be a JSON object")
