#!/usr/bin/env bash
# One step of `git bisect run`: get this commit's fusegate, check repros
# against goldens kept outside the tree, and answer as `git bisect run`
# reads it: 0 good, 1 bad, 125 cannot test here (skip the commit).
#
#   git bisect run bash /path/to/ci/bisect-step.sh --golden-dir DIR [check arguments...]
#
# FUSEGATE=path uses that fusegate; otherwise this commit's tree is built
# into build-bisect/ (a commit that does not build cannot be tested: 125).
# `fusegate check` answers 0 pass and 1 regression; what means "this
# commit cannot be judged" becomes 125: a check that cannot test (125: a
# --backend cuda run without a GPU or a CUDA build, a rank that crashed),
# a golden that is missing for the selection (MISSING), or an exit other
# than 0, 1, 2. Bad input (exit 2: a typo in a repro, a flag or a golden
# folder) stops the bisection (exit 128) with fusegate's reason: skipping
# it would skip every commit, and `git bisect run` would read an exit 2 as
# "bad". Once a step of this bisection has been judged (0 or 1), the
# command is known to be good input, and an exit 2 is this commit lacking
# what it names (a repro added later): 125, skipped. The mark lives in the
# repository's git folder, newer than the bisection's start.
#
# --predicate P (taken here, not passed on) makes only one way of failing
# bad, as `fusegate bisect --predicate` does inside one build:
#   accuracy  an output fails its accuracy check, fingerprint or digest
#   crash     a rank crashed (the compiler's internal error, a signal)
#   hang      a rank did not finish within --timeout
#   ranks     the ranks compiled differently
#   kernels   more kernels than the golden (or other kernels)
#   graphs    more graphs or graph breaks than the golden
# A commit that fails only in other ways is good for P; one where a check
# could not test for another reason (a crash hides a hang) is skipped (125).
set -uo pipefail
predicate=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --predicate)
      [ $# -ge 2 ] || { echo "bisect-step: --predicate needs a value (accuracy, crash, hang, ranks, kernels, graphs): stopping the bisection (exit 128)"; exit 128; }
      predicate="$2"; shift 2 ;;
    --predicate=*) predicate="${1#--predicate=}"; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
case "$predicate" in
  ""|accuracy|crash|hang|ranks|kernels|graphs) ;;
  *) echo "bisect-step: --predicate '$predicate' is not one of accuracy, crash, hang, ranks, kernels, graphs: stopping the bisection (exit 128)"
     exit 128 ;;
esac
set -- "${args[@]+"${args[@]}"}"
fg="${FUSEGATE:-}"
if [ -z "$fg" ]; then
  cmake -S . -B build-bisect -G Ninja -DCMAKE_BUILD_TYPE=Release >build-bisect.log 2>&1 &&
    cmake --build build-bisect --target fusegate fusegate-full >>build-bisect.log 2>&1 || {
    echo "bisect-step: this commit does not build (build-bisect.log): cannot test"
    exit 125
  }
  fg=./build-bisect/harness/fusegate
fi
gitdir="$(git rev-parse --git-dir 2>/dev/null || true)"
mark="${gitdir:+$gitdir/fusegate-bisect-judged}"
judged_here() {  # a step of the bisection under way was judged
  [ -n "$mark" ] && [ -f "$mark" ] && [ -f "$gitdir/BISECT_START" ] && [ "$mark" -nt "$gitdir/BISECT_START" ]
}
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$fg" check "$@" >"$out" 2>&1
rc=$?
# why: every line that says a verdict or an error (at most 40), then the end
grep -E 'FAIL|CANNOT_TEST|MISSING|IMPROVED|error|fusegate:' "$out" | head -40
tail -3 "$out"
# (a check of nothing but MISSING goldens exits 1: "nothing was compared")
if [ $rc -le 1 ] && grep -qE '^[^ ]+ +MISSING' "$out" && ! grep -qE '^[^ ]+ +FAIL' "$out"; then
  echo "bisect-step: a golden is missing for this selection: cannot test"
  exit 125
fi
[ $rc -le 1 ] && [ -n "$mark" ] && touch "$mark" 2>/dev/null
if [ -n "$predicate" ] && [ $rc -ne 2 ]; then
  case "$predicate" in
    accuracy) bad='FAIL .*(accuracy fail|fingerprint outside|digest)' ;;
    crash) bad='CANNOT_TEST +rank [0-9]+ crashed' ;;
    hang) bad='CANNOT_TEST .*\(hung\)' ;;
    ranks) bad='FAIL .*differs from rank [0-9]+ at' ;;
    kernels) bad='FAIL .*kernel' ;;
    graphs) bad='FAIL .*(graph_count|graph_break_count|new graph break)' ;;
  esac
  if grep -qE "$bad" "$out"; then
    echo "bisect-step: bad for --predicate $predicate"; [ -n "$mark" ] && touch "$mark" 2>/dev/null; exit 1
  fi
  if grep -qE 'CANNOT_TEST' "$out" || [ $rc -gt 1 ]; then
    echo "bisect-step: a check could not test, which may hide --predicate $predicate: cannot test this commit"
    exit 125
  fi
  [ $rc -eq 1 ] && echo "bisect-step: it fails, but not by --predicate $predicate: good for it"
  [ -n "$mark" ] && touch "$mark" 2>/dev/null
  exit 0
fi
case $rc in
  0) exit 0 ;;
  1) exit 1 ;;
  2) if judged_here; then
       echo "bisect-step: fusegate check exit 2 at this commit, where earlier steps were judged: it lacks what the command names; cannot test"
       exit 125
     fi
     echo "bisect-step: fusegate check exit 2 (bad input, above): stopping the bisection (exit 128); fix the command and run it again"
     exit 128 ;;
  *) echo "bisect-step: fusegate check exit $rc: cannot test this commit"; exit 125 ;;
esac
