# shellcheck shell=bash
# Cases of bad input and of what a selection says: unknown names, flags and
# faults, selections that match nothing or leave something out, repro names
# that clash, the folders in use, bad input inside a rank, a backend this
# build cannot test.
# Sourced by cli_test.sh after lib.sh; each case_NAME is the case NAME.

case_unknown_repro() {
    "$FG" run no_such_block --mode C --world-size 2 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "unknown repro 'no_such_block'"; expect_out "tp_block_llama"; expect_out "tp_block_wan"
}

case_bad_flag() {
    "$FG" run tp_block_llama --mode Z >"$T/out" 2>&1; expect_rc $? 2; expect_out "unknown mode 'Z'"
}

case_repros_after_repeated_flags() {
    # a repeatable flag takes one value a time: the repro may follow it
    # (before, "--world-size 1 --world-size 2 ffn_allreduce" failed: the
    # name was taken as a third world size)
    "$FG" check --mode C --world-size 1 --world-size 2 ffn_allreduce --repro-dir "$T/repros" \
      --golden-dir "$T/golden" >"$T/out" 2>&1
    expect_rc $? 0; expect_out "^2 checks: 2 passed"
    "$FG" check --mode C --world-size 1 ffn_allreduce --mode A --repro-dir "$T/repros" --golden-dir "$T/golden" \
      >"$T/out" 2>&1
    expect_rc $? 0; expect_out "^2 checks: 2 passed"
    # a second value after one flag is a repro name now, and an unknown one
    "$FG" check --world-size 1 2 --repro-dir "$T/repros" --golden-dir "$T/golden" >"$T/out" 2>&1
    expect_rc $? 2; expect_out "unknown repro '2'"
}

case_unknown_fault() {
    FUSEGATE_FAULT=atention_fallback "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 >"$T/out" 2>&1
    expect_rc $? 2; expect_out "unknown fault 'atention_fallback'"; expect_out "attention_fallback"
}

case_profile_needs_cuda() {
    "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 --profile "$T/p.json" >"$T/out" 2>&1
    expect_rc $? 2; expect_out "--profile .*needs --backend cuda"
}

case_empty_selection() {
    # a selection that matches no check is bad input, never "0 checks" and a pass
    "$FG" check tp_block_llama --world-size 4096 --strict >"$T/out" 2>&1; expect_rc $? 2
    expect_out "matches no check"; expect_out "tp_block_llama \\(world sizes 1\\.\\.[0-9]+\\)"
}

case_selection_said() {
    # what a selection leaves out is said, never a silent pass (an audit,
    # 2026-11-27: each of these passed `check --strict` with nothing said)
    # goldens no check reads: a folder of no repro, a file of no golden's name
    mkdir -p "$T/golden/cpu/ghost_repro"; cp "$G" "$T/golden/cpu/ghost_repro/C_w1.json"
    cp "$G" "$T/golden/cpu/ffn_allreduce/notes.json"
    "$FG" check --repro-dir "$T/repros" --golden-dir "$T/golden" --mode A --world-size 1 >"$T/out" 2>&1
    expect_rc $? 1
    expect_out "ghost_repro \\(FAIL\\)"; expect_out "golden folder of no repro: no check reads it"
    expect_out "ffn_allreduce/notes.json \\(FAIL\\)"; expect_out "not a golden's name"
    # named repros only: the folder is not scanned
    check --strict; expect_rc $? 0
    rm -rf "$T/golden/cpu/ghost_repro" "$T/golden/cpu/ffn_allreduce/notes.json"
    # a named repro at a world size it does not allow, beside one it does
    "$FG" check tp_block_llama --mode A --world-size 1 --world-size 16 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "tp_block_llama runs at world sizes 1\\.\\.8, not 16"
    # ... or at none of them, beside a repro that allows them
    "$FG" check tp_block_llama ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode A \
      --world-size 16 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "tp_block_llama runs at world sizes 1\\.\\.8, none of those asked: it would not be checked"
    # a golden folder that is not there (a typo) is bad input, not all MISSING
    "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/goldne" --mode C --world-size 1 \
      >"$T/out" 2>&1; expect_rc $? 2; expect_out "--golden-dir .*/goldne: error: no such folder"
    # --require-fast-path of eager alone
    "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode A --world-size 1 \
      --require-fast-path allreduce_residual_rmsnorm >"$T/out" 2>&1; expect_rc $? 2
    expect_out "mode A \\(eager\\) runs none: add --mode B or --mode C"
    # rank 0 against world size 1: said when not in the selection, made when
    # it is, whatever the order the world sizes were given in
    # (tp_block_llama: its outputs have layouts; the committed goldens, read only)
    "$FG" check tp_block_llama --golden-dir "$SRC/golden" --mode A --world-size 2 >"$T/out" 2>&1; expect_rc $? 0
    expect_out "rank 0 not compared with world size 1: not in this selection \\(add --world-size 1\\)"
    "$FG" check tp_block_llama --golden-dir "$SRC/golden" --mode A --world-size 2 --world-size 1 >"$T/out" 2>&1
    expect_rc $? 0
    grep -q "not compared with world size 1" "$T/out" && fail "world size 1 was in the selection"
    expect_out "2 checks: 2 passed"
}

case_bad_input_before_run() {
    # bad flags and environment are exit 2, named, before any rank starts
    start=$(date +%s)
    try() { "$@" >"$T/out" 2>&1; }
    try "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode C --world-size 1 \
        --junit "$G/gate.xml"; expect_rc $? 2; expect_out "--junit .*/gate.xml: .* is not a folder"
    try "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode C --world-size 1 \
        --markdown "$T"; expect_rc $? 2; expect_out "is a folder"
    try "$FG" run tp_block_llama --world-size 3; expect_rc $? 2
    expect_out "world size 3 does not divide tp_block_llama's input w_qkv"
    try "$FG" check tp_block_llama --mode C --world-size 3; expect_rc $? 2
    try "$FG" run ffn_allreduce --repro-dir "$T/repros" --world-size 1000; expect_rc $? 2; expect_out "at most 256 ranks"
    # the range named is the one that holds (a .fg allows up to the cap), and
    # explain refuses a world size as run does
    try "$FG" run ffn_allreduce --repro-dir "$T/repros" --world-size -1; expect_rc $? 2
    expect_out "world size -1 is out of range for ffn_allreduce \(1..256: at most 256 ranks"
    try "$FG" explain tp_block_llama --world-size 3; expect_rc $? 2
    expect_out "world size 3 does not divide tp_block_llama's input w_qkv"
    try "$FG" explain tp_block_llama --world-size 9; expect_rc $? 2
    expect_out "world size 9 is out of range for tp_block_llama \(1..8\)"
    try "$FG" run ffn_allreduce --repro-dir "$T/repros" --iters 0; expect_rc $? 2; expect_out "--iters must be at least 1"
    try "$FG" run ffn_allreduce --repro-dir "$T/repros" --warmup-ms -5; expect_rc $? 2
    expect_out "--warmup-ms must be from 0 to 60000"
    FUSEGATE_LOGS=fusion,outputcode "$FG" explain --graph "$T/repros/ffn_allreduce.fg" >"$T/out" 2>&1; expect_rc $? 2
    expect_out "unknown view 'outputcode'"; expect_out "output_code"
    try "$FG" chek; expect_rc $? 2; expect_out "unknown command 'chek'; commands: list, ops, run, check"
    [ $(( $(date +%s) - start )) -lt 30 ] || fail "bad input took more than 30 s to be refused"
}

case_names_mean_one_repro() {
    # a .fg named as another repro is an error naming both, never a silent
    # substitution (a .fg named as a C++ repro ran the C++ one in its place)
    mkdir -p "$T/clash" "$T/a" "$T/b"; cp "$T/repros/ffn_allreduce.fg" "$T/clash/tp_block_llama.fg"
    "$FG" run --graph "$T/clash/tp_block_llama.fg" --mode C --world-size 1 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "tp_block_llama.fg: error: a .fg repro named tp_block_llama, as the C\+\+ repro tp_block_llama \(repros/tp_block_llama.cpp\)"
    "$FG" check tp_block_llama --repro-dir "$T/clash" --mode C --world-size 1 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "as the C\+\+ repro tp_block_llama"
    "$FG" bisect --graph "$T/clash/tp_block_llama.fg" --mode C >"$T/out" 2>&1; expect_rc $? 2
    expect_out "as the C\+\+ repro tp_block_llama"
    cp "$T/repros/ffn_allreduce.fg" "$T/a/"; cp "$T/repros/ffn_allreduce.fg" "$T/b/"
    "$FG" check ffn_allreduce --repro-dir "$T/a" --repro-dir "$T/b" --mode C --world-size 1 >"$T/out" 2>&1
    expect_rc $? 2; expect_out "$T/b/ffn_allreduce.fg: error: a .fg repro named ffn_allreduce, as the .fg repro $T/a/ffn_allreduce.fg"
    # --repro-dir takes the place of the shipped folder: a copy of a shipped
    # repro is no clash, and one folder named twice is one folder
    "$FG" check --strict ffn_allreduce --repro-dir "$T/a" --repro-dir "$T/a/" --golden-dir "$T/golden" --mode C \
      --world-size 1 >"$T/out" 2>&1; expect_rc $? 0
}

case_folders_said() {
    # the folders in use are said: --help names the defaults (this build's
    # source tree), check and bless name the golden folder they used
    "$FG" check --help >"$T/out" 2>&1; expect_rc $? 0
    expect_out "default: $SRC/golden, this build's source tree"; expect_out "in place of the shipped $SRC/repros/fg"
    check; expect_rc $? 0; expect_out "^goldens read from $T/golden\$"
    "$FG" bless ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode C --world-size 1 >"$T/out" 2>&1
    expect_rc $? 0; expect_out "golden files changed in $T/golden"
    # run from inside another fusegate tree, with the default folders: said
    mkdir -p "$T/other/harness" "$T/other/golden/cpu" "$T/other/sub"; touch "$T/other/harness/RECORD.md"
    (cd "$T/other/sub" && "$FG" check ffn_allreduce --mode A --world-size 1 >"$T/out" 2>&1)
    expect_out "note: the working folder is inside the fusegate tree $T/other, but this fusegate was built from"
    expect_out "pass --golden-dir $T/other/golden"
    # --repro-dir takes the shipped folder's place: the shipped .fg repros'
    # goldens are said to be left out, not failed as goldens of no repro
    "$FG" check --repro-dir "$T/repros" --mode A --world-size 1 >"$T/out" 2>&1; expect_rc $? 0
    expect_out "not in this selection: the goldens of the shipped .fg repros mlp_swiglu_tails, moe_mixtral, qwen3_block, sp_gather_scatter, as --repro-dir took the place of $SRC/repros/fg"
    grep -q "golden folder of no repro" "$T/out" && fail "a shipped repro's goldens were failed as a folder of no repro"
    true
}

case_rank_bad_input() {
    # bad input inside a rank stays bad input (exit 2) in check and bisect,
    # never 125, which `git bisect run` skips
    FUSEGATE_FAULT=perturb:buf999 "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 \
      >"$T/out" 2>&1; expect_rc $? 2
    FUSEGATE_FAULT=perturb:buf999 check >/dev/null 2>&1; expect_rc $? 2
    FUSEGATE_FAULT=perturb:buf999 check; expect_out "bad input"; expect_out "buf999"
    FUSEGATE_FAULT=perturb:buf999 "$FG" bisect ffn_allreduce --repro-dir "$T/repros" --mode C >"$T/out" 2>&1
    expect_rc $? 2; expect_out "buf999"
}

case_run_fails_what_a_run_must_hold() {
    # run writes the record and exits 1 when it fails what holds whatever a
    # golden says (here accuracy: every fused reduction 1.5x off)
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C \
      --world-size 1 --fast-paths none --out "$T/rec.json" >"$T/out" 2>&1; expect_rc $? 1
    expect_out "^fusegate run: FAIL: rank 0: accuracy fail: %9 "
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["ranks"][0]["accuracy"]["status"] != "pass"' \
      "$T/rec.json" || fail "the record of a failed run was not written, or says accuracy pass"
    "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 --out "$T/rec.json" >"$T/out" 2>&1
    expect_rc $? 0
}

case_layout_mistake_at_its_line() {
    # a layout that types at world size 1 and not at 2 (the router weight of
    # an MoE sharded where its readers need it whole): exit 2 at the line,
    # naming the world size and the layouts
    cat >"$T/router.fg" <<'FG'
graph router(%x: f32[2,32,16], %w_router: f32[4,16] {shard = 0}, %b: f32[4]) {
  %logits = linear(%x, %w_router) : f32[2,32,4]
  %biased = add(%logits, %b) : f32[2,32,4]
  return %biased
}
FG
    "$FG" run --graph "$T/router.fg" --mode C --world-size 1 >"$T/out" 2>&1; expect_rc $? 0
    "$FG" run --graph "$T/router.fg" --mode C --world-size 2 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "router.fg:3:13: error: add: shapes \[2,32,2\] and \[4\] do not broadcast"
    expect_out "at world size 2, where the sharded inputs are %w_router f32\[4,16\] \{shard = 0\} is f32\[2,16\] on each rank"
    # at world size 4 each rank's share is [2,32,1], which broadcasts against
    # [4]: it would type and bless; it is the same mistake
    "$FG" run --graph "$T/router.fg" --mode C --world-size 4 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "router.fg:3:13: error: add: dim 2 of %logits is 1 on each rank, 4 at world size 1, and broadcasts against 4 of %b"
    "$FG" check --repro-dir "$T/router.fg" router --mode C --world-size 4 >"$T/out" 2>&1; expect_rc $? 2
    # a layout the world size does not divide: at the input's declaration
    printf 'graph odd(%%w: f32[8],\n          %%x: f32[5,8] {shard = 0}) {\n  %%y = mul(%%x, %%w) : f32[5,8]\n  return %%y\n}\n' \
      >"$T/odd.fg"
    "$FG" run --graph "$T/odd.fg" --mode C --world-size 2 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "odd.fg:2:11: error: world size 2 does not divide odd's input x \(%x f32\[5,8\] \{shard = 0\}\) along dim 0"
}

case_memory_estimated_before_run() {
    # a run the machine cannot hold is refused before any rank starts, with
    # the estimate, not killed by the OOM killer as "signal 9"
    cat >"$T/huge.fg" <<'FG'
graph huge(%x: f32[65536,65536]) {
  %y = relu(%x) : f32[65536,65536]
  return %y
}
FG
    "$FG" explain --graph "$T/huge.fg" >/dev/null 2>&1; expect_rc $? 0
    start=$(date +%s)
    "$FG" run --graph "$T/huge.fg" --mode C --world-size 1 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "huge at world size 1 needs an estimated 96.0 GiB of host memory \(1 rank\(s\) x \(64.0 GiB of inputs"
    expect_out "this machine has \(MemTotal\)"
    "$FG" check --repro-dir "$T/huge.fg" huge --mode C --world-size 4 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "huge at world size 4 needs an estimated 384.0 GiB"
    [ $(( $(date +%s) - start )) -lt 20 ] || fail "the refusals took more than 20 s"
    # the limit is a flag; a small repro under it runs
    "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 --max-memory 0.0001 >"$T/out" 2>&1
    expect_rc $? 2; expect_out "more than the 0.0 GiB --max-memory allows"
    "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 --max-memory 4 >"$T/out" 2>&1
    expect_rc $? 0
    "$FG" run ffn_allreduce --repro-dir "$T/repros" --max-memory -1 >"$T/out" 2>&1; expect_rc $? 2
}

case_cuda_cannot_test() {
    # (registered only for a build without CUDA) no GPU backend here: cannot
    # test (125), which `git bisect run` skips, not bad input (2), which it
    # would call bad
    "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --backend cuda --mode C --world-size 1 \
      >"$T/out" 2>&1
    expect_rc $? 125; expect_out "cannot test: --backend cuda: this fusegate was built against a LibTorch without CUDA"
    "$FG" bisect ffn_allreduce --repro-dir "$T/repros" --backend cuda --mode C --world-size 1 >"$T/out" 2>&1
    expect_rc $? 125
    FUSEGATE="$FG" bash "$SRC/ci/bisect-step.sh" --golden-dir "$T/golden" ffn_allreduce --repro-dir "$T/repros" \
      --backend cuda --mode C --world-size 1 >"$T/out" 2>&1
    expect_rc $? 125; expect_out "cannot test this commit"
}

case_capability_this_cpu_lacks() {
    # ATEN_CPU_CAPABILITY asking for kernels this CPU cannot run is cannot
    # test (125), said once before any rank starts (every rank had died of
    # an illegal instruction); one it can run runs
    if grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo; then
        ATEN_CPU_CAPABILITY=avx512 "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 \
          --out "$T/r.json" >"$T/out" 2>&1; expect_rc $? 0
    else
        ATEN_CPU_CAPABILITY=avx512 "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" \
          --mode C --world-size 1 >"$T/out" 2>&1
        expect_rc $? 125
        expect_out "ATEN_CPU_CAPABILITY=avx512 asks LibTorch for kernels this CPU cannot run .*no avx512f"
        if grep -q "Illegal instruction" "$T/out"; then fail "a rank ran and died"; fi
    fi
    ATEN_CPU_CAPABILITY=default "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 \
      --out "$T/r.json" >"$T/out" 2>&1; expect_rc $? 0
}
