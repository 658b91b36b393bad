#!/usr/bin/env bash
# Set up, build, and run every test (unit, text-IR, command line), then the
# unit and text-IR tests under ASan + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
export FUSEGATE_CACHE_DIR="${FUSEGATE_CACHE_DIR:-$PWD/build/kernel-cache}"
ctest --test-dir build --output-on-failure -j 2 --timeout 600
# the unit and lit tests again under ASan + UBSan (build-sanitize/)
bash ci/sanitize.sh
