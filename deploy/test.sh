#!/usr/bin/env bash
# The whole test suite from a fresh machine: install what is missing, run the static checks
# (deploy/lint.sh: ruff and mypy), then every test. The integration tests start their own Kafka
# broker (random ports) and Spark jobs.
#   deploy/test.sh [pytest options...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/deploy/setup.sh"
"$ROOT/deploy/lint.sh"
export PYSPARK_PYTHON="$ROOT/.venv/bin/python"
exec "$ROOT/.venv/bin/python" -m pytest "$@"
