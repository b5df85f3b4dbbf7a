#!/usr/bin/env bash
# Stop the local broker started by deploy/run-local.sh (its data stays in .run/kafka).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/.venv/bin/python" -m deploy.kafka_local stop
