#!/usr/bin/env bash
# Python conformance suite: drives `lode serve` with the official elasticsearch
# client and checks every answer against an oracle computed from the generated
# documents (tests/python).  It does not build Lode: run `cargo build` first.
#
#   LODE_BIN   server binary (default: target/debug/lode in the repo)
#   LODE_URL   test an already running server instead of starting LODE_BIN
#   extra args are passed to pytest, e.g. scripts/test-python.sh -k aggs -x
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# A relative LODE_BIN is taken relative to the caller's cwd if it exists there.
if [[ -n "${LODE_BIN:-}" && "$LODE_BIN" != /* && -e "$LODE_BIN" ]]; then
  LODE_BIN="$(cd "$(dirname "$LODE_BIN")" && pwd)/$(basename "$LODE_BIN")"
fi
export LODE_BIN="${LODE_BIN:-$ROOT/target/debug/lode}"
[[ "$LODE_BIN" == /* ]] || LODE_BIN="$ROOT/$LODE_BIN"

cd "$ROOT"
VENV="$ROOT/.venv"
if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r tests/python/requirements.txt

if [[ -z "${LODE_URL:-}" && ! -x "$LODE_BIN" ]]; then
  echo "test-python: $LODE_BIN not found or not executable (build it first: cargo build)" >&2
  exit 2
fi
exec "$VENV/bin/python" -m pytest -q -rxX tests/python "$@"
