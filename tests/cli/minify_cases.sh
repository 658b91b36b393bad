# shellcheck shell=bash
# Cases of cli_test.sh: from a failing repro to the smallest culprit (minify,
# export, replays that say their verdict).

case_export_round_trips() {
    # every C++ repro exports to a .fg that captures as the repro does at
    # each world size it runs at (export checks it); run at world sizes 1
    # and 2, the export gives the repro's digests, output by output and
    # rank by rank
    for r in $("$FG" list | cut -f1); do
        case "$r" in tp_block_*) ;; *) continue ;; esac
        "$FG" export "$r" --out "$T/x_$r.fg" >"$T/out" 2>&1; expect_rc $? 0
        grep -q "seed = \"$r\"" "$T/x_$r.fg" || fail "the export of $r does not draw $r's values"
    done
    grep -q 'reshape(.*shape = \[2, 64, -1, 32\]' "$T/x_tp_block_llama.fg" || fail "no world-relative reshape"
    grep -q 'slice(.*blocks = \[256, 256, 256\]' "$T/x_tp_block_llama.fg" || fail "no slice by blocks"
    for r in tp_block_llama tp_block_wan; do
        for w in 1 2; do
            "$FG" run "$r" --mode C --world-size $w --out "$T/a.json" >"$T/out" 2>&1 || fail "run $r at $w"
            "$FG" run --graph "$T/x_$r.fg" --mode C --world-size $w --out "$T/b.json" >"$T/out" 2>&1 ||
                fail "run of the export of $r at $w"
            python3 - "$T/a.json" "$T/b.json" <<'PY' || fail "the export of $r at world size $w gives other digests"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
da = [[o["exact"] for o in r["outputs"]] for r in a["ranks"]]
db = [[o["exact"] for o in r["outputs"]] for r in b["ranks"]]
assert da and all(da) and da == db, (da, db)
assert [r["kernel_count"] for r in a["ranks"]] == [r["kernel_count"] for r in b["ranks"]]
PY
        done
    done
    # stdout by default; bad input is exit 2
    "$FG" export tp_block_wan >"$T/out" 2>&1; expect_rc $? 0; expect_out "^graph tp_block_wan\("
    "$FG" export no_such >"$T/out" 2>&1; expect_rc $? 2; expect_out "unknown repro 'no_such'"
    "$FG" export tp_block_wan --out "$T/x.txt" >"$T/out" 2>&1; expect_rc $? 2; expect_out "name an .fg file"
}

case_minify_shrinks_a_block() {
    # a 58-node block (qwen3_block) with a broken fusion rule shrinks to at most 6 nodes
    # that fail the same way, in at most 80 checks (its wall time, under a
    # minute on 2 cores, is bench/minify_bisect.sh's); the file replays
    # with the fault (exit 1) and passes without it; a C++ repro minifies
    # through its export
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" minify qwen3_block --out "$T/q.fg" >"$T/out" 2>&1
    expect_rc $? 1
    expect_out "fusegate minify: qwen3_block: mismatch under --fusion default at world size 1: 58 -> [1-6] nodes"
    checks=$(grep -oE '[0-9]+ -> [0-9]+ nodes in [0-9]+ checks' "$T/out" | tail -1 | awk '{print $6}')
    [ -n "$checks" ] && [ "$checks" -le 80 ] || fail "minify took ${checks:-no count of} checks (at most 80)"
    nodes=$(grep -cE '^  %[A-Za-z0-9_]+ = ' "$T/q.fg")
    [ "$nodes" -ge 1 ] && [ "$nodes" -le 6 ] || fail "the minified block has $nodes nodes: $(cat "$T/q.fg")"
    grep -q "^# fusegate minify: mismatch under --fusion default" "$T/q.fg" || fail "header: $(head -3 "$T/q.fg")"
    grep -q "^# replay: FUSEGATE_FAULT=broken_fusion:reduction fusegate run --graph $T/q.fg --mode C" "$T/q.fg" ||
        fail "the replay does not carry the fault: $(grep replay "$T/q.fg")"
    grep -q 'seed = "qwen3_block"' "$T/q.fg" || fail "the inputs do not keep the block's values"
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" run --graph "$T/q.fg" --mode C --out "$T/r.json" >"$T/out" 2>&1
    expect_rc $? 1; expect_out "FAIL"
    "$FG" run --graph "$T/q.fg" --mode C --out "$T/r.json" >"$T/out" 2>&1; expect_rc $? 0
    # the same through the C++ repro's export
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" minify tp_block_llama --out "$T/l.fg" >"$T/out" 2>&1
    expect_rc $? 1; expect_out "tp_block_llama: mismatch under --fusion default at world size 1: [0-9]+ -> [1-6] nodes"
    # a repro that passes has nothing to minify; bad input is exit 2
    "$FG" minify ffn_allreduce --repro-dir "$T/repros" --out "$T/p.fg" >"$T/out" 2>&1
    expect_rc $? 0; expect_out "ffn_allreduce passes .*nothing to minify"
    [ ! -e "$T/p.fg" ] || fail "a passing repro wrote a file"
    "$FG" minify no_such >"$T/out" 2>&1; expect_rc $? 2; expect_out "unknown repro 'no_such'"
    "$FG" minify qwen3_block --out "$T/q.txt" >"$T/out" 2>&1; expect_rc $? 2; expect_out "name an .fg file"
    "$FG" minify qwen3_block --world-size 3 >"$T/out" 2>&1; expect_rc $? 2; expect_out "world size 3"
}

case_minify_with_a_predicate() {
    # an outside judge (--predicate CMD, run as CMD FILE): nothing runs, the
    # graph shrinks while the judge says it still shows what is sought (here:
    # a linear), each smaller graph that does written as found
    g="$SRC/tests/lit/schedule/gemm_operand_with_a_padded_stride_is_copied.fg"
    "$FG" minify --graph "$g" --predicate "grep -q ' = linear('" --out "$T/p.fg" >"$T/out" 2>&1
    expect_rc $? 1; expect_out "6 -> 1 op nodes in [0-9]+ checks of the predicate"
    nodes=$(grep -cE '^  %[A-Za-z0-9_]+ = ' "$T/p.fg")
    [ "$nodes" -eq 1 ] && grep -q ' = linear(' "$T/p.fg" || fail "minified: $(cat "$T/p.fg")"
    "$FG" explain --graph "$T/p.fg" --backend cuda >"$T/out" 2>&1; expect_rc $? 0
    # the judge says no to the graph given: nothing to minify, no file
    "$FG" minify --graph "$g" --predicate false --out "$T/n.fg" >"$T/out" 2>&1
    expect_rc $? 0; expect_out "nothing to minify"
    [ ! -e "$T/n.fg" ] || fail "a graph that does not show it wrote a file"
    # a judge that cannot judge it (another exit, or past --timeout): cannot test, named
    "$FG" minify --graph "$g" --predicate "sh -c 'exit 3'" --out "$T/n.fg" >"$T/out" 2>&1
    expect_rc $? 125; expect_out "exited 3 on the graph given"
    "$FG" minify --graph "$g" --predicate "sh -c 'sleep 30'" --timeout 1 --out "$T/n.fg" >"$T/out" 2>&1
    expect_rc $? 125; expect_out "past --timeout 1 s"
    [ ! -e "$T/n.fg" ] || fail "a judge that cannot judge wrote a file"
}

case_minify_at_world_size_2() {
    # at world size 2 the ranks shrink the block in lock step, its layouts
    # kept; the result fails at world size 2 as the block did
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" minify qwen3_block --world-size 2 --out "$T/q2.fg" >"$T/out" 2>&1
    expect_rc $? 1; expect_out "qwen3_block: mismatch under --fusion default at world size 2: 58 -> [0-9]+ nodes"
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" run --graph "$T/q2.fg" --mode C --world-size 2 --out "$T/r.json" \
        >"$T/out" 2>&1
    expect_rc $? 1
    grep -q -- "--world-size 2" "$T/q2.fg" || fail "the replay lacks its world size"
}

case_bisect_names_each_stage() {
    # a seeded miscompile in each stage of the compiler is named at its
    # stage and rule, with its repro line, within stages + ceil(log2(
    # applications)) + 2 runs; with every stage off each op is a library
    # call, and the block is good
    for c in "broken_decomposition:rms_norm decompositions rms_norm 1" \
             "broken_lowering:silu lowerings pointwise silu 1" \
             "broken_codegen:simd codegen_variants vectorized loops 1" \
             "broken_fast_path:allreduce_residual_rmsnorm fast_paths fast path allreduce_residual_rmsnorm 2"; do
        set -- $c
        fault=$1; stage=$2; w=${!#}; shift 2; rule=$(echo "$*" | sed 's/ [0-9]*$//')
        fast=""; [ "$stage" = fast_paths ] || fast="--fast-paths none"
        FUSEGATE_FAULT=$fault "$FG" bisect tp_block_llama --mode C --world-size $w $fast --json "$T/b.json" \
            >"$T/out" 2>&1
        expect_rc $? 1
        expect_out "FUSEGATE_BISECT=decompositions:0,.*lowerings:0,decisions:0,codegen_variants:0: good"
        expect_out "the culprit is application [0-9]+ of [0-9]+ of $stage \(([0-9]+) runs; predicate accuracy\)"
        expect_out "  stage: $stage; rule: $rule"
        expect_out "repros/tp_block_llama.cpp:[0-9]+ \| "
        expect_out "replay, bad:  FUSEGATE_FAULT=$fault FUSEGATE_BISECT="
        python3 - "$T/b.json" "$stage" <<'PY' || fail "the search's record ($fault)"
import json, math, sys
j = json.load(open(sys.argv[1]))
assert j["result"] == "culprit" and j["subsystem"] == sys.argv[2], j
assert j["runs"] <= 7 + math.ceil(math.log2(max(1, j["applications"]))) + 2, j["runs"]
PY
    done
    # a fault naming no op or variant is bad input
    FUSEGATE_FAULT=broken_codegen:wide "$FG" run tp_block_llama >"$T/out" 2>&1; expect_rc $? 2
    expect_out "unknown fault 'broken_codegen:wide'"
    FUSEGATE_BISECT=lowerings:x "$FG" run tp_block_llama >"$T/out" 2>&1; expect_rc $? 2
    expect_out "subsystems: decompositions, fast_paths, gemm_epilogue, tp_rewrite, lowerings, decisions, codegen_variants"
}

# a small graph of four lowered ops (rms_norm decomposed: eleven
# lowerings in all) and two fusion decisions, at $T/repros/small.fg
small_graph() {
    mkdir -p "$T/repros"
    cat >"$T/repros/small.fg" <<'FG'
graph small(%x: f32[8,64], %w: f32[64]) {
  %a = rms_norm(%x, %w) {eps = 1e-06} : f32[8,64]
  %b = silu(%a) : f32[8,64]
  %c = mul(%b, %x) : f32[8,64]
  %d = add(%c, %x) : f32[8,64]
  return %d
}
FG
}

# a graph that breaks at a disabled region (mode B and C), at $T/dr.fg:
# its add (line 7) is in the second graph
disabled_graph() {
    cat >"$T/dr.fg" <<'FG'
graph dr(%x: f32[8,16]) {
  %h = relu(%x) : f32[8,16]
  disabled "log_stats" {
    %m = amax(%h) {dims = [1], keepdim = 1} : f32[8,1]
    %m2 = neg(%m) : f32[8,1]
  }
  %o = add(%h, %m2) : f32[8,16]
  return %o
}
FG
}

case_bisect_a_crash_a_hang_and_ranks() {
    # a compiler crash, a compiler hang and ranks that compile differently
    # are each bisected by their own predicate (auto: how the run as
    # configured fails) to the stage and rule, where the bad run left no
    # record: the application the good run's limit held back
    small_graph
    FUSEGATE_FAULT=crash_lowering:silu "$FG" bisect small --repro-dir "$T/repros" --mode C --json "$T/b.json" \
        >"$T/out" 2>&1
    expect_rc $? 1
    expect_out "bad \(crash: rank 0 crashed .*lowering %[0-9]+ \(silu\): internal check failed"
    expect_out "the culprit is application [0-9]+ of lowerings \([0-9]+ runs; predicate crash\)"
    expect_out "  stage: lowerings; rule: pointwise silu"
    expect_out "small.fg:3 \| %b = silu\(%a\)"
    python3 - "$T/b.json" <<'PY' || fail "the crash's search record"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["result"] == "culprit" and j["predicate"] == "crash" and j["subsystem"] == "lowerings", j
assert j["entry"]["rule"] == "pointwise silu" and j["entry"]["held_back"] is True, j["entry"]
bad = j["bad"].split(","); good = j["good"].split(",")
assert "lowerings:%d" % j["application"] in bad and "lowerings:%d" % (j["application"] - 1) in good, j
assert [s["verdict"] for s in j["steps"]][:2] == ["bad", "good"], j["steps"]
PY
    # the good replay runs, the bad one crashes
    FUSEGATE_FAULT=crash_lowering:silu FUSEGATE_BISECT="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["good"])' "$T/b.json")" \
        "$FG" run small --repro-dir "$T/repros" --mode C >"$T/out" 2>&1; expect_rc $? 0
    # judged by accuracy, a crash is no verdict
    FUSEGATE_FAULT=crash_lowering:silu "$FG" bisect small --repro-dir "$T/repros" --mode C --predicate accuracy \
        >"$T/out" 2>&1
    expect_rc $? 125; expect_out "fails another way than --predicate accuracy"
    # a hang within --timeout
    FUSEGATE_FAULT=hang_lowering:silu "$FG" bisect small --repro-dir "$T/repros" --mode C --timeout 2 \
        >"$T/out" 2>&1
    expect_rc $? 1
    expect_out "bad \(hang: rank 0 .*did not finish within 2 s"
    expect_out "predicate hang\)"; expect_out "  stage: lowerings; rule: pointwise silu"
    expect_out "replay, bad:  FUSEGATE_FAULT=hang_lowering:silu FUSEGATE_BISECT=.* --timeout 2"
    # a rank that dies whatever the compiler does: bad with every stage
    # off, and in eager (mode A) too: not the compiler
    FUSEGATE_FAULT=crash:0 "$FG" bisect small --repro-dir "$T/repros" --mode C >"$T/out" 2>&1
    expect_rc $? 1; expect_out "mode A \(eager, nothing captured\): bad \(crash"
    expect_out "bad in eager too .*: not the compiler"
    # rank 1 refuses every fusion with a reduction: the first fusion rank 0
    # makes is where they part
    FUSEGATE_FAULT=diverge_fusion:1 "$FG" bisect small --repro-dir "$T/repros" --mode C --world-size 2 >"$T/out" 2>&1
    expect_rc $? 1
    expect_out "bad \(disagree: rank 1 differs from rank 0"
    expect_out "the culprit is application 1 of decisions \([0-9]+ runs; predicate ranks\)"
    expect_out "replay, bad:  FUSEGATE_FAULT=diverge_fusion:1 FUSEGATE_BISECT=decisions:1"
}

case_bisect_mode_b_per_graph() {
    # mode B: a disabled region breaks the graph; the broken lowering of add
    # is in the second graph, named there with per-graph limits
    disabled_graph
    FUSEGATE_FAULT=broken_lowering:add "$FG" bisect --graph "$T/dr.fg" --mode B --json "$T/b.json" >"$T/out" 2>&1
    expect_rc $? 1
    expect_out "the culprit is application 1 of 1 of lowerings in graph 1 of 2 \([0-9]+ runs; predicate accuracy\)"
    expect_out "  stage: lowerings; rule: pointwise add"
    expect_out "dr.fg:7 \| %o = add\(%h, %m2\)"
    expect_out "replay, bad:  FUSEGATE_FAULT=broken_lowering:add FUSEGATE_BISECT=lowerings:0,lowerings@0:all,lowerings@1:1"
    python3 - "$T/b.json" <<'PY' || fail "the mode B search's record"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["graph"] == 1 and j["graphs"] == 2 and j["entry"]["graph"] == 1, j
PY
    # the graph's limits alone: graph 1's lowering off is good, on is bad
    FUSEGATE_FAULT=broken_lowering:add FUSEGATE_BISECT=lowerings@1:0 "$FG" run --graph "$T/dr.fg" --mode B \
        >"$T/out" 2>&1; expect_rc $? 0
    FUSEGATE_FAULT=broken_lowering:add FUSEGATE_BISECT=lowerings:0,lowerings@1:all "$FG" run --graph "$T/dr.fg" \
        --mode B >"$T/out" 2>&1; expect_rc $? 1
    FUSEGATE_BISECT=lowerings@x:1 "$FG" run --graph "$T/dr.fg" --mode B >"$T/out" 2>&1; expect_rc $? 2
    expect_out "'lowerings@x:1' is not SUBSYSTEM:K or SUBSYSTEM@GRAPH:K"
}

case_minify_breaks_and_attributes() {
    # a graph that breaks is shrunk as it runs, its breaks kept valid (a
    # disabled region in mode B; a host op the repro does not need goes);
    # then attributes an op may go without are dropped
    disabled_graph
    FUSEGATE_FAULT=broken_lowering:add "$FG" minify --graph "$T/dr.fg" --mode B --out "$T/m.fg" >"$T/out" 2>&1
    expect_rc $? 1; expect_out "mismatch under --fusion default"
    expect_out "replay: FUSEGATE_FAULT=broken_lowering:add fusegate run --graph .*m.fg --mode B"
    grep -q "= add(" "$T/m.fg" || fail "the minified graph lost the broken add"
    FUSEGATE_FAULT=broken_lowering:add "$FG" run --graph "$T/m.fg" --mode B >"$T/out" 2>&1; expect_rc $? 1
    "$FG" run --graph "$T/m.fg" --mode B >"$T/out" 2>&1; expect_rc $? 0
    # a print the failure does not need: 7 nodes, a break, down to the norm
    cp "$SRC/repros/fg/ffn_allreduce.fg" "$T/f.fg"
    line=$(grep -n "linear(%5, %w2)" "$T/f.fg" | cut -d: -f1)
    sed -i "${line}a\\  %dbg = print(%6) : bf16[4,32,128]" "$T/f.fg"
    FUSEGATE_QUIET_PRINT=1 FUSEGATE_FAULT=perturb:buf5 "$FG" minify --graph "$T/f.fg" --fast-paths none \
        --out "$T/fm.fg" >"$T/out" 2>&1
    expect_rc $? 1; expect_out "mismatch under --fusion default at world size 1: 7 -> [1-3] nodes"
    grep -q "rms_norm(" "$T/fm.fg" || fail "the minified graph lost the perturbed norm"
    # attributes: gelu's tanh approximation and the norm's eps are dropped
    cat >"$T/at.fg" <<'FG'
graph at(%x: f32[8,64], %w: f32[64]) {
  %a = rms_norm(%x, %w) {eps = 1e-05} : f32[8,64]
  %b = gelu(%a) {approximate = "tanh"} : f32[8,64]
  %c = mul(%b, %x) : f32[8,64]
  return %c
}
FG
    FUSEGATE_FAULT=broken_lowering:gelu "$FG" minify --graph "$T/at.fg" --out "$T/atm.fg" >"$T/out" 2>&1
    expect_rc $? 1
    grep -q "= gelu(" "$T/atm.fg" || fail "the minified graph lost the broken gelu"
    ! grep -q "approximate" "$T/atm.fg" || fail "gelu kept an attribute it can go without: $(cat "$T/atm.fg")"
    "$FG" minify --graph "$T/dr.fg" --mode A >"$T/out" 2>&1; expect_rc $? 2; expect_out "use --mode B or C"
}

case_bisect_kernels_and_graphs() {
    # kernel and graph regressions are judged against the golden: no
    # application turns them on, so bisect reports what changed, and
    # ci/bisect-step.sh --predicate makes only that regression bad
    small_graph
    "$FG" bless small --repro-dir "$T/repros" --golden-dir "$T/g" --mode C --world-size 1 >"$T/out" 2>&1 ||
        fail "bless"
    FUSEGATE_FAULT=refuse_fusion:reduction "$FG" bisect small --repro-dir "$T/repros" --golden-dir "$T/g" \
        --mode C --predicate kernels >"$T/out" 2>&1
    expect_rc $? 1; expect_out "kernel_count [0-9]+ -> [0-9]+"; expect_out "fused -> rejected \(fault_refused\)"
    "$FG" bisect small --repro-dir "$T/repros" --golden-dir "$T/g" --mode C --predicate graphs >"$T/out" 2>&1
    expect_rc $? 0; expect_out "good as configured \(by --predicate graphs\): nothing to bisect"
    step() { FUSEGATE="$FG" bash "$SRC/ci/bisect-step.sh" small --repro-dir "$T/repros" --golden-dir "$T/g" \
        --mode C --world-size 1 "$@" >"$T/out" 2>&1; }
    FUSEGATE_FAULT=refuse_fusion:reduction step --predicate kernels; expect_rc $? 1
    FUSEGATE_FAULT=refuse_fusion:reduction step --predicate accuracy; expect_rc $? 0
    expect_out "not by --predicate accuracy: good for it"
    FUSEGATE_FAULT=crash_lowering:silu step --predicate crash; expect_rc $? 1
    FUSEGATE_FAULT=crash_lowering:silu step --predicate=accuracy; expect_rc $? 125
    step --predicate sometimes; expect_rc $? 128; expect_out "stopping the bisection"
    # a break added: graphs is bad, kernels is not what failed
    sed -i 's|  %d = add|  %p = print(%c) : f32[8,64]\n  %d = add|' "$T/repros/small.fg"
    FUSEGATE_QUIET_PRINT=1 "$FG" bisect small --repro-dir "$T/repros" --golden-dir "$T/g" --mode C \
        --predicate graphs >"$T/out" 2>&1
    expect_rc $? 1; expect_out "graph_count 1 -> 2"; expect_out "new graph break: host callback print"
    FUSEGATE_QUIET_PRINT=1 step --predicate graphs; expect_rc $? 1
    "$FG" bisect small --repro-dir "$T/repros" --golden-dir "$T/none" --mode C --predicate kernels >"$T/out" 2>&1
    expect_rc $? 125; expect_out "there is none at"
}
