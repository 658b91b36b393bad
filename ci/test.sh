#!/usr/bin/env bash
# Set up, build, and run every test (unit, text-IR, command line), then the
# unit and text-IR tests under ASan + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
export FUSEGATE_CACHE_DIR="${FUSEGATE_CACHE_DIR:-$PWD/build/kernel-cache}"
ctest --test-dir build --output-on-failure -j 2 --timeout 600
# the unit and lit tests again under ASan + UBSan (build-sanitize/)
# (the kernel cache is shared: a generated kernel is compiled by the same
# c++ with the same flags in both builds, keyed by its source and those)
FUSEGATE_CACHE_DIR_SANITIZE="$FUSEGATE_CACHE_DIR" bash ci/sanitize.sh
