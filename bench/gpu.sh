#!/usr/bin/env bash
# One call on a GPU machine: build against the LibTorch inside the installed
# PyTorch, check the cuda backend against its goldens, and benchmark; prints
# a short table last. Run from the repository root:
#   bash bench/gpu.sh [check|bless|prove|fastpaths|bisect|bench|kernels|fuzz|seeds|multinode|gateup|swiglu|missing|attention|attnproof|exchange|exchange_bw|occupancy|placement|travel|none|all]     (default: all)
# none: only the build (then run build-gpu/harness/fusegate by hand).
# multinode (two GPUs): bless, then check, tp_block_llama_h2048 C at world
# size 2 as two nodes on this host (one GPU each through CUDA_VISIBLE_DEVICES,
# NCCL between them) into a scratch golden folder; prints both nodes' exit
# codes and the record's launches against the one-node golden's.
# fuzz: `fusegate fuzz --backend cuda --fusion all` for FUZZ_SECONDS (default
# 300; FUZZ_UNTIL=<epoch seconds> instead: until then) from FUZZ_SEED
# (default 1), FUZZ_JOBS jobs (default 2) at world sizes
# FUZZ_WORLDS (default 1, or 1,2 with two GPUs); the summary JSON and any
# findings are left in $OUT (fuzz.json, fuzz-findings/).
# seeds: each graph of FUZZ_SEEDS (graph seeds, as a fuzz finding names
# them) checked alone in process under every policy (a crash prints its
# backtrace, resolved with addr2line), its .fg printed first.
# bisect: `fusegate bisect` of simulated miscompiles on cuda, timed, and the
# element-by-element variant (codegen_variants:0) against the chunked one.
# prove: `fusegate ab` and `fusegate prove` of every fast path on this GPU
# (world size 1, and 2 with two GPUs; qkv_rmsnorm_local at 1 only), packed
# as $OUT/proofs-cuda.tgz. fastpaths: bench/fastpath_bench.py (the blocks with
# and without the proven fast paths, and the one-shot all-reduce + norm
# against NCCL + the norm kernel: bench/fg/allreduce_norm_h2048.fg).
# exchange (two GPUs): the proof at world size 2 of EXCHANGE_FAST_PATH
# (allreduce_sum by default, or allreduce_residual, which the cost model
# refuses on cuda: its "with" profile then runs without it; its A/B on every
# cuda repro it matches), tp_block_llama_h4096's forward profiled with and
# without it, then the max-autotune world-size-2 goldens re-blessed with it
# (EXCHANGE_BLESS=0: not) and every world-size-2 cuda golden checked; packed as
# $OUTDIR/exchange.tgz.
# exchange_bw (two GPUs): bench/exchange_bw.cu, allreduce_sum.cu's one-shot
# exchange alone on the two GPUs against what NVLink moves (stores both ways
# at once, loads, the copy engines), at 1, 4 and 8 MiB a rank
# (EXBW_SIZES, EXBW_BLOCKS_PER_SM, EXBW_THREADS, EXBW_WARMUP_MS: see the file).
# occupancy: the row kernels held to full occupancy (FG_FULL_OCCUPANCY)
# against the same build without the bound (FUSEGATE_FAULT=occupancy_spill),
# ABAB at world size 1 on OCC_BLOCKS (default tp_block_llama_h4096
# tp_block_llama_h2048): the norm kernels' times in the profile, the
# forward's median; then those blocks' cuda goldens checked at world size 1.
# missing (two GPUs): `bless --missing` (the cuda goldens no file holds yet,
# default and max-autotune C, at world sizes 1 and 2), then `check --strict`
# of every cuda golden at world sizes 1 and 2.
# gateup: the proofs of the MLP's two fast paths (gate_up_swiglu and
# rmsnorm_gate_up_swiglu, one kernel file; GATEUP_AB=1: their A/B on every
# cuda repro they match first), the max-autotune goldens re-blessed with
# them (GATEUP_BLESS=0: not), packed as $OUTDIR/gateup.tgz.
# attention: the causal_attention kernel against f64 (test_runtime on cuda)
# and against LibTorch's cuDNN attention (bench/attention_bench.cpp);
# ATTN_NCU=1 adds Nsight Compute's sections of the kernel ($OUTDIR/ncu-attention-*.txt);
# ATTN_VARIANT=<file.cu> [ATTN_VARIANT_SMEM=<bytes>] then runs the same with
# that kernel file in place, same GPU, same call (the tree is put back).
# attnproof: causal_attention's A/Bs, its proof, the max-autotune goldens
# re-blessed with it (ATTN_BLESS=0: not) and every cuda golden checked,
# packed as $OUTDIR/attn.tgz.
# swiglu: bench/swiglu_gemm.cu, the SwiGLU kernel against cuBLASLt + SiLU-mul
# (SWIGLU_WARMUP_MS=MS: each timed graph replayed back to back that long first;
# SWIGLU_TILE_N=112: the kernel's tiles of 112 output columns, SWIGLU_SIZES
# then naming sizes whose N 112 divides).
# travel: the cuda goldens across GPU models (issue 44). This GPU's
# environment key is printed; TRAVEL_ARGS (default: every cuda repro's mode
# C at world size 1) is blessed into a fresh golden folder (the proofs
# copied) and checked there with --exact; where TRAVEL_FROM names a .tgz of
# another machine's `golden/cuda` (carried), its goldens are checked here
# (--strict: their fingerprints, with a note naming what differs; --exact
# must fail) and blessed here (this GPU's digests added where the state
# agrees, else replaced: said per file), then checked again with --exact.
# TRAVEL_HERE=0: no fresh bless here (only the carried goldens).
# Packed as $OUTDIR/travel-<GPU model>.tgz and, with TRAVEL_FROM,
# $OUTDIR/travel-merged.tgz (each a golden/cuda folder); the verdicts in
# $OUTDIR/travel-logs.tgz.
# BENCH_WORLD=1: bench at world size 1 on a machine of two GPUs.
# BENCH_FLOOR=0: no floor (gpu_bench.py --no-floor; by default torch's side
# also times the block's cuBLAS GEMMs alone, and with the attention, in one
# CUDA graph: how far under 0.90 of torch's best any forward that keeps
# those GEMMs can go, in time and, an estimate, in energy at the enforced
# power limit).
# BENCH_ROUNDS_ONLY=1: no sweep, only the BENCH_ROUNDS interleaved rounds of
# fusegate C max-autotune + CUDA graphs against BENCH_TORCH_CONFIG (default
# torch.compile reduce-overhead): a world-size-2 call cannot hold both.
# BENCH_WARMUP_MS (default 6000, at most 60000): each side runs its forward
# back to back this long before it is timed (the GPU at its power cap; after
# a real 2000 ms fusegate's forward at h4096, world size 2, still got about
# 1.5% faster through its timings: bench/RESULTS.md, "Issue 17, sixteenth
# step").
# placement: the max-autotune C goldens' residual placement tables dropped,
# measured again by `bless`, checked, the forced opposite placement caught;
# PLACEMENT_GEMMS=1: their GEMM algorithm tables (gemm_algos) dropped too, so
# that bless measures every GEMM choice again (at the sustained state);
# the goldens packed as $OUTDIR/golden-ma.tgz.
# kernels: the generated kernels against ATen on the GPU (test_runtime with
# FUSEGATE_TEST_BACKEND=cuda) and the RMSNorm / pointwise GB/s table only.
# check also proves that the gate sees what really runs: with
# FUSEGATE_FAULT=attention_fallback (attention as ~15 ATen kernels behind one
# extern launch) `fusegate check --backend cuda` must fail.
# It needs `.devdeps/include/xxhash.h` (the GPU image has libxxhash but not
# its header): bench/prepare_device.sh copies it from this machine.
set -uo pipefail
what="${1:-all}"
# bad input is refused before anything is built (exit 2): an unknown mode,
# or a block the bench does not know (a typo used to cost a device call)
modes="all attention attnproof bench bisect bless check exchange exchange_bw fastpaths fuzz gateup kernels missing multinode none occupancy placement prove seeds swiglu travel"
[[ " $modes " == *" $what "* && "$what" != *" "* ]] || {
  echo "gpu.sh: unknown mode '$what'; the modes: $modes" >&2; exit 2; }
for blk in ${BENCH_BLOCKS:-h2048}; do
  case "$blk" in h2048 | h2048_s2048 | h4096) ;;
  *) echo "gpu.sh: BENCH_BLOCKS names '$blk'; the blocks: h2048 h2048_s2048 h4096" >&2; exit 2 ;; esac
done
case "${EXCHANGE_FAST_PATH:-allreduce_sum}" in
  allreduce_residual | allreduce_sum) ;;
  *) echo "gpu.sh: EXCHANGE_FAST_PATH is allreduce_residual or allreduce_sum, not '$EXCHANGE_FAST_PATH'" >&2; exit 2 ;;
esac
case "${BENCH_FLOOR:-1}" in 0|1) ;; *) echo "gpu.sh: BENCH_FLOOR must be 0 or 1, not '$BENCH_FLOOR'" >&2; exit 2 ;; esac
case "${BENCH_ROUNDS_ONLY:-0}" in
  0) ;;
  1) [[ "${BENCH_ROUNDS:-0}" =~ ^[1-9][0-9]*$ ]] || {
       echo "gpu.sh: BENCH_ROUNDS_ONLY=1 times only the interleaved rounds: set BENCH_ROUNDS to 1 or more, not '${BENCH_ROUNDS:-}'" >&2; exit 2; } ;;
  *) echo "gpu.sh: BENCH_ROUNDS_ONLY must be 0 or 1, not '$BENCH_ROUNDS_ONLY'" >&2; exit 2 ;;
esac
if ! { [[ "${BENCH_WARMUP_MS:-6000}" =~ ^[0-9]{1,5}$ ]] && [ "${BENCH_WARMUP_MS:-6000}" -le 60000 ]; }; then
  echo "gpu.sh: BENCH_WARMUP_MS must be milliseconds (0 to 60000), not '$BENCH_WARMUP_MS'" >&2; exit 2
fi
case "${PLACEMENT_GEMMS:-0}" in 0 | 1) ;; *) echo "gpu.sh: PLACEMENT_GEMMS must be 0 or 1, not '$PLACEMENT_GEMMS'" >&2; exit 2 ;; esac
case "${EXCHANGE_BLESS:-1}" in 0 | 1) ;; *) echo "gpu.sh: EXCHANGE_BLESS must be 0 or 1, not '$EXCHANGE_BLESS'" >&2; exit 2 ;; esac
if [ -n "${ATTN_VARIANT:-}" ] && [ ! -f "$ATTN_VARIANT" ]; then
  echo "gpu.sh: ATTN_VARIANT names '$ATTN_VARIANT', which is not a file (an untracked file travels to the device only when git does not ignore it)" >&2
  exit 2
fi
if [ -n "${ATTN_VARIANT:-}" ] && [ "$what" != attention ]; then
  echo "gpu.sh: ATTN_VARIANT is read by the attention mode only, not by '$what' (an unproven kernel is never proven or blessed this way)" >&2
  exit 2
fi
if [ -n "${ATTN_VARIANT_SMEM:-}" ] && ! { [[ "$ATTN_VARIANT_SMEM" =~ ^[1-9][0-9]{0,5}$ ]] && [ "$ATTN_VARIANT_SMEM" -le 232448 ]; }; then
  echo "gpu.sh: ATTN_VARIANT_SMEM must be a byte count from 1 to 232448 (227 KiB, Hopper's opt-in limit), not '$ATTN_VARIANT_SMEM'" >&2
  exit 2
fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export FUSEGATE_VERIFY=1  # the verifiers between passes, as in every test
export FUSEGATE_CACHE_DIR="$PWD/build-gpu/kernel-cache"
OUTDIR="${OUT:-$PWD/build-gpu/out}"
mkdir -p "$OUTDIR"
TP=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
ngpu=$(python3 -c 'import torch;print(torch.cuda.device_count())')
echo "gpus: $ngpu; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $(date -u +%F)"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TP" \
  -DxxHash_INCLUDE_DIR="$PWD/.devdeps/include" >"$OUTDIR/cmake.log" 2>&1 || { tail -30 "$OUTDIR/cmake.log"; exit 1; }
grep fusegate "$OUTDIR/cmake.log"
targets="fusegate test_cuda_codegen test_runtime attention_bench"
[ "$what" = travel ] && targets=fusegate  # the goldens alone: no test or bench binary
ninja -C build-gpu $targets >"$OUTDIR/build.log" 2>&1 || { grep -E "error" "$OUTDIR/build.log" | head -30; exit 1; }
FG="$PWD/build-gpu/harness/fusegate"  # absolute: some steps run in other folders
worlds="--world-size 1"; [ "$ngpu" -ge 2 ] && worlds="$worlds --world-size 2"
bench_world=1; [ "$ngpu" -ge 2 ] && bench_world=2
# BENCH_WORLD=1 on a machine of two GPUs: the bench at world size 1 (rank 0's GPU)
bench_world="${BENCH_WORLD:-$bench_world}"
rc=0
t0=$(date +%s); phase() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
# Re-blesses the max-autotune C cuda goldens at $worlds ($1: why), checks
# them strictly (a table of their records) and, with $2 = all, every cuda
# golden; each check's verdicts go to $OUTDIR/check-*.txt and its failures
# are printed whole.
bless_max_autotune() {
  $FG bless --backend cuda --fusion max-autotune --mode C $worlds --why "$1" 2>"$OUTDIR/bless.err" | tail -2
  $FG check --strict --backend cuda --fusion max-autotune --mode C $worlds --records "$OUTDIR/records" \
    >"$OUTDIR/check-ma.txt" 2>>"$OUTDIR/bless.err"
  r=$?; [ $r -ne 0 ] && rc=$r
  grep -E "^[0-9]+ checks:|\((FAIL|IMPROVED)" -A4 "$OUTDIR/check-ma.txt" | head -40
  python3 bench/record_table.py "$OUTDIR/records" | tee "$OUTDIR/table.txt" | tail -30
  rm -rf "$OUTDIR/records"
  if [ "${2:-}" = all ]; then
    $FG check --strict --backend cuda $worlds >"$OUTDIR/check-all.txt" 2>>"$OUTDIR/bless.err"
    r=$?; [ $r -ne 0 ] && rc=$r
    grep -E "^[0-9]+ checks:|\((FAIL|IMPROVED)" -A4 "$OUTDIR/check-all.txt" | head -40
  fi
  phase "blessed and checked"
}
# `fusegate ab` of fast path $1 at world size 1 on each repro after it, one
# file each ($OUTDIR/ab-<fast path>-<repro>.txt), its verdict lines printed
ab_on_repros() {
  local fp=$1 r f
  shift
  for r in "$@"; do
    f="$OUTDIR/ab-$fp-$r.txt"
    timeout 150 $FG ab --backend cuda --fast-path "$fp" --repro "$r" --world-size 1 >"$f" 2>&1
    echo "ab $fp $r: exit $? $(grep -m1 -oE 'shape class: .*' "$f") $(grep -m1 -oE 'launches: .*' "$f")"
    grep -E "^  out|verdict" "$f" | head -3
  done
}
# `fusegate prove` of fast path $1 at $worlds; a failure's log printed
prove_fast_path() {
  $FG prove --backend cuda --fast-path "$1" $worlds 2>"$OUTDIR/prove-$1.err" | grep -E "^fusegate prove|FAIL|proven"
  r=${PIPESTATUS[0]}; [ $r -ne 0 ] && { rc=$r; tail -20 "$OUTDIR/prove-$1.err"; }
}
# a residual placement other than the golden's: forced the other way at one
# site the seq 2048 golden records, the check must fail on the ledger
placement_fault_check() {
  pf=golden/cuda/tp_block_llama_h2048_s2048/C_w1.max-autotune.json
  other=$(python3 -c "import json,sys;t=[e for r in json.load(open('$pf'))['ranks'] if r['rank']==0 for e in r.get('residual_placement',[])];print('' if not t else ('gemm' if any(e['placement']=='apart' for e in t) else 'apart'))" 2>/dev/null)
  if [ -z "$other" ]; then
    echo "forced residual placement: $pf holds no residual_placement table: NOT tested"; rc=1
  else
    FUSEGATE_FAULT=residual_placement:$other $FG check tp_block_llama_h2048_s2048 --backend cuda --fusion max-autotune \
      --mode C --world-size 1 >"$OUTDIR/fault-placement.txt" 2>&1
    r=$?
    if [ $r -eq 1 ] && grep -q 'residual placement differs from the golden' "$OUTDIR/fault-placement.txt" &&
       grep -qE 'tp_residual_(hoisted|apart)' "$OUTDIR/fault-placement.txt"; then
      echo "forced residual placement ($other): check exit 1, the ledger's decision moved"
    else
      echo "forced residual placement ($other): check exit $r: NOT caught"; tail -5 "$OUTDIR/fault-placement.txt"; rc=1
    fi
  fi
}
# the output folder of block $1's bench
bench_dir() { if [ "$1" = h2048 ]; then echo "$OUTDIR"; else echo "$OUTDIR/bench-$1"; fi; }
phase built
# the proofs this GPU's model lacks or holds stale (`fusegate proofs`): a
# fast path whose proof is not current here runs blocked in every timing of
# this call, and the call's tables would say so only at their end
gpu_model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
$FG proofs --backend cuda >"$OUTDIR/proofs.txt" 2>&1 || echo "fusegate proofs: exit $? (see $OUTDIR/proofs.txt)"
model_rows=$(grep -F "| cuda | $gpu_model |" "$OUTDIR/proofs.txt")
not_current=$(grep -v "| current |$" <<<"$model_rows" | cut -d'|' -f2,8 | tr -s ' ')
if [ -z "$model_rows" ]; then
  echo "proofs: none for $gpu_model: every cuda fast path runs blocked here (bash bench/gpu.sh prove)"
elif [ -n "$not_current" ]; then
  echo "proofs not current on $gpu_model (blocked here until proven on it):"; echo "$not_current"
else
  echo "proofs: every fast path's is current on $gpu_model"
fi
# placement: the residual placement measured again in every max-autotune C
# cuda golden (their tables dropped in this copy, then blessed at $worlds),
# the check of them, and the forced placement that the check must catch;
# the goldens packed as $OUTDIR/golden-ma.tgz
if [ "$what" = placement ]; then
  # the goldens hold world sizes 1 and 2: a table dropped at a world size
  # this machine cannot bless would stay dropped
  [ "$ngpu" -ge 2 ] || { echo "gpu.sh: placement needs two GPUs (the goldens of world sizes 1 and 2); $ngpu here" >&2; exit 125; }
  PLACEMENT_GEMMS="${PLACEMENT_GEMMS:-0}" python3 - <<'PY' || { echo "gpu.sh: could not drop the residual placement tables" >&2; exit 1; }
import glob, json, os
tables = ["residual_placement"] + (["gemm_algos"] if os.environ["PLACEMENT_GEMMS"] == "1" else [])
n = 0
for f in sorted(glob.glob("golden/cuda/*/C_w*.max-autotune.json")):
    g = json.load(open(f))
    had = False
    for r in g.get("ranks", []):
        for t in tables:
            had = r.pop(t, None) is not None or had
    if had:
        json.dump(g, open(f, "w"), indent=2)
        n += 1
print(f"{' and '.join(tables)} tables dropped from {n} max-autotune goldens")
PY
  bless_max_autotune "${BLESS_WHY:-residual placement measured again}"
  placement_fault_check
  tar czf "$OUTDIR/golden-ma.tgz" golden/cuda
fi
if [ "$what" = travel ]; then
  if [ -n "${TRAVEL_FROM:-}" ] && [ ! -f "$TRAVEL_FROM" ]; then
    echo "gpu.sh: TRAVEL_FROM names '$TRAVEL_FROM', which is not a file (carry it)" >&2; exit 2
  fi
  read -r -a targs <<<"${TRAVEL_ARGS:---mode C --world-size 1}"
  sel=(--backend cuda "${targs[@]}")
  TR="$PWD/build-gpu/travel"; rm -rf "$TR"; mkdir -p "$TR/here/golden"
  cp -r golden/proofs "$TR/here/golden/"
  verdicts() { grep -E "^[0-9]+ checks:" "$1" | tail -1; }
  $FG run "${TRAVEL_ENV_REPRO:-ffn_allreduce}" --backend cuda --mode A --world-size 1 --iters 1 \
    --out "$OUTDIR/travel-env.json" >/dev/null 2>&1 &&
    python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["env"]; print("environment key here:", json.dumps(e, sort_keys=True))' \
      "$OUTDIR/travel-env.json"
  if [ "${TRAVEL_HERE:-1}" = 1 ]; then
    $FG bless "${sel[@]}" --golden-dir "$TR/here/golden" --why "travel: blessed on $gpu_model" \
      >"$OUTDIR/travel-bless-here.txt" 2>"$OUTDIR/travel-bless-here.err"
    echo "bless here: exit $? ($(tail -1 "$OUTDIR/travel-bless-here.txt"))"
    $FG check --strict --exact "${sel[@]}" --golden-dir "$TR/here/golden" >"$OUTDIR/travel-check-here.txt" 2>&1
    r=$?; [ $r -ne 0 ] && rc=$r
    echo "check --strict --exact of this GPU's goldens: exit $r ($(verdicts "$OUTDIR/travel-check-here.txt"))"
    phase "blessed and checked here"
  fi
  if [ -n "${TRAVEL_FROM:-}" ]; then
    mkdir -p "$TR/from"; tar xzf "$TRAVEL_FROM" -C "$TR/from" && cp -r golden/proofs "$TR/from/golden/"
    $FG check --strict "${sel[@]}" --golden-dir "$TR/from/golden" >"$OUTDIR/travel-check-from.txt" 2>&1
    r=$?; [ $r -ne 0 ] && rc=$r
    echo "check --strict of the carried goldens: exit $r ($(verdicts "$OUTDIR/travel-check-from.txt"))"
    grep -E "^  (FAIL|note) " "$OUTDIR/travel-check-from.txt" | sed -E 's/rank [0-9]+: //' | sort | uniq -c | sort -rn | head -12
    # --exact fails where the carried goldens lack this environment (another
    # GPU model, driver or library), and passes where they hold it
    want=$(python3 - "$TR/from/golden" "$OUTDIR/travel-env.json" <<'PY'
import glob, json, sys
fp = json.load(open(sys.argv[2]))["env"]["fingerprint"]
held = all(fp in json.load(open(f))["environments"] for f in glob.glob(sys.argv[1] + "/cuda/*/*.json"))
print(0 if held else 1)
PY
)
    $FG check --exact "${sel[@]}" --golden-dir "$TR/from/golden" >"$OUTDIR/travel-exact-from.txt" 2>&1
    r=$?
    echo "check --exact of the carried goldens: exit $r ($want expected: their environments $([ "$want" = 0 ] && echo hold || echo lack) this one)"
    [ "$r" = "$want" ] || rc=1
    $FG bless "${sel[@]}" --golden-dir "$TR/from/golden" --why "travel: $gpu_model added" \
      >"$OUTDIR/travel-merge.txt" 2>"$OUTDIR/travel-merge.err"
    echo "bless into the carried goldens: exit $? ($(tail -1 "$OUTDIR/travel-merge.txt"))"
    grep -E "^/.*: (this environment|replaced|[0-9]+ environment)" "$OUTDIR/travel-merge.txt" | sed -E 's|^.*/cuda/||' | head -30
    $FG check --strict --exact "${sel[@]}" --golden-dir "$TR/from/golden" >"$OUTDIR/travel-check-merged.txt" 2>&1
    r=$?; [ $r -ne 0 ] && rc=$r
    echo "check --strict --exact after the bless: exit $r ($(verdicts "$OUTDIR/travel-check-merged.txt"))"
    tar czf "$OUTDIR/travel-merged.tgz" -C "$TR/from" golden/cuda
  fi
  [ "${TRAVEL_HERE:-1}" = 1 ] && tar czf "$OUTDIR/travel-$(tr ' ' '_' <<<"$gpu_model").tgz" -C "$TR/here" golden/cuda
  # the verdicts in one file: what comes back from a device call is at most
  # 8 files, and the merged goldens must be among them
  (cd "$OUTDIR" && shopt -s nullglob && logs=(travel-*.txt travel-*.err travel-env.jso[n]) &&
     [ ${#logs[@]} -gt 0 ] && tar czf travel-logs.tgz "${logs[@]}" && rm -f "${logs[@]}")
  phase "travel done"
fi
if [ "$what" = all ] || [ "$what" = kernels ] || [ "$what" = check ] || [ "$what" = bless ]; then
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
fi
# attention: the causal_attention fast path against attention in f64 on this
# GPU (test_runtime's CausalAttention tests on cuda), then against LibTorch's
# fused attention (cuDNN) in a CUDA graph of qkv -> attention -> o steps
# (build-gpu/bench/attention_bench).
if [ "$what" = attention ]; then
  # one pass: the CausalAttention tests on cuda, the bench, and with
  # ATTN_NCU=1 Nsight Compute's view of the kernel (the tensor pipe's use,
  # where the warps stall) on its first launches; $1 labels the output
  attention_pass() {
    echo "== causal_attention: $1"
    FUSEGATE_TEST_BACKEND=cuda ./build-gpu/tests/test_runtime --gtest_filter='CausalAttention*' 2>&1 | grep -E "^\[  (PASSED|FAILED)|Failure|error|Expected|Which|actual|library" | head -20
    r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
    ./build-gpu/bench/attention_bench 2>&1 | tail -9
    r=${PIPESTATUS[0]}; [ $r -ne 0 ] && { rc=$r; echo "attention_bench: exit $r"; }
    if [ "${ATTN_NCU:-0}" = 1 ]; then
      /usr/local/cuda/bin/ncu -k fastpath_causal_attention -c 3 --section SpeedOfLight --section WarpStateStats \
        --section ComputeWorkloadAnalysis ./build-gpu/bench/attention_bench >"$OUTDIR/ncu-attention-$2.txt" 2>&1
      grep -E "Duration|Throughput|Pipe|Stall|Issued|Eligible|warp cycles" "$OUTDIR/ncu-attention-$2.txt" | head -40
    fi
  }
  attention_pass "this tree's kernel" tree
  # ATTN_VARIANT=<a .cu file>: then the same with that file in the kernel's
  # place, on the same GPU in the same call (ATTN_VARIANT_SMEM=<bytes>: its
  # dynamic shared memory, when it differs from kAttnSmem); the tree's two
  # files are put back afterwards. The variant is not proven: only the
  # tests and the bench run it.
  if [ -n "${ATTN_VARIANT:-}" ]; then
    kf=kernels/fastpaths/cuda/causal_attention.cu rf=kernels/fastpaths/cuda_runtime.cpp
    cp "$kf" "$OUTDIR/kernel.orig" && cp "$rf" "$OUTDIR/runtime.orig" || { echo "gpu.sh: cannot keep a copy of $kf" >&2; exit 1; }
    # on exit: the tree's files back, and build-gpu rebuilt from them, so no
    # later call (whose copy of the tree may carry older times than these
    # build outputs) links the variant
    trap 'cp "$OUTDIR/kernel.orig" "$kf"; cp "$OUTDIR/runtime.orig" "$rf"; touch "$kf" "$rf";
      ninja -C build-gpu fusegate test_cuda_codegen test_runtime attention_bench >"$OUTDIR/build-restore.log" 2>&1 ||
      echo "gpu.sh: build-gpu not rebuilt from the tree after the variant (see build-restore.log): delete it" >&2' EXIT
    cp "$ATTN_VARIANT" "$kf"
    if [ -n "${ATTN_VARIANT_SMEM:-}" ]; then
      sed -i "s/^constexpr int kAttnSmem = .*;/constexpr int kAttnSmem = ${ATTN_VARIANT_SMEM};/" "$rf"
      grep -q "^constexpr int kAttnSmem = ${ATTN_VARIANT_SMEM};" "$rf" || { echo "gpu.sh: kAttnSmem not found in $rf" >&2; exit 1; }
    fi
    ninja -C build-gpu test_runtime attention_bench >"$OUTDIR/build-variant.log" 2>&1 || { grep -E "error" "$OUTDIR/build-variant.log" | head -30; exit 1; }
    attention_pass "variant $ATTN_VARIANT" variant
  fi
fi
if [ "$what" = prove ]; then
  for fp in qkv_rmsnorm_local qkv_rmsnorm_tp; do
    for w in 1 $([ "$ngpu" -ge 2 ] && echo 2); do
      $FG ab --backend cuda --fast-path $fp --repro tp_block_wan_h2048 --world-size $w 2>&1 | grep -E "launches|^  out|verdict|FAIL" | head -8
    done
  done
  for w in 1 $([ "$ngpu" -ge 2 ] && echo 2); do
    $FG ab --backend cuda --fast-path allreduce_residual_rmsnorm --repro tp_block_llama_h2048 --world-size $w 2>&1 | tail -4
  done
  $FG prove --backend cuda --fast-path qkv_rmsnorm_local --world-size 1 2>"$OUTDIR/prove.err" | grep -E "^fusegate prove|FAIL" ; r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
  for fp in qkv_rmsnorm_tp allreduce_residual_rmsnorm; do
    $FG prove --backend cuda --fast-path $fp $worlds 2>>"$OUTDIR/prove.err" | grep -E "^fusegate prove|FAIL"; r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
  done
  tar czf "$OUTDIR/proofs-cuda.tgz" golden/proofs/cuda
  phase proved
fi
if [ "$what" = fastpaths ] || [ "$what" = all ]; then
  python3 bench/fastpath_bench.py --fusegate "$FG" --out "$OUTDIR/fastpaths" --world-size "$bench_world" \
    2>"$OUTDIR/fastpaths.err" | tee "$OUTDIR/fastpaths.txt" || tail -20 "$OUTDIR/fastpaths.err"
  phase "fast paths timed"
fi
if [ "$what" = kernels ]; then
  python3 bench/gpu_bench.py --fusegate "$FG" --out "$OUTDIR" --kernels-only 2>"$OUTDIR/bench.err" | tail -8 || tail -20 "$OUTDIR/bench.err"
fi
if [ "$what" = all ] || [ "$what" = check ] || [ "$what" = bless ]; then
  phase "unit tests done"
  if [ "$what" = bless ]; then
    $FG bless --backend cuda $worlds --why "${BLESS_WHY:-cuda goldens}" 2>"$OUTDIR/bless.err" | tail -1
    $FG bless --backend cuda --fusion max-autotune --mode C $worlds --why "${BLESS_WHY:-cuda goldens}" 2>>"$OUTDIR/bless.err" | tail -1
    tar czf "$OUTDIR/golden-cuda.tgz" golden/cuda
    phase blessed
  fi
  # --strict: a world size this machine can run but no golden holds fails
  $FG check --strict --backend cuda $worlds --records "$OUTDIR/records" --junit "$OUTDIR/junit.xml" 2>"$OUTDIR/check.err" \
    | tee "$OUTDIR/check.txt" | tail -15
  r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
  $FG check --strict --backend cuda --fusion max-autotune --mode C $worlds --records "$OUTDIR/records" 2>>"$OUTDIR/check.err" \
    | tee -a "$OUTDIR/check.txt" | tail -3
  r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
  # the gate must see an extern that launches many kernels behind one launch
  FUSEGATE_FAULT=attention_fallback $FG check tp_block_llama_h2048 --backend cuda --mode C --world-size 1 \
    >"$OUTDIR/fault.txt" 2>&1
  r=$?
  # caught by the count itself, not only by the digest the composite also moves
  moved=$(grep -m1 -oE 'device_kernel_count [0-9]+ -> [0-9]+' "$OUTDIR/fault.txt")
  grew=$(echo "$moved" | awk '{ if ($4 > $2) print "yes" }')
  if [ $r -eq 1 ] && [ "$grew" = yes ] && grep -q 'launch extern_scaled_dot_product_attention ran [0-9]* device kernels' "$OUTDIR/fault.txt"; then
    echo "forced attention fallback: check exit 1, caught by the device-kernel count: $moved"
  else
    echo "forced attention fallback: check exit $r, device-kernel count '${moved:-unchanged}': NOT caught by the count"
    tail -5 "$OUTDIR/fault.txt"; rc=1
  fi
  placement_fault_check
  phase checked
  python3 bench/record_table.py "$OUTDIR/records" | tee "$OUTDIR/table.txt"
  rm -rf "$OUTDIR/records"
fi
if [ "$what" = bisect ]; then
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
fi
if [ "$what" = fuzz ]; then
  fw=1; [ "$ngpu" -ge 2 ] && fw=1,2
  secs="${FUZZ_SECONDS:-300}"
  # FUZZ_UNTIL (epoch seconds): fuzz for whatever the build left of a call
  [ -n "${FUZZ_UNTIL:-}" ] && secs=$(( FUZZ_UNTIL - $(date +%s) ))
  $FG fuzz --backend cuda --fusion all --seconds "$secs" --seed "${FUZZ_SEED:-1}" --max-findings 5 \
    --jobs "${FUZZ_JOBS:-2}" --world-size "${FUZZ_WORLDS:-$fw}" \
    --findings "$OUTDIR/fuzz-findings" --json "$OUTDIR/fuzz.json" 2>"$OUTDIR/fuzz.err" | tail -8
  r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
  grep -E "^fuzz( job [0-9]+)?: graph|->|was killed|was silent" "$OUTDIR/fuzz.err" | cut -c1-300 | head -20
  phase fuzzed
fi
if [ "$what" = seeds ]; then
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
fi
if [ "$what" = multinode ]; then
  if [ "$ngpu" -lt 2 ]; then echo "multinode needs two GPUs (this machine has $ngpu)"; exit 125; fi
  G=$(mktemp -d); cp -r golden/proofs "$G/"
  P=29611
  for cmd in bless check; do
    CUDA_VISIBLE_DEVICES=1 $FG $cmd tp_block_llama_h2048 --backend cuda --mode C --world-size 2 --nnodes 2 \
      --node-rank 1 --master-port $P --golden-dir "$G" --timeout 120 >"$OUTDIR/mn1-$cmd.txt" 2>&1 &
    n1=$!
    CUDA_VISIBLE_DEVICES=0 $FG $cmd tp_block_llama_h2048 --backend cuda --mode C --world-size 2 --nnodes 2 \
      --node-rank 0 --master-port $P --golden-dir "$G" --timeout 120 >"$OUTDIR/mn0-$cmd.txt" 2>&1
    r0=$?; wait $n1; r1=$?
    echo "multi-node cuda $cmd: node 0 exit $r0, node 1 exit $r1; $(tail -1 "$OUTDIR/mn0-$cmd.txt")"
    { [ $r0 -ne 0 ] || [ $r1 -ne 0 ]; } && rc=1
    P=$((P + 1))
  done
  python3 - "$G/cuda/tp_block_llama_h2048/C_w2.nodes2.json" golden/cuda/tp_block_llama_h2048/C_w2.json <<'PY' || rc=1
import json, sys
m, o = (json.load(open(p)) for p in sys.argv[1:])
print("nodes", m.get("nodes"), "launches a rank", [r["kernel_count"] for r in m["ranks"]], "one-node golden",
      [r["kernel_count"] for r in o["ranks"]],
      [f["status"] for f in m["ranks"][0]["fast_paths"] if f["name"] == "allreduce_residual_rmsnorm"])
PY
  phase "multi-node done"
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
  # BENCH_BLOCKS: the block sizes (gpu_bench.py --block), h2048 by default;
  # BENCH_QUICK=1: only the rows the headline compares; BENCH_ROUNDS=N: N
  # interleaved rounds of each side's best CUDA-graph configuration;
  # BENCH_WARMUP_MS (default 6000): back-to-back untimed forwards before
  # each side's timings, so that both are timed at the GPU's sustained state
  for blk in ${BENCH_BLOCKS:-h2048}; do
    o=$(bench_dir "$blk")
    PYTHONUNBUFFERED=1 python3 bench/gpu_bench.py --fusegate "$FG" --out "$o" --world-size "$bench_world" \
      --block "$blk" $([ "${BENCH_QUICK:-0}" = 1 ] && echo --quick) --rounds "${BENCH_ROUNDS:-0}" \
      --warmup-ms "${BENCH_WARMUP_MS:-6000}" $([ "${BENCH_ROUNDS_ONLY:-0}" = 1 ] && echo --rounds-only) \
      ${BENCH_TORCH_CONFIG:+--torch-config "$BENCH_TORCH_CONFIG"} $([ "${BENCH_FLOOR:-1}" = 0 ] && echo --no-floor) \
      2>"$OUTDIR/bench-$blk.err" | tail -45 || tail -20 "$OUTDIR/bench-$blk.err"
    phase "bench $blk done"
  done
  # last, the headline of each block, one line each
  echo "| block | CUDA graphs: fusegate / torch best | interleaved rounds | floor: cuBLAS's GEMMs alone | floor in energy |"
  echo "|---|---|---|---|---|"
  for blk in ${BENCH_BLOCKS:-h2048}; do
    o=$(bench_dir "$blk")
    head=$(grep -m1 -oE '^- CUDA graphs: .*' "$o/bench.md" 2>/dev/null | cut -c16-)
    inter=$(grep -m1 -oE '^- CUDA graphs, interleaved: .*' "$o/bench.md" 2>/dev/null | cut -c29-)
    floor=$(grep -m1 -oE '^- (0\.90 of torch.s best is|floor against|floor: not asked|floor: asked for).*' "$o/bench.md" 2>/dev/null | cut -c3-)
    energy=$(grep -m1 -oE '^- energy at the power limit.*' "$o/bench.md" 2>/dev/null | cut -c29-)
    echo "| $blk | ${head:-no result} | ${inter:--} | ${floor:--} | ${energy:--} |"
  done
  # what the timed max-autotune graph ran: its fast paths (a blocked one
  # means this GPU lacks its proof) and its GEMMs off cuBLASLt's top-1
  for blk in ${BENCH_BLOCKS:-h2048}; do
    o=$(bench_dir "$blk")
    grep -E '^ran: fusegate C max-autotune \+ CUDA graphs: ' "$o/bench.md" 2>/dev/null | sed "s/^ran: fusegate C max-autotune + CUDA graphs/$blk/"
  done
fi
if [ "$what" = gateup ]; then
  # the MLP's two fast paths on this GPU (gate_up_swiglu, and
  # rmsnorm_gate_up_swiglu: the same kernel file with the norm before it
  # folded in; an edit of the file invalidates both proofs): GATEUP_AB=1
  # also prints `fusegate ab` of each on every cuda repro it matches; then
  # each one's proof at world size 1 (and 2 with two GPUs), a table of the
  # proofs' cases, the max-autotune goldens re-blessed with them
  # (GATEUP_BLESS=0: not) and checked; proofs and goldens packed in $OUTDIR
  ./build-gpu/tests/test_cuda_codegen --gtest_filter='FastPathCuda.*' 2>&1 | tail -1
  for fp in $([ "${GATEUP_AB:-0}" = 1 ] && echo gate_up_swiglu rmsnorm_gate_up_swiglu); do
    ab_on_repros $fp tp_block_llama tp_block_llama_seq tp_block_llama_h2048 tp_block_llama_h2048_s2048 \
      tp_block_llama_h4096 qwen3_block mlp_swiglu_tails
  done
  for fp in gate_up_swiglu rmsnorm_gate_up_swiglu; do prove_fast_path $fp; done
  phase proved
  tar czf "$OUTDIR/proofs-mlp.tgz" golden/proofs/cuda
  python3 - golden/proofs/cuda/*/gate_up_swiglu.json golden/proofs/cuda/*/rmsnorm_gate_up_swiglu.json <<'PY'
import json, sys
print("| fast path | repro | world | shape class | rel L2 vs fp64, generic / fast |")
print("|---|---|---|---|---|")
for p in sys.argv[1:]:
    try:
        d = json.load(open(p))
    except (OSError, ValueError):
        continue
    for c in d.get("cases", []):
        o = [x for x in c["outputs"] if x.get("rank") == 0][:1] or c["outputs"][:1]
        cls = ",".join(k for k in c["shape_class"].split(",") if "=" in k and not k.startswith("tile"))
        print("| %s | %s | %d | %s | %.6f / %.6f %s |" % (d["fast_path"], c["repro"], c["world_size"], cls,
              o[0]["rel_l2_generic"], o[0]["rel_l2_fast"], c["verdict"]))
PY
  if [ "${GATEUP_BLESS:-1}" = 1 ] && [ $rc -eq 0 ]; then
    bless_max_autotune "${BLESS_WHY:-the MLP fast paths}"
  fi
  tar czf "$OUTDIR/gateup.tgz" golden/proofs/cuda golden/cuda "$OUTDIR"/ab-*.txt 2>/dev/null
  rm -f "$OUTDIR"/ab-*.txt
fi
if [ "$what" = attnproof ]; then
  # the causal_attention fast path on this GPU: its A/B on the cuda repros
  # with head dim 128, its proof at world size 1 (and 2 with two GPUs), the
  # max-autotune goldens re-blessed with it (ATTN_BLESS=0: not) and checked
  # with the default-policy ones; proofs, goldens and A/Bs packed in $OUTDIR
  ab_on_repros causal_attention tp_block_llama_h2048 tp_block_llama_h2048_s2048 tp_block_llama_h4096 qwen3_block
  prove_fast_path causal_attention
  phase proved
  if [ "${ATTN_BLESS:-1}" = 1 ] && [ $rc -eq 0 ]; then
    bless_max_autotune "${BLESS_WHY:-the causal_attention fast path}" all
  fi
  tar czf "$OUTDIR/attn.tgz" golden/proofs/cuda golden/cuda "$OUTDIR"/ab-causal_attention-*.txt 2>/dev/null
  rm -f "$OUTDIR"/ab-causal_attention-*.txt
fi
if [ "$what" = exchange ]; then
  # two GPUs: an exchange fast path of the block's last all-reduce,
  # EXCHANGE_FAST_PATH (default allreduce_sum: the exchange alone;
  # allreduce_residual: the exchange with the residual add after it, refused
  # on cuda by the cost model, measured no faster): its proof at
  # world size 2 (its A/B on every cuda repro it matches), tp_block_llama_h4096's
  # forward profiled with the proven fast paths and with the same set less
  # it (allreduce_residual's "without" keeps allreduce_sum, so the residual
  # hoist runs), then the max-autotune mode C world-size-2 goldens it
  # changes re-blessed (EXCHANGE_BLESS=0: not) and every world-size-2 cuda
  # golden checked (with bless_max_autotune's table of their records);
  # proofs and goldens packed as $OUTDIR/exchange.tgz, the proof's log in
  # $OUTDIR/prove-<fast path>.err
  [ "$ngpu" -ge 2 ] || { echo "exchange: needs two GPUs"; exit 125; }
  xfp="${EXCHANGE_FAST_PATH:-allreduce_sum}"  # checked before the build
  # proven at world size 2 only: on one rank the cost model never runs it
  # (nothing to exchange); prove A/Bs it on every cuda repro it matches
  worlds="--world-size 2" prove_fast_path "$xfp"
  phase proved
  # with: the other fast paths and this one; without: the others (and for
  # allreduce_residual, allreduce_sum, so that the residual hoist runs)
  others=qkv_rmsnorm_local,qkv_rmsnorm_tp,allreduce_residual_rmsnorm,gate_up_swiglu,causal_attention
  without=$others; [ "$xfp" = allreduce_residual ] && without="$others,allreduce_sum"
  for fp in "$others,$xfp" "$without"; do
    $FG run tp_block_llama_h4096 --backend cuda --mode C --world-size 2 --fusion max-autotune --cuda-graphs \
      --iters 100 --warmup-ms 6000 --fast-paths "$fp" --profile "$OUTDIR/exchange-prof.json" \
      --out "$OUTDIR/exchange-rec.json" 2>>"$OUTDIR/exchange.err" >/dev/null || { rc=1; continue; }
    python3 - "$OUTDIR" "$fp" "$xfp" <<'PY'
import json, sys
out, fp, xfp = sys.argv[1:]
p = json.load(open(f"{out}/exchange-prof.json")); r = json.load(open(f"{out}/exchange-rec.json"))
# the all-reduces and the GEMMs around them (launch names: extern_mm,
# extern_addmm for a GEMM with the residual as C, the fast paths)
name = lambda k: (k.get("launch") or "") + " " + (k.get("device_kernel") or "")
ks = [k for k in p["kernels"] if any(w in name(k) for w in ("allreduce", "AllReduce", "extern_addmm", "extern_mm"))]
print(f"h4096 world size 2, fast paths {'with' if fp.endswith(',' + xfp) else 'without'} {xfp}: "
      f"median {r['ranks'][0]['times_ms']['forward_median']:.4f} ms, span {1000 * p['span_ms']:.1f} us; "
      + "; ".join(f"{(k.get('launch') or k.get('device_kernel'))[:40]} {1000 * k['ms']:.1f} us" for k in ks))
PY
  done
  rm -f "$OUTDIR/exchange-prof.json" "$OUTDIR/exchange-rec.json"
  # the goldens it changes are max-autotune's of world size 2 (on one rank
  # it does not run, and the default policy never runs it): those
  # re-blessed, every cuda golden of world size 2 checked
  [ "${EXCHANGE_BLESS:-1}" = 1 ] && [ $rc -eq 0 ] &&
    worlds="--world-size 2" bless_max_autotune "${BLESS_WHY:-$xfp: the last all-reduce of the block as the one-shot exchange}" all
  tar czf "$OUTDIR/exchange.tgz" golden/proofs/cuda golden/cuda 2>/dev/null
fi
if [ "$what" = occupancy ]; then
  # the row kernels held to full occupancy (FG_FULL_OCCUPANCY) against the
  # same build without the bound (FUSEGATE_FAULT=occupancy_spill), in turn
  # (ABAB), at world size 1: each norm kernel's time in the forward's
  # profile and the forward's median; then the goldens of those blocks
  # checked (the bound must not move a digest)
  for blk in ${OCC_BLOCKS:-tp_block_llama_h4096 tp_block_llama_h2048}; do
    for turn in bound plain bound plain; do
      fault=$([ $turn = plain ] && echo occupancy_spill)
      FUSEGATE_FAULT=$fault $FG run "$blk" --backend cuda --mode C --world-size 1 --fusion max-autotune --cuda-graphs \
        --iters 100 --warmup-ms 6000 --profile "$OUTDIR/occ-prof.json" --out "$OUTDIR/occ-rec.json" \
        2>>"$OUTDIR/occupancy.err" >/dev/null || { rc=1; echo "$blk $turn: run failed"; continue; }
      python3 - "$OUTDIR" "$blk" "$turn" <<'PY'
import json, sys
out, blk, turn = sys.argv[1:]
p = json.load(open(f"{out}/occ-prof.json")); r = json.load(open(f"{out}/occ-rec.json"))
ks = [k for k in p["kernels"] if (k.get("device_kernel") or "").startswith("cuda_red")]
print(f"{blk} {turn:5}: median {r['ranks'][0]['times_ms']['forward_median']:.4f} ms, span {1000 * p['span_ms']:.1f} us; "
      + "; ".join(f"{k['device_kernel'][-8:]} {1000 * k['ms']:.1f} us" for k in ks))
PY
    done
    for fu in default max-autotune; do
      sel=$([ $fu = max-autotune ] && echo "--mode C")
      $FG check "$blk" --strict --backend cuda --fusion $fu $sel --world-size 1 2>>"$OUTDIR/occupancy.err" | grep -E "^[0-9]+ checks:"
      r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
    done
  done
  grep -m3 "full-occupancy" "$OUTDIR/occupancy.err"
  rm -f "$OUTDIR/occ-prof.json" "$OUTDIR/occ-rec.json"
  phase "occupancy done"
fi
if [ "$what" = missing ]; then
  # two GPUs: bless the goldens no file holds yet, then check every cuda
  # golden at world sizes 1 and 2
  [ "$ngpu" -ge 2 ] || { echo "missing: needs two GPUs"; exit 125; }
  $FG bless --missing --backend cuda $worlds --why "${BLESS_WHY:-not blessed yet}" 2>"$OUTDIR/bless.err" | tail -2
  $FG bless --missing --backend cuda --fusion max-autotune --mode C $worlds --why "${BLESS_WHY:-not blessed yet}" \
    2>>"$OUTDIR/bless.err" | tail -2
  grep -E "^fusegate bless --missing" "$OUTDIR/bless.err"
  phase blessed
  $FG check --strict --backend cuda $worlds 2>"$OUTDIR/check.err" | tee "$OUTDIR/check.txt" | tail -12
  r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
  phase checked
  tar czf "$OUTDIR/golden-cuda.tgz" golden/cuda golden/proofs/cuda "$OUTDIR/check.txt"
fi
if [ "$what" = exchange_bw ]; then
  # the exchange alone against the link: no rank skew, no GEMM around it
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o build-gpu/exchange_bw bench/exchange_bw.cu \
    >"$OUTDIR/exchange_bw_build.log" 2>&1 || { tail -30 "$OUTDIR/exchange_bw_build.log"; exit 1; }
  ./build-gpu/exchange_bw 2>&1 | tee "$OUTDIR/exchange_bw.txt" | tail -12
  r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
fi
if [ "$what" = swiglu ]; then
  # the fused gate/up GEMM + SwiGLU kernel against cuBLASLt + the SiLU-mul kernel
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o build-gpu/swiglu_gemm bench/swiglu_gemm.cu \
    -lcublasLt >"$OUTDIR/swiglu_build.log" 2>&1 || { tail -30 "$OUTDIR/swiglu_build.log"; exit 1; }
  ./build-gpu/swiglu_gemm 2>&1 | tee "$OUTDIR/swiglu.txt" | tail -30
  r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
fi
exit $rc
