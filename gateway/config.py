"""The gateway's settings: the `[gateway]` table of conf/defaults.toml (plus [kafka], [topics])."""

from __future__ import annotations

from dataclasses import dataclass, field

from streaming.config import StreamConfig

from .limits import parse_overrides


@dataclass(frozen=True)
class GatewayConfig:
    bootstrap_servers: str
    listen_host: str = "127.0.0.1"
    advertised_host: str = "127.0.0.1"
    base_port: int = 19092
    broker_ports: tuple[tuple[int, int], ...] = ()  # (broker node id, gateway port) overrides
    max_in_flight: int = 100
    upstream_connections: int = 4  # shared connections per broker (Produce and Fetch: one per client)
    upstream_connects: int = 16  # broker connections being opened at once (the broker's backlog is 50)
    max_frame_bytes: int = 100 * 1024 * 1024
    # Request bytes buffered across every client connection (Kafka's queued.max.request.bytes, whose
    # default -1 is unbounded): reading stops while a frame does not fit; a frame larger than this
    # closes its connection.
    queued_max_request_bytes: int = 200 * 1024 * 1024
    connections_max_idle_ms: int = 600000  # Kafka's connections.max.idle.ms
    max_connections_per_ip: int = 2**31 - 1  # Kafka's max.connections.per.ip (unlimited)
    max_connections_per_ip_overrides: tuple[tuple[str, int], ...] = ()  # (address, limit)
    request_timeout_ms: int = 30000
    requests_topic: str = "coordinator-requests"
    reply_to: str = "coordinator-responses.gateway"
    reply_to_partitions: int = 8
    reply_to_max_bytes: int = 16 * 1024 * 1024  # max.message.bytes of the reply topic, as the service's
    reply_to_replication: tuple[int, int] = (3, 2)  # replicas, min.insync.replicas: [topics]' own
    startup_timeout_s: float = 300.0  # how long to wait for the broker and the request topic
    client_id: str = "coordinator-gateway"
    coordinator_partitions: int = 50
    # The largest request envelope the service takes (coordinator.request.max.bytes): a bridged
    # request larger than this is answered INVALID_REQUEST without being sent.
    request_max_bytes: int = 1048576
    # Security (gateway/security.py, docs/gateway.md "Security"): the listener's protocol and
    # certificate, the SASL mechanisms it offers (the broker checks the credentials), and how the
    # gateway reaches the broker (its CA, and its own identity for the connections it opens itself).
    security_protocol: str = "PLAINTEXT"  # PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
    ssl_certfile: str = ""  # PEM: the gateway's certificate (and chain)
    ssl_keyfile: str = ""  # PEM: its private key
    ssl_key_password: str = field(default="", repr=False)
    sasl_enabled_mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    upstream_security_protocol: str = "PLAINTEXT"
    upstream_ssl_cafile: str = ""  # PEM: the CA that signed the broker's certificate ("": the system's)
    upstream_ssl_check_hostname: bool = True
    upstream_sasl_mechanism: str = "PLAIN"
    upstream_sasl_username: str = ""
    upstream_sasl_password: str = field(default="", repr=False)
    # The key the gateway signs its bridged requests' principal with (streaming/principal.py):
    # a file of hex, shared with the service ("": requests carry no principal).
    principal_key_file: str = ""

    @classmethod
    def from_stream_config(cls, cfg: StreamConfig, **overrides) -> GatewayConfig:
        g = dict(cfg.raw.get("gateway", {}))
        listen = g.get("listen_host", cls.listen_host)
        mechanisms = g.get("sasl_enabled_mechanisms", list(cls.sasl_enabled_mechanisms))
        if isinstance(mechanisms, str):  # Kafka's form: "PLAIN,SCRAM-SHA-256"
            mechanisms = [m.strip() for m in mechanisms.split(",") if m.strip()]
        values = dict(
            # the broker's listener the gateway uses ("": [kafka] bootstrap_servers, the service's)
            bootstrap_servers=g.get("upstream_bootstrap_servers") or cfg.bootstrap,
            listen_host=listen,
            advertised_host=g.get("advertised_host")
            or (listen if listen not in ("", "0.0.0.0", "::") else "127.0.0.1"),
            base_port=int(g.get("base_port", cls.base_port)),
            broker_ports=tuple(sorted((int(k), int(v)) for k, v in g.get("broker_ports", {}).items())),
            max_in_flight=int(g.get("max_in_flight", cls.max_in_flight)),
            upstream_connections=int(g.get("upstream_connections", cls.upstream_connections)),
            upstream_connects=int(g.get("upstream_connects", cls.upstream_connects)),
            max_frame_bytes=int(g.get("max_frame_bytes", cls.max_frame_bytes)),
            queued_max_request_bytes=int(g.get("queued_max_request_bytes", cls.queued_max_request_bytes)),
            connections_max_idle_ms=int(g.get("connections_max_idle_ms", cls.connections_max_idle_ms)),
            max_connections_per_ip=int(g.get("max_connections_per_ip", cls.max_connections_per_ip)),
            max_connections_per_ip_overrides=tuple(
                sorted(parse_overrides(g.get("max_connections_per_ip_overrides")).items())
            ),
            request_timeout_ms=int(g.get("request_timeout_ms", cls.request_timeout_ms)),
            requests_topic=cfg.topics["requests"],
            reply_to=g.get("reply_to") or f"{cfg.topics['responses']}.gateway",
            reply_to_partitions=int(cfg.topics.get("responses_partitions", cls.reply_to_partitions)),
            reply_to_max_bytes=int(cfg.stream.get("max_record_bytes", cls.reply_to_max_bytes)),
            reply_to_replication=cfg.topic_durability,
            client_id=g.get("client_id", cls.client_id),
            coordinator_partitions=cfg.coordinator_partitions,
            request_max_bytes=int(cfg.coordinator_config()["coordinator.request.max.bytes"]),
            security_protocol=str(g.get("security_protocol", cls.security_protocol)).upper(),
            ssl_certfile=str(g.get("ssl_certfile", "")),
            ssl_keyfile=str(g.get("ssl_keyfile", "")),
            ssl_key_password=str(g.get("ssl_key_password", "")),
            sasl_enabled_mechanisms=tuple(str(m).upper() for m in mechanisms),
            upstream_security_protocol=str(g.get("upstream_security_protocol", cls.upstream_security_protocol)).upper(),
            upstream_ssl_cafile=str(g.get("upstream_ssl_cafile", "")),
            upstream_ssl_check_hostname=bool(g.get("upstream_ssl_check_hostname", True)),
            upstream_sasl_mechanism=str(g.get("upstream_sasl_mechanism", cls.upstream_sasl_mechanism)).upper(),
            upstream_sasl_username=str(g.get("upstream_sasl_username", "")),
            upstream_sasl_password=str(g.get("upstream_sasl_password", "")),
            principal_key_file=str(g.get("principal_key_file", "")),
        )
        values.update(overrides)
        return cls(**values)
