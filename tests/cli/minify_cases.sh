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
    # that fail the same way, within a minute; the file replays with the
    # fault (exit 1) and passes without it; a C++ repro minifies through
    # its export
    start=$(date +%s)
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" minify qwen3_block --out "$T/q.fg" >"$T/out" 2>&1
    expect_rc $? 1
    took=$(( $(date +%s) - start ))
    [ $took -le 60 ] || fail "minify took $took s (at most 60)"
    expect_out "fusegate minify: qwen3_block: mismatch under --fusion default at world size 1: 58 -> [1-6] nodes"
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
        expect_out "the culprit is application [0-9]+ of [0-9]+ of $stage \(([0-9]+) runs\)"
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
