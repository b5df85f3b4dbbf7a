"""TLS and SASL of the gateway's listeners and of its broker connections.

- The listener (`[gateway] security_protocol`): PLAINTEXT, SSL (the gateway's certificate and key),
  SASL_PLAINTEXT or SASL_SSL (gateway/sasl.py: the client's exchange is carried to the broker).
- The broker (`upstream_security_protocol`): TLS verified with `upstream_ssl_cafile`, and for SASL
  the gateway's own identity (`upstream_sasl_*`) on the connections it opens for itself: the shared
  connections (which carry no client's pass-through traffic when the listener is SASL), the broker
  discovery, and the bridge's producer and consumer (kafka-python's settings, `kafka_client_config`).
  A SASL client's own broker connection is authenticated by the client itself, never by the gateway.
"""

from __future__ import annotations

import base64
import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .sasl import SCRAM_HASHES, ScramClient

if TYPE_CHECKING:
    from .config import GatewayConfig
    from .upstream import Upstream

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36


class SecurityConfigError(ValueError):
    pass


def uses_tls(protocol: str) -> bool:
    return protocol in ("SSL", "SASL_SSL")


def uses_sasl(protocol: str) -> bool:
    return protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def validate(cfg: GatewayConfig) -> None:
    """Refuse settings that cannot work, before anything listens."""
    for name in ("security_protocol", "upstream_security_protocol"):
        if getattr(cfg, name) not in PROTOCOLS:
            raise SecurityConfigError(f"[gateway] {name} = {getattr(cfg, name)!r}: one of {', '.join(PROTOCOLS)}")
    if uses_tls(cfg.security_protocol) and not (cfg.ssl_certfile and cfg.ssl_keyfile):
        raise SecurityConfigError(
            f"[gateway] security_protocol = {cfg.security_protocol} needs ssl_certfile and ssl_keyfile"
        )
    if uses_sasl(cfg.security_protocol):
        if not uses_sasl(cfg.upstream_security_protocol):
            raise SecurityConfigError(
                "a SASL listener needs a SASL broker (upstream_security_protocol = SASL_SSL or SASL_PLAINTEXT): "
                "the broker authenticates the clients"
            )
        unknown = [m for m in cfg.sasl_enabled_mechanisms if m not in ("PLAIN", *SCRAM_HASHES)]
        if unknown or not cfg.sasl_enabled_mechanisms:
            raise SecurityConfigError(f"[gateway] sasl_enabled_mechanisms: unsupported {unknown or 'none given'}")
    if uses_sasl(cfg.upstream_security_protocol):
        if cfg.upstream_sasl_mechanism not in ("PLAIN", *SCRAM_HASHES):
            raise SecurityConfigError(f"[gateway] upstream_sasl_mechanism = {cfg.upstream_sasl_mechanism!r}")
        if not cfg.upstream_sasl_username:
            raise SecurityConfigError("[gateway] upstream_sasl_username: the gateway's own identity at the broker")


def server_context(cfg: GatewayConfig) -> ssl.SSLContext | None:
    """The listener's TLS context (None: plaintext)."""
    if not uses_tls(cfg.security_protocol):
        return None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cfg.ssl_certfile, cfg.ssl_keyfile, password=cfg.ssl_key_password or None)
    return ctx


def client_context(cfg: GatewayConfig) -> ssl.SSLContext | None:
    """The TLS context of the broker connections (None: plaintext)."""
    if not uses_tls(cfg.upstream_security_protocol):
        return None
    ctx = ssl.create_default_context(cafile=cfg.upstream_ssl_cafile or None)
    ctx.check_hostname = cfg.upstream_ssl_check_hostname
    return ctx


@dataclass(frozen=True)
class UpstreamSecurity:
    """How the gateway reaches a broker: TLS, and its own SASL identity for its own connections."""

    tls: ssl.SSLContext | None = None
    mechanism: str | None = None  # None: no SASL
    username: str = ""
    password: str = field(default="", repr=False)
    client_id: str = "coordinator-gateway"

    @classmethod
    def from_config(cls, cfg: GatewayConfig) -> UpstreamSecurity:
        sasl = uses_sasl(cfg.upstream_security_protocol)
        return cls(
            tls=client_context(cfg),
            mechanism=cfg.upstream_sasl_mechanism if sasl else None,
            username=cfg.upstream_sasl_username,
            password=cfg.upstream_sasl_password,
            client_id=cfg.client_id,
        )

    async def authenticate(self, upstream: Upstream) -> None:
        """Authenticate a fresh broker connection as the gateway (SaslHandshake v1, SaslAuthenticate)."""
        if self.mechanism is None:
            return
        call = request_caller(upstream, self.client_id)

        answer = await call(SASL_HANDSHAKE, 1, {"mechanism": self.mechanism})
        if answer["errorCode"] != 0:
            raise ConnectionError(f"the broker refused SASL mechanism {self.mechanism}: {answer['mechanisms']}")

        async def authenticate(token: bytes) -> bytes:
            reply = await call(SASL_AUTHENTICATE, 1, {"authBytes": token})
            if reply["errorCode"] != 0:
                raise ConnectionError(f"the gateway's SASL authentication failed: {reply['errorMessage']}")
            return base64.b64decode(reply["authBytes"])

        if self.mechanism == "PLAIN":
            await authenticate(b"\0" + self.username.encode() + b"\0" + self.password.encode())
            return
        scram = ScramClient(self.mechanism, self.username, self.password)
        server_first = await authenticate(scram.first_message())
        scram.verify_final(await authenticate(scram.final_message(server_first)))

    def kafka_client_config(self, cfg: GatewayConfig) -> dict:
        """kafka-python's settings for the bridge's producer, consumer and admin client."""
        out: dict = {"security_protocol": cfg.upstream_security_protocol}
        if self.tls is not None:
            out["ssl_context"] = self.tls
        if self.mechanism is not None:
            out.update(
                sasl_mechanism=self.mechanism,
                sasl_plain_username=self.username,
                sasl_plain_password=self.password,
            )
        return out

    def librdkafka_config(self, cfg: GatewayConfig) -> dict:
        """The same settings for librdkafka (the bridge's producer, confluent-kafka)."""
        out: dict = {"security.protocol": cfg.upstream_security_protocol}
        if self.tls is not None:
            if cfg.upstream_ssl_cafile:
                out["ssl.ca.location"] = cfg.upstream_ssl_cafile
            else:  # the system's CAs, as ssl.create_default_context loads them
                out["ssl.ca.location"] = "probe"
            out["ssl.endpoint.identification.algorithm"] = "https" if cfg.upstream_ssl_check_hostname else "none"
        if self.mechanism is not None:
            out.update(
                {"sasl.mechanism": self.mechanism, "sasl.username": self.username, "sasl.password": self.password}
            )
        return out


def request_caller(upstream: Upstream, client_id: str):
    """`await call(api_key, version, body)`: one request on `upstream` (correlation ids 1, 2, ...),
    its decoded answer (Kafka's JSON form; a bytes field may be given as bytes); for the exchanges
    the gateway holds itself on a broker connection."""
    from .codec import decode_response, encode_request

    cid = 0

    async def call(api_key: int, version: int, body: dict) -> dict:
        nonlocal cid
        cid += 1
        frame = await upstream.send(encode_request(api_key, version, cid, client_id, body), cid, True)
        return decode_response(frame, api_key, version)[1]

    return call
