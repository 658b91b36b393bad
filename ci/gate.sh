#!/usr/bin/env bash
# The stop-the-line job: set up, build, and run the CPU gate over every repro
# x mode A/B/C x world size 1/2/4 against golden/. Exit codes: 0 pass,
# 1 regression, 2 bad input, 125 cannot test.
set -uo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh || exit 125
mkdir -p build/reports
export FUSEGATE_CACHE_DIR="${FUSEGATE_CACHE_DIR:-$PWD/build/kernel-cache}"
./build/harness/fusegate check --strict --junit build/reports/gate.xml --markdown build/reports/gate.md "$@"
rc=$?
# the max-autotune policy (GEMM templates) on the compiled modes
./build/harness/fusegate check --strict --fusion max-autotune --mode B --mode C \
  --junit build/reports/gate-max-autotune.xml --markdown build/reports/gate-max-autotune.md "$@"
rc2=$?
[ $rc -ne 0 ] && exit $rc
exit $rc2
