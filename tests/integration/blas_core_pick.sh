#!/usr/bin/env bash
# The fastnn command's OpenBLAS kernels (trainer/ops/blas_core.h): `--version` names the core in use
# and who chose it; a user's OPENBLAS_CORETYPE is kept; where OpenBLAS fell back to Prescott on a CPU
# with AVX2/AVX-512, fastnn starts itself again with a better core, once (the marker of a new start
# stops a second), and a command still works end to end after that new start.
set -euo pipefail
fastnn=$1
unset OPENBLAS_CORETYPE FASTNN_BLAS_CORE_PICKED
fail() { echo "FAIL: $*"; exit 1; }
line=$("$fastnn" --version | grep '^BLAS core: ') || fail "--version names no BLAS core"
echo "$line"
user=$(OPENBLAS_CORETYPE=Haswell "$fastnn" --version | grep '^BLAS core: ')
[[ $user == "BLAS core: Haswell, chosen by OPENBLAS_CORETYPE" ]] || fail "the user's core: $user"
if [[ $line == *"chosen by fastnn"* ]]; then
  [[ $line == "BLAS core: "@(Cooperlake|SkylakeX|Haswell)", chosen by fastnn"* ]] || fail "$line"
  # A process that is already the new start does not start again (no loop): it keeps what it has.
  again=$(FASTNN_BLAS_CORE_PICKED=Haswell timeout 20 "$fastnn" --version | grep '^BLAS core: ')
  [[ $again == "BLAS core: Prescott, chosen by fastnn"* ]] || fail "a marked process: $again"
  # After the new start, a real command (argv passed on) runs and says so.
  mkdir -p "$3"
  "$fastnn" models --json > "$3/models.json"
  grep -q '"resnet_v1_50"' "$3/models.json" || fail "fastnn models after the new start"
else
  echo "OpenBLAS kept its own choice here: no new start to check"
fi
echo "blas core pick: ok"
