# shellcheck shell=bash
# Sourced by bench/gpu.sh: the timings. The bench against PyTorch
# (bench/gpu_bench.py) and its summary table, the kernel GB/s table, the
# fast paths' bench, the attention kernel against cuDNN's, the occupancy
# bound, the exchange against NVLink and the SwiGLU kernel against
# cuBLASLt.

# the output folder of block $1's bench
bench_dir() { if [ "$1" = h2048 ]; then echo "$OUTDIR"; else echo "$OUTDIR/bench-$1"; fi; }
# bench (and all): bench/gpu_bench.py on each of BENCH_BLOCKS, then one
# summary line a block and what the timed max-autotune graph ran
step_bench() {
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
}
# kernels: the kernel GB/s table alone (bench/gpu_bench.py --kernels-only)
step_kernels() {
  python3 bench/gpu_bench.py --fusegate "$FG" --out "$OUTDIR" --kernels-only 2>"$OUTDIR/bench.err" | tail -8 || tail -20 "$OUTDIR/bench.err"
}
# fastpaths (and all): bench/fastpath_bench.py
step_fastpaths() {
  python3 bench/fastpath_bench.py --fusegate "$FG" --out "$OUTDIR/fastpaths" --world-size "$bench_world" \
    2>"$OUTDIR/fastpaths.err" | tee "$OUTDIR/fastpaths.txt" || tail -20 "$OUTDIR/fastpaths.err"
  phase "fast paths timed"
}
# attention: the causal_attention fast path against attention in f64 on this
# GPU (test_runtime's CausalAttention tests on cuda), then against LibTorch's
# fused attention (cuDNN) in a CUDA graph of qkv -> attention -> o steps
# (build-gpu/bench/attention_bench).
step_attention() {
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
    kf=kernels/fastpaths/cuda/causal_attention.cu rf=kernels/fastpaths/cuda_fast_paths.h
    cp "$kf" "$OUTDIR/kernel.orig" && cp "$rf" "$OUTDIR/runtime.orig" || { echo "gpu.sh: cannot keep a copy of $kf" >&2; exit 1; }
    # on exit: the tree's files back, and build-gpu rebuilt from them, so no
    # later call (whose copy of the tree may carry older times than these
    # build outputs) links the variant
    trap 'cp "$OUTDIR/kernel.orig" "$kf"; cp "$OUTDIR/runtime.orig" "$rf"; touch "$kf" "$rf";
      ninja -C build-gpu fusegate fusegate-full test_cuda_codegen test_runtime attention_bench >"$OUTDIR/build-restore.log" 2>&1 ||
      echo "gpu.sh: build-gpu not rebuilt from the tree after the variant (see build-restore.log): delete it" >&2' EXIT
    cp "$ATTN_VARIANT" "$kf"
    if [ -n "${ATTN_VARIANT_SMEM:-}" ]; then
      sed -i "s/^constexpr int kAttnSmem = .*;/constexpr int kAttnSmem = ${ATTN_VARIANT_SMEM};/" "$rf"
      grep -q "^constexpr int kAttnSmem = ${ATTN_VARIANT_SMEM};" "$rf" || { echo "gpu.sh: kAttnSmem not found in $rf" >&2; exit 1; }
    fi
    ninja -C build-gpu test_runtime attention_bench >"$OUTDIR/build-variant.log" 2>&1 || { grep -E "error" "$OUTDIR/build-variant.log" | head -30; exit 1; }
    attention_pass "variant $ATTN_VARIANT" variant
  fi
}
# occupancy
step_occupancy() {
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
}
# exchange_bw (two GPUs)
step_exchange_bw() {
  # the exchange alone against the link: no rank skew, no GEMM around it
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o build-gpu/exchange_bw bench/exchange_bw.cu \
    >"$OUTDIR/exchange_bw_build.log" 2>&1 || { tail -30 "$OUTDIR/exchange_bw_build.log"; exit 1; }
  ./build-gpu/exchange_bw 2>&1 | tee "$OUTDIR/exchange_bw.txt" | tail -12
  r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
}
# swiglu
step_swiglu() {
  # the fused gate/up GEMM + SwiGLU kernel against cuBLASLt + the SiLU-mul kernel
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o build-gpu/swiglu_gemm bench/swiglu_gemm.cu \
    -lcublasLt >"$OUTDIR/swiglu_build.log" 2>&1 || { tail -30 "$OUTDIR/swiglu_build.log"; exit 1; }
  ./build-gpu/swiglu_gemm 2>&1 | tee "$OUTDIR/swiglu.txt" | tail -30
  r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
}
