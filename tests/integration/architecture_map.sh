#!/usr/bin/env bash
# docs/ARCHITECTURE.md's folder map matches the tree: every top-level folder, and every folder directly
# under cli/, converters/, core/, pipeline/, trainer/, tests/ and scripts/, has its line in the
# "## Folders" section ("- `folder/`: ..."), and every folder listed there exists. Git-ignored folders
# (build/, .carry/, ...) and .git are not part of the tree.
#
#   bash tests/integration/architecture_map.sh FASTNN SOURCE_DIR SCRATCH_DIR   # FASTNN and SCRATCH unused
set -euo pipefail
src=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
doc=$src/docs/ARCHITECTURE.md
[[ -f $doc ]] || { echo "architecture_map: $doc missing" >&2; exit 1; }

# The map: lines "- `path/`" between "## Folders" and the next "## " heading.
listed=$(awk '/^## /{inmap = ($0 == "## Folders")} inmap && /^- `[^`]+\/`/ {
  s = $0; sub(/^- `/, "", s); sub(/\/`.*/, "", s); print s }' "$doc" | sort)
[[ -n $listed ]] || { echo "architecture_map: no folder lines under '## Folders' in docs/ARCHITECTURE.md" >&2; exit 1; }

ignored() {  # path relative to src: ignored by git (when src is a git checkout)
  git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 || return 1
  git -C "$src" check-ignore -q "$1/" 2>/dev/null || git -C "$src" check-ignore -q "$1" 2>/dev/null
}
present=$(
  cd "$src"
  for d in * .[!.]*; do
    [[ -d $d && ! -L $d && $d != .git ]] || continue
    ignored "$d" && continue
    echo "$d"
  done
  for top in cli converters core pipeline trainer tests scripts; do
    [[ -d $top ]] || continue
    for d in "$top"/*/; do
      d=${d%/}
      [[ -d $d && ! -L $d ]] || continue
      ignored "$d" && continue
      echo "$d"
    done
  done | sort
)
present=$(printf '%s\n' "$present" | sort)

missing=$(comm -23 <(printf '%s\n' "$present") <(printf '%s\n' "$listed"))
absent=$(comm -13 <(printf '%s\n' "$present") <(printf '%s\n' "$listed"))
rc=0
for d in $missing; do echo "architecture_map: folder $d/ is in the tree but has no line in docs/ARCHITECTURE.md's folder map"; rc=1; done
for d in $absent; do echo "architecture_map: docs/ARCHITECTURE.md's folder map lists $d/, which is not in the tree"; rc=1; done
(( rc == 0 )) && echo "architecture_map: $(printf '%s\n' "$listed" | wc -l) folders, map and tree agree"
exit $rc
