#!/usr/bin/env bash
# Runs on the GPU machine (CUDA toolkit, PyTorch with cuDNN/NCCL wheels; none of our Debian libraries,
# no network), from the repository root, with .carry/gpu made by scripts/gpu/bundle.sh carried along:
#
#   run(command="scripts/gpu/run.sh", carry=[".carry/gpu"])          # tests + benchmarks + peers
#   run(command="scripts/gpu/run.sh tests", carry=[".carry/gpu"])    # only the gpu tests
#
# Stages (arguments; default all): tests  the gpu-labelled test executables (CUDA ops vs the CPU oracle)
#                                  bench  our GPU benchmarks (scripts/gpu/benchmarks.sh)
#                                  peer   PyTorch doing the same work on the same GPU
#                                  smoke  fastnn train/eval --device=cuda on Fashion-MNIST, CPU beside it
#                                  sanitize  compute-sanitizer memcheck and racecheck of the op, fusion,
#                                         optimizer, step and classifier-head tests (f32 cases: every kernel
#                                         once; FASTNN_SANITIZE_TOOLS picks the tools; not in the default set)
#                                  compare  fastnn against PyTorch eager and torch.compile, interleaved
#                                         rounds, same capture policy (scripts/gpu/compare.py; its raw
#                                         files under logs/results/; FASTNN_COMPARE_PLANS, _CONTENDERS,
#                                         _ROUNDS, _DEADLINE, _KERNEL_PROFILE; not in the default set)
# Full logs go to /tmp/fastnn-gpu/logs and, packed as logs.tar.xz with table.txt, to $OUT when set (the
# device tool brings back at most 8 files). The last thing printed is a short table.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
carry=$root/.carry/gpu
work=/tmp/fastnn-gpu
out=$work/logs
rm -rf "$out" && mkdir -p "$out"
stages=("$@")
(( ${#stages[@]} )) || stages=(tests smoke bench peer)
# Checkpoints and event files of the runs stay behind (the device tool brings back 16 MB a file).
pack() { [[ -n ${OUT:-} ]] && { tar -C "$work" --exclude='*.safetensors' --exclude='events.out.*' -cJf "$OUT/logs.tar.xz" logs; cp "$out/table.txt" "$OUT/" 2>/dev/null; }; }
trap pack EXIT
trap 'exit 143' TERM INT  # stopped by a timeout: the logs are still packed
want() { local s; for s in "${stages[@]}"; do [[ $s == "$1" ]] && return 0; done; return 1; }

[[ -f $carry/bundle.tar.xz ]] || { echo "run.sh: $carry/bundle.tar.xz missing: run scripts/gpu/bundle.sh here and carry .carry/gpu" >&2; exit 2; }
rm -rf "$work/bundle" && mkdir -p "$work/bundle"
tar -C "$work/bundle" -xJf "$carry/bundle.tar.xz"
export PATH=$work/bundle/bin:$PATH
# CUDA's libraries on that machine: the toolkit, and PyTorch's nvidia-* wheels (cuDNN, NCCL, cuBLAS).
libpath=$work/bundle/lib
py=$(command -v python3 || true)
if [[ -n $py ]]; then
  site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null || true)
  if [[ -d $site/nvidia ]]; then
    while read -r d; do libpath+=":$d"; done < <(find "$site/nvidia" -name 'lib*.so*' -printf '%h\n' | sort -u)
  fi
fi
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [[ -d $d ]] && libpath+=":$d"; done
export LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

{
  echo "commit $(cat "$work/bundle/COMMIT")"; [[ -s $work/bundle/DIRTY ]] && { echo "uncommitted:"; cat "$work/bundle/DIRTY"; }
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader 2>&1
  echo "missing libraries:"; ldd "$work/bundle/bin/fastnn" | grep 'not found' || echo "  none"
} | tee "$out/environment.txt"

declare -a table
row() { table+=("$(printf '%-44s %s' "$1" "$2")"); printf '%s\n' "${table[-1]}" | tee -a "$out/rows.txt"; }  # as they come

# One test suite of a gpu test executable in a process of its own (as when each file was its own
# program: no state of one suite reaches another): its log, its JSON and a one-line summary
# (tests.<name>.row) for the table. With FASTNN_GPU_TEST_FILTER the filter runs instead, one process.
run_suite() {
  local t=$1 suite=$2 name filter rc summary
  if [[ -n $suite ]]; then name=$(basename "$t").${suite//\//_}; filter="$suite.*"; else name=$(basename "$t"); filter=$FASTNN_GPU_TEST_FILTER; fi
  # FASTNN_GPU_TEST_ARGS: more gtest flags (--gtest_repeat=50 to chase a test that fails now and then).
  timeout "${FASTNN_GPU_TEST_TIMEOUT:-300}" "$t" --gtest_output="json:$out/$name.json" --gtest_filter="$filter" ${FASTNN_GPU_TEST_ARGS:-} >"$out/$name.log" 2>&1
  rc=$?
  summary=$("${py:-python3}" - "$out/$name.json" <<'PY' 2>/dev/null || echo "no json (rc $rc)"
import json, sys
d = json.load(open(sys.argv[1]))
skipped = sum(1 for s in d["testsuites"] for t in s["testsuite"] if t.get("result") == "SKIPPED")
print(f'{d["tests"]} tests, {d["failures"]} failed, {skipped} skipped')
PY
)
  printf '%s\t%s (rc %s)\n' "$name" "$summary" "$rc" >"$out/tests.$name.row"
}
# "EXE SUITE" lines: every suite of every gpu test executable (gtest lists a suite as "Name." unindented).
gpu_suites() {
  local t
  for t in "$work"/bundle/bin/test_*gpu*; do
    if [[ -n ${FASTNN_GPU_TEST_FILTER:-} ]]; then echo "$t"; continue; fi
    "$t" --gtest_list_tests 2>/dev/null | sed -n "s|^\([A-Za-z0-9_/]*\)\.\$|$t \1|p"
  done
}
if want tests; then
  # The suites share the one GPU: FASTNN_GPU_TEST_JOBS of them at a time (default 4; the tests compare
  # bits, never timings, so running side by side changes no result).
  export -f run_suite; export out py FASTNN_GPU_TEST_TIMEOUT FASTNN_GPU_TEST_FILTER FASTNN_GPU_TEST_ARGS
  gpu_suites | xargs -r -P "${FASTNN_GPU_TEST_JOBS:-4}" -L1 bash -c 'run_suite "$1" "${2:-}"' _
  for r in "$out"/tests.*.row; do
    [[ -f $r ]] || continue
    IFS=$'\t' read -r name value <"$r"; row "$name" "$value"
    grep -E -A12 'Failure$' "$out/$name.log" | head -60  # the failures' messages, not only their names
  done
fi

# Fashion-MNIST shards for the training benchmarks, converted here (16 cores: seconds).
data=$work/fashion
if (want bench || want peer || want smoke) && [[ ! -f $data/manifest.json ]]; then
  fastnn convert mnist --input "$carry/fashion-mnist" --output "$data" --num-gpus 1 -q >"$out/convert.log" 2>&1 ||
    echo "run.sh: Fashion-MNIST conversion failed (see convert.log)"
fi
export FASTNN_GPU_DATA=$data FASTNN_GPU_RAW=$carry/fashion-mnist FASTNN_GPU_OUT=$out FASTNN_GPU_PHOTOS=$carry/photos
if want smoke; then
  while IFS=$'\t' read -r name value; do row "$name" "$value"; done < <(bash "$root/scripts/gpu/smoke.sh" 2>>"$out/smoke.err")
fi
if want sanitize; then
  # memcheck multiplies run time by 10-100: the f32 cases run every kernel, f16/bf16 add no new code paths.
  san=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
  [[ -x $san ]] || { row "memcheck" "compute-sanitizer not found (PATH, \$CUDA_HOME/bin)"; san=""; }
  # One run (its log and row) per group of suites: the op tests, the NHWC op tests, the optimizers, the
  # runner, the classifier head (test_trainer_gpu holds every tests/unit/trainer/*_gpu_test.cpp).
  exe=$work/bundle/bin/test_trainer_gpu
  [[ -n $san && -x $exe ]] && for tool in ${FASTNN_SANITIZE_TOOLS:-memcheck racecheck}; do for spec in "ops:AllOps/CudaOpCase.*f32*:CudaOps.*f32*:CudaFusion.*" \
              "ops_nhwc:AllOps/CudaNhwcOpCase.*f32*:CudaNhwcOps.*f32*:CudaNhwcFusion.*" \
              "optim:CudaOptim.*:All/CudaOptimTest.*:DeviceOptimizer.*:Eight/*" "train_device:TrainDeviceGpu.*F32*" \
              "head:HeadCudaGpu.*-HeadCudaGpu.Runner*"; do
    name=${spec%%:*} filter=${spec#*:} log=$out/sanitize_${tool}_${spec%%:*}.log
    timeout "${FASTNN_SANITIZE_TIMEOUT:-420}" "$san" --tool "$tool" --error-exitcode 3 --print-limit 20 \
      "$exe" --gtest_filter="$filter" >"$log" 2>&1
    rc=$?
    # memcheck: one "Invalid ..." / "Program hit ..." block per error; racecheck: "Error: Race reported ..."
    # per hazard, and a summary line.
    errors=$(grep -c '^========= Invalid\|^========= Program hit\|^========= Error: Race' "$log")
    row "$tool $name" "rc $rc, $errors error reports ($(grep -E '^\[  (PASSED|FAILED)|RACECHECK SUMMARY' "$log" | head -3 | tr '\n' ' '))"
  done; done
fi
if want bench && [[ -f $root/scripts/gpu/benchmarks.sh ]]; then
  while IFS=$'\t' read -r name value; do row "$name" "$value"; done < <(bash "$root/scripts/gpu/benchmarks.sh" 2>>"$out/bench.err")
fi
if want compare && [[ -n $py ]]; then
  # Interleaved like-for-like rounds (scripts/gpu/compare.py): its folder (runs/*.json, summary.json,
  # table.md, environment.json) comes back inside logs.tar.xz under logs/results/, to be committed whole.
  compare_args=(--plan "${FASTNN_COMPARE_PLANS:-resnet50_fp16}" --rounds "${FASTNN_COMPARE_ROUNDS:-3}"
                --deadline "${FASTNN_COMPARE_DEADLINE:-0}" --results-dir "$out/results")
  [[ -n ${FASTNN_COMPARE_CONTENDERS:-} ]] && compare_args+=(--contenders "$FASTNN_COMPARE_CONTENDERS")
  # FASTNN_COMPARE_KERNEL_PROFILE=10,30: kernel time per step by kind from CUPTI records, both sides.
  [[ -n ${FASTNN_COMPARE_KERNEL_PROFILE:-} ]] &&
    compare_args+=(--kernel-profile "$FASTNN_COMPARE_KERNEL_PROFILE" --kernel-records "$work/bundle/lib/libfastnn_kernel_records.so")
  "$py" "$root/scripts/gpu/compare.py" --fastnn "$work/bundle/bin/fastnn" --python "$py" "${compare_args[@]}" \
    >"$out/compare.log" 2>&1 || row "compare" "failed (see compare.log)"
  for s in "$out"/results/*/summary.json; do
    [[ -f $s ]] || continue
    while IFS=$'\t' read -r name value; do row "$name" "$value"; done < <("$py" - "$s" <<'PY'
import json, sys
for p in json.load(open(sys.argv[1]))["plans"]:
    for n, c in p["contenders"].items():
        print(f"compare {p['plan']} {n}\t" + (f"{c['median']:.1f} img/s median of {c['runs']}, spread {100 * c['spread']:.1f}%"
                                               if c["runs"] else "not measured"))
    for r in p["ratios"]:
        print(f"compare {p['plan']} {r['fastnn']}/{r['peer']}\t{r['median_of_round_ratios']:.3f} "
              f"({r['min_round_ratio']:.3f}-{r['max_round_ratio']:.3f}, {r['rounds']} rounds)")
    for n, k in p.get("kernel_profile", {}).items():
        kinds = ", ".join(f"{kind} {ms:.1f}" for kind, ms in k.get("kinds_ms_per_step", {}).items())
        print(f"compare {p['plan']} {n} kernels\t" + (f"{k['kernel_ms_per_step']:.1f} ms/step: {kinds}"
                                                      if k["status"] == "ok" else f"{k['status']} {k.get('why', '')}"))
    for r in p.get("convolution_ratios", []):
        print(f"compare {p['plan']} convolution {r['fastnn']}/{r['peer']}\t{r['ratio']:.3f} "
              f"({r['fastnn_ms']:.2f} against {r['peer_ms']:.2f} ms/step)")
PY
)
  done
fi
if want peer && [[ -n $py ]]; then
  while IFS=$'\t' read -r name value; do row "$name" "$value"; done < <(bash "$root/scripts/gpu/peers.sh" 2>>"$out/peer.err")
fi

echo
echo "== fastnn GPU run (logs in $out)"
printf '%s\n' "${table[@]}" | tee "$out/table.txt"
