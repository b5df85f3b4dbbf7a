"""The gateway's settings: the `[gateway]` table of conf/defaults.toml (plus [kafka], [topics])."""

from __future__ import annotations

from dataclasses import dataclass

from streaming.config import StreamConfig


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
    request_timeout_ms: int = 30000
    requests_topic: str = "coordinator-requests"
    reply_to: str = "coordinator-responses.gateway"
    reply_to_partitions: int = 8
    reply_to_max_bytes: int = 16 * 1024 * 1024  # max.message.bytes of the reply topic, as the service's
    reply_to_replication: tuple[int, int] = (3, 2)  # replicas, min.insync.replicas: [topics]' own
    startup_timeout_s: float = 300.0  # how long to wait for the broker and the request topic
    client_id: str = "coordinator-gateway"
    coordinator_partitions: int = 50

    @classmethod
    def from_stream_config(cls, cfg: StreamConfig, **overrides) -> GatewayConfig:
        g = dict(cfg.raw.get("gateway", {}))
        listen = g.get("listen_host", cls.listen_host)
        values = dict(
            bootstrap_servers=cfg.bootstrap,
            listen_host=listen,
            advertised_host=g.get("advertised_host")
            or (listen if listen not in ("", "0.0.0.0", "::") else "127.0.0.1"),
            base_port=int(g.get("base_port", cls.base_port)),
            broker_ports=tuple(sorted((int(k), int(v)) for k, v in g.get("broker_ports", {}).items())),
            max_in_flight=int(g.get("max_in_flight", cls.max_in_flight)),
            upstream_connections=int(g.get("upstream_connections", cls.upstream_connections)),
            upstream_connects=int(g.get("upstream_connects", cls.upstream_connects)),
            max_frame_bytes=int(g.get("max_frame_bytes", cls.max_frame_bytes)),
            request_timeout_ms=int(g.get("request_timeout_ms", cls.request_timeout_ms)),
            requests_topic=cfg.topics["requests"],
            reply_to=g.get("reply_to") or f"{cfg.topics['responses']}.gateway",
            reply_to_partitions=int(cfg.topics.get("responses_partitions", cls.reply_to_partitions)),
            reply_to_max_bytes=int(cfg.stream.get("max_record_bytes", cls.reply_to_max_bytes)),
            reply_to_replication=cfg.topic_durability,
            client_id=g.get("client_id", cls.client_id),
            coordinator_partitions=cfg.coordinator_partitions,
        )
        values.update(overrides)
        return cls(**values)
