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
source "$(dirname "${BASH_SOURCE[0]}")/lib/lode.sh"

python_env "$ROOT/.venv-rally" tests/tools/requirements-rally.txt
python_env "$ROOT/.venv-osb" tests/tools/requirements-osb.txt

[[ -x "$LODE_BIN" ]] || { echo "test-tools: $LODE_BIN not found or not executable (build it first: cargo build)" >&2; exit 2; }
TMP="$(mktemp -d)"
trap 'stop_lode; rm -rf "$TMP"' EXIT

# lode: a fresh node for each tool; sets HOSTPORT (the tools take host:port).
lode() {
  stop_lode
  start_lode "$TMP" test-tools
  HOSTPORT="${LODE_URL#*://}"
}

TASKS="bulk $("$ROOT/.venv-rally/bin/python" tests/tools/make_track.py "$TMP/track")"
cp "$TMP/track/track.json" "$TMP/track/workload.json"

failed=()
echo "== Rally ($(cat tests/tools/requirements-rally.txt))"
lode
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
lode
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
