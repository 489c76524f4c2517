#!/usr/bin/env bash
# The client matrix: the reference workflow (create an index with a mapping, bulk helper,
# aggregations, scroll helper, update, delete, errors) with elasticsearch-py 9
# (tests/clients/py9), opensearch-py (tests/clients/opensearch) and the JavaScript client
# @elastic/elasticsearch 8 (tests/clients/js) against one `lode serve`. elasticsearch-py 8 is
# the main Python suite (scripts/test-python.sh). It does not build Lode: run `cargo build` first.
#
#   LODE_BIN   server binary (default: target/debug/lode in the repo)
#   LODE_URL   test an already running server instead of starting LODE_BIN
#
# Each client is installed once, pinned: the Python ones in their own virtualenv
# (.venv-py9, .venv-opensearch), the JavaScript one with `npm ci` from its package-lock.json.
# A second run reinstalls only what changed (a copy of the requirements or lock file kept
# beside the installation says what was installed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# A relative LODE_BIN is taken relative to the caller's cwd if it exists there.
if [[ -n "${LODE_BIN:-}" && "$LODE_BIN" != /* && -e "$LODE_BIN" ]]; then
  LODE_BIN="$(cd "$(dirname "$LODE_BIN")" && pwd)/$(basename "$LODE_BIN")"
fi
LODE_BIN="${LODE_BIN:-$ROOT/target/debug/lode}"
[[ "$LODE_BIN" == /* ]] || LODE_BIN="$ROOT/$LODE_BIN"
cd "$ROOT"

# python_env VENV REQUIREMENTS: the virtualenv with exactly these requirements installed.
python_env() {
  local venv="$1" req="$2"
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  if ! cmp -s "$req" "$venv/.lode-requirements"; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
    cp "$req" "$venv/.lode-requirements"
  fi
}

python_env "$ROOT/.venv-py9" tests/clients/py9/requirements.txt
python_env "$ROOT/.venv-opensearch" tests/clients/opensearch/requirements.txt
command -v node >/dev/null || { echo "test-clients: node (20 or later) is required" >&2; exit 2; }
if ! cmp -s tests/clients/js/package-lock.json tests/clients/js/node_modules/.lode-package-lock.json; then
  (cd tests/clients/js && npm ci --no-audit --no-fund --loglevel=error)
  cp tests/clients/js/package-lock.json tests/clients/js/node_modules/.lode-package-lock.json
fi

if [[ -z "${LODE_URL:-}" ]]; then
  [[ -x "$LODE_BIN" ]] || { echo "test-clients: $LODE_BIN not found or not executable (build it first: cargo build)" >&2; exit 2; }
  TMP="$(mktemp -d)"
  "$LODE_BIN" serve -E http.port=0 -E "path.data=$TMP/data" -E cluster.routing.allocation.disk.threshold_enabled=false >"$TMP/stdout" 2>"$TMP/stderr" </dev/null &
  PID=$!
  trap 'kill $PID 2>/dev/null || true; wait $PID 2>/dev/null || true; rm -rf "$TMP"' EXIT
  for _ in $(seq 1 600); do
    LODE_URL=$(sed -n 's/^lode ready: \(https\?:\/\/[^ ]*\).*/\1/p' "$TMP/stdout" | head -1)
    [[ -n "$LODE_URL" ]] && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z "$LODE_URL" ]]; then
    echo "test-clients: lode did not start" >&2
    tail -n 40 "$TMP/stdout" "$TMP/stderr" >&2
    exit 3
  fi
fi
export LODE_URL

failed=()
echo "== elasticsearch-py 9 ($LODE_URL)"
(cd tests/clients/py9 && "$ROOT/.venv-py9/bin/python" -m pytest -q) || failed+=(py9)
echo "== opensearch-py"
(cd tests/clients/opensearch && "$ROOT/.venv-opensearch/bin/python" -m pytest -q) || failed+=(opensearch)
echo "== @elastic/elasticsearch (JavaScript)"
(cd tests/clients/js && node --test --test-reporter=spec) || failed+=(js)

if (( ${#failed[@]} )); then
  echo "test-clients: failed: ${failed[*]}" >&2
  [[ -n "${TMP:-}" ]] && { echo "--- lode stderr (tail)" >&2; tail -n 40 "$TMP/stderr" >&2; }
  exit 1
fi
echo "test-clients: all client suites passed"
