#!/usr/bin/env bash
# Installs everything (dev/setup.sh --full), then runs the whole test suite.
# Extra arguments go to pytest, e.g. dev/test.sh tests/store -x
set -euo pipefail
cd "$(dirname "$0")/.."
dev/setup.sh --full
export PATH="$PWD/.tools/bin:$PWD/.venv/bin:$PATH"
echo "==> lint: ruff, mypy --strict, import contracts"
.venv/bin/ruff check trainguard tests benchmarks examples dev
.venv/bin/ruff format --check -q trainguard tests benchmarks examples dev
.venv/bin/mypy trainguard
.venv/bin/lint-imports
set +e
.venv/bin/python -m pytest -q -ra "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi
exit "$rc"
