#!/usr/bin/env bash
# The quick local check before a merge: the CPU gate at one world size (2:
# the tensor-parallel paths run) over the repros a change can affect.
#   bash ci/premerge.sh [BASE]        (BASE default: origin/main)
# Which repros: a change to a C++ repro, a .fg repro or a repro's goldens
# checks that repro; a change anywhere in the compiler, runtime, harness or
# build (fusion/, kernels/, harness/, repros/registry*, CMake files, the
# proofs) checks every repro; with no BASE to diff against, every repro.
# Every repro is what `fusegate list --backend cpu` names (never a pattern
# of names: a GPU-sized block is cuda only by its own declaration).
# A change that touches none of these (documentation) still checks one
# repro, ffn_allreduce: a premerge check never selects nothing.
# Exit codes as `fusegate check`: 0 pass, 1 regression, 2 bad input, 125
# cannot test.
set -uo pipefail
cd "$(dirname "$0")/.."
base="${1:-origin/main}"
# FUSEGATE=path uses that fusegate (and its build's goldens) instead of
# setting up and building this tree
FG="${FUSEGATE:-}"
if [ -z "$FG" ]; then
  bash ci/setup.sh >/dev/null || { echo "premerge: setup or build failed: cannot test"; exit 125; }
  FG=./build/harness/fusegate
fi
export FUSEGATE_CACHE_DIR="${FUSEGATE_CACHE_DIR:-$PWD/build/kernel-cache}"
# the repros that run on the cpu, as fusegate says (a GPU-sized block is
# cuda only); a list that fails or is empty cannot be tested
all=$($FG list --backend cpu | cut -f1) || { echo "premerge: fusegate list failed: cannot test"; exit 125; }
[ -n "$all" ] || { echo "premerge: fusegate lists no cpu repro: cannot test"; exit 125; }
if mb=$(git merge-base HEAD "$base" 2>/dev/null); then
  changed=$( (git diff --name-only "$mb"; git diff --name-only; git ls-files --others --exclude-standard) | sort -u)
  why="changed since $base"
else
  changed="(unknown)"
  why="no $base to diff against"
fi
pick=""
if [ "$changed" = "(unknown)" ] || grep -qE '^(fusion|kernels|harness)/|^repros/registry|CMakeLists\.txt$|^cmake/|^golden/proofs/' <<<"$changed"; then
  pick="$all"
else
  for r in $all; do
    if grep -qE "^(repros/$r\.cpp|repros/fg/$r\.fg|golden/cpu/$r/)" <<<"$changed"; then pick="$pick $r"; fi
  done
  [ -z "$pick" ] && { pick="ffn_allreduce"; why="$why: no repro affected, checking one as a smoke test"; }
fi
pick=$(echo $pick)
echo "premerge: $why; checking at world size 2: $pick"
start=$(date +%s)
$FG check $pick --strict --world-size 2
rc=$?
echo "premerge: exit $rc after $(( $(date +%s) - start )) s"
exit $rc
