#!/usr/bin/env bash
# Coverage-guided fuzzing of the fuzz targets (tests/fuzz/fuzz_target.h) with
# libFuzzer, under ASan + UBSan:
#   bash tests/fuzz/run.sh [TARGET|all] [SECONDS]   (default: all, 600 each)
# TARGET: fg_parser, golden_loader, proof_loader, record_reader. The
# corpus grows in build-libfuzzer/corpus/TARGET, seeded from the repros, the
# lit graphs, the goldens and the proofs; a crash input is written to
# tests/fuzz/found/TARGET/ (commit it once fixed: fuzz_replay.TARGET
# replays it in every build). Prints one line a target: runs, coverage,
# corpus, crashes. Exit 1 on a crash, 125 without clang and libFuzzer.
set -uo pipefail
cd "$(dirname "$0")/../.."
which="${1:-all}"
secs="${2:-600}"
all="fg_parser golden_loader proof_loader record_reader"
[ "$which" = all ] && which="$all"
for t in $which; do
  grep -qw "$t" <<<"$all" || { echo "tests/fuzz/run.sh: unknown target '$t'; targets: $all"; exit 2; }
done
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "tests/fuzz/run.sh: needs clang and libFuzzer (Debian: apt-get install clang libclang-rt-14-dev)"
  exit 125
fi
mkdir -p build-libfuzzer
cmake -S . -B build-libfuzzer -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DFUSEGATE_PARTS="ir;harness" -DFUSEGATE_LIBFUZZER=ON >build-libfuzzer/build.log 2>&1 ||
  { tail -20 build-libfuzzer/build.log; exit 1; }
targets=""; for t in $which; do targets="$targets fuzz_$t"; done
ninja -C build-libfuzzer $targets >>build-libfuzzer/build.log 2>&1 || { grep -E "error" -A3 build-libfuzzer/build.log | head -30; exit 1; }
declare -A seeds=([fg_parser]="repros/fg tests/lit" [golden_loader]="golden/cpu" [proof_loader]="golden/proofs"
                  [record_reader]="golden/cpu")
rc=0
for t in $which; do
  corpus=build-libfuzzer/corpus/$t
  mkdir -p "$corpus" "tests/fuzz/found/$t"
  # libFuzzer reads seed folders one level deep: the seeds' files, flattened
  seedcopy=build-libfuzzer/seeds/$t
  rm -rf "$seedcopy"; mkdir -p "$seedcopy"
  n=0
  for d in ${seeds[$t]} tests/fuzz/found/$t; do
    while IFS= read -r f; do n=$((n + 1)); cp "$f" "$seedcopy/$n-$(basename "$f")"; done < <(find "$d" -type f ! -name '.*')
  done
  dict=""; [ "$t" = fg_parser ] && dict="-dict=tests/fuzz/fg.dict"
  [[ "$t" != fg_parser ]] && dict="-dict=tests/fuzz/json.dict"
  before=$(ls "tests/fuzz/found/$t" | wc -l)
  log=build-libfuzzer/$t.log
  ./build-libfuzzer/tests/fuzz/fuzz_$t -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    $dict -artifact_prefix="tests/fuzz/found/$t/" "$corpus" "$seedcopy" >"$log" 2>&1
  r=$?
  after=$(ls "tests/fuzz/found/$t" | wc -l)
  runs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$')
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1)
  printf '%-14s %5s s  %10s runs  %-34s crashes %d  (seeds %d; log %s)\n' "$t" "$secs" "${runs:-?}" "${cov:-?}" \
    $((after - before)) "$n" "$log"
  if [ $r -ne 0 ]; then
    rc=1
    grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" | head -5
  fi
done
exit $rc
