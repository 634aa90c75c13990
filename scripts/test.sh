#!/usr/bin/env bash
# The test command: set up .venv/ if needed, then run the whole suite.
#   bash scripts/test.sh [pytest args...]
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "${REPO}/scripts/setup_env.sh"
cd "${REPO}"
exec "${REPO}/.venv/bin/python" -m pytest -q "$@"
