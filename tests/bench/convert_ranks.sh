#!/usr/bin/env bash
# Conversion split over MPI ranks against one process, in the same run; prints JSON lines
# (docs/PERFORMANCE.md "Conversion" records them).
#   tests/bench/convert_ranks.sh [FASTNN] [WORK_DIR]    (default build/bin/fastnn, /tmp/fastnn_ranks_bench)
# 1. Fashion-MNIST (70k images → PNG, zlib-bound), interleaved three times: one process with one thread,
#    `mpirun -np 2` with one thread per rank (as fastnn starts MPI when every rank is on one machine:
#    pml ob1, shared memory; and with Debian's OpenMPI setting `pml = ^ucx` given, which keeps fastnn's
#    choice off and lets OpenMPI probe its cm pml first), one process with two threads; wall and CPU
#    seconds. The outputs are compared byte for byte each time.
# 2. A larger PNG job (synthetic 200k 32x32 RGB) the same way, and mpirun's fixed cost (10 records).
# 3. Planning an image folder of many small files (copies of one photograph crop, distinct files, 20 per class
#    folder): the scan + plan seconds (`--json` scan_seconds) against the file count, one process and
#    2 ranks (each rank walks every second class folder and opens every second file), with a warm page
#    cache and, as root, a cold one.
# Needs OpenMPI's mpirun; as root it sets OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM) as the tests do.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
FASTNN=${1:-$here/build/bin/fastnn}
WORK=${2:-/tmp/fastnn_ranks_bench}
FM=${FASTNN_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
PY=/usr/bin/python3  # Debian's, with PIL
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1
rm -rf "$WORK"
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

wall() {  # "WALL CPU" seconds of a command (CPU: user + sys of it and its children), output discarded
  /usr/bin/time -f "%e %U %S" -o time.txt "$@" > /dev/null 2> cmd.err || { cat cmd.err >&2; exit 1; }
  read -r w u s < time.txt
  echo "$w $(echo "$u + $s" | bc)"
}
# What a one-machine job saves by fastnn's choice of pml ob1 (made only when OMPI_MCA_pml is unset):
# OpenMPI's default probes the cm pml's network libraries (PSM, PSM2) first.
default_mpi=(env OMPI_MCA_pml=^ucx)

echo "{\"machine\": \"$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\", \"date\": \"$(date -u +%F)\", \"load\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"

cat "$FM"/* > /dev/null
args=(mnist -i "$FM" --num-gpus 2 --shards-per-gpu 4 --seed 1 --no-sync -q)
for round in 1 2 3; do
  rm -rf a b c d
  read -r a acpu < <(wall "$FASTNN" convert "${args[@]}" -o a --threads 1)
  read -r b bcpu < <(wall mpirun --oversubscribe -np 2 "$FASTNN" convert "${args[@]}" -o b --threads 1)
  read -r d dcpu < <(wall "${default_mpi[@]}" mpirun --oversubscribe -np 2 "$FASTNN" convert "${args[@]}" -o d --threads 1)
  read -r c ccpu < <(wall "$FASTNN" convert "${args[@]}" -o c --threads 2)
  diff -r a b > /dev/null && diff -r a c > /dev/null && diff -r a d > /dev/null || { echo "outputs differ" >&2; exit 1; }
  echo "{\"bench\": \"fashion_mnist_ranks\", \"round\": $round, \"one_process_1_thread\": [$a, $acpu], \"mpirun_2_ranks_1_thread\": [$b, $bcpu], \"mpirun_2_ranks_openmpi_default\": [$d, $dcpu], \"one_process_2_threads\": [$c, $ccpu], \"units\": \"[wall s, cpu s]\", \"speedup_2_ranks\": $(echo "scale=3; $a / $b" | bc), \"speedup_2_ranks_openmpi_default\": $(echo "scale=3; $a / $d" | bc)}"
done

# A larger PNG job (synthetic 32x32 RGB): mpirun's fixed cost (launch and MPI_Init) weighs less.
syn=(synthetic --num-records 200000 --num-test-records 0 --height 32 --width 32 --channels 3 --image-format png
  --num-classes 10 --no-sync -q)
for round in 1 2 3; do
  rm -rf a b
  read -r a _ < <(wall "$FASTNN" convert "${syn[@]}" -o a --threads 1)
  read -r b _ < <(wall mpirun --oversubscribe -np 2 "$FASTNN" convert "${syn[@]}" -o b --threads 1)
  diff -r a b > /dev/null || { echo "outputs differ" >&2; exit 1; }
  echo "{\"bench\": \"synthetic_png_200k_ranks\", \"round\": $round, \"one_process_1_thread_s\": $a, \"mpirun_2_ranks_1_thread_s\": $b, \"speedup_2_ranks\": $(echo "scale=3; $a / $b" | bc)}"
done
rm -rf a b
# mpirun's fixed cost on its own: a conversion of 10 records.
for round in 1 2 3; do
  rm -rf a b d
  read -r a _ < <(wall "$FASTNN" convert synthetic --num-records 10 -o a --no-sync -q)
  read -r b _ < <(wall mpirun --oversubscribe -np 2 "$FASTNN" convert synthetic --num-records 10 -o b --no-sync -q)
  read -r d _ < <(wall "${default_mpi[@]}" mpirun --oversubscribe -np 2 "$FASTNN" convert synthetic --num-records 10 -o d --no-sync -q)
  echo "{\"bench\": \"launch_cost\", \"round\": $round, \"one_process_s\": $a, \"mpirun_2_ranks_s\": $b, \"mpirun_2_ranks_openmpi_default_s\": $d}"
done

# Planning against the file count.
"$PY" "$here/tests/integration/photo_tree.py" "${FASTNN_SAMPLE_IMAGES:-/var/cache/fastnn/sample-images}" \
  seed c:1 > /dev/null
src=$(ls seed/c/*.jpg | head -1)
for files in 2000 8000 32000; do
  rm -rf tree && mkdir tree
  for ((d = 0; d < files / 20; d++)); do
    mkdir "tree/c$d"
    for ((i = 0; i < 20; i++)); do cp "$src" "tree/c$d/$i.jpg"; done
  done
  for cache in warm cold; do
    # cold: the page cache dropped before each run (root only), so that every file open reads the disk,
    # as on a network file system; skipped where that is not allowed.
    [ $cache = cold ] && ! { sync && echo 3 > /proc/sys/vm/drop_caches; } 2> /dev/null && continue
    for how in one two; do
      rm -rf out
      [ $cache = cold ] && sync && echo 3 > /proc/sys/vm/drop_caches
      if [ $how = one ]; then
        j=$("$FASTNN" convert image-folder -i tree -o out --no-sync --json -q --shards-per-gpu 8)
      else
        j=$(mpirun --oversubscribe -np 2 "$FASTNN" convert image-folder -i tree -o out --no-sync --json -q --shards-per-gpu 8 | grep '^{')
      fi
      scan=$(echo "$j" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["scan_seconds"])')
      echo "{\"bench\": \"image_folder_planning\", \"files\": $files, \"cache\": \"$cache\", \"ranks\": $([ $how = one ] && echo 1 || echo 2), \"scan_and_plan_s\": $scan}"
    done
  done
done
