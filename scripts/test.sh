#!/usr/bin/env bash
# Runs every test: Rust unit and integration tests, the Python client suite against a real
# `lode serve`, the client matrix (elasticsearch-py 9, opensearch-py, the JavaScript client;
# tests/clients), the console at /_lode/ in headless Chromium (tests/console), Rally and
# OpenSearch Benchmark on a small reference track (tests/tools), and the REST conformance
# suite (../shared/compat, skipped when absent) with a pass-rate floor.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo build --workspace --all-targets
cargo test --workspace -- --test-threads=2
LODE_BIN="$PWD/target/debug/lode" scripts/test-python.sh
LODE_BIN="$PWD/target/debug/lode" scripts/test-console.sh
LODE_BIN="$PWD/target/debug/lode" scripts/test-clients.sh
LODE_BIN="$PWD/target/debug/lode" scripts/test-tools.sh
LODE_BIN="$PWD/target/debug/lode" scripts/compat.sh
