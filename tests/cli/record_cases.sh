# shellcheck shell=bash
# Cases of what a run records: kernels, generated code, GEMM template
# choices, the ATen work really done, warm-up counts, repro locations, and
# .fg repros (inputs as declared, sharded weights, graph breaks as Dynamo's).
# Sourced by cli_test.sh after lib.sh; each case_NAME is the case NAME.

case_output_code() {
    FUSEGATE_LOGS=output_code "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 --out "$T/rec.json" >"$T/out" 2>&1
    expect_rc $? 0; expect_out 'extern "C" void cpu_(poi|per|red)_fused_'
}

case_record_kernels() {
    # mode C of the llama block: one graph, no breaks, every kernel listed
    # with kind, name and ops, fewer launches than eager, outputs within
    # tolerance on every rank and bit-identical across ranks
    "$FG" run tp_block_llama --mode C --world-size 2 --out "$T/c.json" >"$T/out" 2>&1; expect_rc $? 0
    "$FG" run tp_block_llama --mode A --world-size 2 --out "$T/a.json" >>"$T/out" 2>&1; expect_rc $? 0
    python3 - "$T/c.json" "$T/a.json" >>"$T/out" 2>&1 <<'PY' || fail "record check failed"
import json, sys
c = json.load(open(sys.argv[1])); a = json.load(open(sys.argv[2]))
for r in c["ranks"]:
    assert r["graph_count"] == 1 and r["graph_break_count"] == 0, r["graph_count"]
    assert r["kernel_count"] == len(r["kernels"]) > 0
    assert all(k["name"] and k["kind"] and k["ops"] for k in r["kernels"])
    assert r["accuracy"]["status"] == "pass", r["accuracy"]
for rc, ra in zip(c["ranks"], a["ranks"]):
    assert rc["kernel_count"] < ra["kernel_count"], (rc["kernel_count"], ra["kernel_count"])
d = {r["outputs"][0]["exact"] for r in c["ranks"]}
assert len(d) == 1, d
print("record ok")
PY
    expect_out "record ok"
}

case_max_autotune() {
    # the generated GEMM templates (forced): fewer launches than default on
    # the llama block, outputs within tolerance of eager on every rank
    "$FG" run tp_block_llama --mode C --world-size 2 --out "$T/d.json" >"$T/out" 2>&1; expect_rc $? 0
    FUSEGATE_FAULT=gemm_choice:template "$FG" run tp_block_llama --mode C --world-size 2 --fusion max-autotune \
      --out "$T/m.json" >>"$T/out" 2>&1; expect_rc $? 0
    # chosen by measurement (an empty cache and no golden of the block),
    # then again (from the cache)
    FUSEGATE_CACHE_DIR="$T/fresh-cache" "$FG" run tp_block_llama --mode C --world-size 2 --fusion max-autotune \
      --golden-dir "$T/golden" --out "$T/a.json" >>"$T/out" 2>&1; expect_rc $? 0
    FUSEGATE_CACHE_DIR="$T/fresh-cache" "$FG" run tp_block_llama --mode C --world-size 2 --fusion max-autotune \
      --golden-dir "$T/golden" --out "$T/c.json" >>"$T/out" 2>&1; expect_rc $? 0
    python3 - "$T/d.json" "$T/m.json" "$T/a.json" "$T/c.json" >>"$T/out" 2>&1 <<'PY' || fail "max-autotune check failed"
import json, sys
d, m, a, c = (json.load(open(p)) for p in sys.argv[1:])
for rd, rm in zip(d["ranks"], m["ranks"]):
    assert rm["kernel_count"] < rd["kernel_count"], (rm["kernel_count"], rd["kernel_count"])
    assert rm["kernel_count_by_kind"]["tem"] > 0
    assert rm["accuracy"]["status"] == "pass", rm["accuracy"]
    assert {e["source"] for e in rm["gemm_choices"]} == {"forced"}, rm["gemm_choices"]
# every template shape of the forced run was measured, both ways, and the
# faster one chosen; every rank holds rank 0's table and runs it
shapes = {e["shape"] for e in m["ranks"][0]["gemm_choices"]}
table = a["ranks"][0]["gemm_choices"]
assert {e["shape"] for e in table} == shapes and shapes, (table, shapes)
for e in table:
    assert e["source"] == "measured", e
    assert e["template_us"] > 0 and e["library_us"] > 0, e
    if abs(e["template_us"] - e["library_us"]) > 0.2:  # the record rounds to 0.1 µs
        assert e["choice"] == ("template" if e["template_us"] < e["library_us"] else "library"), e
templates = sum(e["choice"] == "template" for e in table)
for r in a["ranks"]:
    assert r["gemm_choices"] == table
    assert (r["kernel_count_by_kind"].get("tem", 0) > 0) == (templates > 0), (r["kernel_count_by_kind"], table)
    assert r["accuracy"]["status"] == "pass", r["accuracy"]
assert [(e["shape"], e["choice"], e["source"]) for e in c["ranks"][0]["gemm_choices"]] == \
    [(e["shape"], e["choice"], "cache") for e in table], c["ranks"][0]["gemm_choices"]
print("max-autotune ok: templates %d < %d launches; measured: %d of %d shapes a template, %d launches" % (
    m["ranks"][0]["kernel_count"], d["ranks"][0]["kernel_count"], templates, len(table), a["ranks"][0]["kernel_count"]))
PY
    expect_out "max-autotune ok"
}

case_gemm_choice_pinned() {
    # the golden's template choices are what a check runs, whatever a
    # measurement here would choose; a run forced to the other choice fails
    # on its counts and says why
    cp -r "$SRC/golden/cpu/tp_block_llama" "$T/golden/cpu/"
    gc() { "$FG" "$1" tp_block_llama --golden-dir "$T/golden" --mode C --world-size 1 --fusion max-autotune "${@:2}"; }
    FUSEGATE_FAULT=gemm_choice:template gc bless --why "templates" >"$T/out" 2>&1; expect_rc $? 0
    gc check --records "$T/rec" >"$T/out" 2>&1; expect_rc $? 0
    python3 - "$T/rec" >>"$T/out" 2>&1 <<'PY' || fail "the golden's choices were not taken"
import json, pathlib, sys
recs = list(pathlib.Path(sys.argv[1]).glob("*.json"))
assert len(recs) == 1, recs
t = json.load(open(recs[0]))["ranks"][0]["gemm_choices"]
assert t and all(e["source"] == "golden" and e["choice"] == "template" for e in t), t
print("golden choices taken:", len(t))
PY
    expect_out "golden choices taken: [1-9]"
    FUSEGATE_FAULT=gemm_choice:library gc check >"$T/out" 2>&1; expect_rc $? 1
    expect_out "GEMM template choices differ from the golden's: .*bf16 m[0-9]+ n[0-9]+ k[0-9]+: template -> library \(forced\)"
    expect_out "kernel_count [0-9]+ -> [0-9]+.*tem [1-9][0-9]* -> 0"
}

case_real_work_recorded() {
    # every extern of the record lists the ATen operators it dispatched, and
    # aten_op_count is their sum
    "$FG" run tp_block_llama --mode C --world-size 1 --out "$T/c.json" >"$T/out" 2>&1; expect_rc $? 0
    python3 - "$T/c.json" >>"$T/out" 2>&1 <<'PY' || fail "record check failed"
import json, sys
r = json.load(open(sys.argv[1]))["ranks"][0]
ext = [k for k in r["kernels"] if k["kind"] == "extern"]
assert ext and all(k.get("aten_ops") for k in ext), ext
assert r["aten_op_count"] == sum(sum(k.get("aten_ops", {}).values()) for k in r["kernels"]) > 0
att = next(k for k in ext if "attention" in k["name"])
print("aten ops ok:", r["aten_op_count"], "calls;", "attention:", " ".join(sorted(att["aten_ops"]))[:200])
PY
    expect_out "aten ops ok"
}

case_warmup_steps_agree() {
    # --warmup-ms: the untimed forwards are counted on rank 0 and every rank
    # runs as many (a rank that ran one more would wait in its collective)
    "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 2 --iters 3 --warmup-ms 300 \
        --timeout 60 >"$T/rec.json" 2>"$T/out"; expect_rc $? 0
    python3 -c "
import json, re, sys
r = json.load(open(sys.argv[1]))['ranks']
how = [k['times_ms']['how'] for k in r]
n = [re.search(r'after (\d+) untimed forwards \(--warmup-ms 300\)', h) for h in how]
assert len(r) == 2 and all(n), how
assert n[0].group(1) == n[1].group(1) and int(n[0].group(1)) >= 1, how
" "$T/rec.json" || fail "the ranks' warm-up counts: $(cat "$T/rec.json" | head -c 2000)"
}

case_relative_locations() {
    # a .fg repro's locations name its file alone, never its folder or an
    # absolute path that differs between machines: its goldens survive a move
    mkdir -p "$T/myfg"; cp "$T/repros/ffn_allreduce.fg" "$T/myfg/"
    line=$(grep -n "all_reduce" "$T/myfg/ffn_allreduce.fg" | cut -d: -f1)
    sed -i "${line}a\\  %dbg = print(%7) : bf16[4,32,128]" "$T/myfg/ffn_allreduce.fg"
    # (an undeclared break in mode C: run writes the record and fails it)
    FUSEGATE_QUIET_PRINT=1 "$FG" run ffn_allreduce --repro-dir "$T/myfg" --mode C --world-size 1 --out "$T/rec.json" \
      >"$T/out" 2>&1; expect_rc $? 1; expect_out "graph break in mode C that the repro does not declare"
    python3 - "$T/rec.json" "$T" "$((line + 1))" <<'PY' || fail "locations are not relative to the repro folder"
import json, sys
rec, tmp, line = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
text = json.dumps(rec)
assert tmp not in text, "an absolute path is in the record"
locs = [b["location"] for b in rec["ranks"][0]["breaks"]]
assert locs == ["ffn_allreduce.fg:" + line], locs
assert any(s.startswith("ffn_allreduce.fg:") for e in rec["ranks"][0]["ledger"] for s in e.get("source", [])), \
    rec["ranks"][0]["ledger"]
PY
    # blessed from one folder (mode B: a break at the all_reduce), the file
    # moved into another, deeper one: its check passes (it failed with "new
    # graph break ... at repros/fg/x.fg:N (the golden has it at repros/x.fg:N)")
    "$FG" bless ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode B --mode C --world-size 1 \
      >"$T/out" 2>&1; expect_rc $? 0
    mkdir -p "$T/moved/deeper"; mv "$T/repros/ffn_allreduce.fg" "$T/moved/deeper/"
    "$FG" check --strict ffn_allreduce --repro-dir "$T/moved/deeper" --golden-dir "$T/golden" --mode B --mode C \
      --world-size 1 >"$T/out" 2>&1; expect_rc $? 0; expect_out "^2 checks: 2 passed"
    # mode B's break was compared, not absent: it is in the golden, by the file alone
    grep -q '"location": "ffn_allreduce.fg:[0-9]*"' "$T/golden/cpu/ffn_allreduce/B_w1.json" ||
      fail "the mode B golden holds no break at ffn_allreduce.fg"
}

case_fg_inputs_as_declared() {
    # each input as its attributes say, or by its use: seen through the
    # outputs that return them
    mkdir -p "$T/init"
    cat >"$T/init/inits.fg" <<'FG'
graph inits(%o: f32[64,32] {init = "ones"}, %z: f32[64,32] {init = "zeros"}, %r: f32[64,32] {start = 1.0},
            %u: f32[64,32] {low = 2.0, high = 3.0}, %n: f32[64,32] {mean = 5.0, std = 0.5}, %w: f32[32,256],
            %g: f32[32], %x: f32[64,256]) {
  %8 = linear(%x, %w) : f32[64,32]
  %9 = rms_norm(%8, %g) {eps = 1e-06} : f32[64,32]
  %10 = add(%r, %u) : f32[64,32]
  return %o, %z, %r, %u, %n, %w, %g, %9, %10
}
FG
    "$FG" run inits --repro-dir "$T/init" --mode A --world-size 1 --out "$T/r.json" >"$T/out" 2>&1; expect_rc $? 0
    python3 - "$T/r.json" <<'PY' || fail "inputs are not what their attributes say"
import json, math, sys
o = {x["name"]: x["fingerprint"] for x in json.load(open(sys.argv[1]))["ranks"][0]["outputs"]}
n = 64 * 32
mean = lambda f: f["sum"] / f["numel"]
rms = lambda f: math.sqrt(f["sumsq"] / f["numel"])
assert o["o"]["sum"] == n and o["o"]["max_abs"] == 1, o["o"]
assert o["z"]["sumsq"] == 0, o["z"]
assert o["r"]["sum"] == n * (n + 1) / 2 and o["r"]["max_abs"] == n, o["r"]  # arange from 1
assert 2.0 <= mean(o["u"]) <= 3.0 and o["u"]["max_abs"] <= 3.0 and abs(mean(o["u"]) - 2.5) < 0.05, o["u"]
assert abs(mean(o["n"]) - 5.0) < 0.05 and abs(math.sqrt(rms(o["n"])**2 - mean(o["n"])**2) - 0.5) < 0.05
# by use: a linear's weight is fan-in scaled (1/sqrt(256)), a norm's weight N(1, 0.1)
assert abs(rms(o["w"]) - 1 / 16) < 0.004, rms(o["w"])
assert abs(mean(o["g"]) - 1.0) < 0.05 and rms(o["g"]) < 1.1, o["g"]
PY
    # the printed graph shows what each input got
    "$FG" explain inits --repro-dir "$T/init" --mode C >"$T/out" 2>&1; expect_rc $? 0
    expect_out '%w: f32\[32,256\] \{init = "normal", mean = 0.0, std = 0.0625\}'
    expect_out '%g: f32\[32\] \{init = "normal", mean = 1.0, std = 0.1\}'
    expect_out '%r: f32\[64,32\] \{init = "arange", start = 1.0, step = 1.0\}'
    expect_out '%u: f32\[64,32\] \{high = 3.0, init = "uniform", low = 2.0\}'
}

case_sharded_fg_matches_world1() {
    # a .fg with sharded weights: every rank gets its share of the same full
    # tensors, a sharded output is gathered, and world 2 and 4 compare with 1
    mkdir -p "$T/tp"
    cat >"$T/tp/tp_qkv.fg" <<'FG'
# fused q|k|v (uneven blocks, as grouped-query attention has), column-parallel,
# then a row-parallel projection and its all-reduce
graph tp_qkv(%x: f32[2,8,32], %w_qkv: f32[64,32] {shard = 0, blocks = [32, 16, 16]},
             %w_o: f32[32,32] {shard = 1}) {
  %3 = linear(%x, %w_qkv) : f32[2,8,64]
  %4 = slice(%3) {dim = -1, blocks = [32, 16, 16], index = 0} : f32[2,8,32]
  %5 = slice(%3) {dim = -1, blocks = [32, 16, 16], index = 2} : f32[2,8,16]
  %6 = linear(%4, %w_o) : f32[2,8,32]
  %7 = all_reduce(%6) {reduce_op = "sum"} : f32[2,8,32]
  %8 = silu(%5) : f32[2,8,16]
  return %7, %8 {shard = 2}, %3 {shard = 2, blocks = [32, 16, 16]}
}
FG
    tp() { "$FG" "$1" tp_qkv --repro-dir "$T/tp" --golden-dir "$T/g" --mode C "${@:2}" >"$T/out" 2>&1; }
    tp bless; expect_rc $? 0
    tp check --strict --records "$T/recs"; expect_rc $? 0
    expect_out "3 checks: 3 passed"
    # (the records: a golden keeps the gathered copy's fingerprint, not its digest)
    python3 - "$T/recs/tp_qkv_C_w4_cpu_default.json" "$T/recs/tp_qkv_C_w1_cpu_default.json" <<'PY' || fail "the sharded outputs were not gathered"
import json, sys
w4, w1 = (json.load(open(p)) for p in sys.argv[1:])
one = {o["name"]: o for o in w1["ranks"][0]["outputs"]}
for r in w4["ranks"]:
    out = {o["name"]: o for o in r["outputs"]}
    assert out["%7"]["replicated"] and "gathered" not in out["%7"]
    assert not out["%8"]["replicated"] and out["%8"]["fingerprint"]["shape"] == [2, 8, 4]
    # the whole of each sharded output equals world 1's, bit for bit
    for k in ("%8", "%3"):
        assert out[k]["gathered"]["exact"] == one[k]["exact"], (r["rank"], k)
PY
    # a wrong layout (dim 1 instead of 2) is caught by the comparison with world 1
    sed -i 's/%8 {shard = 2}/%8 {shard = 1}/' "$T/tp/tp_qkv.fg"
    tp check --world-size 1 --world-size 2; expect_rc $? 1
    expect_out "output %8: world 2, gathered from every rank, drifts from world 1: shape \[2,8,16\] vs \[2,16,8\]"
    # so is a missing all-reduce: the partial sums differ across ranks
    sed -i 's/%8 {shard = 1}/%8 {shard = 2}/; s/  %7 = all_reduce(%6) {reduce_op = "sum"} : f32\[2,8,32\]/  %7 = neg(%6) : f32[2,8,32]/' \
      "$T/tp/tp_qkv.fg"
    tp check --world-size 1 --world-size 2; expect_rc $? 1
    expect_out "output %7 is replicated but rank 1"
    expect_out "world 2 rank 0 drifts from world 1"
}

case_fg_breaks_as_dynamo() {
    # a branch on a value and a disabled region in a .fg: Dynamo's graph and
    # break counts in modes B and C, either arm taken as the value says, and
    # the outputs of the compiled run as eager's and fp64's
    mkdir -p "$T/br"
    for arm in then else; do
      cmp=gt; [ $arm = else ] && cmp=lt
      cat >"$T/br/branch_$arm.fg" <<FG
graph branch_$arm(%x: f32[8,16]) {
  %a = exp(%x) : f32[8,16]
  %s = sum(%a) : f32[]
  %zero = full() {value = 0.0} : f32[]
  %p = $cmp(%s, %zero) : bool[]
  %r = if(%p) : f32[8,16] {
    %c = cos(%a) : f32[8,16]
    yield %c
  } else {
    %e = sin(%a) : f32[8,16]
    yield %e
  }
  disabled "stats" {
    %m = amax(%r) {dims = [1], keepdim = 1} : f32[8,1]
  }
  %o = sub(%r, %m) : f32[8,16]
  return %o
}
FG
      for mode in B C; do
        # undeclared breaks fail mode C (exit 1), not mode B; the record is written either way
        "$FG" run branch_$arm --repro-dir "$T/br" --mode $mode --world-size 1 --out "$T/r.json" >"$T/out" 2>&1
        expect_rc $? $([ $mode = C ] && echo 1 || echo 0)
        python3 - "$T/r.json" "$arm" <<'PY' || fail "branch_$arm mode $mode"
import json, sys
r = json.load(open(sys.argv[1]))["ranks"][0]
assert (r["graph_count"], r["graph_break_count"]) == (3, 2), (r["graph_count"], r["graph_break_count"])
reasons = [b["reason"] for b in r["breaks"]]
assert reasons[0].startswith("data-dependent control flow") and "stats" in reasons[1], reasons
assert [b["location"].rsplit(":", 1)[1] for b in r["breaks"]] == ["6", "13"], r["breaks"]
assert r["accuracy"]["status"] == "pass", r["accuracy"]
kernels = " ".join(k["name"] for k in r["kernels"])
# the taken arm's op ran in a generated kernel, the other arm's in none
want, other = ("cos", "sin") if sys.argv[2] == "then" else ("sin", "cos")
assert want in kernels and other not in kernels, kernels
PY
      done
    done
}

case_run_batch() {
    # run --batch: each run framed with its exit code; a case's record and
    # saved tensors the same as its own process's (every field but the
    # timings); a rejected case is its error and the next case still runs;
    # the ranks of every case come from one spawner; bad batch input is exit 2
    "$FG" run ffn_allreduce --repro-dir "$T/repros" --world-size 2 --mode C --out "$T/alone.json" >"$T/out" 2>&1
    expect_rc $? 0
    "$FG" run --graph "$T/repros/ffn_allreduce.fg" --mode A --iters 1 --save-tensors "$T/alone_t" \
      --out "$T/alone_a.json" >"$T/out" 2>&1; expect_rc $? 0
    printf '%s\n' "ffn_allreduce --repro-dir $T/repros --world-size 2 --mode C --out $T/b0.json" "" \
      "no_such_repro --repro-dir $T/repros" \
      "--graph $T/repros/ffn_allreduce.fg --mode A --iters 1 --save-tensors $T/b2_t --out $T/b2.json" \
      "ffn_allreduce --repro-dir $T/repros --world-size 2 --mode C" "--batch=-" >"$T/cases"
    strace_ok=0; command -v strace >/dev/null && strace_ok=1
    if [ $strace_ok = 1 ]; then
      strace -f -qq -e trace=execve -e signal=none -o "$T/execs" "$FG" run --batch "$T/cases" >"$T/batch" 2>"$T/out"
    else
      "$FG" run --batch "$T/cases" >"$T/batch" 2>"$T/out"
    fi
    expect_rc $? 0
    python3 - "$T" >"$T/out" 2>&1 <<'PY' || fail "the batch's frames and records"
import json, os, sys
T = sys.argv[1]
data = open(f"{T}/batch", "rb").read()
cases, i = [], 0
while i < len(data):
    nl = data.index(b"\n", i)
    head = data[i:nl].decode().split()
    assert head[0] == "#fusegate-run-case" and int(head[1]) == len(cases), head
    n_out, n_err = int(head[5]), int(head[7])
    cases.append((int(head[3]), data[nl + 1 : nl + 1 + n_out], data[nl + 1 + n_out : nl + 1 + n_out + n_err]))
    i = nl + 1 + n_out + n_err
assert [c[0] for c in cases] == [0, 2, 0, 0, 2], [c[0] for c in cases]  # the blank line is no case
assert b"unknown repro 'no_such_repro'" in cases[1][2], cases[1][2]
assert b"holds --batch" in cases[4][2], cases[4][2]
def same(a, b, what):
    a, b = json.load(open(a)), json.load(open(b))
    for r in a["ranks"] + b["ranks"]:
        r.pop("times_ms")
    assert a == b, f"{what}: the batch's record differs from its own process's"
same(f"{T}/alone.json", f"{T}/b0.json", "case 0")
same(f"{T}/alone_a.json", f"{T}/b2.json", "case 2")
# case 3 wrote its record to standard output, as a run does
assert json.loads(cases[3][1])["ranks"][0]["outputs"] == json.load(open(f"{T}/alone.json"))["ranks"][0]["outputs"]
files = sorted(os.listdir(f"{T}/alone_t"))
assert files and "tensors.json" in files and files == sorted(os.listdir(f"{T}/b2_t")), files
for f in files:
    assert open(f"{T}/alone_t/{f}", "rb").read() == open(f"{T}/b2_t/{f}", "rb").read(), f
if os.path.exists(f"{T}/execs"):
    # the processes that load LibTorch: the batch (the front handed it to
    # fusegate-full) and one spawner for all its ranks
    execs = [l for l in open(f"{T}/execs") if "= 0" in l and 'execve("' in l
             and l.split('execve("')[1].split('"')[0].endswith("/fusegate-full")]
    spawners = [l for l in execs if '"_spawner"' in l]
    assert len(execs) == 2 and len(spawners) == 1, execs
print("batch ok")
PY
    expect_out "batch ok"
    "$FG" run --batch - --world-size 2 </dev/null >"$T/out" 2>&1; expect_rc $? 2
    expect_out "--world-size goes on each case's line"
    "$FG" run --batch "$T/none" >"$T/out" 2>&1; expect_rc $? 2
    expect_out "cannot be read"
    "$FG" run ffn_allreduce --batch "$T/cases" >"$T/out" 2>&1; expect_rc $? 2
}
