"""The embedded local setup: a broker and Redis on 127.0.0.1, the topics, the Kafka-protocol
gateway in the background, then the stream in the foreground.

    python -m deploy.local [--config override.toml] [--no-redis] [--no-gateway] [other run_stream.py options]

Called by deploy/run-local.sh after deploy/setup.sh. The broker is started only when the
configured bootstrap address is one local address (then the topics get one replica and
min.insync.replicas 1, `[topics]`), Redis (for the read model, `[redis]`) only when it is
enabled and its url is local; both keep running after the stream stops (deploy/stop-local.sh
stops them). --no-redis runs the stream without the read model. The gateway (`[gateway]`,
docs/gateway.md) waits for the broker and the service's topics, then serves Kafka clients at
`[gateway] advertised_host:base_port`; it too keeps running until deploy/stop-local.sh.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from urllib.parse import urlparse

from deploy import gateway_local
from deploy.kafka_local import ROOT, LocalKafka
from deploy.redis_local import LocalRedis
from streaming.config import StreamConfig


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--config")
    ap.add_argument("--no-redis", action="store_true")
    ap.add_argument("--no-gateway", action="store_true")
    known, _ = ap.parse_known_args(argv)
    argv = [a for a in argv if a not in ("--no-redis", "--no-gateway")]
    if known.no_redis:
        os.environ["COORD_REDIS_ENABLED"] = "false"  # the stream runs without the projector
    t0 = time.monotonic()
    cfg = StreamConfig.load(known.config)
    host, _, port = cfg.bootstrap.split(",")[0].rpartition(":")
    if host in ("127.0.0.1", "localhost") and "," not in cfg.bootstrap:
        # A broker on another port (a bench, a second setup) keeps its data apart from the default one.
        data = ROOT / ".run" / ("kafka" if int(port) == 9092 else f"kafka-{port}")
        broker = LocalKafka(data, int(port)).launch()
        print(f"Kafka broker starting at {broker.bootstrap} (log: {broker.logfile})", flush=True)
        # One broker: the stream and the gateway (both read the environment) are told that its topics
        # get one replica, as its server.properties tells Kafka's own coordinators. A setting of the
        # user's environment wins. (A list of addresses is a cluster: deploy/kafka_cluster.py.)
        for key, value in broker.service_topics.items():
            os.environ.setdefault(f"COORD_TOPICS_{key.upper()}", str(value))
    redis_url = urlparse(cfg.redis.get("url", ""))
    if cfg.redis.get("enabled") and not known.no_redis and redis_url.hostname in ("127.0.0.1", "localhost"):
        redis_port = redis_url.port or 6379
        server = LocalRedis(
            ROOT / ".run" / ("redis" if redis_port == 6379 else f"redis-{redis_port}"), redis_port
        ).start()
        print(f"Redis up at {server.url} for the read model (log: {server.logfile})", flush=True)
    if not known.no_gateway:
        gateway_local.start(known.config)
        g = cfg.raw.get("gateway", {})
        print(
            f"Kafka-protocol gateway starting: Kafka clients use bootstrap.servers="
            f"{g.get('advertised_host') or g.get('listen_host', '127.0.0.1')}:{g.get('base_port', 19092)} "
            f"(log: {gateway_local.LOGFILE})",
            flush=True,
        )
    print(
        f"starting the coordinator stream ({time.monotonic() - t0:.1f} s); it creates its topics once the "
        f"broker answers and logs READY when it answers requests",
        flush=True,
    )
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # The stream starts Spark while the broker starts (they take seconds each), then waits for the
    # broker and creates the topics (--ensure-topics).
    os.execv(sys.executable, [sys.executable, str(ROOT / "run_stream.py"), "--ensure-topics", *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
