#!/usr/bin/env bash
# Issue 8's force merge under writes: the reference accounts corpus (1.12M documents) loaded by
# `lode bench load` and flushed, not merged, then 200 `ids_range` searches/s and 10 bulks/s of
# 100 documents for 30 s with a force merge to one segment at 5 s. `lode bench mixed` reports
# the latency of the requests started during the force merge and of an interval as long after
# it. Run it against each engine (a fresh node each), one after the other.
#
#   scripts/bench-forcemerge-writes.sh [URL] [DOCS]
set -euo pipefail
cd "$(dirname "$0")/.."
URL="${1:-http://127.0.0.1:9200}"
DOCS="${2:-1120000}"
LODE="${LODE_BIN:-target/release/lode}"
OUT="${OUT:-target/bench-forcemerge}"
mkdir -p "$OUT"
curl -s -X DELETE "$URL/accounts" >/dev/null || true
"$LODE" bench load "$URL" -n "$DOCS" --index accounts \
  --mapping crates/bench/workload/mapping-accounts.json --no-progress | tee "$OUT/load.txt"
curl -s -X POST "$URL/accounts/_flush" >/dev/null
"$LODE" bench mixed "$URL" --search-rate 200 --write-rate 10 --write-batch 100 \
  --force-merge --force-merge-at 5s -t 30s --vary --no-request-cache \
  --json "$OUT/mixed.json" | tee "$OUT/mixed.txt"
