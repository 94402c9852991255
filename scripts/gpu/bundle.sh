#!/usr/bin/env bash
# Builds the CUDA backend HERE and packs what a bare GPU machine needs into .carry/gpu/ (git-ignored),
# so that one device call can run the GPU tests and benchmarks:
#
#   ./scripts/gpu/bundle.sh                 # here: build with nvcc, pack binaries + libraries + data
#   (device) scripts/gpu/run.sh             # there, with .carry/gpu carried: tests, benchmarks, table
#
# Why a build brought along rather than a build there: the GPU machine has nvcc, cuDNN and NCCL (as
# PyTorch's pip wheels) but none of our Debian libraries (oneTBB, protobuf, libjpeg-turbo, libpng,
# OpenBLAS, zlib...) and no network. We pack every shared library our binaries load that is neither
# glibc/libstdc++ nor part of CUDA (CUDA's come from the GPU machine: driver, cudart, cuBLAS, cuDNN,
# NCCL), and the raw Fashion-MNIST files (converted there, on 16 cores, in seconds). The device call
# carries at most 64 MiB, so the pack is xz-compressed (OpenBLAS alone is 36 MB uncompressed).
#
# Env: FASTNN_GPU_BUILD_DIR (default build-gpu), FASTNN_GPU_SKIP_BUILD=1 to pack an existing build.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${FASTNN_GPU_BUILD_DIR:-build-gpu}
out=.carry/gpu
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || { echo "bundle.sh: nvcc not found (set CUDACXX)" >&2; exit 1; }

if [[ ${FASTNN_GPU_SKIP_BUILD:-0} != 1 ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFASTNN_CUDA=ON -DFASTNN_FUZZ=OFF \
    -DCMAKE_CUDA_COMPILER="$nvcc" >/dev/null
fi
# Only what is packed: the CLI, the gpu test programs and the benchmarks (a whole build is twice as long).
targets=(fastnn $(ninja -C "$build" -t targets all | sed -n 's/^\(\(test_[a-z0-9_]*gpu[a-z0-9_]*\)\|\(bench_[a-z0-9_]*\)\|\(fastnn_kernel_records\)\): phony$/\1/p'))
if [[ ${FASTNN_GPU_SKIP_BUILD:-0} != 1 ]]; then
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
fi
grep -q 'FASTNN_HAVE_CUDA' "$build/CMakeCache.txt" 2>/dev/null || true

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
# The CLI, the gpu test programs and the benchmarks: the targets only (a program of an older layout
# left in bin/ would run twice there).
for t in "${targets[@]}"; do
  [[ -x $build/bin/$t ]] && cp "$build/bin/$t" "$stage/bin/"
done
# The kernel recorder (scripts/gpu/kernel_records.cpp), a library the CUDA driver loads into a process.
[[ -f $build/bin/libfastnn_kernel_records.so ]] && cp "$build/bin/libfastnn_kernel_records.so" "$stage/lib/"
# Symbol tables are of no use there and a fifth of each executable: more room under the 64 MiB.
strip --strip-unneeded "$stage"/bin/* 2>/dev/null || true
# Shared libraries to carry: everything ldd resolves except the C/C++ runtime and CUDA's own.
# CUPTI (the kernel recorder's) comes with PyTorch's wheels there, as cuDNN and NCCL do.
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+|libgcc_s|libcuda\.|libcudart|libcublas|libcudnn|libnccl|libnvrtc|libnvJitLink|libcufft|libcurand|libcupti|libnvperf)'
for f in "$stage"/bin/* "$stage"/lib/libfastnn_kernel_records.so; do
  [[ -f $f ]] || continue
  ldd "$f" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] && continue
  cp -L "$path" "$stage/lib/$name"
done
# The records of what was built, for the report.
git -C "$root" rev-parse HEAD >"$stage/COMMIT" 2>/dev/null || echo unknown >"$stage/COMMIT"
git -C "$root" status --short >"$stage/DIRTY" 2>/dev/null || true

mkdir -p "$out"
rm -f "$out"/bundle.tar.xz
# One xz stream with a dictionary larger than the pack (192 MiB), so the gpu test executables, which share
# most of their code, are stored nearly once: 29.3 -> 17.6 MB on 2026-11-28, for a minute more here.
tar -C "$stage" -cf - . | xz -T1 --lzma2=preset=9,dict=192MiB >"$out/bundle.tar.xz"
# Raw Fashion-MNIST (already gzip-compressed; 30 MB).
mkdir -p "$out/fashion-mnist"
cp -u /usr/share/datasets/fashion-mnist/*.gz "$out/fashion-mnist/"
# The two real photographs (python3-sklearn, fetched by scripts/setup.sh): the JPEG-shard benchmark
# makes a photo folder of them there (scripts/bench/make_photo_folder.py).
mkdir -p "$out/photos"
cp -u /var/cache/fastnn/sample-images/*.jpg "$out/photos/" 2>/dev/null || echo "bundle.sh: no sample photographs (run scripts/setup.sh); the JPEG benchmark will be skipped"
du -sh "$out" "$out"/*
total=$(du -sbL "$out" | cut -f1)
(( total < 60 * 1024 * 1024 )) || { echo "bundle.sh: $out is $total bytes; the device call carries 64 MiB in all" >&2; exit 1; }
echo "bundle.sh: ready. Device call: run(command=\"scripts/gpu/run.sh\", carry=[\".carry/gpu\"])"
