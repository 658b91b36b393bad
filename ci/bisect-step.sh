#!/usr/bin/env bash
# One step of `git bisect run`: get this commit's fusegate, check repros
# against goldens kept outside the tree, and answer as `git bisect run`
# reads it: 0 good, 1 bad, 125 cannot test here (skip the commit).
#
#   git bisect run bash /path/to/ci/bisect-step.sh --golden-dir DIR [check arguments...]
#
# FUSEGATE=path uses that fusegate; otherwise this commit's tree is built
# into build-bisect/ (a commit that does not build cannot be tested: 125).
# `fusegate check` answers 0 pass and 1 regression; everything that means
# "this commit cannot be judged" becomes 125: bad input there (exit 2: a
# repro or flag the commit does not have), a check that cannot test (125:
# a --backend cuda run without a GPU or a CUDA build, a rank that crashed),
# a golden that is missing for the selection (MISSING), or any other exit.
# `git bisect run` would read an exit 2 as "bad".
set -uo pipefail
fg="${FUSEGATE:-}"
if [ -z "$fg" ]; then
  cmake -S . -B build-bisect -G Ninja -DCMAKE_BUILD_TYPE=Release >build-bisect.log 2>&1 &&
    cmake --build build-bisect --target fusegate >>build-bisect.log 2>&1 || {
    echo "bisect-step: this commit does not build (build-bisect.log): cannot test"
    exit 125
  }
  fg=./build-bisect/harness/fusegate
fi
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$fg" check "$@" >"$out" 2>&1
rc=$?
tail -3 "$out"
# (a check of nothing but MISSING goldens exits 1: "nothing was compared")
if [ $rc -le 1 ] && grep -qE '^[^ ]+ +MISSING' "$out" && ! grep -qE '^[^ ]+ +FAIL' "$out"; then
  echo "bisect-step: a golden is missing for this selection: cannot test"
  exit 125
fi
case $rc in
  0) exit 0 ;;
  1) exit 1 ;;
  *) echo "bisect-step: fusegate check exit $rc: cannot test this commit"; exit 125 ;;
esac
