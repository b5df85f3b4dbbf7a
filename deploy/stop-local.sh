#!/usr/bin/env bash
# Stop the local broker, Redis and the gateway started by deploy/run-local.sh (the broker's data stays in
# .run/kafka; Redis keeps nothing: the read model is rebuilt from the state log).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/.venv/bin/python" -m deploy.gateway_local stop
"$ROOT/.venv/bin/python" -m deploy.kafka_local stop
"$ROOT/.venv/bin/python" -m deploy.redis_local stop
