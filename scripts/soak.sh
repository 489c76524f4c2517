#!/usr/bin/env bash
# Soak test (issue 11): a fresh node under mixed load (`lode bench mixed`: searches at a fixed
# rate, varied so caches cannot answer them all, while `_bulk` writes go on and background
# merges follow them, a force merge midway, and a scroll opened every SCROLL_EVERY seconds and
# abandoned, never cleared: its context must expire after its 30 s keep-alive) for DURATION,
# sampling the server's resident set size every second to a CSV. Fails when any request
# errored (no response, a non-2xx answer or a failed bulk item), when the node died, or when
# memory grows without bound while the data does not: the writes replace documents of the
# searched index (WRITES=overwrite, the default: its size stays put while every replaced
# version becomes a delete for merges to reclaim), and the median of the last tenth of the run (the last minute of the
# default 10) more than GROWTH_PCT over the median of the third tenth (the third minute: the
# first two are warm-up, caches and the first merges filling). The check is on RssAnon (heap
# and other anonymous memory) by default: VmRSS also counts the pages of the index files
# tantivy maps, which grow with the index the writes grow, and are page cache, not leaked
# memory; RSS_METRIC=rss checks VmRSS instead. Not part of .ci/run (it takes DURATION); meant
# for a release build. It does not build Lode.
#
#   LODE_BIN     server binary (default: target/release/lode)
#   DURATION     seconds of load (default 600)
#   DOCS         documents loaded before the run (default 200000)
#   SEARCH_RATE  searches per second (default 50), round-robin over QUERIES (built-in suite names,
#                default: ids_range,term,match,range,bucket,metric,trend,group,page-10,detail)
#   WRITE_RATE   `_bulk` requests per second (default 5), WRITE_BATCH documents each (default 100)
#   WRITES       overwrite (default: the writes replace the searched index's documents, ids 1 to
#                DOCS in turn) or append (new documents into their own index, `soak-writes`,
#                which grows all run long, and memory with it: not a leak check)
#   GROWTH_PCT   allowed growth, percent (default 20), of RSS_METRIC (anon, default, or rss)
#   SCROLL_EVERY seconds between abandoned scrolls (default 2)
#   OUT          where the CSV, the bench report and the node's logs go (default target/soak)
#
# Output: $OUT/rss.csv (t_s,rss_bytes,anon_bytes,file_bytes), $OUT/mixed.json (the bench report), $OUT/summary.txt.
set -euo pipefail
export LODE_BIN="${LODE_BIN:-target/release/lode}"
source "$(dirname "${BASH_SOURCE[0]}")/lib/lode.sh"
DURATION="${DURATION:-600}"
DOCS="${DOCS:-200000}"
SEARCH_RATE="${SEARCH_RATE:-50}"
WRITE_RATE="${WRITE_RATE:-5}"
WRITE_BATCH="${WRITE_BATCH:-100}"
GROWTH_PCT="${GROWTH_PCT:-20}"
SCROLL_EVERY="${SCROLL_EVERY:-2}"
WRITES="${WRITES:-overwrite}"
RSS_METRIC="${RSS_METRIC:-anon}"
QUERIES="${QUERIES:-ids_range,term,match,range,bucket,metric,trend,group,page-10,detail}"
OUT="${OUT:-target/soak}"
[[ -x "$LODE_BIN" ]] || { echo "soak: $LODE_BIN not found (build it first)" >&2; exit 2; }
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

LODE_PID=""
SAMPLER=""
SCROLLER=""
cleanup() {
  [[ -n "$SAMPLER" ]] && kill "$SAMPLER" 2>/dev/null
  [[ -n "$SCROLLER" ]] && kill "$SCROLLER" 2>/dev/null
  [[ -n "$LODE_PID" ]] && kill "$LODE_PID" 2>/dev/null
  wait 2>/dev/null || true
}
trap cleanup EXIT

start_lode "$OUT/node" soak
echo "soak: $LODE_BIN at $LODE_URL (pid $LODE_PID); loading $DOCS documents"
"$LODE_BIN" bench load "$LODE_URL" -n "$DOCS" --index accounts --no-progress \
  --json "$OUT/load.json" >"$OUT/load.txt"

# Memory every second, from /proc/PID/status (VmRSS = RssAnon + RssFile + RssShmem), until
# the node exits or the sampler is stopped.
(
  echo "t_s,rss_bytes,anon_bytes,file_bytes"
  start=$(date +%s.%N)
  while kill -0 "$LODE_PID" 2>/dev/null; do
    line=$(awk '/^VmRSS:/ {r=$2} /^RssAnon:/ {a=$2} /^RssFile:/ {f=$2}
                END {if (r != "") printf "%d,%d,%d", r*1024, a*1024, f*1024}' \
           "/proc/$LODE_PID/status" 2>/dev/null || true)
    [[ -n "$line" ]] && printf '%.1f,%s\n' "$(echo "$(date +%s.%N) - $start" | bc)" "$line"
    sleep 1
  done
) >"$OUT/rss.csv" &
SAMPLER=$!

# Scrolls opened and abandoned: one status code per line.
(
  while kill -0 "$LODE_PID" 2>/dev/null; do
    curl -s -o /dev/null -w '%{http_code}\n' -H 'content-type: application/json' \
      -d '{"size":100,"query":{"match_all":{}}}' "$LODE_URL/accounts/_search?scroll=30s" || echo 000
    sleep "$SCROLL_EVERY"
  done
) >"$OUT/scrolls.txt" &
SCROLLER=$!

echo "soak: ${DURATION}s of mixed load: $SEARCH_RATE searches/s (varied: $QUERIES), $WRITE_RATE bulks/s of $WRITE_BATCH ($WRITES)"
status=0
case "$WRITES" in
  overwrite) write_args=(--overwrite --write-index accounts) ;;
  append) write_args=(--write-index soak-writes) ;;
  *) echo "soak: WRITES must be overwrite or append" >&2; exit 2 ;;
esac
"$LODE_BIN" bench mixed "$LODE_URL" --index accounts --search-rate "$SEARCH_RATE" --vary \
  --only "$QUERIES" \
  --write-rate "$WRITE_RATE" --write-batch "$WRITE_BATCH" "${write_args[@]}" \
  --force-merge \
  -t "${DURATION}s" --corpus-docs "$DOCS" --json "$OUT/mixed.json" >"$OUT/mixed.txt" || status=$?
kill "$SAMPLER" "$SCROLLER" 2>/dev/null || true
wait "$SAMPLER" "$SCROLLER" 2>/dev/null || true
SAMPLER=""
SCROLLER=""
alive=1
kill -0 "$LODE_PID" 2>/dev/null || alive=0
# Open scroll contexts now: those of the last keep-alive at most (30 s / SCROLL_EVERY), if the
# abandoned ones expire.
curl -s "$LODE_URL/_nodes/stats/indices/search" >"$OUT/search-stats.json" || true

python3 - "$OUT" "$GROWTH_PCT" "$status" "$alive" "$RSS_METRIC" "$SCROLL_EVERY" <<'PY' | tee "$OUT/summary.txt"
import csv, json, statistics, sys
out, growth, status, alive = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
metric = {"anon": "anon_bytes", "rss": "rss_bytes"}[sys.argv[5]]
scroll_every = float(sys.argv[6])
samples = list(csv.DictReader(open(f"{out}/rss.csv")))
rows = [(float(r["t_s"]), int(r[metric])) for r in samples]
failures = []
if status != 0:
    failures.append(f"lode bench mixed exited with {status}")
if not alive:
    failures.append("the node died during the run")
try:
    report = json.load(open(f"{out}/mixed.json"))
except (OSError, ValueError) as e:
    report = {"phases": []}
    failures.append(f"no bench report: {e}")
for phase in report["phases"]:
    for k in phase["kinds"]:
        bad = k["errors"] + k["non_2xx"] + k["item_errors"]
        print(f"{phase['name']:>8} {k['name']:<24} {k['requests']:>8} requests, "
              f"{k['errors']} without response, {k['non_2xx']} non-2xx, "
              f"{k['item_errors']} failed bulk items")
        if bad:
            failures.append(f"{k['name']}: {bad} errored requests {k['statuses']} "
                            f"{k['error_samples'][:3]}")
codes = [c.strip() for c in open(f"{out}/scrolls.txt") if c.strip()]
bad_scrolls = [c for c in codes if c != "200"]
print(f"scrolls: {len(codes)} opened and abandoned, {len(bad_scrolls)} not answered 200")
if not codes or bad_scrolls:
    failures.append(f"scrolls: {len(bad_scrolls)} of {len(codes)} failed {sorted(set(bad_scrolls))}")
try:
    nodes = json.load(open(f"{out}/search-stats.json"))["nodes"]
    open_scrolls = sum(n["indices"]["search"]["scroll_current"] for n in nodes.values())
    bound = 30 / scroll_every + 5
    print(f"open scroll contexts at the end: {open_scrolls} (bound {bound:.0f})")
    if open_scrolls > bound:
        failures.append(f"{open_scrolls} scroll contexts open: abandoned scrolls do not expire")
except (OSError, ValueError, KeyError) as e:
    failures.append(f"no search stats: {e}")
if not rows:
    failures.append("no RSS samples")
else:
    end = rows[-1][0]
    third = [b for t, b in rows if 0.2 * end <= t < 0.3 * end]
    last = [b for t, b in rows if t >= 0.9 * end]
    if not third or not last:
        failures.append("too few RSS samples to compare")
    else:
        m3, ml = statistics.median(third), statistics.median(last)
        pct = (ml - m3) * 100 / m3
        print(f"{metric}: {len(rows)} samples over {end:.0f}s; median of the third tenth "
              f"{m3 / 2**20:.1f} MiB, of the last tenth {ml / 2**20:.1f} MiB ({pct:+.1f}%, "
              f"allowed +{growth:.0f}%); max {max(b for _, b in rows) / 2**20:.1f} MiB")
        if pct > growth:
            failures.append(f"{metric} grew {pct:.1f}% (more than {growth:.0f}%)")
    rss = [int(r["rss_bytes"]) for r in samples]
    print(f"VmRSS: first {rss[0] / 2**20:.1f} MiB, last {rss[-1] / 2**20:.1f} MiB, "
          f"max {max(rss) / 2**20:.1f} MiB")
for f in failures:
    print("soak: FAILED:", f)
print("soak: passed" if not failures else "soak: failed")
sys.exit(1 if failures else 0)
PY
