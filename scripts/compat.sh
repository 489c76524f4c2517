#!/usr/bin/env bash
# Runs the upstream REST conformance tests (COMPAT_DIR, default ../shared/compat) against a fresh `lode serve`
# and fails when the pass rate of runnable sections drops below COMPAT_MIN (percent).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
LODE_BIN="${LODE_BIN:-$ROOT/target/debug/lode}"
COMPAT_DIR="${COMPAT_DIR:-$ROOT/../shared/compat}"
COMPAT_MIN="${COMPAT_MIN:-85}"
if [ ! -f "$COMPAT_DIR/runner.py" ]; then
  # A clone alone tests itself; CI (.ci/run) sets COMPAT_REQUIRED=1 to enforce the floor.
  if [ "${COMPAT_REQUIRED:-0}" = 1 ]; then
    echo "compat: $COMPAT_DIR/runner.py not found and COMPAT_REQUIRED=1" >&2; exit 1
  fi
  echo "compat: skipped, no conformance suite at $COMPAT_DIR (set COMPAT_DIR to run it)"
  exit 0
fi
OUT="${COMPAT_OUT:-$ROOT/target/compat.json}"

[ -d .venv ] || python3 -m venv .venv
.venv/bin/pip install -q -r tests/python/requirements.txt

DATA="$(mktemp -d)"
LOG="$DATA/lode.log"
"$LODE_BIN" serve -E http.port=0 -E "path.data=$DATA/data" -E cluster.routing.allocation.disk.threshold_enabled=false >"$DATA/stdout" 2>"$LOG" &
PID=$!
trap 'kill $PID 2>/dev/null || true; wait $PID 2>/dev/null || true; rm -rf "$DATA"' EXIT
for _ in $(seq 1 100); do
  URL=$(grep -o 'http://[0-9.:]*' "$DATA/stdout" 2>/dev/null | head -1 || true)
  [ -n "$URL" ] && break
  sleep 0.1
done
[ -n "$URL" ] || { echo "lode did not start"; cat "$LOG"; exit 1; }

.venv/bin/python "$COMPAT_DIR/runner.py" --url "$URL" --wipe-existing --wipe-dot-indices --json "$OUT" | tail -n 60 || true
.venv/bin/python - "$OUT" "$COMPAT_MIN" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
floor = float(sys.argv[2])
def find(d, *keys):
    for k in keys:
        if isinstance(d, dict) and k in d:
            return d[k]
    return None
tot = find(data, "totals", "summary", "total") or data
passed = find(tot, "passed", "pass")
failed = find(tot, "failed", "fail")
if passed is None or failed is None:
    print("compat: could not read totals from", sys.argv[1]); sys.exit(1)
rate = 100.0 * passed / max(1, passed + failed)
print(f"compat: {passed} passed, {failed} failed: {rate:.1f}% of runnable sections (floor {floor}%)")
sys.exit(0 if rate >= floor else 1)
PY
