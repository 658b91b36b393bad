#!/usr/bin/env bash
# One call on a GPU machine: build against the LibTorch inside the installed
# PyTorch, check the cuda backend against its goldens, and benchmark; prints
# a short table last. Run from the repository root:
#   bash bench/gpu.sh [check|bless|prove|fastpaths|bisect|bench|kernels|fuzz|parity|seeds|multinode|gateup|swiglu|missing|attention|attnproof|exchange|exchange_bw|occupancy|placement|travel|none|all]     (default: all)
# none: only the build (then run build-gpu/harness/fusegate by hand).
# multinode (two GPUs): bless, then check, tp_block_llama_h2048 C at world
# size 2 as two nodes on this host (one GPU each through CUDA_VISIBLE_DEVICES,
# NCCL between them) into a scratch golden folder; prints both nodes' exit
# codes and the record's launches against the one-node golden's.
# fuzz: `fusegate fuzz --backend cuda --fusion all` for FUZZ_SECONDS (default
# 300; FUZZ_UNTIL=<epoch seconds> instead: until then) from FUZZ_SEED
# (default 1), FUZZ_JOBS jobs (default 2) at world sizes
# FUZZ_WORLDS (default the call's world sizes, below); the summary JSON and any
# findings are left in $OUT (fuzz.json, fuzz-findings/).
# parity: bench/inductor_parity.py: PARITY_GRAPHS (default 1000) of the
# fuzzer's graphs from PARITY_SEED (default 1), every lit graph and .fg repro,
# each compiled by torch.compile (PARITY_POLICIES, default
# default,max-autotune; PARITY_JOBS processes, default 12) and by `explain
# --backend cuda`; the table by divergence class is printed, and it, both
# JSONs, Inductor's log and the graphs are in one file, $OUT/parity.tgz
# (parity/parity.md, parity-inductor.json, parity-fusegate.json, graphs/).
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
# missing (two GPUs or more): `bless --missing` (the cuda goldens no file
# holds yet, default and max-autotune C, at the call's world sizes), then
# `check --strict` of every cuda golden at them.
# The world sizes of a call: 1, 2 with two GPUs, 4 too with four (each rank
# one GPU); GPU_WORLDS="1 2" (or 1,2) names them instead, none past the
# GPUs there (exit 125). They serve check, bless, prove, missing, fuzz,
# placement and the proofs of the other modes; the bench runs at one,
# BENCH_WORLD. On four GPUs run `missing` first: no cuda golden exists at
# world size 4 yet, and `check --strict` counts a missing one as a failure
# (or keep a call to GPU_WORLDS="1 2").
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
# BENCH_WORLD=1: bench at world size 1 on a machine of two GPUs (2 there by
# default; BENCH_WORLD=4 on four GPUs).
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
# bad input is refused before anything is built (exit 2): an unknown mode
# here, a block the bench does not know or a setting out of its range in
# check_input (a typo used to cost a device call)
modes="all attention attnproof bench bisect bless check exchange exchange_bw fastpaths fuzz gateup kernels missing multinode none occupancy parity placement prove seeds swiglu travel"
[[ " $modes " == *" $what "* && "$what" != *" "* ]] || {
  echo "gpu.sh: unknown mode '$what'; the modes: $modes" >&2; exit 2; }
# the steps, in bench/gpu/, one file a responsibility (each defines
# functions only: step_<name> for a step of a mode)
gpu_dir="$(dirname "${BASH_SOURCE[0]}")/gpu"
source "$gpu_dir/setup.sh" || exit 1      # check_input, build_tree, phase, proofs_status
source "$gpu_dir/tests.sh" || exit 1      # unit tests, bisect, fuzz, seeds
source "$gpu_dir/goldens.sh" || exit 1    # check and bless, placement, missing, multinode
source "$gpu_dir/travel.sh" || exit 1     # travel
source "$gpu_dir/fastpaths.sh" || exit 1  # prove, gateup, attnproof, exchange
source "$gpu_dir/benches.sh" || exit 1    # bench, kernels, fastpaths, attention, occupancy, exchange_bw, swiglu
# each mode's steps, in the order they run
case "$what" in
  all) steps="unit_tests fastpaths check bench" ;;
  check | bless) steps="unit_tests check" ;;
  kernels) steps="unit_tests kernels" ;;
  none) steps="" ;;
  *) steps=$what ;;
esac
check_input
build_tree
phase built
proofs_status
for s in $steps; do "step_$s"; done
exit $rc
