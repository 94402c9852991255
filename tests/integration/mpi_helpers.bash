# Shared by tests/integration/mpi_*.sh: args FASTNN SOURCE_DIR SCRATCH; the MPI test programs are built
# next to fastnn (build/bin) from tests/mpi/. Exit 77 (skipped) without OpenMPI's mpirun or the driver.
#
# What running OpenMPI 4.1 here needs: as root, OMPI_ALLOW_RUN_AS_ROOT(+_CONFIRM) (same as
# --allow-run-as-root); more ranks than cores, --oversubscribe. Nothing else was needed on the dev
# container (shared-memory "vader" transport worked as is). In containers that forbid ptrace, vader's
# CMA single-copy fails noisily, so it is switched off; it costs nothing for these small messages.
set -u
FASTNN=$1 SRC=$2 SCRATCH=$3
DRIVER="$(dirname "$FASTNN")/mpi_comm_driver"
if ! command -v mpirun > /dev/null; then echo "SKIP: mpirun not found"; exit 77; fi
if ! mpirun --version 2>&1 | grep -q "Open MPI"; then echo "SKIP: mpirun is not Open MPI"; exit 77; fi
if [ ! -x "$DRIVER" ]; then echo "SKIP: $DRIVER not built (fastnn configured without MPI?)"; exit 77; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# Ranks waiting in a collective busy-poll by default; on 2 shared cores that halves the other rank's
# compute (fastnn train ran 2x slower). Yielding costs a little latency, irrelevant here.
export OMPI_MCA_mpi_yield_when_idle=1
mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1

fail() { echo "FAIL: $*" >&2; exit 1; }

# run_mpi LIMIT_SECONDS NAME ARGS...: 2 ranks of the driver under an outer timeout (so a hang can never
# block CI); stdout+stderr to NAME.log; sets RC (124/137 = our timeout hit) and ELAPSED (seconds).
run_mpi() {
  local limit=$1 name=$2; shift 2
  local start=$SECONDS
  timeout -k 5 "$limit" mpirun --oversubscribe -np 2 "$DRIVER" "$@" > "$name.log" 2>&1
  RC=$?
  ELAPSED=$((SECONDS - start))
  echo "--- $name: rc=$RC after ${ELAPSED}s"; cat "$name.log"
}

# run_np LIMIT NAME NP PROGRAM ARGS...: like run_mpi, for any program (fastnn train) and rank count;
# prints the log's last 40 lines.
run_np() {
  local limit=$1 name=$2 np=$3; shift 3
  local start=$SECONDS
  timeout -k 5 "$limit" mpirun --oversubscribe -np "$np" "$@" > "$name.log" 2>&1
  RC=$?
  ELAPSED=$((SECONDS - start))
  echo "--- $name: rc=$RC after ${ELAPSED}s"; tail -n 40 "$name.log"
}

# The system python has numpy (fast checkpoint comparisons); any python3 works, slower.
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
COMPARE="$SRC/tests/integration/compare_safetensors.py"
