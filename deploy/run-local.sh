#!/usr/bin/env bash
# One command for the embedded local setup: install what is missing (deploy/setup.sh), start a
# single-node KRaft Kafka broker on 127.0.0.1:9092 and Redis on 127.0.0.1:6379 (the read model;
# --no-redis skips it), the Kafka-protocol gateway on 127.0.0.1:19092 (--no-gateway skips it), create
# the topics and run the coordinator stream in the foreground. Ctrl-C stops the stream; the broker,
# Redis and the gateway keep running (deploy/stop-local.sh stops them).
#   deploy/run-local.sh [--config override.toml] [--no-redis] [--no-gateway] [run_stream.py options...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/deploy/setup.sh"
exec "$ROOT/.venv/bin/python" -m deploy.local "$@"
