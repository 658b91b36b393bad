# shellcheck shell=bash
# Sourced by bench/gpu.sh: the fast paths' A/Bs and proofs on this GPU
# (prove, gateup, attnproof, exchange), and the max-autotune goldens
# re-blessed with them.

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
# prove: the A/Bs and proofs of the norm fast paths
step_prove() {
  for fp in qkv_rmsnorm_local qkv_rmsnorm_tp; do
    for w in $wl; do
      $FG ab --backend cuda --fast-path $fp --repro tp_block_wan_h2048 --world-size $w 2>&1 | grep -E "launches|^  out|verdict|FAIL" | head -8
    done
  done
  for w in $wl; do
    $FG ab --backend cuda --fast-path allreduce_residual_rmsnorm --repro tp_block_llama_h2048 --world-size $w 2>&1 | tail -4
  done
  $FG prove --backend cuda --fast-path qkv_rmsnorm_local --world-size 1 2>"$OUTDIR/prove.err" | grep -E "^fusegate prove|FAIL" ; r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
  for fp in qkv_rmsnorm_tp allreduce_residual_rmsnorm; do
    $FG prove --backend cuda --fast-path $fp $worlds 2>>"$OUTDIR/prove.err" | grep -E "^fusegate prove|FAIL"; r=${PIPESTATUS[0]}; [ $r -ne 0 ] && rc=$r
  done
  tar czf "$OUTDIR/proofs-cuda.tgz" golden/proofs/cuda
  phase proved
}
# gateup
step_gateup() {
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
}
# attnproof
step_attnproof() {
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
}
# exchange (two GPUs)
step_exchange() {
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
}
