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
source "$(dirname "${BASH_SOURCE[0]}")/lib/lode.sh"

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
  trap 'stop_lode; rm -rf "$TMP"' EXIT
  start_lode "$TMP" test-clients
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
