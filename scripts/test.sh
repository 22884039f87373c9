#!/usr/bin/env bash
# Set up a virtual environment with the dev extras and run the test suite and proofs.
# Usage: bash scripts/test.sh [--full] [pytest args...]
#   --full  also runs the slow sweeps (every target for compiler truth, every modifier).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${TILESIM_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
"$VENV/bin/python" -m pip install -q -e ".[dev]"
export TILESIM_REQUIRE_COMPILER=1  # the dev extras install clang: compiler tests must run, not skip
exec "$VENV/bin/python" -m pytest "$@"
