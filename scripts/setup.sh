#!/usr/bin/env bash
# Installs the Debian packages fastnn needs (only those missing), then configures and builds Release
# into build/ (CLI at build/bin/fastnn). Idempotent: a second run only rebuilds what changed.
#   FASTNN_BUILD_DIR  build folder (default build)
#   FASTNN_JOBS       parallel build jobs (default: number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  protobuf-compiler libprotobuf-dev zlib1g-dev libdeflate-dev libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev
  libtbb-dev libopenblas-dev libdnnl-dev libopenmpi-dev openmpi-bin libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev
  libonnx-dev libyaml-cpp-dev libsnappy-dev dataset-fashion-mnist python3 python3-protobuf python3-pil python3-onnx
)
# The test path (FASTNN_TARGETS unset: scripts/test.sh) also renders the report pages in headless
# Chromium (it_report_render; skipped without it). 122 MB download, 414 MB installed, about 11 s of
# apt-get install on the development machine (2026-11-24); the quickstart does not need it.
[ -n "${FASTNN_TARGETS:-}" ] || packages+=(chromium)
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Two real photographs for the image tests and the JPEG benchmarks: Debian's python3-sklearn package
# file holds china.jpg and flower.jpg (640x427). Only the .deb is fetched and unpacked, nothing installed.
samples=${FASTNN_SAMPLE_IMAGES:-/var/cache/fastnn/sample-images}
if [ ! -f "$samples/china.jpg" ]; then
  tmp=$(mktemp -d)
  if (cd "$tmp" && { apt-get download -q python3-sklearn >/dev/null 2>&1 ||
                     { ${sudo_cmd:-} apt-get update -q >/dev/null && apt-get download -q python3-sklearn >/dev/null; }; } &&
      dpkg -x python3-sklearn_*.deb x) && mkdir -p "$samples" &&
     find "$tmp/x" -path '*sklearn/datasets/images/*.jpg' -exec cp {} "$samples/" \; && [ -f "$samples/china.jpg" ]; then
    echo "setup: sample photographs in $samples"
  else
    echo "setup: could not fetch python3-sklearn's photographs; the tests that use them will skip" >&2
  fi
  rm -rf "$tmp"
fi

build=${FASTNN_BUILD_DIR:-build}
jobs=${FASTNN_JOBS:-$(nproc)}
# nvcc is usually outside PATH on a CUDA toolkit install; CMake finds it through CUDACXX.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export CUDACXX=/usr/local/cuda/bin/nvcc; fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
# FASTNN_TARGETS: only these targets (scripts/quickstart.sh builds just `fastnn`); unset: everything
# (tests, benchmarks, the fuzz side build), as scripts/test.sh needs.
read -r -a targets <<< "${FASTNN_TARGETS:-}"
cmake --build "$build" -j "$jobs" ${targets[@]:+--target "${targets[@]}"}
echo "setup: built ${FASTNN_TARGETS:-everything} in $build"
