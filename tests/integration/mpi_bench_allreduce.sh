#!/usr/bin/env bash
# `fastnn bench allreduce` on the CPU: one process (a world of one: busbw 0) and 2 MPI ranks (backend
# mpi, busbw = algbw x 2(n-1)/n = algbw), JSON rows for every requested size with the memcpy ceiling,
# rank 0 alone prints; --model times one bucketed gradient average of the model (lenet: 3,274,634 parameters).
source "$2/tests/integration/mpi_helpers.bash"
"$FASTNN" bench allreduce --sizes 4096,1048576 --iters 3 --warmup 1 --json > one.json || fail "one process failed"
python3 - one.json 1 local <<'PY' || fail "one-process JSON"
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["world_size"] == int(sys.argv[2]) and d["backend"] == sys.argv[3], d
assert [r["bytes"] for r in d["rows"]] == [4096, 1048576], d
for r in d["rows"]:
    assert r["median_ms"] > 0 and r["algbw_gbps"] > 0 and r["copy_gbps"] > 0, r
    assert abs(r["busbw_gbps"] - r["algbw_gbps"] * 2 * (d["world_size"] - 1) / d["world_size"]) < 1e-9, r
assert "model" not in d, d
PY
run_np 60 two 2 "$FASTNN" bench allreduce --sizes 4096,1048576 --iters 3 --warmup 1 --json --model \
  --model_name=lenet --allreduce_bucket_mb=4
[ "$RC" = 0 ] || fail "2 ranks exited $RC"
[ "$(grep -c '"bench":"allreduce"' two.log)" = 1 ] || fail "expected one JSON line (rank 0's)"
grep '"bench":"allreduce"' two.log > two.json
python3 - two.json 2 mpi <<'PY' || fail "2-rank JSON"
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["world_size"] == int(sys.argv[2]) and d["backend"] == sys.argv[3], d
assert [r["bytes"] for r in d["rows"]] == [4096, 1048576], d
for r in d["rows"]:
    assert r["median_ms"] > 0 and abs(r["busbw_gbps"] - r["algbw_gbps"]) < 1e-9 and r["copy_gbps"] > 0, r
m = d["model"]
# lenet's 3,274,634 float gradients (13,098,536 bytes) in buckets of 4 MiB (4,194,304 bytes): 4
assert m["name"] == "lenet" and m["parameters"] == 3274634 and m["buckets"] == 4 and m["median_ms"] > 0, m
PY
echo PASS
