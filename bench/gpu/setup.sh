# shellcheck shell=bash
# Sourced by bench/gpu.sh: what every mode does first. The input refused
# before anything is built (check_input), the build against the installed
# PyTorch's LibTorch with the settings every step runs under (build_tree),
# the call's clock (phase) and the proofs this GPU's model lacks
# (proofs_status).

# bad input is refused before anything is built (exit 2): a block the
# bench does not know (a typo used to cost a device call), a setting out
# of its range, a kernel variant for another mode than attention
check_input() {
  for blk in ${BENCH_BLOCKS:-h2048}; do
    case "$blk" in h2048 | h2048_s2048 | h4096) ;;
    *) echo "gpu.sh: BENCH_BLOCKS names '$blk'; the blocks: h2048 h2048_s2048 h4096" >&2; exit 2 ;; esac
  done
  case "${EXCHANGE_FAST_PATH:-allreduce_sum}" in
    allreduce_residual | allreduce_sum) ;;
    *) echo "gpu.sh: EXCHANGE_FAST_PATH is allreduce_residual or allreduce_sum, not '$EXCHANGE_FAST_PATH'" >&2; exit 2 ;;
  esac
  # the world sizes: GPU_WORLDS (default: every one this machine's GPUs
  # allow, of 1, 2 and 4), BENCH_WORLD (the bench's one)
  if [ -n "${GPU_WORLDS:-}" ]; then
    [[ "$GPU_WORLDS" =~ ^[1248]([\ ,][1248])*$ ]] || {
      echo "gpu.sh: GPU_WORLDS is world sizes of 1, 2, 4 and 8, apart by spaces or commas (\"1 2 4\"), not '$GPU_WORLDS'" >&2; exit 2; }
    dup=$(echo "$GPU_WORLDS" | tr ' ,' '\n\n' | sort | uniq -d | head -1)
    [ -z "$dup" ] || { echo "gpu.sh: GPU_WORLDS names world size $dup twice: '$GPU_WORLDS'" >&2; exit 2; }
  fi
  case "${BENCH_WORLD:-1}" in 1|2|4|8) ;; *) echo "gpu.sh: BENCH_WORLD must be 1, 2, 4 or 8, not '$BENCH_WORLD'" >&2; exit 2 ;; esac
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
}
# The world sizes of a call on $1 GPUs, one line: 1, 2 with two GPUs, 4
# too with four (each rank one GPU), or GPU_WORLDS's (checked by
# check_input); exit 125 where one needs more GPUs than there are.
world_sizes() {
  local n="$1" l="1" w
  [ "$n" -ge 2 ] && l="1 2"
  [ "$n" -ge 4 ] && l="1 2 4"
  [ -n "${GPU_WORLDS:-}" ] && l=$(echo "$GPU_WORLDS" | tr ',' ' ')
  for w in $l; do
    [ "$w" -le "$n" ] || { echo "gpu.sh: world size $w needs $w GPUs; $n here (GPU_WORLDS='${GPU_WORLDS:-}')" >&2; return 125; }
  done
  echo $l
}
# the build (build-gpu) and what the steps read from it: FG, wl, worlds,
# bench_world, rc (the exit status) and t0 (phase's origin)
build_tree() {
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  export FUSEGATE_VERIFY=1  # the verifiers between passes, as in every test
  export FUSEGATE_CACHE_DIR="$PWD/build-gpu/kernel-cache"
  OUTDIR="${OUT:-$PWD/build-gpu/out}"
  mkdir -p "$OUTDIR"
  TP=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
  ngpu=$(python3 -c 'import torch;print(torch.cuda.device_count())')
  echo "gpus: $ngpu; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $(date -u +%F)"
  # the world sizes, checked against the GPUs before the build
  wl=$(world_sizes "$ngpu") || exit 125
  worlds=""; for w in $wl; do worlds="$worlds --world-size $w"; done
  bench_world=1; [ "$ngpu" -ge 2 ] && bench_world=2
  # BENCH_WORLD=1 on a machine of two GPUs: the bench at world size 1 (rank
  # 0's GPU); BENCH_WORLD=4 on four
  bench_world="${BENCH_WORLD:-$bench_world}"
  [ "$bench_world" -le "$ngpu" ] || { echo "gpu.sh: BENCH_WORLD=$bench_world needs $bench_world GPUs; $ngpu here" >&2; exit 125; }
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TP" \
    -DxxHash_INCLUDE_DIR="$PWD/.devdeps/include" >"$OUTDIR/cmake.log" 2>&1 || { tail -30 "$OUTDIR/cmake.log"; exit 1; }
  grep fusegate "$OUTDIR/cmake.log"
  targets="fusegate fusegate-full test_cuda_codegen test_runtime attention_bench"
  [ "$what" = travel ] && targets="fusegate fusegate-full"  # the goldens alone: no test or bench binary
  ninja -C build-gpu $targets >"$OUTDIR/build.log" 2>&1 || { grep -E "error" "$OUTDIR/build.log" | head -30; exit 1; }
  FG="$PWD/build-gpu/harness/fusegate"  # absolute: some steps run in other folders
  rc=0
  t0=$(date +%s)
}
# a line with the seconds since the build
phase() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
# the proofs this GPU's model lacks or holds stale (`fusegate proofs`): a
# fast path whose proof is not current here runs blocked in every timing of
# this call, and the call's tables would say so only at their end
proofs_status() {
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
}
