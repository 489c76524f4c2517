#!/usr/bin/env bash
# The benchmark tools our users run: Elastic's Rally and OpenSearch Benchmark, pinned, each in
# its own virtualenv (.venv-rally, .venv-osb), race a small track of the reference workload
# (tests/tools/make_track.py: create index, bulk with two clients, refresh, every reference
# query, force merge) in benchmark-only mode, offline, against one `lode serve`. Passes when
# both produce a report with an error-rate row for every task and every rate is 0 %.
# It does not build Lode: run `cargo build` first.
#
#   LODE_BIN   server binary (default: target/debug/lode in the repo)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -n "${LODE_BIN:-}" && "$LODE_BIN" != /* && -e "$LODE_BIN" ]]; then
  LODE_BIN="$(cd "$(dirname "$LODE_BIN")" && pwd)/$(basename "$LODE_BIN")"
fi
LODE_BIN="${LODE_BIN:-$ROOT/target/debug/lode}"
[[ "$LODE_BIN" == /* ]] || LODE_BIN="$ROOT/$LODE_BIN"
cd "$ROOT"

python_env() {
  local venv="$1" req="$2"
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  if ! cmp -s "$req" "$venv/.lode-requirements"; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
    cp "$req" "$venv/.lode-requirements"
  fi
}
python_env "$ROOT/.venv-rally" tests/tools/requirements-rally.txt
python_env "$ROOT/.venv-osb" tests/tools/requirements-osb.txt

[[ -x "$LODE_BIN" ]] || { echo "test-tools: $LODE_BIN not found or not executable (build it first: cargo build)" >&2; exit 2; }
TMP="$(mktemp -d)"
PID=""
cleanup() {
  [[ -n "$PID" ]] && { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
  rm -rf "$TMP"
}
trap cleanup EXIT

# start_lode: a fresh node on a free port; sets HOSTPORT.
start_lode() {
  [[ -n "$PID" ]] && { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
  rm -rf "$TMP/data" && mkdir -p "$TMP/data"
  "$LODE_BIN" serve -E http.port=0 -E "path.data=$TMP/data" -E cluster.routing.allocation.disk.threshold_enabled=false >"$TMP/stdout" 2>"$TMP/stderr" </dev/null &
  PID=$!
  HOSTPORT=""
  for _ in $(seq 1 600); do
    HOSTPORT=$(sed -n 's/^lode ready: https\?:\/\/\([^ ]*\).*/\1/p' "$TMP/stdout" | head -1)
    [[ -n "$HOSTPORT" ]] && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n "$HOSTPORT" ]] || { echo "test-tools: lode did not start" >&2; tail -n 40 "$TMP/stderr" >&2; exit 3; }
}

TASKS="bulk $("$ROOT/.venv-rally/bin/python" tests/tools/make_track.py "$TMP/track")"
cp "$TMP/track/track.json" "$TMP/track/workload.json"

failed=()
echo "== Rally ($(cat tests/tools/requirements-rally.txt))"
start_lode
if HOME="$TMP/rally-home" "$ROOT/.venv-rally/bin/esrally" race --track-path="$TMP/track" \
    --target-hosts="$HOSTPORT" --pipeline=benchmark-only --offline --kill-running-processes \
    --report-file="$TMP/rally-report.md" >"$TMP/rally.log" 2>&1 \
  && "$ROOT/.venv-rally/bin/python" tests/tools/check_report.py "$TMP/rally-report.md" $TASKS; then
  :
else
  failed+=(rally); tail -n 40 "$TMP/rally.log" >&2
  tail -n 60 "$TMP"/rally-home/.rally/logs/rally.log 2>/dev/null >&2 || true
fi

echo "== OpenSearch Benchmark ($(cat tests/tools/requirements-osb.txt))"
start_lode
if HOME="$TMP/osb-home" "$ROOT/.venv-osb/bin/opensearch-benchmark" run \
    --workload-path="$TMP/track" --target-hosts="$HOSTPORT" --pipeline=benchmark-only --offline \
    --kill-running-processes --results-file="$TMP/osb-report.md" >"$TMP/osb.log" 2>&1 \
  && "$ROOT/.venv-osb/bin/python" tests/tools/check_report.py "$TMP/osb-report.md" $TASKS; then
  :
else
  failed+=(opensearch-benchmark); tail -n 40 "$TMP/osb.log" >&2
  tail -n 60 "$TMP"/osb-home/.benchmark/logs/benchmark.log 2>/dev/null >&2 || true
fi

if (( ${#failed[@]} )); then
  echo "test-tools: failed: ${failed[*]}" >&2
  tail -n 40 "$TMP/stderr" >&2
  exit 1
fi
echo "test-tools: Rally and OpenSearch Benchmark raced the reference track with 0% errors"
