#!/usr/bin/env bash
# The durability benchmark of BENCHMARKS.md: REQUESTS single-document writes of books.json from
# CONCURRENCY clients to /books/_doc with `index.translog.durability: request` and with `async`,
# against one server, in ROUNDS interleaved rounds (request, async, async, request, ...) so that
# machine noise hits both modes alike. Reports each run, then per mode the median throughput and
# latency, and fsyncs per acknowledged write (`_stats.translog.fsync_total`; warm-up writes are
# acknowledged writes too and are counted).
#
#   scripts/bench-durability.sh [URL] [REQUESTS] [CONCURRENCY] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
URL="${1:-http://127.0.0.1:9200}"
N="${2:-50000}"
C="${3:-200}"
ROUNDS="${4:-3}"
LODE="${LODE_BIN:-target/release/lode}"
OUT="${OUT:-target/bench-durability}"
mkdir -p "$OUT"
rm -f "$OUT"/run-*.json "$OUT"/summary.txt

stat() {
  curl -s -X POST "$URL/books/_refresh" >/dev/null
  python3 - "$URL" <<'PY'
import json, sys, urllib.request
url = sys.argv[1]
stats = json.load(urllib.request.urlopen(f"{url}/books/_stats/translog"))
count = json.load(urllib.request.urlopen(f"{url}/books/_count"))
print(stats["_all"]["total"]["translog"].get("fsync_total", 0), count["count"])
PY
}

run() { # mode round
  local mode=$1 round=$2
  curl -s -o /dev/null -X DELETE "$URL/books" || true
  curl -s -o /dev/null -X PUT "$URL/books" -H 'content-type: application/json' \
    -d "{\"settings\":{\"index.translog.durability\":\"$mode\",\"number_of_shards\":1,\"number_of_replicas\":0}}"
  "$LODE" bench write "$URL" -n "$N" -c "$C" --no-refresh --json "$OUT/run-$round-$mode.json" \
    > "$OUT/run-$round-$mode.txt"
  read -r fsyncs writes < <(stat)
  python3 - "$OUT/run-$round-$mode.json" "$fsyncs" "$writes" <<'PY'
import json, sys
path, fsyncs, writes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = json.load(open(path))
d["durability"] = {"fsyncs": fsyncs, "acknowledged_writes": writes}
json.dump(d, open(path, "w"))
PY
}

for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then order="request async"; else order="async request"; fi
  for mode in $order; do run "$mode" "$r"; done
done

python3 - "$OUT" "$N" "$C" <<'PY' | tee "$OUT/summary.txt"
import glob, json, statistics, sys
out, n, c = sys.argv[1], sys.argv[2], sys.argv[3]
rows = {"request": [], "async": []}
for path in sorted(glob.glob(f"{out}/run-*.json")):
    d = json.load(open(path))
    mode = path.rsplit("-", 1)[1].removesuffix(".json")
    k = d["phases"][0]["kinds"][0]
    lat = k["latency_ms"]
    dur = d["durability"]
    rows[mode].append((k["requests_per_sec"], lat["p50"], lat["p99"], lat["p99_9"], dur["fsyncs"], dur["acknowledged_writes"]))
    per = dur["acknowledged_writes"] / dur["fsyncs"] if dur["fsyncs"] else float("inf")
    print(f"{path.rsplit('/', 1)[1]:24} {k['requests_per_sec']:9.0f} req/s  p50 {lat['p50']:6.1f}  p99 {lat['p99']:6.1f}  p99.9 {lat['p99_9']:6.1f} ms  fsyncs {dur['fsyncs']:5}  writes/fsync {per:8.1f}")
print(f"\n{n} writes x {len(rows['request'])} rounds per mode, {c} clients; medians:")
med = {}
for mode, r in rows.items():
    tput = statistics.median(x[0] for x in r)
    p50 = statistics.median(x[1] for x in r)
    p99 = statistics.median(x[2] for x in r)
    p999 = statistics.median(x[3] for x in r)
    fs = sum(x[4] for x in r)
    w = sum(x[5] for x in r)
    med[mode] = tput
    per = w / fs if fs else float("inf")
    print(f"  {mode:8} {tput:9.0f} req/s  p50 {p50:6.1f}  p99 {p99:6.1f}  p99.9 {p999:6.1f} ms  writes per fsync {per:.1f}")
print(f"  request / async throughput: {100 * med['request'] / med['async']:.0f}%")
PY
