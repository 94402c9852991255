# Shared by the convert_*.sh and check_*.sh integration tests (sourced; not a test itself).
# Expects FASTNN (the binary), SRC (source dir) and SCRATCH (a fresh scratch dir) to be set.
set -euo pipefail

PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "SKIP: no python3 to generate test data"; exit 77; }
GEN="$SRC/tests/integration/convert_data.py"

fail() { echo "FAIL: $*" >&2; exit 1; }

# gen ARGS...: runs the data generator; a missing PIL skips the whole test.
gen() {
  local rc=0
  "$PY" "$GEN" "$@" || rc=$?
  if [ "$rc" = 77 ]; then echo "SKIP: python3 PIL is missing"; exit 77; fi
  [ "$rc" = 0 ] || fail "data generator failed: $*"
}

# photos OUT SPEC...: a folder tree of crops of the real photographs (photo_tree.py: SPEC is PATH:N or
# PATH=bmp|webp); missing photographs or PIL skip the whole test.
photos() {
  local rc=0
  "$PY" "$SRC/tests/integration/photo_tree.py" "${FASTNN_SAMPLE_IMAGES:-/var/cache/fastnn/sample-images}" "$@" || rc=$?
  if [ "$rc" = 77 ]; then echo "SKIP: no photographs or no python3 PIL"; exit 77; fi
  [ "$rc" = 0 ] || fail "photo_tree.py $*"
}

# expect_fail NEEDLE... -- CMD...: CMD must exit non-zero and print every NEEDLE (stdout or stderr;
# errors go to stderr, `check` reports to stdout).
expect_fail() {
  local needles=()
  while [ "$1" != "--" ]; do needles+=("$1"); shift; done
  shift
  local out="$SCRATCH/output.txt" err="$SCRATCH/stderr.txt" rc=0
  "$@" >"$out" 2>"$err" || rc=$?
  [ "$rc" != 0 ] || fail "expected failure, got success: $*"
  for n in "${needles[@]}"; do
    grep -qF -- "$n" "$out" "$err" || { cat "$out" "$err" >&2; fail "output lacks \"$n\": $*"; }
  done
  echo "ok (exit $rc): $(head -c 300 "$err")"
}

# no_output DIR: no final-named file and no temporary is in DIR (the lock file may remain).
no_output() {
  [ -d "$1" ] || return 0
  local left
  left=$(ls -A "$1" | grep -vx '.fastnn.lock' || true)
  [ -z "$left" ] || fail "$1 still holds: $left"
}

# same_files A B: every file of conversion A is byte-identical in B and vice versa.
same_files() {
  [ "$(ls "$1")" = "$(ls "$2")" ] || fail "different file lists in $1 and $2"
  for f in "$1"/*; do cmp -s "$f" "$2/$(basename "$f")" || fail "$(basename "$f") differs between $1 and $2"; done
}

rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
