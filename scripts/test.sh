#!/usr/bin/env bash
# Installs what is needed, builds, and runs the whole test suite with ctest. GPU tests (label gpu)
# report SKIPPED on a machine without a GPU. Extra arguments go to ctest (e.g. -L core, -R crc).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
build=${FASTNN_BUILD_DIR:-build}
# The OpenBLAS kernels the fastnn command picks for this CPU, for every test process: a test binary does
# not start itself again as the command does (trainer/ops/blas_core.h), and would otherwise run OpenBLAS's
# generic fallback where it does not know the CPU. A user's OPENBLAS_CORETYPE is kept.
if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
  core=$("$build/bin/fastnn" --version | sed -n 's/^BLAS core: \([A-Za-z0-9]*\), chosen by fastnn.*/\1/p')
  if [[ -n $core ]]; then export OPENBLAS_CORETYPE=$core; fi
fi
# OpenMP's threads (oneDNN's) sleep when idle instead of spinning, as in the fastnn command (the same header).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 900 "$@"
