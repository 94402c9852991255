#!/usr/bin/env bash
# Row-partitioned checkpoints across world sizes under mpirun: 2 ranks save a model-parallel head
# (11 rows, weights and an optimizer slot) with save_sharded_checkpoint, one shard file per rank,
# committed by rank 0's meta; 3 ranks and 1 process read it back, each rank exactly its rows (bitwise,
# in the driver). `fastnn inspect` describes the sharded arrays; an independent Python reader
# re-assembles the head from the shard files and the row ranges inspect --json reports. A corrupted
# shard makes inspect fail naming the file.
rm -rf "$3"
source "$2/tests/integration/mpi_helpers.bash"

run_np 60 save 2 "$DRIVER" ckpt_save 20 ck
[ "$RC" = 0 ] || fail "2-rank save (rc $RC)"
for f in ck/ckpt-10.meta.pbtxt ck/ckpt-10.shard-0-of-2.safetensors ck/ckpt-10.shard-1-of-2.safetensors; do
  [ -f "$f" ] || fail "missing $f"
done
ls -a ck | grep -q fastnn-tmp && fail "temporaries left in ck"
grep -q "world_size: 2" ck/ckpt-10.meta.pbtxt || fail "meta should record world_size 2"
[ "$(grep -c 'name: "ckpt-10.shard-' ck/ckpt-10.meta.pbtxt)" = 2 ] || fail "meta should list 2 shard files"

run_np 60 read3 3 "$DRIVER" ckpt_read 20 ck
[ "$RC" = 0 ] || fail "3-rank read (rc $RC)"
for r in 0 1 2; do grep -q "rank $r: OK ckpt_read" read3.log || fail "rank $r of 3 did not read its rows"; done
grep -q "rank 2: read rows 8..11 of 2 saved shard files" read3.log || fail "rank 2 of 3 should read rows 8..11"
run_np 60 read1 1 "$DRIVER" ckpt_read 20 ck
[ "$RC" = 0 ] || fail "1-process read (rc $RC)"
grep -q "rank 0: read rows 0..11" read1.log || fail "one process should read all 11 rows"

out=$("$FASTNN" inspect ck)
echo "$out"
grep -q "row-partitioned arrays (2, over 2 shard files)" <<< "$out" || fail "inspect: no row-partitioned arrays"
grep -q "head/weights  F32 \[11, 3\]" <<< "$out" || fail "inspect: head/weights global shape"
grep -q "ckpt-10.shard-1-of-2.safetensors rows 6..11" <<< "$out" || fail "inspect: rank 1's rows"
"$FASTNN" inspect ck/ckpt-10.shard-0-of-2.safetensors --json > inspect.json || fail "inspect --json of a shard file"
"$PY" - inspect.json ck <<'PYEOF' || fail "the Python re-assembly did not check out"
import json, struct, sys
j = json.load(open(sys.argv[1]))
def tensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    buf = data[8 + n:]
    return {k: struct.unpack("<%df" % ((v["data_offsets"][1] - v["data_offsets"][0]) // 4),
                             buf[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items()}
assert j["step"] == 10 and j["world_size"] == 2, j
arrays = {a["name"]: a for a in j["sharded_arrays"]}
assert set(arrays) == {"head/weights", "head/weights/momentum"}, arrays
assert arrays["head/weights/momentum"]["optimizer"] is True
for k, name in enumerate(["head/weights", "head/weights/momentum"]):
    a = arrays[name]
    rows, cols = a["global_shape"]
    whole = []
    for p in a["parts"]:
        b, e = p["rows"]
        t = tensors(sys.argv[2] + "/" + p["file"])[name]
        assert len(t) == (e - b) * cols, (name, p, len(t))
        whole += t
    want = [(r * 1000 + c if k == 0 else -(r * 7 + c)) + 0.5 for r in range(rows) for c in range(cols)]
    assert whole == want, (name, whole[:6], want[:6])
print("python re-assembly: ok")
PYEOF

# A corrupted shard (same size): the checkpoint is damaged, the error names the file.
cp -r ck bad
"$PY" - bad/ckpt-10.shard-1-of-2.safetensors <<'PYEOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read()); b[-3] ^= 0x40; open(p, "wb").write(bytes(b))
PYEOF
if "$FASTNN" inspect bad > bad.log 2>&1; then fail "inspect accepted a corrupted shard"; fi
grep -q "ckpt-10.shard-1-of-2.safetensors: CRC32C" bad.log || { cat bad.log; fail "error should name the shard file"; }
echo PASS
