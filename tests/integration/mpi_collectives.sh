#!/usr/bin/env bash
# allreduce (sum/average/max; float, double, int64), broadcast (also raw bytes, like an NCCL id), allgather,
# reduce_scatter and barrier over 2 MPI ranks with known values.
source "$2/tests/integration/mpi_helpers.bash"
run_mpi 30 collectives collectives
[ "$RC" = 0 ] || fail "collectives exited $RC"
grep -q "rank 0: OK collectives" collectives.log || fail "rank 0 did not report OK"
grep -q "rank 1: OK collectives" collectives.log || fail "rank 1 did not report OK"
echo PASS
