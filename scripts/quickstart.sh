#!/usr/bin/env bash
# The main job on the built-in default data set (Fashion-MNIST from the Debian package
# dataset-fashion-mnist): install, build, then convert -> check -> train -> evaluate.
# Grows as features land; today it builds and shows what the shards would hold.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
echo "quickstart: fastnn built at build/bin/fastnn"
build/bin/fastnn --version
