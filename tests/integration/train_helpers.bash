# Shared by tests/integration/train_*.sh (sourced after FASTNN and fail() are set).

# refused NAME NEEDLE... -- ARGS...: `fastnn train ARGS` exits 1 (an error, not usage) before training
# (no step line) within 60 s and prints every NEEDLE; its output goes to NAME.log.
refused() {
  local name=$1 needles=()
  shift
  while [ "$1" != "--" ]; do needles+=("$1"); shift; done
  shift
  local rc=0
  timeout 60 "$FASTNN" train "$@" > "$name.log" 2>&1 || rc=$?
  [ "$rc" = 1 ] || { cat "$name.log"; fail "$name: exit $rc, expected 1"; }
  for n in "${needles[@]}"; do grep -qF -- "$n" "$name.log" || { cat "$name.log"; fail "$name: output lacks \"$n\""; }; done
  ! grep -q '^step ' "$name.log" || fail "$name: trained before refusing"
  echo "ok (refused): $name"
}

# convert_fashion_mnist DIR: the real Fashion-MNIST (FASHION_MNIST_DIR, else Debian's dataset-fashion-mnist)
# converted into DIR; exits 77 (skipped) where it is not installed.
convert_fashion_mnist() {
  local src=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
  [ -f "$src/train-images-idx3-ubyte.gz" ] || { echo "skip: $src has no Fashion-MNIST"; exit 77; }
  "$FASTNN" convert mnist --input "$src" --output "$1" --num-gpus 1 -q > /dev/null || fail "convert $src"
}
