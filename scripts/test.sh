#!/usr/bin/env bash
# Installs what is needed, builds, and runs the whole test suite with ctest. GPU tests (label gpu)
# report SKIPPED on a machine without a GPU. Extra arguments go to ctest (e.g. -L core, -R crc).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
build=${FASTNN_BUILD_DIR:-build}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 900 "$@"
