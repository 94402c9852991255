#!/usr/bin/env bash
# Installs the Debian packages fastnn needs (only those missing), then configures and builds Release
# into build/ (CLI at build/bin/fastnn). Idempotent: a second run only rebuilds what changed.
#   FASTNN_BUILD_DIR  build folder (default build)
#   FASTNN_JOBS       parallel build jobs (default: number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  protobuf-compiler libprotobuf-dev zlib1g-dev libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev
  libtbb-dev libopenblas-dev libopenmpi-dev openmpi-bin libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev
  dataset-fashion-mnist python3 python3-protobuf python3-pil
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

build=${FASTNN_BUILD_DIR:-build}
jobs=${FASTNN_JOBS:-$(nproc)}
# nvcc is usually outside PATH on a CUDA toolkit install; CMake finds it through CUDACXX.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export CUDACXX=/usr/local/cuda/bin/nvcc; fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$build" -j "$jobs"
echo "setup: built $build/bin/fastnn"
