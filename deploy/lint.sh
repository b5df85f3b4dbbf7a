#!/usr/bin/env bash
# Static checks, run by deploy/test.sh (and so by CI) before the tests: ruff's lint rules and its
# formatter (check only), then mypy. All configured in pyproject.toml.
#   deploy/lint.sh            check
#   deploy/lint.sh --fix      apply ruff's safe fixes and format, then check
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [ "${1:-}" = "--fix" ]; then
  .venv/bin/ruff check --fix --quiet . || true
  .venv/bin/ruff format --quiet .
fi
echo "lint: ruff check" >&2
.venv/bin/ruff check .
echo "lint: ruff format --check" >&2
.venv/bin/ruff format --check --quiet .
echo "lint: mypy" >&2
.venv/bin/mypy
