#!/usr/bin/env bash
# The whole test suite from a fresh machine: install what is missing (deploy/setup.sh), run the
# static checks (deploy/lint.sh: ruff and mypy), the unit tests, then the integration tests, which
# start their own Kafka broker, Redis and Spark jobs (tests/integration/conftest.py). Every module's
# time is printed at the end and kept with the JUnit reports in artifacts/tests/.
#   deploy/test.sh                  the whole suite
#   deploy/test.sh [pytest args]    pytest with these arguments only (after set-up and lint)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/deploy/setup.sh"
"$ROOT/deploy/lint.sh"
export PYSPARK_PYTHON="$ROOT/.venv/bin/python"
PY="$ROOT/.venv/bin/python"
if [ $# -gt 0 ]; then
  exec "$PY" -m pytest "$@"
fi
out="$ROOT/artifacts/tests"
rm -rf "$out" && mkdir -p "$out"
status=0
"$PY" -m pytest -m "not integration" -q --durations=10 --junitxml="$out/junit-unit.xml" || status=$?
if [ "$status" = 0 ]; then
  "$PY" -m pytest -m integration --durations=0 --junitxml="$out/junit-integration.xml" || status=$?
fi
"$PY" -m deploy.suite_times "$out"/junit-*.xml | tee "$out/module-times.txt" || true
exit "$status"
