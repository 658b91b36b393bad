# shellcheck shell=bash
# Sourced by bench/gpu.sh: the cuda goldens. The check (and bless) of every
# golden with the gate's forced faults, the residual placement measured
# again, the goldens no file holds yet, and the multi-node bless and check.

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
# check and bless (and all): every cuda golden checked strictly (bless:
# blessed first), the forced attention fallback and residual placement
# that the check must catch, and the records' table
step_check() {
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
}
# placement: the residual placement measured again in every max-autotune C
# cuda golden (their tables dropped in this copy, then blessed at $worlds),
# the check of them, and the forced placement that the check must catch;
# the goldens packed as $OUTDIR/golden-ma.tgz
step_placement() {
  # a table dropped at a world size this call does not bless would stay
  # dropped: every world size a golden holds must be among the call's
  local held w
  held=$(ls golden/cuda/*/C_w*.max-autotune.json 2>/dev/null | sed -E 's/.*C_w([0-9]+)\.max-autotune\.json/\1/' | sort -un)
  for w in $held; do
    [[ " $wl " == *" $w "* ]] || {
      echo "gpu.sh: placement: max-autotune goldens exist at world size $w, which this call (world sizes: $wl) cannot bless again; $ngpu GPU(s) here" >&2
      exit 125; }
  done
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
}
# missing (two GPUs or more)
step_missing() {
  # two GPUs or more: bless the goldens no file holds yet, then check every
  # cuda golden at the call's world sizes (1 and 2; 4 too on four GPUs)
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
}
# multinode (two GPUs): tp_block_llama_h2048 as two nodes on this host
step_multinode() {
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
}
