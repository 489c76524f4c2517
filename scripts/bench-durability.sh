#!/usr/bin/env bash
# The durability benchmark of BENCHMARKS.md: N single-document writes of books.json from C
# concurrent clients to /books/_doc, once with `index.translog.durability: request` and once with
# `async`, against one server, reporting throughput, latency and fsyncs per acknowledged write
# (from `_stats.translog.fsync_total`).
#
#   scripts/bench-durability.sh [URL] [REQUESTS] [CONCURRENCY]
set -euo pipefail
cd "$(dirname "$0")/.."
URL="${1:-http://127.0.0.1:9200}"
N="${2:-50000}"
C="${3:-200}"
LODE="${LODE_BIN:-target/release/lode}"
OUT="${OUT:-target/bench-durability}"
mkdir -p "$OUT"

fsyncs() {
  curl -s "$URL/books/_stats/translog" | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["_all"]["total"]["translog"].get("fsync_total", 0))'
}

for mode in request async; do
  curl -s -o /dev/null -X DELETE "$URL/books" || true
  curl -s -o /dev/null -X PUT "$URL/books" -H 'content-type: application/json' \
    -d "{\"settings\":{\"index.translog.durability\":\"$mode\",\"number_of_shards\":1,\"number_of_replicas\":0}}"
  before=$(fsyncs)
  "$LODE" bench write "$URL" -n "$N" -c "$C" --json "$OUT/$mode.json" | tee "$OUT/$mode.txt"
  after=$(fsyncs)
  python3 - "$OUT/$mode.json" "$mode" "$before" "$after" <<'PY'
import json, sys
path, mode, before, after = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = json.load(open(path))
def find(d, key):
    if isinstance(d, dict):
        if key in d:
            return d[key]
        for v in d.values():
            r = find(v, key)
            if r is not None:
                return r
    if isinstance(d, list):
        for v in d:
            r = find(v, key)
            if r is not None:
                return r
    return None
ok = find(data, "ok") or find(data, "completed") or find(data, "requests")
fs = after - before
print(f"durability={mode} fsyncs={fs} acknowledged={ok} writes_per_fsync={ok / fs if fs else float('inf'):.1f}")
PY
done
