"""Parsing a request record into a `Request`, or into the error it deserves.

A request record's value is a JSON envelope:
    {"apiKey": "JoinGroup", "apiVersion": 9, "correlationId": 7, "clientId": "c1",
     "replyTo": null, "request": {...Kafka's fields in camelCase...}}
Anything wrong with it yields a `Rejection`: an error response when a correlation id can be read
(even from malformed JSON, on a best-effort scan), and an event otherwise. Nothing here touches
coordinator state.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass
from functools import partial

from .api import ApiSpec, lookup
from .errors import Error, Errors
from .messages import ReplyTo, Request
from .schema import MAX_STRING_BYTES, SchemaError

# Request fields Kafka renamed in a later version of its message files (the wire bytes are the
# same): a JSON client written against Kafka 4.1's names still sends the old one, read as the new.
RENAMED_REQUEST_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "TxnOffsetCommit": (("generationId", "generationIdOrMemberEpoch"),),  # Kafka 4.4.0 (KIP-1319)
}

# The record key of the coordinator's own broadcasts (topic metadata), which the stream delivers to
# every coordinator partition. Only the internal channel may carry it.
BROADCAST_KEY = "__coordinator_broadcast__"
# The header of a gateway's record that signs its envelope's `principal` (streaming/trust.py has
# the MAC; named here too, as the core may not import the stream's modules).
PRINCIPAL_MAC_HEADER = "coordinator-principal-mac"

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_CORRELATION_RE = re.compile(rb'"correlationId"\s*:\s*(-?\d{1,11})\b')
_CLIENT_RE = re.compile(rb'"clientId"\s*:\s*"((?:[^"\\]|\\.){0,256})"')
_API_RE = re.compile(rb'"apiKey"\s*:\s*"([A-Za-z]{1,64})"')
_VERSION_RE = re.compile(rb'"apiVersion"\s*:\s*(-?\d{1,6})\b')
MAX_CLIENT_ID_BYTES = MAX_STRING_BYTES
# A socket address as Kafka prints it ("/" and an IPv6 address with a zone fits easily); a client
# writing the request topic directly may set it, as it sets its clientId, but not at any length.
MAX_CLIENT_HOST_BYTES = 256
# InetAddress.toString(): an optional host name, "/", the address literal (what the gateway sends:
# "/10.0.0.7"; Kafka's describes show the same).
_HOST_NAME_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.\-]{0,252}[A-Za-z0-9.])?$")


@dataclass
class Rejection:
    """A request that cannot be applied. `reply` is None when no correlation id could be read,
    in which case the rejection becomes an event instead of a response."""

    error: Error
    message: str
    reply: ReplyTo | None
    spec: ApiSpec | None = None
    body: dict | None = None
    key: str | None = None  # the record key, for the event
    source: tuple[int, int] = (-1, -1)  # (request-topic partition, offset)

    def response_body(self) -> dict:
        """The API's own error shape where the version is one it has (per-item errors included,
        as Kafka's getErrorResponse builds them), always with a top-level errorCode and
        errorMessage, so that a client can read any rejection the same way."""
        body: dict = {}
        spec, version = self.spec, self.reply.api_version if self.reply else -1
        if spec is not None:
            # An unsupported version is answered in the shape of the nearest supported one.
            version = min(max(version, spec.min_version), spec.max_version)
            body = spec.error_response(version, self.body, self.error, self.message)
        body.setdefault("throttleTimeMs", 0)
        body["errorCode"] = self.error.code
        body["errorMessage"] = self.message
        return body


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


# json.loads with a keyword argument builds a decoder on every call; this is the same decoder, once.
_ENVELOPE_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_scan_envelope = _ENVELOPE_DECODER.scan_once  # type: ignore[attr-defined]


def _loads_envelope(raw: bytes | bytearray | str):
    """json.loads(raw, parse_constant=_reject_constant), with the same errors."""
    # The usual record: UTF-8 text of one object and nothing after it, decoded by the decoder's C
    # scanner, called directly (JSONDecoder.decode spends as much in its Python layers, two
    # whitespace matches and raw_decode, as the scanner spends parsing). Anything else (a str is
    # never equal to b"{"; UTF-16/32, whose second byte is zero, fails the scan) takes the exact path
    # below, for its answer or its error message.
    if raw[:1] == b"{":
        try:
            text = raw.decode("utf-8", "surrogatepass")  # type: ignore[union-attr] # (not a str)
            value, end = _scan_envelope(text, 0)
            if end == len(text):
                return value
        except (StopIteration, ValueError):
            pass
    return _loads_in_full(raw)


def _loads_in_full(raw: bytes | bytearray | str):
    if isinstance(raw, str):
        if raw.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", raw, 0)
        return _ENVELOPE_DECODER.decode(raw)
    # A JSON object's first byte "{" is neither a BOM nor a zero byte of UTF-16/32: json.loads would
    # pick UTF-8 for it unless the second byte is zero (detect_encoding, asked only then).
    if raw[:1] == b"{" and raw[1:2] != b"\x00":
        return _ENVELOPE_DECODER.decode(raw.decode("utf-8", "surrogatepass"))
    return _ENVELOPE_DECODER.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))


def scan_reply(raw: bytes | None) -> ReplyTo | None:
    """Best effort: find the correlation id (and client id, api, version) in a damaged envelope.
    Never a replyTo: an answer to a damaged request goes to the service's response topic, and a
    client id that is not a valid Kafka string becomes ""."""
    if not raw:
        return None
    raw = raw[:4096]
    m = _CORRELATION_RE.search(raw)
    if not m:
        return None
    cid = int(m.group(1))
    if not INT32_MIN <= cid <= INT32_MAX:
        return None
    client = _CLIENT_RE.search(raw)
    api = _API_RE.search(raw)
    version = _VERSION_RE.search(raw)
    client_id = ""
    if client:
        try:
            client_id = json.loads(b'"' + client.group(1) + b'"')
        except ValueError:
            client_id = ""
        if not _is_valid_string(client_id):
            client_id = ""
    return ReplyTo(
        api_key=api.group(1).decode() if api else "",
        api_version=int(version.group(1)) if version else -1,
        correlation_id=cid,
        client_id=client_id,
    )


def parse_request(
    raw: bytes | None,
    *,
    key: str | None,
    time_ms: int,
    source: tuple[int, int] = (-1, -1),
    max_bytes: int = 1 << 20,
    value_size: int | None = None,
    internal: bool = False,
    key_valid: bool = True,
    principal_verified: bool = False,
) -> Request | Rejection:
    """Turn one request record into a validated `Request`, or a `Rejection`.

    `value_size` is the record's full size when `raw` was truncated upstream (the stream passes at
    most max_bytes + 1 bytes into Python). `internal` says the record came from the service's own
    authenticated channel: only such records may use internal APIs or the broadcast key.
    `principal_verified`: the record's principal MAC verified under the gateway's key; only then (or
    on the internal channel) may the envelope name a `principal`."""
    return parse_record(raw, key, time_ms, source, max_bytes, value_size, internal, key_valid, principal_verified)


# The envelope's fields, read in one pass (`map(envelope.get, ...)`); an absent one reads as None.
_ENVELOPE_FIELDS = (
    "correlationId",
    "clientId",
    "apiKey",
    "apiVersion",
    "replyTo",
    "clientHost",
    "kafkaClient",
    "principal",
    "request",
)


def parse_record(
    raw: bytes | None,
    key: str | None,
    time_ms: int,
    source: tuple[int, int],
    max_bytes: int,
    value_size: int | None,
    internal: bool,
    key_valid: bool,
    principal_verified: bool,
) -> Request | Rejection:
    """`parse_request` with every argument positional: the batch's call, once per record. The checks
    run in the order of their precedence: the envelope's, the body's, then whether the record may
    send it (`_untrusted`)."""
    if raw is None:
        return _reject(key, source, Errors.INVALID_REQUEST, "request record has no value", None)
    if (len(raw) if value_size is None else value_size) > max_bytes:
        size = len(raw) if value_size is None else value_size
        return _reject(
            key,
            source,
            Errors.INVALID_REQUEST,
            f"request of {size} bytes exceeds the limit of {max_bytes} bytes",
            scan_reply(raw),
        )
    try:
        envelope = _loads_envelope(raw)
    except (ValueError, RecursionError) as e:
        reason = "request nesting is too deep" if isinstance(e, RecursionError) else f"malformed JSON: {e}"
        return _reject(key, source, Errors.INVALID_REQUEST, reason, scan_reply(raw))
    try:  # (JSON that is not an object has no .get)
        cid, client_id, api_name, version, reply_to, client_host, kafka_client, principal, request = map(
            envelope.get, _ENVELOPE_FIELDS
        )
    except AttributeError:
        return _reject(key, source, Errors.INVALID_REQUEST, "request envelope must be a JSON object", None)
    if type(cid) is not int or not INT32_MIN <= cid <= INT32_MAX:
        return _reject(key, source, Errors.INVALID_REQUEST, "envelope field 'correlationId' must be an int32", None)
    if client_id is None:
        client_id = ""
    # (an ASCII string of at most the limit is valid: checked inline, the usual case)
    elif not (type(client_id) is str and client_id.isascii() and len(client_id) <= MAX_CLIENT_ID_BYTES) and not (
        _is_valid_string(client_id)
    ):
        return _reject(
            key,
            source,
            Errors.INVALID_REQUEST,
            f"envelope field 'clientId' must be a string of at most {MAX_CLIENT_ID_BYTES} UTF-8 bytes",
            ReplyTo("", -1, cid, ""),
        )
    if reply_to is not None and not _is_valid_string(reply_to):
        return _reject(
            key,
            source,
            Errors.INVALID_REQUEST,
            "envelope field 'replyTo' must be a string or null",
            ReplyTo(
                api_name if isinstance(api_name, str) else "", version if type(version) is int else -1, cid, client_id
            ),
        )
    if not isinstance(api_name, str):
        reply = ReplyTo("", version if type(version) is int else -1, cid, client_id, reply_to)
        return _reject(key, source, Errors.INVALID_REQUEST, "envelope field 'apiKey' must be an API name", reply)
    spec = lookup(api_name)
    if type(version) is not int:
        reply = ReplyTo(api_name, -1, cid, client_id, reply_to)
        if spec is None:
            return _reject(key, source, Errors.INVALID_REQUEST, f"unknown apiKey {api_name[:64]!r}", reply)
        return _reject(key, source, Errors.INVALID_REQUEST, "envelope field 'apiVersion' must be an integer", reply)
    reply = _new_reply((api_name, version, cid, client_id, reply_to))
    if spec is None:
        return _reject(key, source, Errors.INVALID_REQUEST, f"unknown apiKey {api_name[:64]!r}", reply)
    if not spec.min_version <= version <= spec.max_version:
        return _reject(
            key,
            source,
            Errors.UNSUPPORTED_VERSION,
            f"{api_name} version {version} is not supported (supported: {spec.min_version}-{spec.max_version})",
            reply,
            spec,
        )
    if client_host is None:
        client_host = ""
    elif not _is_valid_string(client_host, MAX_CLIENT_HOST_BYTES):
        return _reject(
            key,
            source,
            Errors.INVALID_REQUEST,
            f"envelope field 'clientHost' must be a string of at most {MAX_CLIENT_HOST_BYTES} UTF-8 bytes",
            reply,
            spec,
        )
    elif client_host and not is_socket_address(client_host):
        return _reject(
            key,
            source,
            Errors.INVALID_REQUEST,
            "envelope field 'clientHost' must be an address as Kafka prints a client's: '/' and an IP "
            'address, optionally after a host name ("/10.0.0.7", "host/10.0.0.7")',
            reply,
            spec,
        )
    if kafka_client is None:
        kafka_client = False
    elif type(kafka_client) is not bool:
        return _reject(
            key, source, Errors.INVALID_REQUEST, "envelope field 'kafkaClient' must be a boolean", reply, spec
        )
    if principal is not None:
        if not _is_valid_string(principal):
            return _reject(
                key, source, Errors.INVALID_REQUEST, "envelope field 'principal' must be a string", reply, spec
            )
        if not (internal or principal_verified):
            # A JSON client cannot name who it is: the field is a gateway's, signed with its key.
            return _reject(
                key,
                source,
                Errors.INVALID_REQUEST,
                "envelope field 'principal' is accepted only from a gateway's signed record "
                f"(header {PRINCIPAL_MAC_HEADER!r})",
                reply,
                spec,
            )
    if request is None and "request" not in envelope:
        return _reject(key, source, Errors.INVALID_REQUEST, "envelope field 'request' is missing", reply, spec)
    if api_name in RENAMED_REQUEST_FIELDS and isinstance(request, dict):
        for old, new in RENAMED_REQUEST_FIELDS[api_name]:
            if old in request and new not in request:
                request = {**request, new: request[old]}
    try:
        body = spec.request.validate(request, version)
    except SchemaError as e:
        return _reject(key, source, Errors.INVALID_REQUEST, str(e), reply, spec)
    except RecursionError:
        return _reject(key, source, Errors.INVALID_REQUEST, "request nesting is too deep", reply, spec)
    if not key_valid or (not internal and (key == BROADCAST_KEY or spec.internal)):
        return _untrusted(spec, reply, body, key, source, key_valid)
    return Request(reply, body, time_ms, key, source, client_host, kafka_client, principal)


def _reject(
    key: str | None,
    source: tuple[int, int],
    error: Error,
    message: str,
    reply: ReplyTo | None,
    spec: ApiSpec | None = None,
    body: dict | None = None,
) -> Rejection:
    return Rejection(error, message, reply, spec, body, key, source)


# ReplyTo's own __new__ (a named tuple's) with its tuple of fields built by the caller: one frame less
# on every request.
_new_reply = partial(tuple.__new__, ReplyTo)


def _untrusted(
    spec: ApiSpec, reply: ReplyTo, body: dict, key: str | None, source: tuple[int, int], key_valid: bool
) -> Rejection:
    """Why a valid request may not come from its record: a key that is not UTF-8, then (off the
    internal channel) the broadcast key, then an internal API."""
    if not key_valid:
        return _reject(
            key, source, Errors.INVALID_REQUEST, "the request record's key is not valid UTF-8", reply, spec, body
        )
    if key == BROADCAST_KEY:
        return _reject(
            key,
            source,
            Errors.INVALID_REQUEST,
            f"the record key {BROADCAST_KEY!r} is reserved for the coordinator's own broadcasts",
            reply,
            spec,
            body,
        )
    # Kafka answers inter-broker APIs from a principal without ClusterAction this way.
    return _reject(
        key,
        source,
        Errors.CLUSTER_AUTHORIZATION_FAILED,
        f"{spec.name} is sent only by the coordinator itself, on its internal channel",
        reply,
        spec,
        body,
    )


def is_socket_address(value: str) -> bool:
    """Whether `value` is an InetAddress as Java prints it: "[host name]/<IPv4 or IPv6 literal>"."""
    host, slash, literal = value.partition("/")
    if not slash or (host and not _HOST_NAME_RE.match(host)):
        return False
    try:
        ipaddress.ip_address(literal)
    except ValueError:
        return False
    return True


def _is_valid_string(s, max_bytes: int = MAX_CLIENT_ID_BYTES) -> bool:
    if not isinstance(s, str):
        return False
    if s.isascii():  # one UTF-8 byte per character
        return len(s) <= max_bytes
    try:
        return len(s.encode("utf-8")) <= max_bytes
    except UnicodeEncodeError:  # lone surrogates
        return False
