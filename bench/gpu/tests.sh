# shellcheck shell=bash
# Sourced by bench/gpu.sh: the tests on the GPU. The unit tests on cuda,
# fusegate bisect of simulated miscompiles, the fuzzer and its graph seeds.

# all, kernels, check and bless: test_cuda_codegen and test_runtime on cuda
step_unit_tests() {
  # the failing tests' names and messages stay in $OUTDIR (a summary line
  # alone once hid which test failed)
  ./build-gpu/tests/test_cuda_codegen >"$OUTDIR/test_cuda_codegen.txt" 2>&1
  r=$?; [ $r -ne 0 ] && rc=$r
  echo "test_cuda_codegen: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUTDIR/test_cuda_codegen.txt" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] [A-Za-z]' "$OUTDIR/test_cuda_codegen.txt" | head -5
  grep -E -A3 'Failure$' "$OUTDIR/test_cuda_codegen.txt" | head -12
  FUSEGATE_TEST_BACKEND=cuda ./build-gpu/tests/test_runtime >"$OUTDIR/test_runtime_cuda.txt" 2>&1
  r=$?; [ $r -ne 0 ] && rc=$r
  echo "test_runtime on cuda: $(grep -E '^\[  (PASSED|FAILED) ' "$OUTDIR/test_runtime_cuda.txt" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] [A-Za-z]' "$OUTDIR/test_runtime_cuda.txt" | head -5
}
# bisect
step_bisect() {
  # simulated miscompiles on cuda: bisect names the fusion decision (buf4:
  # the first norm's fused row) and the codegen variant; warm timings
  for c in "tp_block_llama default buf4" "tp_block_wan default buf16" "tp_block_llama max-autotune buf10"; do
    set -- $c
    s=$(date +%s%N)
    FUSEGATE_FAULT=perturb:$3 $FG bisect $1 --backend cuda --mode C --world-size $bench_world --fusion $2 \
      --fast-paths none >"$OUTDIR/bisect-$1-$3.txt" 2>&1
    r=$?; e=$(date +%s%N)
    printf "bisect %s %s perturb:%s world %s: exit %s, %s, %d ms\n" "$1" "$2" "$3" "$bench_world" "$r" \
      "$(grep -oE 'the culprit is .*' "$OUTDIR/bisect-$1-$3.txt" | head -1)" "$(( (e - s) / 1000000 ))"
    grep -E "^  (buf|kernel:|replay)" "$OUTDIR/bisect-$1-$3.txt" | head -4
    [ $r -ne 1 ] && rc=1
  done
  # a changed fusion rule on cuda is reported as the decisions that changed,
  # and a real `git bisect run` over a scripted history finds the bad commit
  for c in bisect_ledger_diff git_bisect_run; do
    s=$(date +%s%N)
    bash tests/cli/cli_test.sh "$FG" "$PWD" $c cuda $bench_world >"$OUTDIR/cli-$c.txt" 2>&1
    r=$?; e=$(date +%s%N)
    printf "cli.%s on cuda, world %s: exit %s, %s, %d ms\n" $c $bench_world $r "$(tail -1 "$OUTDIR/cli-$c.txt")" \
      "$(( (e - s) / 1000000 ))"
    [ $r -ne 0 ] && { rc=1; tail -30 "$OUTDIR/cli-$c.txt"; }
  done
  # the chunked variant must give the same digests as element by element
  $FG run tp_block_llama --backend cuda --mode C --world-size 1 --out "$OUTDIR/chunks.json" >/dev/null 2>&1
  FUSEGATE_BISECT=codegen_variants:0 $FG run tp_block_llama --backend cuda --mode C --world-size 1 \
    --out "$OUTDIR/nochunks.json" >/dev/null 2>&1
  python3 - "$OUTDIR/chunks.json" "$OUTDIR/nochunks.json" <<'PY' || rc=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
ra, rb = a["ranks"][0], b["ranks"][0]
assert ra.get("codegen_variants") and not rb.get("codegen_variants"), "variants not switched"
same = [x["exact"] == y["exact"] for x, y in zip(ra["outputs"], rb["outputs"])]
print("codegen_variants:0 against chunks: %d kernels chunked vs 0, outputs bit-identical: %s, accuracy %s/%s"
      % (len(ra["codegen_variants"]), all(same), ra["accuracy"]["status"], rb["accuracy"]["status"]))
assert rb["accuracy"]["status"] == "pass"
PY
}
# fuzz
step_fuzz() {
  fw=$(echo $wl | tr ' ' ',')
  secs="${FUZZ_SECONDS:-300}"
  # FUZZ_UNTIL (epoch seconds): fuzz for whatever the build left of a call
  [ -n "${FUZZ_UNTIL:-}" ] && secs=$(( FUZZ_UNTIL - $(date +%s) ))
  $FG fuzz --backend cuda --fusion all --seconds "$secs" --seed "${FUZZ_SEED:-1}" --max-findings 5 \
    --jobs "${FUZZ_JOBS:-2}" --world-size "${FUZZ_WORLDS:-$fw}" \
    --findings "$OUTDIR/fuzz-findings" --json "$OUTDIR/fuzz.json" 2>"$OUTDIR/fuzz.err" | tail -8
  r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
  grep -E "^fuzz( job [0-9]+)?: graph|->|was killed|was silent" "$OUTDIR/fuzz.err" | cut -c1-300 | head -20
  phase fuzzed
}
# parity: explain --backend cuda against TorchInductor (bench/inductor_parity.py)
step_parity() {
  local n="${PARITY_GRAPHS:-1000}" seed="${PARITY_SEED:-1}" pol="${PARITY_POLICIES:-default,max-autotune}"
  # everything in a folder outside $OUTDIR (a thousand graphs there crowd
  # out what the device tool brings back), packed into one file of it at
  # the end: $OUTDIR/parity.tgz holds parity/{parity-fusegate.json,
  # parity-inductor.json, parity-inductor.err, parity.md, graphs/}; the
  # table is printed too
  local top p
  top="$(mktemp -d)"
  p="$top/parity"
  mkdir -p "$p"
  $FG fuzz --emit "$p/graphs" --graphs "$n" --seed "$seed" --backend cuda >/dev/null || { rc=1; return; }
  local sets="tests/lit repros/fg bench/fg $p/graphs"
  python3 bench/inductor_parity.py fusegate "$FG" $sets --json "$p/parity-fusegate.json" --policies "$pol" || rc=1
  TORCHINDUCTOR_COMPILE_THREADS=2 python3 bench/inductor_parity.py inductor $sets --json "$p/parity-inductor.json" \
    --policies "$pol" --jobs "${PARITY_JOBS:-12}" 2>"$p/parity-inductor.err" || rc=1
  python3 bench/inductor_parity.py compare "$p/parity-inductor.json" "$p/parity-fusegate.json" \
    --markdown "$p/parity.md" | head -40
  tar -C "$top" -czf "$OUTDIR/parity.tgz" parity && rm -rf "$top"
  phase "parity compared"
}
# seeds
step_seeds() {
  for s in ${FUZZ_SEEDS:-1}; do
    echo "== graph seed $s"
    $FG fuzz --backend cuda --fusion all --graphs 1 --seed "$s" --max-findings 1 --findings "$OUTDIR/seed-findings" \
      --print-graph >"$OUTDIR/seed-$s.txt" 2>&1
    r=$?; echo "exit $r"; [ $r -ne 0 ] && rc=$r
    grep -vE '^\[' "$OUTDIR/seed-$s.txt" | cut -c1-300 | tail -40
    # the backtrace's frames: fusegate(+0xOFFSET) resolved
    grep -oE 'fusegate\(\+0x[0-9a-f]+\)' "$OUTDIR/seed-$s.txt" | grep -oE '0x[0-9a-f]+' |
      xargs -r addr2line -f -C -i -e "$FG" | paste - - | head -30
  done
  phase "seeds checked"
}
