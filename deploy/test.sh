#!/usr/bin/env bash
# The whole test suite from a fresh machine: install what is missing (deploy/setup.sh), run the
# static checks (deploy/lint.sh: ruff and mypy), the unit tests, then the integration tests, which
# start their own Kafka broker, Redis and Spark jobs (tests/integration/conftest.py). Every module's
# time is printed at the end and kept with the JUnit reports in artifacts/tests/.
#   deploy/test.sh                  the whole suite
#   deploy/test.sh [pytest args]    pytest with these arguments only (after set-up and lint)
#
# Lint and the unit tests use one core of the machine's two. The other meanwhile makes the Spark
# driver's class-data archive, then starts the integration run, whose broker and first shared job
# start at once (tests/integration/conftest.py, WarmUp); its tests wait until the unit tests passed
# (SUITE_GATE: `go`, or the reason it must not run). Its output is shown after the unit tests'.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PYSPARK_PYTHON="$ROOT/.venv/bin/python"
PY="$ROOT/.venv/bin/python"
if [ $# -gt 0 ]; then
  "$ROOT/deploy/setup.sh"
  "$ROOT/deploy/lint.sh"
  exec "$PY" -m pytest "$@"
fi
"$ROOT/deploy/setup.sh" --no-archive
out="$ROOT/artifacts/tests"
rm -rf "$out" && mkdir -p "$out"
gate="$out/gate" && : > "$gate"
integration=""
stopped() {  # an exit before the end (a failure of set -e, a signal): the integration run stops too
  [ -s "$gate" ] || echo "deploy/test.sh stopped" > "$gate"
  if [ -n "$integration" ]; then kill -INT "$integration" 2>/dev/null || true; fi
}
trap stopped EXIT
trap 'exit 130' INT TERM
(
  "$ROOT/deploy/setup.sh" --archive-only
  exec env SUITE_GATE="$gate" SUITE_GATE_PID=$$ PYTHONUNBUFFERED=1 "$PY" -m pytest -m integration \
    --durations=0 --junitxml="$out/junit-integration.xml"
) > "$out/integration.log" 2>&1 &
integration=$!
status=0
"$ROOT/deploy/lint.sh" || status=$?
if [ "$status" = 0 ]; then
  "$PY" -m pytest -m "not integration" -q --durations=10 --junitxml="$out/junit-unit.xml" || status=$?
fi
if [ "$status" = 0 ]; then echo go > "$gate"; else echo "lint or the unit tests failed" > "$gate"; fi
tail -n +1 --pid="$integration" -f "$out/integration.log"
wait "$integration" || { [ "$status" != 0 ] || status=$?; }
integration=""
"$PY" -m deploy.suite_times "$out"/junit-*.xml | tee "$out/module-times.txt" || true
exit "$status"
