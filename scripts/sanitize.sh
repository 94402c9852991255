#!/usr/bin/env bash
# Builds the unit and integration tests with AddressSanitizer + UndefinedBehaviorSanitizer in a
# separate build folder (CUDA and the fuzz side build off) and runs them with ctest. Any sanitizer
# report fails the test that triggered it (halt_on_error; UBSan is made fatal at compile time).
#
#   scripts/sanitize.sh                       # every unit and integration test
#   scripts/sanitize.sh -L 'core|converters|pipeline'   # extra arguments go to ctest
#
# Environment: FASTNN_SANITIZE_DIR (default build-sanitize), JOBS (default: nproc; build and ctest),
# FASTNN_SANITIZE_TARGETS (default: all; e.g. "fastnn test_core" to build only those).
# Not in CI: it rebuilds everything and runs 2-3x slower than the normal build.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${FASTNN_SANITIZE_DIR:-build-sanitize}
jobs=${JOBS:-$(nproc)}
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
[ -f /root/.ccache.env ] && . /root/.ccache.env
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFASTNN_CUDA=OFF -DFASTNN_FUZZ=OFF \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
# shellcheck disable=SC2086
ninja -C "$dir" -j "$jobs" ${FASTNN_SANITIZE_TARGETS:-}
# detect_leaks: the tests' own leaks count too. MPI launchers and Python are outside the sanitizer.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-L 'unit|integration' -LE gpu -E '^it_mpi_')
ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 1800 "${args[@]}"
