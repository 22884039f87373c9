#!/usr/bin/env bash
# Set up a virtual environment and run the main job: the tilesim tour.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${TILESIM_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
"$VENV/bin/python" -m pip install -q -e ".[compiler]"
exec "$VENV/bin/tilesim" demo "$@"
