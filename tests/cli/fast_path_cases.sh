# shellcheck shell=bash
# Cases of the fast paths: their A/B against the generic path, blocked
# under TP, source edits and malformed proofs, prove, the proofs inventory,
# fewer launches.
# Sourced by cli_test.sh after lib.sh; each case_NAME is the case NAME.

case_ab_local_fails_under_tp() {
    # the single-GPU q/k norm: right at world size 1, wrong (and shown with
    # figures) at 2 and 4
    ab() { "$FG" ab --fast-path qkv_rmsnorm_local --repro tp_block_wan "$@" >"$T/out" 2>&1; }
    ab --world-size 1 --json "$T/ab1.json"; expect_rc $? 0
    expect_out "verdict: PASS"; expect_out "rule: identical digests"
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['verdict']['pass'] is True" "$T/ab1.json" \
      || fail "--json lacks the passing verdict"
    for w in 2 4; do
      ab --world-size $w --json "$T/ab.json"; expect_rc $? 1
      expect_out "verdict: FAIL"; expect_out "out on rank 0: digests differ from the generic path's \([0-9]+ of 32768"
      expect_out "rel L2 vs fp64: generic 0\.00[0-9]+, fast 0\.0[1-9]"
    done
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert not j['verdict']['pass'] and j['ranks'][3]['ab'][0]['worst']" \
      "$T/ab.json" || fail "--json lacks the failing verdict or the worst elements"
}

case_ab_gate_up_swiglu() {
    # the SwiGLU GEMM's host reference against the generic path: one launch
    # for three, not identical (one rounding instead of four) and no farther
    # from fp64, at world size 1 and 2 (gate and up are sharded alike)
    for w in 1 2; do
      "$FG" ab --fast-path gate_up_swiglu --repro tp_block_llama --world-size $w --json "$T/ab$w.json" >"$T/out" 2>&1
      expect_rc $? 0; expect_out "verdict: PASS"; expect_out "launches: generic 12, with the fast path 10"
      expect_out "rule: no farther from fp64"
    done
    # sizes off the kernel's tiles (300 rows, K = 200): the shape class says so
    "$FG" ab --fast-path gate_up_swiglu --repro mlp_swiglu_tails --world-size 2 >"$T/out" 2>&1
    expect_rc $? 0; expect_out "verdict: PASS"; expect_out "shape class: bf16,tile=128x128x64,cta_pair=no,m_tail=yes,k_tail=yes"
    # the variant with the norm before it folded in (gamma into the weights,
    # the row scale after the dot products), at world size 2 as well
    # (forced, it takes the norm the exchange fast path would take in a
    # plain run). In tp_block_llama the norm shares its kernel with the
    # residual add, whose sum is still needed, so the count is the plain
    # kernel's; in mlp_swiglu_tails the norm's kernel goes too: one launch
    # fewer than the plain kernel's 7 -> 5
    for w in 1 2; do
      "$FG" ab --fast-path rmsnorm_gate_up_swiglu --repro tp_block_llama --world-size $w --json "$T/abn$w.json" \
        >"$T/out" 2>&1
      expect_rc $? 0; expect_out "verdict: PASS"; expect_out "launches: generic 12, with the fast path 10"
    done
    "$FG" ab --fast-path gate_up_swiglu --repro mlp_swiglu_tails --world-size 1 >"$T/out" 2>&1
    expect_rc $? 0; expect_out "verdict: PASS"; expect_out "launches: generic 7, with the fast path 5"
    "$FG" ab --fast-path rmsnorm_gate_up_swiglu --repro mlp_swiglu_tails --world-size 1 >"$T/out" 2>&1
    expect_rc $? 0; expect_out "verdict: PASS"; expect_out "launches: generic 7, with the fast path 4"
    python3 - "$T/ab2.json" "$T/abn1.json" "$T/abn2.json" <<'PY' || fail "the A/B figures are not those of a close, distinct result"
import json, sys
for p in sys.argv[1:]:
    j = json.load(open(p))
    for r in j["ranks"]:
        for o in r["ab"]:
            assert not o["identical"] and 0 < o["rel_l2_fast"] <= 1.25 * o["rel_l2_generic"], (p, o)
PY
}

case_ab_bad_input() {
    "$FG" ab --fast-path qkv_rmsnorm_tpp --repro tp_block_wan >"$T/out" 2>&1; expect_rc $? 2
    expect_out "unknown fast path 'qkv_rmsnorm_tpp'"; expect_out "qkv_rmsnorm_tp"
    "$FG" ab --fast-path qkv_rmsnorm_tp --repro tp_block_llama --world-size 2 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "does not apply to tp_block_llama .*not matched"
    "$FG" ab --fast-path qkv_rmsnorm_tp --repro tp_block_wan --mode A >"$T/out" 2>&1; expect_rc $? 2
    expect_out "eager runs no fast path"
    "$FG" run tp_block_wan --fast-paths nope >"$T/out" 2>&1; expect_rc $? 2; expect_out "unknown fast path 'nope'"
    FUSEGATE_FAULT=fastpath_edit:nope "$FG" run tp_block_wan >"$T/out" 2>&1; expect_rc $? 2
    expect_out "fastpath_edit:nope names no fast path"
}

case_fast_path_blocked_under_tp() {
    # asked for by name at world size 2, the local q/k norm has no proof
    # there: the generic path runs, and the record and check say why
    "$FG" run tp_block_wan --mode C --world-size 2 --fast-paths qkv_rmsnorm_local --out "$T/r.json" >"$T/out" 2>&1
    expect_rc $? 0
    python3 - "$T/r.json" <<'PY' || fail "the record does not say the fast path was blocked"
import json, sys
r = json.load(open(sys.argv[1]))
for k in r["ranks"]:
    st = {f["name"]: f["status"] for f in k["fast_paths"]}
    assert st["qkv_rmsnorm_local"] == "blocked: unproven under TP", st
    assert st["qkv_rmsnorm_tp"] == "not selected", st
    assert not any(l["kind"] == "fast_path" for l in k["kernels"]), k["kernels"]
    assert any(e["reason"] == "fast_path_unproven" for e in k["ledger"])
PY
    "$FG" check tp_block_wan --mode C --world-size 2 --fast-paths qkv_rmsnorm_local >"$T/out" 2>&1
    expect_out "fast path qkv_rmsnorm_local blocked: unproven under TP"
    "$FG" check tp_block_wan --mode C --world-size 2 --require-fast-path qkv_rmsnorm_local >"$T/out" 2>&1
    expect_rc $? 1; expect_out "required fast path qkv_rmsnorm_local did not run \(blocked: unproven under TP\)"
    "$FG" run tp_block_wan --mode C --world-size 2 --require-fast-path qkv_rmsnorm_local >"$T/out" 2>&1
    expect_rc $? 1; expect_out "required fast path qkv_rmsnorm_local did not run on rank 1"
    # proven at world size 1; the TP-aware one outranks it there
    "$FG" run tp_block_wan --mode C --world-size 1 --out "$T/r1.json" >"$T/out" 2>&1; expect_rc $? 0
    grep -q '"status": "not used: lower priority than qkv_rmsnorm_tp"' "$T/r1.json" || fail "no priority status at w1"
}

case_fast_path_source_edit() {
    # an edit of the kernel source invalidates its proof: the generic path
    # runs, and the golden, blessed with the fast path, fails
    FUSEGATE_FAULT=fastpath_edit:allreduce_residual_rmsnorm "$FG" check tp_block_llama --mode C --world-size 2 \
      >"$T/out" 2>&1
    expect_rc $? 1
    expect_out "fast path allreduce_residual_rmsnorm ran when the golden was blessed; now: blocked: proof invalidated \(source changed\)"
    expect_out "kernel_count 11 -> 12"
}

case_malformed_proof() {
    mkdir -p "$T/g2/proofs"; cp -r "$SRC/golden/proofs/cpu" "$T/g2/proofs/"
    sed -i '2s/.*/  "backend": ,/' "$T/g2/proofs/cpu/qkv_rmsnorm_tp.json"
    "$FG" run tp_block_wan --mode C --world-size 2 --golden-dir "$T/g2" >"$T/out" 2>&1; expect_rc $? 2
    expect_out "qkv_rmsnorm_tp.json:2:[0-9]+: error: corrupted proof"; expect_out "fusegate prove --fast-path qkv_rmsnorm_tp"
    cp "$SRC/golden/proofs/cpu/qkv_rmsnorm_tp.json" "$T/g2/proofs/cpu/"
    sed -i 's/"verdict": "pass"/"verdict": "fail"/' "$T/g2/proofs/cpu/qkv_rmsnorm_tp.json"
    "$FG" check tp_block_wan --mode C --world-size 2 --golden-dir "$T/g2" >"$T/out" 2>&1; expect_rc $? 2
    expect_out "malformed proof: cases\[0\] did not pass"
}

case_prove_writes_proof() {
    mkdir -p "$T/g3"
    "$FG" prove --fast-path qkv_rmsnorm_tp --world-size 2 --world-size 4 --golden-dir "$T/g3" >"$T/out" 2>&1
    expect_rc $? 0; expect_out "proven on cpu at world sizes 2 4"
    python3 - "$T/g3/proofs/cpu/qkv_rmsnorm_tp.json" <<'PY' || fail "the proof does not hold what it ran"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["world_sizes"] == [2, 4] and p["backend"] == "cpu", p
assert sorted(c["shape_class"] for c in p["cases"]) == ["bf16,norm_dim=128,divisor=256,sumsq=all_reduced,vec=8",
                                                        "bf16,norm_dim=64,divisor=256,sumsq=all_reduced,vec=8"], p["cases"]
assert len(p["source_hash"]) == 16 and p["env"]["backend"] == "cpu"
PY
    # a proof covers exactly what it ran: world size 1 stays unproven here
    "$FG" run tp_block_wan --mode C --world-size 1 --golden-dir "$T/g3" --out "$T/r.json" >"$T/out" 2>&1
    grep -q '"status": "blocked: unproven under TP"' "$T/r.json" || fail "w1 is not blocked without its proof"
    "$FG" prove --fast-path qkv_rmsnorm_local --world-size 1 --world-size 2 --golden-dir "$T/g3" >"$T/out" 2>&1
    expect_rc $? 1; expect_out "FAILED the A/B"; expect_out "no proof written"
    [ ! -e "$T/g3/proofs/cpu/qkv_rmsnorm_local.json" ] || fail "a failing prove wrote a proof"
    "$FG" prove --fast-path qkv_rmsnorm_tp --world-size 3 --golden-dir "$T/g3" >"$T/out" 2>&1; expect_rc $? 2
    expect_out "matches no repro at world size 3"
}

case_proofs_inventory() {
    # `fusegate proofs` lists every proof file as this tree takes it: a
    # current one, one whose source changed (and --strict fails on it), a
    # GPU model that lacks one, a malformed file, bad flags, no proofs
    "$FG" proofs --golden-dir "$T/golden" >"$T/out" 2>&1; expect_rc $? 0
    expect_out '^\| allreduce_sum \| cpu \|  \| [0-9 ]+ \| [0-9]+ \| [0-9]+ \| current \|$'
    expect_out '^\| gate_up_swiglu \| cuda \| NVIDIA H100 80GB HBM3 \| 1 2 \| [0-9]+ \| [0-9]+ \| current \|$'
    expect_out ' 0 stale'
    "$FG" proofs --golden-dir "$T/golden" --strict >"$T/out" 2>&1; expect_rc $? 0
    python3 - "$T/golden/proofs/cpu/allreduce_sum.json" <<'PY'
import json, sys
p = sys.argv[1]; j = json.load(open(p)); j["source_hash"] = "0000000000000000"
open(p, "w").write(json.dumps(j, indent=1) + "\n")
PY
    rm "$T/golden/proofs/cuda/NVIDIA_H200/allreduce_sum.json"
    "$FG" proofs --golden-dir "$T/golden" --backend cpu >"$T/out" 2>&1; expect_rc $? 0
    expect_out '^\| allreduce_sum \| cpu \|  \| [0-9 ]+ \| [0-9]+ \| [0-9]+ \| stale: source changed \|$'
    expect_out ' 1 stale'; expect_out "prove it on that backend or GPU model"
    grep -q '| cuda |' "$T/out" && fail "--backend cpu listed cuda proofs"
    "$FG" proofs --golden-dir "$T/golden" --strict >"$T/out" 2>&1; expect_rc $? 1
    expect_out '^\| allreduce_sum \| cuda \| NVIDIA H200 \| - \| - \| - \| none \|$'
    # what `run` would say of the same file: blocked, its source changed
    "$FG" run ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode C --world-size 2 \
      --fusion max-autotune --out "$T/r.json" >/dev/null 2>&1
    python3 - "$T/r.json" >>"$T/out" 2>&1 <<'PY' || fail "run does not block the fast path whose proof proofs calls stale"
import json, sys
fp = {f["name"]: f["status"] for f in json.load(open(sys.argv[1]))["ranks"][0]["fast_paths"]}
assert "source changed" in fp.get("allreduce_sum", ""), fp
PY
    echo '{"schema": 1,' >"$T/golden/proofs/cuda/NVIDIA_H200/gate_up_swiglu.json"
    "$FG" proofs --golden-dir "$T/golden" >"$T/out" 2>&1; expect_rc $? 2
    expect_out "NVIDIA_H200/gate_up_swiglu.json"
    "$FG" proofs --golden-dir "$T/golden" --backend tpu >"$T/out" 2>&1; expect_rc $? 2
    expect_out "cpu, cuda or all"
    mkdir -p "$T/empty"
    "$FG" proofs --golden-dir "$T/empty" >"$T/out" 2>&1; expect_rc $? 0; expect_out "no proof files"
    "$FG" proofs --golden-dir "$T/empty" --strict >"$T/out" 2>&1; expect_rc $? 1
    expect_out "nothing vouches for a fast path"
    # missing proof files fail --strict where their fast path would run: the
    # cpu folder deleted (the cuda ones still there), which passed
    cp -r "$SRC/golden/proofs" "$T/whole"; rm -r "$T/whole/cpu"; mkdir -p "$T/nocpu"; mv "$T/whole" "$T/nocpu/proofs"
    "$FG" proofs --golden-dir "$T/nocpu" --strict >"$T/out" 2>&1; expect_rc $? 1
    expect_out '^\| allreduce_sum \| cpu \|  \| - \| - \| - \| none \|$'
    expect_out " 5 of them where it would run"
    # a reference loop the cost model refuses on cpu needs none there
    expect_out '^\| gate_up_swiglu \| cpu \|  \| - \| - \| - \| not needed \(no proof: the cost model refuses it on cpu\) \|$'
    expect_out "^--strict: fails \(0 stale, 5 missing where the fast path would run"
    "$FG" proofs --golden-dir "$SRC/golden" --strict >"$T/out" 2>&1; expect_rc $? 0
    # a pass under --strict says what it counted, and no row reads "none"
    expect_out "^--strict: passes \(0 stale, 0 missing where the fast path would run"
    if grep -q '| none |' "$T/out"; then fail "proofs --strict passed with a row reading none"; fi
}

case_fast_paths_fewer_launches() {
    # proven fast paths launch fewer kernels than the generic path, and the
    # accuracy checks pass
    for r in tp_block_llama tp_block_wan; do
      "$FG" run $r --mode C --world-size 2 --out "$T/fast.json" >"$T/out" 2>&1; expect_rc $? 0
      "$FG" run $r --mode C --world-size 2 --fast-paths none --out "$T/none.json" >"$T/out" 2>&1; expect_rc $? 0
      python3 - "$T/fast.json" "$T/none.json" <<'PY' || fail "$r: the fast paths do not launch fewer kernels"
import json, sys
f, n = (json.load(open(p)) for p in sys.argv[1:])
for a, b in zip(f["ranks"], n["ranks"]):
    assert a["kernel_count"] < b["kernel_count"], (a["kernel_count"], b["kernel_count"])
    assert a["accuracy"]["status"] == "pass"
    assert a["kernel_count_by_kind"]["fast_path"] >= 1
    assert any(x["status"] == "used" for x in a["fast_paths"])
PY
    done
}
