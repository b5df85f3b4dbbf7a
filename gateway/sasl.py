"""SASL on a gateway client connection, as a Kafka broker's listener runs it (sans-IO).

The broker stays the single source of identities: the gateway does not check passwords. It carries a
client's SaslHandshake and SaslAuthenticate requests to the broker on that client's own upstream
connection and watches the exchange:

- the rules before authentication are Kafka's (SaslServerAuthenticator): only ApiVersions and
  SaslHandshake may come first; any other request closes the connection ("Unexpected Kafka request
  of type X during SASL handshake."), as does a request other than SaslAuthenticate once a mechanism
  is chosen; a mechanism the listener does not enable is answered UNSUPPORTED_SASL_MECHANISM with
  the enabled list, then the connection closes;
- the principal is read from the client's own first SaslAuthenticate (PLAIN: the username, or the
  authorization id, which PlainSaslServer requires to be the username; SCRAM: the `n=` name of the
  client-first-message, its `=2C`/`=3D` escapes undone) and taken only once the broker answered the
  final SaslAuthenticate (PLAIN: the first, SCRAM: the second) without error. It is Kafka's default
  principal, `User:<name>` (a broker with a custom `principal.builder.class` would name it otherwise);
- a failed SaslAuthenticate (a wrong password: SASL_AUTHENTICATION_FAILED) is passed on to the
  client and the connection closed, as the broker closes it;
- re-authentication (KIP-368): the broker's `sessionLifetimeMs` (from `connections.max.reauth.ms`)
  is kept; a request arriving after it expired closes the connection, unless it is a SaslHandshake,
  which starts re-authentication (the principal must not change). While re-authenticating, only
  SaslAuthenticate is accepted.

SaslHandshake v0 (SASL tokens without Kafka framing after it) is not served: the gateway advertises
v1 and closes a connection that sends v0.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import secrets
from dataclasses import dataclass

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}

# Kafka's names in its messages (ApiKeys enum)
_API_NAMES = {17: "SASL_HANDSHAKE", 36: "SASL_AUTHENTICATE", 18: "API_VERSIONS"}


def principal_name(name: str) -> str:
    """Kafka's default principal for a SASL name (DefaultKafkaPrincipalBuilder)."""
    return f"User:{name}"


def extract_username(mechanism: str, auth_bytes: bytes) -> str:
    """The name the client authenticates as, from its first SaslAuthenticate's bytes. Raises
    ValueError on bytes the broker would refuse too (so nothing is taken from them)."""
    if mechanism == "PLAIN":
        parts = auth_bytes.split(b"\0")
        if len(parts) != 3:
            raise ValueError("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, username = parts[0].decode("utf-8"), parts[1].decode("utf-8")
        if not username:
            raise ValueError("Authentication failed: username not specified")
        if authzid and authzid != username:
            raise ValueError(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        return username
    if mechanism in SCRAM_HASHES:
        text = auth_bytes.decode("utf-8")
        # gs2-header: "n," | "y," | "p=...,", then "[a=authzid]," then the bare message "n=name,r=nonce..."
        fields = text.split(",")
        if len(fields) < 4 or fields[0] not in ("n", "y"):
            raise ValueError("Invalid SCRAM client first message")
        authzid = fields[1][2:] if fields[1].startswith("a=") else ""
        if not fields[2].startswith("n="):
            raise ValueError("Invalid SCRAM client first message")
        username = _scram_unescape(fields[2][2:])
        if any(f.startswith("tokenauth=") and f != "tokenauth=false" for f in fields[4:]):
            # a delegation token's owner is known to the broker only
            raise ValueError("delegation-token authentication is not supported through the gateway")
        if authzid and _scram_unescape(authzid) != username:
            raise ValueError("Authentication failed: Invalid user credentials")
        if not username:
            raise ValueError("Invalid SCRAM client first message")
        return username
    raise ValueError(f"Unsupported SASL mechanism {mechanism}")


def _scram_unescape(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")


def _scram_escape(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


class State(enum.Enum):
    HANDSHAKE = "handshake"  # before a mechanism: ApiVersions, SaslHandshake
    AUTHENTICATE = "authenticate"  # a mechanism chosen: SaslAuthenticate only
    COMPLETE = "complete"
    FAILED = "failed"


class Verdict(enum.Enum):
    FORWARD = "forward"  # pass it to the broker on the client's own connection
    UNSUPPORTED_MECHANISM = "unsupported"  # answer UNSUPPORTED_SASL_MECHANISM, then close
    CLOSE = "close"  # close the connection without an answer


@dataclass(frozen=True)
class Admission:
    verdict: Verdict
    reason: str = ""


FORWARD = Admission(Verdict.FORWARD)


class SaslSession:
    """One client connection's SASL state. `admit` is asked for every request as it arrives (in
    order); the `*_answered` methods are told the broker's answers to the SASL requests."""

    def __init__(self, enabled_mechanisms: tuple[str, ...] = MECHANISMS):
        self.enabled = tuple(enabled_mechanisms)
        self.state = State.HANDSHAKE
        self.mechanism: str | None = None
        self.principal: str | None = None  # "User:<name>" once authenticated
        self.expires_at: float | None = None  # monotonic seconds; None: the session does not expire
        self.reauthenticating = False
        self.authentications = 0  # successful ones, re-authentications included
        self._rounds = 0  # SaslAuthenticate requests of the current exchange
        self._candidate: str | None = None  # the name of the exchange in progress
        self._invalid = ""  # why the exchange's first bytes named nobody

    @property
    def authenticated(self) -> bool:
        return self.principal is not None and self.state is State.COMPLETE

    def _final_round(self) -> int:
        return 1 if self.mechanism == "PLAIN" else 2

    def admit(
        self, api_key: int, version: int, now: float, *, mechanism: str | None = None, auth_bytes: bytes | None = None
    ) -> Admission:
        """What to do with a request (SaslHandshake: `mechanism`; SaslAuthenticate: `auth_bytes`)."""
        if self.state is State.FAILED:
            return Admission(Verdict.CLOSE, "authentication failed")
        if self.state is State.COMPLETE:
            if api_key == SASL_HANDSHAKE:
                if version < 1:  # Kafka re-authenticates only clients that use SaslAuthenticate
                    return Admission(Verdict.CLOSE, "SaslHandshake v0 cannot start re-authentication")
                if mechanism != self.mechanism:  # Kafka: "SASL mechanism changed during re-authentication"
                    self.state = State.FAILED
                    return Admission(Verdict.CLOSE, f"re-authentication with {mechanism} instead of {self.mechanism}")
                self.reauthenticating = True
                return self._handshake(mechanism, version)
            if self.expires_at is not None and now >= self.expires_at:
                return Admission(Verdict.CLOSE, f"the session of {self.principal} expired and was not re-authenticated")
            return FORWARD  # (a late SaslAuthenticate: the broker answers ILLEGAL_SASL_STATE)
        if self.state is State.HANDSHAKE:
            if api_key == API_VERSIONS and not self.reauthenticating:
                return FORWARD
            if api_key == SASL_HANDSHAKE:
                return self._handshake(mechanism, version)
            return self._unexpected(api_key, "during SASL handshake.")
        # AUTHENTICATE
        if api_key != SASL_AUTHENTICATE:
            return self._unexpected(api_key, "during SASL authentication.")
        if self._rounds >= self._final_round():
            return self._unexpected(api_key, "after the final SASL response was sent.")
        self._rounds += 1
        if self._rounds == 1:
            try:
                self._candidate = extract_username(self.mechanism or "", auth_bytes or b"")
            except (ValueError, UnicodeDecodeError) as e:
                # Passed on all the same: the broker fails it with its own error, which the client gets.
                self._candidate = None
                self._invalid = str(e)
        return FORWARD

    def _unexpected(self, api_key: int, when: str) -> Admission:
        self.state = State.FAILED
        return Admission(Verdict.CLOSE, f"Unexpected Kafka request of type {_API_NAMES.get(api_key, api_key)} {when}")

    def _handshake(self, mechanism: str | None, version: int) -> Admission:
        if version < 1:
            self.state = State.FAILED
            return Admission(Verdict.CLOSE, "SaslHandshake v0 (unframed SASL tokens) is not served by the gateway")
        if mechanism not in self.enabled:
            self.state = State.FAILED
            return Admission(Verdict.UNSUPPORTED_MECHANISM, f"Unsupported SASL mechanism {mechanism}")
        self.mechanism = mechanism
        self.state = State.AUTHENTICATE
        self._rounds = 0
        self._candidate = None
        return FORWARD

    def handshake_answered(self, error_code: int) -> bool:
        """The broker's SaslHandshake answer; False: close the connection after passing it on."""
        if error_code != 0:
            self.state = State.FAILED
            return False
        return True

    def authenticate_answered(self, error_code: int, session_lifetime_ms: int, now: float) -> tuple[bool, str]:
        """The broker's SaslAuthenticate answer; (False, why): close the connection after passing
        it on. The principal is taken here, from a final round answered without error."""
        if error_code != 0:
            self.state = State.FAILED
            return False, f"the broker failed the authentication (error {error_code})"
        if self._rounds < self._final_round():
            return True, ""  # SCRAM's server-first-message: the client answers it
        name = self._candidate
        if name is None:  # the broker took what the gateway could not read: trust nothing
            self.state = State.FAILED
            return False, f"no principal in the client's {self.mechanism} exchange: {self._invalid}"
        principal = principal_name(name)
        if self.principal is not None and principal != self.principal:
            self.state = State.FAILED
            return False, f"Cannot change principals during re-authentication from {self.principal}: {principal}"
        self.principal = principal
        self.state = State.COMPLETE
        self.reauthenticating = False
        self.authentications += 1
        self.expires_at = now + session_lifetime_ms / 1000 if session_lifetime_ms > 0 else None
        return True, ""


class ScramClient:
    """The client side of SCRAM (RFC 5802), for the gateway's own broker connections."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None):
        self.hash = SCRAM_HASHES[mechanism]
        self.username, self.password = username, password
        self.nonce = nonce or base64.b64encode(secrets.token_bytes(24)).decode()
        self.first_bare = f"n={_scram_escape(username)},r={self.nonce}"
        self._server_key: bytes | None = None
        self._auth_message = ""

    def first_message(self) -> bytes:
        return ("n,," + self.first_bare).encode()

    def final_message(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attrs = dict(item.split("=", 1) for item in text.split(","))
        nonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
        if not nonce.startswith(self.nonce):
            raise ValueError("the server's SCRAM nonce does not extend the client's")
        salted = hashlib.pbkdf2_hmac(self.hash().name, self.password.encode(), salt, iterations)
        client_key = hmac.new(salted, b"Client Key", self.hash).digest()
        stored_key = self.hash(client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        self._auth_message = f"{self.first_bare},{text},{without_proof}"
        signature = hmac.new(stored_key, self._auth_message.encode(), self.hash).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_key = hmac.new(salted, b"Server Key", self.hash).digest()
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify_final(self, server_final: bytes) -> None:
        text = server_final.decode()
        if text.startswith("e="):
            raise ValueError(f"SCRAM failed: {text[2:]}")
        if self._server_key is None or not text.startswith("v="):
            raise ValueError("unexpected SCRAM server-final-message")
        expected = hmac.new(self._server_key, self._auth_message.encode(), self.hash).digest()
        if not hmac.compare_digest(base64.b64decode(text[2:]), expected):
            raise ValueError("the broker's SCRAM signature does not verify")
