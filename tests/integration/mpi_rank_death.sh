#!/usr/bin/env bash
# "Never hang": (1) a rank killed by SIGKILL while the other waits in an allreduce, and (2) a rank that
# stays alive but never joins the allreduce, both end the whole job with a non-zero exit well within
# the outer timeout. (1) is caught by mpirun itself; (2) only by the collective timeout (5 s here),
# whose message must name the rank and the collective.
source "$2/tests/integration/mpi_helpers.bash"
run_mpi 60 kill kill 5
[ "$RC" != 0 ] || fail "the job survived a killed rank"
[ "$RC" != 124 ] && [ "$RC" != 137 -o "$ELAPSED" -lt 55 ] || fail "the job hung until the outer timeout"
[ "$ELAPSED" -lt 30 ] || fail "took ${ELAPSED}s to go down after a rank died"
! grep -q "FAIL" kill.log || fail "a collective completed without the dead rank"

run_mpi 60 stall stall 5
[ "$RC" != 0 ] || fail "the job survived a stalled rank"
[ "$RC" != 124 ] && [ "$RC" != 137 -o "$ELAPSED" -lt 55 ] || fail "the job hung until the outer timeout"
[ "$ELAPSED" -lt 30 ] || fail "took ${ELAPSED}s to abort after a stall (timeout 5 s)"
grep -q "rank 0/2: collective allreduce_sum #2 (4096 x float32) has not completed after" stall.log \
  || fail "no collective-timeout message naming rank 0 and the allreduce"
echo PASS
