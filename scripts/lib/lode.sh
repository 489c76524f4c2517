# Shared by the test scripts that drive a real `lode serve` (test-clients.sh, test-tools.sh).
# Source it after `set -euo pipefail`; it sets ROOT, resolves LODE_BIN and cds to ROOT.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# A relative LODE_BIN is taken relative to the caller's cwd if it exists there.
if [[ -n "${LODE_BIN:-}" && "$LODE_BIN" != /* && -e "$LODE_BIN" ]]; then
  LODE_BIN="$(cd "$(dirname "$LODE_BIN")" && pwd)/$(basename "$LODE_BIN")"
fi
LODE_BIN="${LODE_BIN:-$ROOT/target/debug/lode}"
[[ "$LODE_BIN" == /* ]] || LODE_BIN="$ROOT/$LODE_BIN"
cd "$ROOT"

# python_env VENV REQUIREMENTS: the virtualenv with exactly these requirements installed (a
# copy of the requirements kept beside the installation says what was installed).
python_env() {
  local venv="$1" req="$2"
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  if ! cmp -s "$req" "$venv/.lode-requirements"; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
    cp "$req" "$venv/.lode-requirements"
  fi
}

# start_lode DIR NAME: a fresh node on a free port with its data, stdout and stderr in DIR;
# sets LODE_PID and LODE_URL (http://host:port), or exits 3. Disk watermarks are off: the
# tests must not depend on how full the machine's disk is. LODE_SETTINGS adds node settings
# (space-separated name=value pairs, each passed as `-E name=value`).
start_lode() {
  local dir="$1" name="$2"
  rm -rf "$dir/data" && mkdir -p "$dir/data"
  local extra=() kv
  for kv in ${LODE_SETTINGS:-}; do extra+=(-E "$kv"); done
  "$LODE_BIN" serve -E http.port=0 -E "path.data=$dir/data" \
    -E cluster.routing.allocation.disk.threshold_enabled=false "${extra[@]}" \
    >"$dir/stdout" 2>"$dir/stderr" </dev/null &
  LODE_PID=$!
  LODE_URL=""
  for _ in $(seq 1 600); do
    LODE_URL=$(sed -n 's/^lode ready: \(https\?:\/\/[^ ]*\).*/\1/p' "$dir/stdout" | head -1)
    [[ -n "$LODE_URL" ]] && return 0
    kill -0 "$LODE_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "$name: lode did not start" >&2
  tail -n 40 "$dir/stdout" "$dir/stderr" >&2
  exit 3
}

# stop_lode: stops the node start_lode started, if any.
stop_lode() {
  if [[ -n "${LODE_PID:-}" ]]; then
    kill "$LODE_PID" 2>/dev/null || true
    wait "$LODE_PID" 2>/dev/null || true
    LODE_PID=""
  fi
}
