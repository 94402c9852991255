#!/usr/bin/env bash
# run_fuzzer.sh BINARY SEED_DIR WORK_DIR SECONDS
# Runs one libFuzzer target for a bounded time on a scratch copy of its seeds (new inputs found are
# kept in WORK_DIR, never written into the source tree). Allocations over 512 MB count as a bug:
# untrusted lengths must be bounded before they are used to allocate.
set -euo pipefail
bin=$1 seeds=$2 work=$3 secs=$4
mkdir -p "$work/corpus" "$work/crashes"
if [ -d "$seeds" ]; then cp -n "$seeds"/* "$work/corpus/" 2>/dev/null || true; fi
cd "$work"
exec "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10 \
  -artifact_prefix="$work/crashes/" -print_final_stats=1 corpus
