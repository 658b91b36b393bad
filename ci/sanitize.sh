#!/usr/bin/env bash
# The unit and lit tests under ASan + UBSan (the `sanitize` preset of
# CMakePresets.json, in build-sanitize/). ci/test.sh runs it after the main
# tests; setup (ci/setup.sh) must have run. A UBSan finding aborts its test.
# LibTorch is not built with ASan: container-overflow checks, which need
# every library annotated, and leak checks (its allocations live until exit)
# are off.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset sanitize >/dev/null
# what the unit and lit tests run (tests/CMakeLists.txt): not fusegate-full
ninja -C build-sanitize -j "$(nproc)" unit_and_lit_tests
# never a vacuous green: the binaries must really carry the sanitizers
# (ldd's output is read whole first: `ldd | grep -q` under pipefail fails at
# random, grep -q leaving at its first match and ldd dying of SIGPIPE.)
for b in build-sanitize/harness/fusegate build-sanitize/tests/test_ir; do
  deps="$(ldd "$b")"
  grep -q libasan <<<"$deps" && grep -q libubsan <<<"$deps" ||
    { echo "ci/sanitize.sh: $b is not built with ASan and UBSan"; exit 1; }
done
export ASAN_OPTIONS=detect_leaks=0:detect_container_overflow=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export FUSEGATE_CACHE_DIR="${FUSEGATE_CACHE_DIR_SANITIZE:-$PWD/build-sanitize/kernel-cache}"
ctest --test-dir build-sanitize -L 'unit|lit' --no-tests=error --output-on-failure -j 2 --timeout 900
