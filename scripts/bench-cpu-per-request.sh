#!/usr/bin/env bash
# Server CPU per request of two Lode builds, interleaved: the A/B method of BENCHMARKS.md
# (session 10). Each round sends N varied requests of one reference query to A, then to B,
# and prints the server's CPU (utime + stime from /proc/PID/stat) in ms per 1,000 requests.
#
#   scripts/bench-cpu-per-request.sh QUERY N URL_A PID_A URL_B PID_B [ROUNDS]
#   e.g. scripts/bench-cpu-per-request.sh page-1 4000 http://127.0.0.1:9400 "$(pgrep -f 'path.data=/tmp/a')" \
#        http://127.0.0.1:9401 "$(pgrep -f 'path.data=/tmp/b')"
set -euo pipefail
[[ $# -ge 6 ]] || { sed -n 2,8p "$0"; exit 2; }
q=$1 n=$2 url_a=$3 pid_a=$4 url_b=$5 pid_b=$6 rounds=${7:-3}
LODE="${LODE:-$(dirname "$0")/../target/release/lode}"
tick_ms=$((1000 / $(getconf CLK_TCK)))
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for _ in $(seq "$rounds"); do
  for side in A B; do
    if [[ $side == A ]]; then url=$url_a pid=$pid_a; else url=$url_b pid=$pid_b; fi
    before=$(cpu_ticks "$pid")
    "$LODE" bench search "$url" --only "$q" --vary --no-request-cache -c 4 -n "$n" --warmup 0 >/dev/null
    after=$(cpu_ticks "$pid")
    printf '%s %s  ' "$side" $(((after - before) * tick_ms * 1000 / n))
  done
  echo
done
