#!/usr/bin/env bash
# The test command: set up .venv/ if needed, lint (ruff, configured in pyproject.toml; a second),
# then run the whole suite on two processes
# (pytest-xdist; a unit is a test module or a docs page, whose blocks run in order; units start
# in the order tests/conftest.py sorts them, the slowest first).
#   bash scripts/test.sh [pytest args...]      # e.g. -m "not e2e" for the fast tests, -n 0 for one process
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "${REPO}/scripts/setup_env.sh"
cd "${REPO}"
"${REPO}/.venv/bin/ruff" check .
exec "${REPO}/.venv/bin/python" -m pytest -q -n "${TEST_PROCESSES:-2}" --dist loadscope --no-loadscope-reorder "$@"
