#!/usr/bin/env bash
# check_world_consistency over 2 ranks: different epoch lengths and a shard count that does not divide
# over the ranks are refused on every rank with a clear message (and no hang); a consistent world passes.
source "$2/tests/integration/mpi_helpers.bash"
run_mpi 30 mismatch mismatch
[ "$RC" != 0 ] || fail "mismatched epoch lengths were accepted"
[ "$RC" != 124 ] || fail "hung"
# Every rank refuses, but once one exits non-zero mpirun may kill the other before it prints, so one
# message is what can be relied on.
grep -q "rank [01]: refused: per-rank epoch lengths differ (rank 0: 100 batches, rank 1: 99 batches)" mismatch.log \
  || fail "no rank refused with the epoch-length message"

run_mpi 30 shards shards
[ "$RC" != 0 ] || fail "3 shards over 2 ranks were accepted"
[ "$RC" != 124 ] || fail "hung"
grep -q "rank [01]: refused: the 3 train shards do not divide over 2 ranks" shards.log \
  || fail "no rank refused with the shard message"

run_mpi 30 consistent consistent
[ "$RC" = 0 ] || fail "a consistent world was refused"
grep -q "rank 1: OK consistent" consistent.log || fail "rank 1 did not pass"
echo PASS
