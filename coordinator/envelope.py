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

from .api import ApiSpec, lookup, registered
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
    if isinstance(raw, str):
        if raw.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", raw, 0)
        return _ENVELOPE_DECODER.decode(raw)
    # A JSON object's first byte "{" is neither a BOM nor a zero byte of UTF-16/32: json.loads would
    # pick UTF-8 for it unless the second byte is zero (detect_encoding, asked only then).
    if raw[:1] == b"{" and raw[1:2] != b"\x00":
        text = raw.decode("utf-8", "surrogatepass")
        # The decoder's C scanner, called directly: JSONDecoder.decode spends as much in its Python
        # layers (two whitespace matches, raw_decode) as the scanner spends parsing. A text that
        # starts with "{" and ends where the object ends decodes the same; anything else (trailing
        # whitespace or data, an error) goes through decode for its exact answer or message.
        try:
            value, end = _scan_envelope(text, 0)
        except (StopIteration, ValueError):
            end = -1
        if end == len(text):
            return value
        return _ENVELOPE_DECODER.decode(text)
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
    result = _parse(raw, key, time_ms, source, max_bytes, value_size, internal or principal_verified)
    if isinstance(result, Request):
        result = _check_trust(result, internal, key_valid)
    if isinstance(result, Rejection):
        result.key, result.source = key, source
    return result


def _check_trust(request: Request, internal: bool, key_valid: bool) -> Request | Rejection:
    spec = registered(request.api_key)  # _parse accepted it: a known API
    if not key_valid:
        return Rejection(
            Errors.INVALID_REQUEST, "the request record's key is not valid UTF-8", request.reply, spec, request.body
        )
    if internal:
        return request
    if request.key == BROADCAST_KEY:
        return Rejection(
            Errors.INVALID_REQUEST,
            f"the record key {BROADCAST_KEY!r} is reserved for the coordinator's own broadcasts",
            request.reply,
            spec,
            request.body,
        )
    if spec.internal:
        # Kafka answers inter-broker APIs from a principal without ClusterAction this way.
        return Rejection(
            Errors.CLUSTER_AUTHORIZATION_FAILED,
            f"{spec.name} is sent only by the coordinator itself, on its internal channel",
            request.reply,
            spec,
            request.body,
        )
    return request


def _parse(raw, key, time_ms, source, max_bytes, value_size, principal_trusted=False) -> Request | Rejection:
    size = value_size if value_size is not None else (len(raw) if raw is not None else 0)
    if raw is None:
        return Rejection(Errors.INVALID_REQUEST, "request record has no value", None)
    if size > max_bytes:
        return Rejection(
            Errors.INVALID_REQUEST, f"request of {size} bytes exceeds the limit of {max_bytes} bytes", scan_reply(raw)
        )
    try:
        envelope = _loads_envelope(raw)
    except (ValueError, RecursionError) as e:
        reason = "request nesting is too deep" if isinstance(e, RecursionError) else f"malformed JSON: {e}"
        return Rejection(Errors.INVALID_REQUEST, reason, scan_reply(raw))
    if not isinstance(envelope, dict):
        return Rejection(Errors.INVALID_REQUEST, "request envelope must be a JSON object", None)

    cid = envelope.get("correlationId")
    if type(cid) is not int or not INT32_MIN <= cid <= INT32_MAX:
        return Rejection(Errors.INVALID_REQUEST, "envelope field 'correlationId' must be an int32", None)
    client_id = envelope.get("clientId", "")
    if client_id is None:
        client_id = ""
    # (an ASCII string of at most the limit is valid: checked inline, the usual case)
    if not (type(client_id) is str and client_id.isascii() and len(client_id) <= MAX_CLIENT_ID_BYTES) and not (
        _is_valid_string(client_id)
    ):
        return Rejection(
            Errors.INVALID_REQUEST,
            f"envelope field 'clientId' must be a string of at most {MAX_CLIENT_ID_BYTES} UTF-8 bytes",
            ReplyTo("", -1, cid, ""),
        )
    api_name = envelope.get("apiKey")
    version = envelope.get("apiVersion")
    reply_to = envelope.get("replyTo")
    if reply_to is not None and not _is_valid_string(reply_to):
        reply_to = 0  # rejected below
    reply = ReplyTo(
        api_name if isinstance(api_name, str) else "",
        version if type(version) is int else -1,
        cid,
        client_id,
        reply_to if isinstance(reply_to, str) else None,
    )
    if reply_to is not None and not isinstance(reply_to, str):
        return Rejection(
            Errors.INVALID_REQUEST,
            "envelope field 'replyTo' must be a string or null",
            ReplyTo(reply.api_key, reply.api_version, cid, client_id),
        )
    if not isinstance(api_name, str):
        return Rejection(Errors.INVALID_REQUEST, "envelope field 'apiKey' must be an API name", reply)
    spec = lookup(api_name)
    if spec is None:
        return Rejection(Errors.INVALID_REQUEST, f"unknown apiKey {api_name[:64]!r}", reply)
    if type(version) is not int:
        return Rejection(Errors.INVALID_REQUEST, "envelope field 'apiVersion' must be an integer", reply)
    if not spec.min_version <= version <= spec.max_version:
        return Rejection(
            Errors.UNSUPPORTED_VERSION,
            f"{api_name} version {version} is not supported (supported: {spec.min_version}-{spec.max_version})",
            reply,
            spec,
        )
    client_host = envelope.get("clientHost")
    if client_host is None:
        client_host = ""
    elif not _is_valid_string(client_host, MAX_CLIENT_HOST_BYTES):
        return Rejection(
            Errors.INVALID_REQUEST,
            f"envelope field 'clientHost' must be a string of at most {MAX_CLIENT_HOST_BYTES} UTF-8 bytes",
            reply,
            spec,
        )
    if client_host and not is_socket_address(client_host):
        return Rejection(
            Errors.INVALID_REQUEST,
            "envelope field 'clientHost' must be an address as Kafka prints a client's: '/' and an IP "
            'address, optionally after a host name ("/10.0.0.7", "host/10.0.0.7")',
            reply,
            spec,
        )
    kafka_client = envelope.get("kafkaClient", False)
    if kafka_client is None:
        kafka_client = False
    if type(kafka_client) is not bool:
        return Rejection(Errors.INVALID_REQUEST, "envelope field 'kafkaClient' must be a boolean", reply, spec)
    principal = envelope.get("principal")
    if principal is not None:
        if not _is_valid_string(principal):
            return Rejection(Errors.INVALID_REQUEST, "envelope field 'principal' must be a string", reply, spec)
        if not principal_trusted:
            # A JSON client cannot name who it is: the field is a gateway's, signed with its key.
            return Rejection(
                Errors.INVALID_REQUEST,
                "envelope field 'principal' is accepted only from a gateway's signed record "
                f"(header {PRINCIPAL_MAC_HEADER!r})",
                reply,
                spec,
            )
    if "request" not in envelope:
        return Rejection(Errors.INVALID_REQUEST, "envelope field 'request' is missing", reply, spec)
    request = envelope["request"]
    renamed = RENAMED_REQUEST_FIELDS.get(spec.name)
    if renamed and isinstance(request, dict):
        for old, new in renamed:
            if old in request and new not in request:
                request = {**request, new: request[old]}
    try:
        body = spec.request.validate(request, version)
    except SchemaError as e:
        return Rejection(Errors.INVALID_REQUEST, str(e), reply, spec)
    except RecursionError:
        return Rejection(Errors.INVALID_REQUEST, "request nesting is too deep", reply, spec)
    return Request(
        reply=reply,
        body=body,
        time_ms=time_ms,
        key=key,
        source=source,
        client_host=client_host,
        kafka_client=kafka_client,
        principal=principal,
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
