#!/usr/bin/env bash
# The CLI's exit codes (DESIGN.md): 0 for success, --help and --version; 2 for a usage error (an unknown
# flag, a missing required option, an unknown subcommand, a bad value), whatever CLI11's own code;
# 1 for an error while running (a missing dataset, a FIFO as the job config). --version names the backends of this build.
FASTNN=$1 SRC=$2 SCRATCH=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1

expect() {  # code, then the command's arguments
  local want=$1; shift
  "$FASTNN" "$@" > out.txt 2> err.txt
  local rc=$?
  [ "$rc" = "$want" ] || { cat out.txt err.txt; fail "fastnn $*: exit $rc, expected $want"; }
}
expect 0 --help
expect 0 train --help
expect 0 --version
grep -q "^backends: cpu" out.txt || { cat out.txt; fail "--version does not list the backends"; }
grep -q "^BLAS: " out.txt || fail "--version does not name the BLAS"
expect 2 no-such-command
expect 2 convert mnist --no-such-flag
expect 2 convert mnist                      # --input and --output are required
expect 2 inspect                            # the file is required
expect 2 bench train --steps 0 --model_name=lenet
expect 1 check "$SCRATCH/no-such-dataset"
expect 1 train --model_name=lenet --dataset_dir="$SCRATCH/no-such-dataset" --output_dir=run --device=cpu
# A FIFO as the job config is refused at once (never waited on), naming it.
mkfifo config.fifo
timeout 20 "$FASTNN" train --config config.fifo --output_dir=run > out.txt 2> err.txt
rc=$?
[ "$rc" = 1 ] || { cat err.txt; fail "train --config FIFO: exit $rc (124: it waited)"; }
grep -q "config.fifo" err.txt || { cat err.txt; fail "the FIFO error does not name the file"; }
echo "exit codes as documented"
