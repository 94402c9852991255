#!/usr/bin/env bash
# Bucketed gradient averaging over 2 ranks (bucket sizes 64 B, 4 KiB, 100 KiB, 25 MiB) equals the
# average each rank computes locally from both ranks' gradients, is bitwise equal across ranks, and (with
# 2 ranks) bitwise independent of the bucket size.
source "$2/tests/integration/mpi_helpers.bash"
run_mpi 60 bucket bucket
[ "$RC" = 0 ] || fail "bucket exited $RC"
grep -q "rank 0: OK bucket" bucket.log || fail "rank 0 did not report OK"
grep -q "rank 1: OK bucket" bucket.log || fail "rank 1 did not report OK"
[ "$(grep -c '^bucket_bytes=' bucket.log)" = 4 ] || fail "expected 4 bucket sizes"
echo PASS
