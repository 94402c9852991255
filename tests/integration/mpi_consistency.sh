#!/usr/bin/env bash
# check_world_consistency over 2 ranks: different epoch lengths and a shard count that does not divide
# over the ranks are refused on every rank with a clear message (and no hang); a consistent world passes.
source "$2/tests/integration/mpi_helpers.bash"
run_mpi 30 mismatch mismatch
[ "$RC" != 0 ] || fail "mismatched epoch lengths were accepted"
[ "$RC" != 124 ] || fail "hung"
for r in 0 1; do
  grep -q "rank $r: refused: per-rank epoch lengths differ (rank 0: 100 batches, rank 1: 99 batches)" mismatch.log \
    || fail "rank $r did not refuse with the epoch-length message"
done

run_mpi 30 shards shards
[ "$RC" != 0 ] || fail "3 shards over 2 ranks were accepted"
[ "$RC" != 124 ] || fail "hung"
for r in 0 1; do
  grep -q "rank $r: refused: the 3 train shards do not divide over 2 ranks" shards.log \
    || fail "rank $r did not refuse with the shard message"
done

run_mpi 30 consistent consistent
[ "$RC" = 0 ] || fail "a consistent world was refused"
grep -q "rank 1: OK consistent" consistent.log || fail "rank 1 did not pass"
echo PASS
