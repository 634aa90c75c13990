#!/usr/bin/env bash
# Create or update the project's environment in .venv/ (idempotent; fast when up to date).
#
#   bash scripts/setup_env.sh        # then: . .venv/bin/activate
#
# Installs the pinned lock in requirements.txt with --no-deps (fairseq's declared torchaudio
# would pull a CUDA torch), the project itself in editable mode, and Debian's
# libxml-parser-perl for the Perl ROUGE-1.5.5 backend when running as root.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="${REPO}/.venv"
STAMP="${VENV}/.requirements.sha256"

start=$(date +%s)
if [[ ! -x "${VENV}/bin/python" ]]; then
    echo "[setup] creating ${VENV} with $(${PYTHON} --version)"
    "${PYTHON}" -m venv "${VENV}"
fi

want="$(cat "${REPO}/requirements.txt" "${REPO}/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [[ ! -f "${STAMP}" || "$(cat "${STAMP}")" != "${want}" ]]; then
    echo "[setup] installing the pinned environment (requirements.txt, --no-deps)"
    "${VENV}/bin/python" -m pip install --quiet --no-deps -r "${REPO}/requirements.txt"
    "${VENV}/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e "${REPO}"
    echo "${want}" > "${STAMP}"
else
    echo "[setup] ${VENV} is up to date"
fi

if ! perl -MXML::Parser -e 1 2>/dev/null; then
    if [[ "$(id -u)" == "0" ]] && command -v apt-get >/dev/null; then
        echo "[setup] installing Debian's libxml-parser-perl for Perl ROUGE-1.5.5"
        apt-get update -qq >/dev/null && apt-get install -y -qq libxml-parser-perl >/dev/null
    else
        echo "[setup] note: perl XML::Parser missing (apt-get install libxml-parser-perl);" \
             "files2rouge --backend perl will refuse to run" >&2
    fi
fi
echo "[setup] ready in $(( $(date +%s) - start )) s"
