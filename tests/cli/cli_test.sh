#!/usr/bin/env bash
# Command-line tests of the gate's stop-the-line behaviours. Usage:
#   cli_test.sh FUSEGATE SOURCE_DIR CASE [BACKEND [WORLD]]
# Each case runs fusegate on a scratch copy of a repro and its goldens and
# asserts the exit code and the message. BACKEND (default cpu) and WORLD
# (default 2) are read by the cases that also run on a GPU machine
# (bisect_ledger_diff, git_bisect_run: bench/gpu.sh bisect passes cuda).
# The scratch copy and the assertions are in lib.sh; the case NAME is the
# function case_NAME of one of the *_cases.sh files beside this one:
#   gate_cases.sh       verdicts against goldens, bless, quarantine, JUnit
#   record_cases.sh     what a run records; .fg repros
#   input_cases.sh      bad input, what a selection says, folders in use
#   rank_cases.sh       crashed, hung and disagreeing ranks; two nodes
#   fast_path_cases.sh  fast paths: ab, blocked under TP, proofs, prove
#   tool_cases.sh       explain, bisect, fuzz, ci/premerge.sh
#   minify_cases.sh     minify, export, replays that say their verdict
set -uo pipefail
FG="$1"; SRC="$2"; CASE="$3"; BACKEND="${4:-cpu}"; WORLD="${5:-2}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/lib.sh" || { echo "FAIL($CASE): cannot read $HERE/lib.sh"; exit 1; }
for theme in gate record input rank fast_path tool minify; do
  source "$HERE/${theme}_cases.sh" || fail "cannot read $HERE/${theme}_cases.sh"
done; unset theme

declare -F "case_$CASE" >/dev/null || fail "unknown case"
"case_$CASE"
echo "PASS($CASE)"
