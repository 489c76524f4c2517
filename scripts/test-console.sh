#!/usr/bin/env bash
# The console at /_lode/, end to end in headless Chromium (tests/console/test_console.py).
# Installs Debian's `chromium` and `chromium-driver` with apt-get when they are absent (as root;
# otherwise it fails saying what to install), and drives the browser with a pinned Selenium in
# a local virtualenv, pointed at /usr/bin/chromedriver so Selenium Manager never downloads.
# It does not build Lode: run `cargo build` first.
#
#   LODE_BIN   server binary (default: target/debug/lode in the repo)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export LODE_BIN="${LODE_BIN:-$ROOT/target/debug/lode}"
[[ "$LODE_BIN" == /* ]] || LODE_BIN="$ROOT/$LODE_BIN"
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
cd "$ROOT"

if [[ ! -x "$LODE_BIN" ]]; then
  echo "test-console: $LODE_BIN not found or not executable (build it first: cargo build)" >&2
  exit 2
fi

if [[ ! -x "$CHROMIUM" || ! -x "$CHROMEDRIVER" ]]; then
  if [[ "$(id -u)" -ne 0 ]]; then
    echo "test-console: $CHROMIUM or $CHROMEDRIVER is missing and this is not root;" \
      "install them with: apt-get install chromium chromium-driver" >&2
    exit 2
  fi
  echo "test-console: installing chromium and chromium-driver" >&2
  export DEBIAN_FRONTEND=noninteractive
  timeout 300 apt-get update -qq
  timeout 300 apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
fi

VENV="$ROOT/.venv-console"
if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r tests/console/requirements.txt

# No network for Selenium Manager or its usage statistics, whatever happens.
export SE_AVOID_STATS=true SE_OFFLINE=true
exec timeout 120 "$VENV/bin/python" tests/console/test_console.py
