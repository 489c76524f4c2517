#!/bin/bash
# One bulk-load round on a fresh Lode node: prints docs/s, the server's CPU over the load
# (user+sys centiseconds from /proc/PID/stat) and its peak RSS.
#   LODEBIN=target/release/lode benchmarks/2026-11-28/load-round-s27.sh TAG [ENV=VALUE ...]
TAG=$1; shift
cd "$(dirname "$0")/../.."
DIR=${TMPDIR:-/tmp}/lode-load-$TAG
rm -rf "$DIR"
env "$@" setsid ${LODEBIN:-target/release/lode} serve -E http.port=9495 -E path.data="$DIR" -E cluster.routing.allocation.disk.threshold_enabled=false > "$DIR.log" 2>&1 &
sleep 1.5
PID=$(pgrep -f "path.data=$DIR")
T0=$(awk '{print $14+$15}' /proc/$PID/stat)
R=$(target/release/lode bench load http://127.0.0.1:9495 -n 1120000 --index accounts --mapping crates/bench/workload/mapping-accounts.json --no-progress 2>&1 | grep loaded | sed 's/.*: \([0-9]*\) docs.s.*/\1/')
T1=$(awk '{print $14+$15}' /proc/$PID/stat)
RSS=$(awk '/VmHWM/{print $2}' /proc/$PID/status)
echo "$TAG rate=$R cpu=$(( (T1-T0) ))cs hwm=${RSS}kB $*"
kill $PID; sleep 1; rm -rf "$DIR" "$DIR.log"
