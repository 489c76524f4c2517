#!/usr/bin/env bash
# A real full disk under a running node (issue 11): mounts a small tmpfs as path.data (needs
# root; not part of .ci/run, whose machines may not allow mounts) with a ballast file on it,
# indexes until the node refuses writes, kills it with SIGKILL, restarts it on the same data,
# checks that an index that cannot open on the full disk is red (not gone) and answers ES's
# errors, deletes the ballast and checks that the index comes back without a restart, that
# every acknowledged document survived and that deleting the index works
# (tests/disk/full_disk.py says what passes). It does not build Lode.
#
#   LODE_BIN   server binary (default: target/debug/lode)
#   SIZE       tmpfs size (default 64m)
#   BALLAST    ballast size in MB (default 8)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/lode.sh"
SIZE="${SIZE:-64m}"
MNT="$(mktemp -d)"
TMP="$(mktemp -d)"
if ! mount -t tmpfs -o "size=$SIZE" tmpfs "$MNT" 2>/dev/null; then
  echo "test-full-disk: cannot mount a tmpfs here (needs root): skipped" >&2
  rmdir "$MNT"; exit 0
fi
PID=""
cleanup() { cp "$TMP/stderr" /tmp/fulldisk-stderr.txt 2>/dev/null || true; [[ -n "$PID" ]] && kill -9 "$PID" 2>/dev/null; wait 2>/dev/null; umount "$MNT"; rmdir "$MNT"; rm -rf "$TMP"; }
trap cleanup EXIT

serve() {
  "$LODE_BIN" serve -E http.port=0 -E "path.data=$MNT" -E cluster.info.update.interval=10s \
    >"$TMP/stdout" 2>"$TMP/stderr" </dev/null &
  PID=$!
  URL=""
  for _ in $(seq 1 300); do
    URL=$(sed -n 's/^lode ready: \(https\?:\/\/[^ ]*\).*/\1/p' "$TMP/stdout" | head -1)
    [[ -n "$URL" ]] && return 0
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "test-full-disk: the node did not start" >&2; cat "$TMP/stderr" >&2; exit 3
}

head -c "${BALLAST:-8}M" /dev/urandom > "$MNT/ballast"
serve
python3 tests/disk/full_disk.py "$URL" fill "$TMP/state.json"
df -h "$MNT" | tail -1
du -s "$MNT"/indices/*/*/* 2>/dev/null | sort -n | tail -4
kill -9 "$PID"; wait "$PID" 2>/dev/null || true
echo "test-full-disk: killed with SIGKILL on a full disk; restarting"
: > "$TMP/stdout"
serve
python3 tests/disk/full_disk.py "$URL" verify "$TMP/state.json" "$MNT/ballast"
df -h "$MNT" | tail -1
echo "test-full-disk: passed"
