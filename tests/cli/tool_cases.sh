# shellcheck shell=bash
# Cases of the tools around the gate: explain (DOT, --batch, residual
# placement), bisect (the decision, clean and bad input, ledger diff,
# git bisect run), fuzz, and ci/premerge.sh.
# Sourced by cli_test.sh after lib.sh; each case_NAME is the case NAME.

case_explain_dot() {
    "$FG" explain ffn_allreduce --repro-dir "$T/repros" --world-size 2 --dot "$T/dot" --svg >"$T/out" 2>&1; expect_rc $? 0
    for f in graph0.before graph0.after; do
      [ -s "$T/dot/$f.dot" ] || fail "no $f.dot"
      grep -q "<svg" "$T/dot/$f.svg" || fail "no $f.svg"
    done
    grep -q "subgraph cluster_k" "$T/dot/graph0.after.dot" || fail "after-fusion DOT has no kernel clusters"
    expect_out "1 graph\\(s\\), 0 graph break\\(s\\)"
}

case_explain_batch() {
    # explain --batch: each case framed with its exit code, its output the
    # same bytes as its own process's, a rejected case stored as its error
    # and the next case still run; bad batch input is exit 2
    "$FG" explain ffn_allreduce --repro-dir "$T/repros" --world-size 2 --mode C >"$T/alone" 2>&1; expect_rc $? 0
    "$FG" explain ffn_allreduce --repro-dir "$T/repros" --world-size 1 --mode B >"$T/alone2" 2>&1; expect_rc $? 0
    printf 'ffn_allreduce --repro-dir %s --world-size 2 --mode C\n\nno_such_repro\nffn_allreduce --repro-dir %s --world-size 1 --mode B\n--batch=-\n' \
      "$T/repros" "$T/repros" >"$T/cases"
    "$FG" explain --batch "$T/cases" >"$T/batch" 2>"$T/out"; expect_rc $? 0
    python3 - "$T/batch" "$T/alone" "$T/alone2" >"$T/out" 2>&1 <<'PY' || fail "the batch's frames"
import sys
data, alone, alone2 = (open(p, "rb").read() for p in sys.argv[1:4])
cases, i = [], 0
while i < len(data):
    nl = data.index(b"\n", i)
    head = data[i:nl].decode().split()
    assert head[0] == "#fusegate-explain-case" and int(head[1]) == len(cases), head
    n_out, n_err = int(head[5]), int(head[7])
    cases.append((int(head[3]), data[nl + 1 : nl + 1 + n_out], data[nl + 1 + n_out : nl + 1 + n_out + n_err]))
    i = nl + 1 + n_out + n_err
assert [c[0] for c in cases] == [0, 2, 0, 2], [c[0] for c in cases]  # the blank line is no case
assert cases[0][1] == alone, "case 0 differs from the same explain run alone"
assert b"unknown repro 'no_such_repro'" in cases[1][2], cases[1][2]
assert cases[2][1] == alone2, "case 2 (after a case and a rejected one) differs from the same explain run alone"
assert b"holds --batch" in cases[3][2], cases[3][2]  # no batch inside a case
print("frames ok")
PY
    expect_out "frames ok"
    # what reaches descriptor 2 directly (here the shell that finds no
    # Graphviz `dot` on an empty PATH) is the case's too, not the batch's
    printf 'ffn_allreduce --repro-dir %s --world-size 1 --mode C --dot %s --svg\nno_such_repro\n' \
      "$T/repros" "$T/dot" >"$T/cases"
    PATH="$T/no_bin" "$FG" explain --batch "$T/cases" >"$T/batch" 2>"$T/batch_err"; expect_rc $? 0
    python3 - "$T/batch" "$T/batch_err" >"$T/out" 2>&1 <<'PY' || fail "descriptor-level output of a case"
import sys
data, own_err = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
head, rest = data.split(b"\n", 1)
h = head.split()
assert h[0] == b"#fusegate-explain-case" and h[3] == b"2", head  # graphviz failed: exit 2
n_out, n_err = int(h[5]), int(h[7])
err = rest[n_out : n_out + n_err]
assert b"not found" in err and b"graphviz `dot` failed" in err, err
assert rest[n_out + n_err :].startswith(b"#fusegate-explain-case 1 exit 2 "), rest[n_out + n_err :][:80]
assert b"not found" not in own_err, own_err
print("descriptors ok")
PY
    expect_out "descriptors ok"
    "$FG" explain --batch - --world-size 2 </dev/null >"$T/out" 2>&1; expect_rc $? 2
    expect_out "--world-size goes on each case's line"
    "$FG" explain --batch "$T/none" >"$T/out" 2>&1; expect_rc $? 2
    expect_out "cannot be read"
    "$FG" explain --batch "$T" >"$T/out" 2>&1; expect_rc $? 2
    expect_out "is a folder"
}

case_explain_residual_placement() {
    # explain compiles what a check runs: each TP residual hoist as the
    # golden's residual_placement places it; without a table, every hoist
    mkdir -p "$T/g"
    "$FG" explain tp_block_llama_h2048 --backend cuda --fusion max-autotune --golden-dir "$T/g" >"$T/out" 2>&1
    expect_rc $? 0
    [ "$(grep -c 'fused: residual add moved in front of the all-reduce' "$T/out")" = 2 ] || fail "not two hoists"
    grep -q "residual placement as the golden" "$T/out" && fail "a placement note without a golden"
    golden="$T/g/cuda/tp_block_llama_h2048/C_w1.max-autotune.json"
    mkdir -p "$(dirname "$golden")"
    python3 - "$T/out" "$SRC/golden/cuda/tp_block_llama_h2048/C_w1.max-autotune.json" "$golden" <<'PY'
import json, re, sys
sites = re.findall(r"round \d+ (%\d+\(linear\) \+ %\d+\(add\)) score=\S+ \S+ \S+ \S+ fused: residual add moved", open(sys.argv[1]).read())
assert len(sites) == 2, sites
r = json.load(open(sys.argv[2]))
for k in r["ranks"]:
    k["residual_placement"] = [{"site": sites[0], "placement": "gemm"}, {"site": sites[1], "placement": "apart"}]
open(sys.argv[3], "w").write(json.dumps(r, indent=2, sort_keys=True) + "\n")
PY
    "$FG" explain tp_block_llama_h2048 --backend cuda --fusion max-autotune --golden-dir "$T/g" >"$T/out" 2>&1
    expect_rc $? 0
    expect_out "note: residual placement as the golden cuda/tp_block_llama_h2048/C_w1.max-autotune.json records it: %[0-9]+\(linear\) \+ %[0-9]+\(add\) gemm, %[0-9]+\(linear\) \+ %[0-9]+\(add\) apart"
    [ "$(grep -c 'fused: residual add moved in front of the all-reduce' "$T/out")" = 1 ] || fail "not one hoist left"
    expect_out "rejected: residual add stays after the all-reduce, in the next kernel"
    expect_out "cuda_poi_fused_add"
    # a table of another form: said, and every hoist shown
    sed -i 's/"apart"/"later"/' "$golden"
    "$FG" explain tp_block_llama_h2048 --backend cuda --fusion max-autotune --golden-dir "$T/g" >"$T/out" 2>&1
    expect_rc $? 0
    expect_out "note: residual placement not read from the golden \(.*expected \"gemm\" or \"apart\""
    [ "$(grep -c 'fused: residual add moved in front of the all-reduce' "$T/out")" = 2 ] || fail "not two hoists"
}

case_bisect_names_the_decision() {
    # a simulated miscompile of one node where fusion puts it in a fused
    # kernel: bisect names the decision that fused it, within
    # subsystems + ceil(log2(applications)) + 2 runs, with replay commands
    for c in "tp_block_llama default buf4" "tp_block_llama default buf12" "tp_block_wan default buf16" \
             "tp_block_wan default buf19" "tp_block_llama max-autotune buf10" "tp_block_wan max-autotune buf19"; do
      set -- $c
      FUSEGATE_FAULT=perturb:$3 "$FG" bisect $1 --mode C --world-size 2 --fusion $2 --fast-paths none \
        --json "$T/b.json" >"$T/out" 2>&1
      expect_rc $? 1
      expect_out "the culprit is application [0-9]+ of [0-9]+ of decisions"
      # (each carries the fault the search saw)
      expect_out "replay, good: FUSEGATE_FAULT=perturb:$3 FUSEGATE_BISECT=.*decisions:[0-9]+(,codegen_variants:0)? fusegate run $1"
      expect_out "replay, bad:  FUSEGATE_FAULT=perturb:$3 FUSEGATE_BISECT=.*decisions:[0-9]+(,codegen_variants:0)? fusegate run $1"
      expect_out "kernel: .*nodes:.* $3( |\$)"
      # the repro lines of the fused nodes, and their text
      expect_out "repro source: repros/$1.cpp:[0-9]+"
      expect_out "^    repros/$1.cpp:[0-9]+ \| .*[a-z_]+\("
      python3 - "$T/b.json" "$3" <<'PY' || fail "$c: the culprit does not fuse $3, or too many runs"
import json, math, sys
j = json.load(open(sys.argv[1])); node = sys.argv[2]
assert j["subsystem"] == "decisions", j
groups = [p for side in j["entry"]["nodes"] for p in side.split("+")]
assert node in groups, (node, j["entry"])
assert j["entry"]["outcome"] == "fused"
assert j["entry"]["source"] and all(s.startswith("repros/") for s in j["entry"]["source"]), j["entry"]
assert j["runs"] <= 4 + math.ceil(math.log2(max(1, j["applications"]))) + 2, j["runs"]
PY
    done
}

case_bisect_clean_and_bad_input() {
    "$FG" bisect tp_block_llama --mode C --world-size 2 >"$T/out" 2>&1; expect_rc $? 0
    expect_out "nothing to bisect"
    FUSEGATE_FAULT=perturb:buf999 "$FG" run tp_block_llama --mode C --world-size 1 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "has no scheduler node buf999"
    FUSEGATE_BISECT=decisions:x "$FG" run tp_block_llama >"$T/out" 2>&1; expect_rc $? 2
    expect_out "FUSEGATE_BISECT: 'decisions:x' is not SUBSYSTEM:K"
    # a repro with a graph break: limits count per graph (SUBSYSTEM@GRAPH),
    # and the culprit is named in its graph (buf5: the second graph's fused
    # norm; the first graph's fusions stay on)
    line=$(grep -n "linear(%5, %w2)" "$T/repros/ffn_allreduce.fg" | cut -d: -f1)
    sed -i "${line}a\\  %dbg = print(%6) : bf16[4,32,128]" "$T/repros/ffn_allreduce.fg"
    FUSEGATE_QUIET_PRINT=1 FUSEGATE_FAULT=perturb:buf5 "$FG" bisect ffn_allreduce --repro-dir "$T/repros" --mode C \
      --world-size 1 --fast-paths none >"$T/out" 2>&1
    expect_rc $? 1; expect_out "the culprit is application 1 of 1 of decisions in graph 1 of 2"
    expect_out "buf4\+buf5 score .*\(graph 1, round 1\)"
    expect_out "replay, bad:  .*FUSEGATE_BISECT=decisions:0,decisions@1:1(,codegen_variants:0)? fusegate run ffn_allreduce"
    "$FG" bisect tp_block_llama --predicate sometimes >"$T/out" 2>&1; expect_rc $? 2
    expect_out "--predicate: 'sometimes' is not one of auto, accuracy, crash, hang, ranks, kernels, graphs"
    "$FG" bisect tp_block_llama --mode A >"$T/out" 2>&1; expect_rc $? 2; expect_out "use --mode B or C"
}

case_bisect_ledger_diff() {
    # a changed fusion rule: outputs right, one kernel more than the golden;
    # not a search: the decisions that changed are the report
    golden="$SRC/golden/$BACKEND/tp_block_llama/C_w$WORLD.json"
    want=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ranks'][0]['kernel_count'])" "$golden") \
      || fail "no golden $golden"
    FUSEGATE_FAULT=refuse_fusion:reduction "$FG" bisect tp_block_llama --mode C --world-size "$WORLD" \
      --backend "$BACKEND" >"$T/out" 2>&1
    expect_rc $? 1; expect_out "regressed against .*$BACKEND/tp_block_llama/C_w$WORLD.json: not a search"
    expect_out "kernel_count $want -> $((want + 1))\b"
    # the changed decision with its nodes, score, reason and repro line
    expect_out "buf2\+buf4 score \(2, 0, [0-9]+, -1\) at repros/tp_block_llama.cpp:[0-9]+ \(attention\): fused -> rejected \(fault_refused\)"
}

case_git_bisect_run() {
    # a real `git bisect run` over a scripted history of a .fg repro, with the
    # goldens outside the tree: the commit that adds a graph break is found
    R="$T/hist"; mkdir -p "$R/repros"
    git -C "$R" init -q
    g() { git -C "$R" -c user.name=t -c user.email=t@t "$@"; }
    cp "$SRC/repros/fg/ffn_allreduce.fg" "$R/repros/hist_block.fg"
    g add -A; g commit -qm one
    # its golden, blessed at the known-good commit and kept outside the tree
    (cd "$R" && "$FG" bless hist_block --repro-dir repros --golden-dir "$T/golden" --mode C --world-size 1 \
      --backend "$BACKEND") \
      >"$T/out" 2>&1 || fail "bless at the good commit"
    echo "# a comment" >>"$R/repros/hist_block.fg"; g commit -qam two
    line=$(grep -n "all_reduce" "$R/repros/hist_block.fg" | cut -d: -f1)
    sed -i "${line}a\\  %dbg = print(%7) : bf16[4,32,128]" "$R/repros/hist_block.fg"; g commit -qam "three: a print"
    first=$(git -C "$R" rev-parse HEAD)
    echo "# another" >>"$R/repros/hist_block.fg"; g commit -qam four
    # a commit without the repro cannot be tested: skipped, not "bad"
    git -C "$R" rm -q repros/hist_block.fg; g commit -qm "five: repro gone"
    args=(hist_block --repro-dir repros --golden-dir "$T/golden" --mode C --world-size 1 --backend "$BACKEND")
    (cd "$R" && g bisect start HEAD~1 HEAD~4 >/dev/null &&
      FUSEGATE="$FG" git bisect run bash "$SRC/ci/bisect-step.sh" "${args[@]}") >"$T/out" 2>&1
    expect_out "$first is the first bad commit"
    expect_out "three: a print"
    (cd "$R" && git bisect reset >/dev/null 2>&1; FUSEGATE="$FG" bash "$SRC/ci/bisect-step.sh" "${args[@]}") \
      >"$T/out" 2>&1
    # (the commit has no repros folder left, and no step of a bisection was
    # judged: bad input, which stops a bisection, with fusegate's reason)
    expect_rc $? 128; expect_out "--repro-dir repros: error: no such folder"; expect_out "stopping the bisection"
    # within a bisection whose steps were judged, the same is this commit
    # lacking the repro: skipped
    five=$(git -C "$R" rev-parse HEAD)
    (cd "$R" && g bisect start HEAD~1 HEAD~4 >/dev/null &&
      FUSEGATE="$FG" bash "$SRC/ci/bisect-step.sh" "${args[@]}" >/dev/null 2>&1; git checkout -q "$five" &&
      FUSEGATE="$FG" bash "$SRC/ci/bisect-step.sh" "${args[@]}") >"$T/out" 2>&1
    rc=$?
    (cd "$R" && git bisect reset >/dev/null 2>&1)
    expect_rc $rc 125; expect_out "it lacks what the command names"
    # a typo in the repro's name stops `git bisect run` at its first step,
    # with the reason, where it had skipped every commit
    typo=(hist_blok --repro-dir repros --golden-dir "$T/golden" --mode C --world-size 1 --backend "$BACKEND")
    (cd "$R" && g bisect start HEAD~1 HEAD~4 >/dev/null &&
      FUSEGATE="$FG" git bisect run bash "$SRC/ci/bisect-step.sh" "${typo[@]}") >"$T/out" 2>&1
    rc=$?
    (cd "$R" && git bisect reset >/dev/null 2>&1)
    [ $rc -ne 0 ] || fail "git bisect run went on past a typo"
    expect_out "unknown repro 'hist_blok'"; expect_out "stopping the bisection"
    if grep -q "first bad commit" "$T/out"; then fail "a typo named a first bad commit: $(cat "$T/out")"; fi
}

case_fuzz_finds_broken_rule() {
    # a broken fusion rule (every fused reduction 1.5x off) is found within
    # 60 s, minimized to a .fg of at most 6 nodes, replayed by run --graph
    # and bisected to the fusion decision
    start=$(date +%s)
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" fuzz --seconds 60 --seed 1 --findings "$T/found" >"$T/out" 2>&1
    expect_rc $? 1
    [ $(( $(date +%s) - start )) -le 90 ] || fail "the fuzzer took over 90 s (60 to find, the rest to minimize)"
    expect_out "1 findings"
    f=$(ls "$T"/found/*.fg 2>/dev/null | head -1)
    [ -n "$f" ] || fail "no finding file in $T/found"
    grep -q "^# fusegate fuzz finding: mismatch under --fusion default" "$f" || fail "finding header: $(head -3 "$f")"
    # the replay carries the fault that made it
    grep -q "^# replay: FUSEGATE_FAULT=broken_fusion:reduction fusegate run --graph" "$f" || fail "replay: $(grep replay "$f")"
    nodes=$(grep -cE '^  %[A-Za-z0-9_]+ = ' "$f")
    [ "$nodes" -ge 1 ] && [ "$nodes" -le 6 ] || fail "the finding has $nodes nodes (at most 6): $(cat "$f")"
    grep -qE '^  %[A-Za-z0-9_]+ = (sum|mean|var|amax|softmax|rms_norm|layer_norm)\(' "$f" || fail "no reduction in $(cat "$f")"
    # the broken rule fails accuracy: run writes the record and exits 1
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" run --graph "$f" --mode C --out "$T/bad.json" >/dev/null 2>&1
    expect_rc $? 1
    "$FG" run --graph "$f" --mode C --out "$T/good.json" >/dev/null 2>&1 || fail "run --graph failed without the fault"
    python3 - "$T/bad.json" "$T/good.json" <<'PY' || fail "run --graph does not replay the finding"
import json, sys
bad, good = (json.load(open(p)) for p in sys.argv[1:])
assert bad["ranks"][0]["accuracy"]["status"] == "fail", bad["ranks"][0]["accuracy"]
assert good["ranks"][0]["accuracy"]["status"] == "pass", good["ranks"][0]["accuracy"]
PY
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" bisect --graph "$f" --mode C >"$T/out" 2>&1; expect_rc $? 1
    expect_out "the culprit is application [0-9]+ of [0-9]+ of decisions"
    expect_out "replay, bad: .* --repro-dir"
    # without the fault: a clean run, its summary and JSON
    "$FG" fuzz --graphs 12 --seed 7 --fusion all --findings "$T/none" --json "$T/s.json" >"$T/out" 2>&1; expect_rc $? 0
    expect_out "12 graphs in .* 0 findings"
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['graphs']==12 and not j['findings'] and j['fusion']=='default,max-autotune,none', j" \
      "$T/s.json" || fail "fuzz --json"
    [ ! -e "$T/none" ] || [ -z "$(ls "$T/none")" ] || fail "a clean run wrote findings"
    # bad input
    "$FG" fuzz --seconds 0 >"$T/out" 2>&1; expect_rc $? 2; expect_out "needs --seconds N or --graphs N"
    # a duration that is no number of seconds, a seed with a sign or past
    # 2^64-1: bad input, never 125 nor a seed wrapped around
    "$FG" fuzz --seconds nan >"$T/out" 2>&1; expect_rc $? 2; expect_out "--seconds nan: a number of seconds, 0 or more"
    "$FG" fuzz --seconds -3 >"$T/out" 2>&1; expect_rc $? 2; expect_out "--seconds -3: a number of seconds"
    for s in -1 18446744073709551616 1e3 0x10; do
      "$FG" fuzz --graphs 1 --seed "$s" >"$T/out" 2>&1; expect_rc $? 2
      expect_out "--seed $s: a whole number from 0 to 18446744073709551615"
    done
    "$FG" fuzz --graphs 1 --fusion fastest >"$T/out" 2>&1; expect_rc $? 2
    "$FG" run --graph "$T/missing.fg" >"$T/out" 2>&1; expect_rc $? 2; expect_out "not an .fg file"
}

case_fuzz_judges_one_graph() {
    # fuzz --graph judges a written graph as it judges a generated one, once
    # at each world size: an f16 product of two values that cancel exactly
    # in fp64 and eager but not in a kernel that keeps one of them unrounded
    # (a cuda finding, seed 782047) is no finding; a broken fusion rule on a
    # fused reduction still is
    cat >"$T/rounding.fg" <<'FG'
graph rounding(%x1: f16[64,1], %x2: f16[1,1]) {
  %c = full() {value = 24.0} : f16[]
  %6 = mul(%x1, %x2) : f16[64,1]
  %7 = sub(%x2, %6) : f16[64,1]
  %9 = mul(%7, %c) : f16[64,1]
  %11 = mean(%9) {dims = [-1], keepdim = 1} : f16[64,1]
  %12 = sub(%9, %11) : f16[64,1]
  %15 = mul(%12, %11) : f16[64,1]
  return %15
}
FG
    "$FG" fuzz --graph "$T/rounding.fg" --fusion all --world-size 1,2 --findings "$T/r" --json "$T/r.json" >"$T/out" 2>&1
    expect_rc $? 0; expect_out "2 graphs in .* 0 findings"
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['graphs']==2 and j['graphs_by_world']=={'1':1,'2':1} and not j['findings'], j" \
      "$T/r.json" || fail "fuzz --graph --json"
    cat >"$T/fused.fg" <<'FG'
graph fused(%x: f32[8,32]) {
  %1 = relu(%x) : f32[8,32]
  %2 = sum(%1) {dims = [1], keepdim = 1} : f32[8,1]
  %3 = sub(%x, %2) : f32[8,32]
  return %3
}
FG
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" fuzz --graph "$T/fused.fg" --findings "$T/b" >"$T/out" 2>&1
    expect_rc $? 1; expect_out "mismatch under --fusion default"
    f=$(ls "$T"/b/*.fg 2>/dev/null | head -1)
    [ -n "$f" ] && grep -q "^# from fusegate fuzz --graph fused.fg" "$f" || fail "finding file: $(head -4 "$f" 2>&1)"
    # bad input: exit 2, naming the file (and the line)
    "$FG" fuzz --graph "$T/none.fg" >"$T/out" 2>&1; expect_rc $? 2; expect_out "--graph .*none.fg: not an .fg file"
    printf 'graph g(%%x: f32[4]) {\n  %%1 = relu(%%y) : f32[4]\n  return %%1\n}\n' >"$T/bad.fg"
    "$FG" fuzz --graph "$T/bad.fg" >"$T/out" 2>&1; expect_rc $? 2; expect_out "bad.fg:2"
    "$FG" fuzz --graph "$T/fused.fg" --seed 3 >"$T/out" 2>&1; expect_rc $? 2; expect_out "excludes"
}

case_scratch_under_tmpdir() {
    # scratch folders are made under $TMPDIR, removed on SIGINT and SIGTERM,
    # and after a SIGKILL swept by the next fusegate, never while their
    # owner lives (a fuzz run's, while a run starts and sweeps beside it)
    mkdir -p "$T/tmp"
    folder() {  # the scratch folder named $1* under $T/tmp, once it exists
      for i in $(seq 1 300); do
        d=$(ls -d "$T"/tmp/$1* 2>/dev/null | head -1); [ -n "$d" ] && { echo "$d"; return 0; }; sleep 0.1
      done
      return 1
    }
    for sig in INT TERM; do
      TMPDIR="$T/tmp" "$FG" fuzz --seconds 120 --seed 1 --world-size 2 --findings "$T/f_$sig" >"$T/out" 2>&1 &
      fp=$!
      d=$(folder fusegate-fuzz-) || fail "fuzz made no scratch folder under \$TMPDIR"
      sleep 1; kill -$sig $fp; wait $fp; rc=$?
      [ $rc -ge 128 ] || fail "fuzz stopped by SIG$sig exited $rc"
      [ ! -e "$d" ] || fail "SIG$sig left the fuzz scratch folder $d"
      if pgrep -f "_fuzzjob --dir $d" >/dev/null; then fail "SIG$sig left fuzz jobs"; fi
    done
    TMPDIR="$T/tmp" "$FG" fuzz --seconds 120 --seed 1 --world-size 2 --findings "$T/f_kill" >"$T/out" 2>&1 &
    fp=$!
    killed=$(folder fusegate-fuzz-) || fail "fuzz made no scratch folder"
    sleep 1; kill -KILL $fp; wait $fp; sleep 0.5
    [ -e "$killed" ] || fail "a SIGKILL left nothing to sweep: the test checks nothing"
    TMPDIR="$T/tmp" "$FG" fuzz --seconds 120 --seed 2 --world-size 2 --findings "$T/f_live" >"$T/out" 2>&1 &
    live_pid=$!
    for i in $(seq 1 300); do
      live=$(ls -d "$T"/tmp/fusegate-fuzz-* 2>/dev/null | grep -v "^$killed\$" | head -1); [ -n "$live" ] && break; sleep 0.1
    done
    [ -n "$live" ] || fail "the second fuzz made no scratch folder"
    TMPDIR="$T/tmp" "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 >"$T/out" 2>&1
    expect_rc $? 0
    [ ! -e "$killed" ] || fail "the run did not sweep $killed, whose fuzz was killed"
    [ -e "$live" ] || fail "the run's sweep removed $live, the folder of a live fuzz run"
    kill -TERM $live_pid; wait $live_pid
    # (a host compiler killed with its fuzz job may leave its own cc*.s there)
    [ -z "$(ls "$T/tmp" | grep fusegate-)" ] || fail "left under \$TMPDIR: $(ls "$T/tmp")"
}

case_strided_view_into_a_fast_path() {
    # the fuzzer's two-node graph: a transposed bf16[128,1,2] into an
    # all-reduce whose result is unused; allreduce_sum's kernel takes
    # row-major inputs, so it reads a copy; every policy at world size 2
    cat >"$T/contig.fg" <<'FG'
graph contig(%x: bf16[128,1,2]) {
  %t = transpose(%x) {dim0 = 0, dim1 = 2} : bf16[2,1,128]
  %r = all_reduce(%t) {reduce_op = "sum"} : bf16[2,1,128]
  return %x
}
FG
    for p in default max-autotune none; do
      "$FG" run --graph "$T/contig.fg" --mode C --world-size 2 --fusion $p --backend ${BACKEND:-cpu} \
        --out "$T/r.json" >"$T/out" 2>&1; expect_rc $? 0
    done
    "$FG" explain --graph "$T/contig.fg" --fusion max-autotune --fast-paths allreduce_sum >"$T/out" 2>&1
    expect_rc $? 0
}

case_fuzz_ranks_and_jobs() {
    # world size 2: the same broken rule is found on both ranks and shrunk in
    # lock step; a rank that compiles otherwise is a rank disagreement; a
    # job whose rank dies or hangs is a finding naming its graph; --jobs and
    # a list of world sizes split the graphs
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" fuzz --seconds 60 --seed 1 --world-size 2 --findings "$T/w2" \
      >"$T/out" 2>&1; expect_rc $? 1
    expect_out "mismatch under --fusion default: rank 0: "
    f=$(ls "$T"/w2/*.fg 2>/dev/null | head -1)
    [ -n "$f" ] || fail "no finding file in $T/w2"
    grep -q "^# fusegate fuzz finding: mismatch under --fusion default at world size 2" "$f" || fail "header: $(head -2 "$f")"
    grep -q "^# replay: FUSEGATE_FAULT=broken_fusion:reduction fusegate run --graph .* --world-size 2" "$f" ||
      fail "replay line: $(grep replay "$f")"
    nodes=$(grep -cE '^  %[A-Za-z0-9_]+ = ' "$f")
    [ "$nodes" -ge 1 ] && [ "$nodes" -le 6 ] || fail "the finding has $nodes nodes (at most 6): $(cat "$f")"
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" run --graph "$f" --mode C --world-size 2 --out "$T/bad.json" \
      >/dev/null 2>&1; expect_rc $? 1
    python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['ranks']; assert len(r)==2 and all(k['accuracy']['status']=='fail' for k in r), r" \
      "$T/bad.json" || fail "run --graph --world-size 2 does not replay the finding"
    FUSEGATE_FAULT=diverge_fusion:1 "$FG" fuzz --seconds 60 --seed 1 --world-size 2 --findings "$T/dv" >"$T/out" 2>&1
    expect_rc $? 1
    expect_out "rank disagreement under --fusion default: .*rank 1 differs from rank 0 at decision"
    FUSEGATE_FAULT=crash:1 "$FG" fuzz --graphs 4 --seed 1 --world-size 2 --findings "$T/cr" >"$T/out" 2>&1
    expect_rc $? 1
    expect_out "fuzz job 0 rank 1 was killed by signal 6 .* on graph 0 \(seed 1\)"
    # the dead job's graph is written, and the job goes on at its next graph
    FUSEGATE_FAULT=crash_at:3 "$FG" fuzz --graphs 10 --seed 1 --jobs 2 --findings "$T/ca" --json "$T/ca.json" \
      >"$T/out" 2>&1; expect_rc $? 1
    expect_out "fuzz job 1 rank 0 was killed by signal 6 .* on graph 3 \(seed 4\)"
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); f=j['findings']; assert j['graphs']==9 and len(f)==1 and f[0]['kind']=='crash' and f[0]['seed']==4, j" \
      "$T/ca.json" || fail "a job that died: 9 of 10 graphs, one crash finding"
    f=$(ls "$T"/ca/*.fg 2>/dev/null | head -1)
    [ -n "$f" ] && grep -q "^# from graph 3 of fusegate fuzz --seed 1 (seed 4; not minimized)" "$f" || fail "crash file: $(ls "$T/ca")"
    "$FG" run --graph "$f" --mode C --out "$T/ca-run.json" >/dev/null 2>&1 || fail "the crash finding does not replay: $(head -3 "$f")"
    FUSEGATE_FAULT=hang:0 "$FG" fuzz --graphs 6 --seed 1 --jobs 2 --timeout 2 --findings "$T/hg" --json "$T/h.json" \
      >"$T/out" 2>&1; expect_rc $? 1
    expect_out "fuzz job 0 rank 0 was silent for 6 s on graph 0 \(seed 1\)"
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); k=[f['kind'] for f in j['findings']]; assert k==['hang','hang'], j" \
      "$T/h.json" || fail "both jobs hang: two findings"
    # clean: both world sizes, two jobs a world size; the counts add up
    "$FG" fuzz --graphs 8 --seed 7 --world-size 1,2 --jobs 4 --fusion all --findings "$T/none" --json "$T/s.json" \
      >"$T/out" 2>&1; expect_rc $? 0
    expect_out "8 graphs in .*4 at world size 1, 4 at world size 2.* 0 findings"
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['graphs']==8 and j['graphs_by_world']=={'1':4,'2':4} and j['jobs']==4 and j['world_sizes']==[1,2] and not j['findings'], j" \
      "$T/s.json" || fail "fuzz --json with jobs"
    "$FG" fuzz --graphs 2 --world-size 1,2 --jobs 1 >"$T/out" 2>&1; expect_rc $? 2; expect_out "at least one job a world size"
    "$FG" fuzz --graphs 2 --world-size 2x >"$T/out" 2>&1; expect_rc $? 2; expect_out "each world size must be 1..8"
    "$FG" fuzz --graphs 2 --fast-paths bogus >"$T/out" 2>&1; expect_rc $? 2; expect_out "unknown fast path 'bogus'"
}

case_premerge_without_origin() {
    # ci/premerge.sh after a compiler change in a clone with no origin/main:
    # every repro that runs on the cpu, as fusegate lists them (a name
    # pattern let GPU-sized repros through: exit 2 after a second)
    R="$T/pm"; mkdir -p "$R/ci" "$R/fusion"
    cp "$SRC/ci/premerge.sh" "$R/ci/"; echo "// a" >"$R/fusion/x.cpp"
    git -C "$R" init -q; git -C "$R" -c user.name=t -c user.email=t@t add -A
    git -C "$R" -c user.name=t -c user.email=t@t commit -qm one
    echo "// b" >>"$R/fusion/x.cpp"
    FUSEGATE="$FG" bash "$R/ci/premerge.sh" >"$T/out" 2>&1; expect_rc $? 0
    expect_out "no origin/main to diff against"
    expect_out "checking at world size 2: $("$FG" list --backend cpu | cut -f1 | tr '\n' ' ' | sed 's/ $//')\$"
    grep -q "_h2048\|_h4096" "$T/out" && fail "premerge selected a GPU-sized repro"
    expect_out "checks: [0-9]+ passed, 0 failed"
}

case_fuzz_emit_and_save_tensors() {
    # fuzz --emit writes the generator's graphs and runs nothing: the same
    # seeds give the same files, and each is a graph fusegate reads
    "$FG" fuzz --emit "$T/e1" --graphs 3 --seed 5 >"$T/out" 2>&1
    expect_rc $? 0; expect_out "wrote 3 graphs \(seeds 5 to 7\)"
    "$FG" fuzz --emit "$T/e2" --graphs 3 --seed 5 >"$T/out" 2>&1; expect_rc $? 0
    for s in 5 6 7; do
        [ -s "$T/e1/fuzz_$s.fg" ] || fail "fuzz_$s.fg missing"
        cmp -s "$T/e1/fuzz_$s.fg" "$T/e2/fuzz_$s.fg" || fail "seed $s gave two graphs"
        "$FG" explain --graph "$T/e1/fuzz_$s.fg" >"$T/out" 2>&1; expect_rc $? 0
    done
    "$FG" fuzz --emit "$T/e3" --graphs 1 --seed 6 >/dev/null 2>&1
    cmp -s "$T/e1/fuzz_6.fg" "$T/e3/fuzz_6.fg" || fail "seed 6 alone differs from seed 6 of a run from 5"
    "$FG" fuzz --emit "$T/e4" >"$T/out" 2>&1; expect_rc $? 2; expect_out "needs --graphs N"
    "$FG" fuzz --emit "$T/e4" --graphs 2 --world-size 1,2 >"$T/out" 2>&1; expect_rc $? 2; expect_out "one world size"
    "$FG" fuzz --emit "$T/e1/fuzz_5.fg" --graphs 1 >"$T/out" 2>&1; expect_rc $? 2; expect_out "is not a folder"
    # run --save-tensors: the inputs as made and the outputs, named as the
    # .fg names them; NaN where eager has NaN is no accuracy failure
    cat >"$T/nan.fg" <<'FG'
graph nan(%x: f32[4,32], %y: bf16[4,32]) {
  %1 = sqrt(%x) : f32[4,32]
  %2 = relu(%1) : f32[4,32]
  %3 = mul(%y, %y) : bf16[4,32]
  return %2, %3
}
FG
    "$FG" run --graph "$T/nan.fg" --iters 1 --save-tensors "$T/t" --out "$T/rec.json" >"$T/out" 2>&1; expect_rc $? 0
    python3 - "$T" <<'PY' || fail "saved tensors"
import json, struct, sys
t = sys.argv[1] + "/t/"
j = json.load(open(t + "tensors.json"))
assert [(e["name"], e["dtype"], e["shape"]) for e in j["inputs"]] == [("x", "f32", [4, 32]), ("y", "bf16", [4, 32])], j
assert [(e["name"], e["dtype"]) for e in j["outputs"]] == [("2", "f32"), ("3", "bf16")] or \
       [(e["name"], e["dtype"]) for e in j["outputs"]] == [("%2", "f32"), ("%3", "bf16")], j
x = struct.unpack("128f", open(t + j["inputs"][0]["file"], "rb").read())
o = struct.unpack("128f", open(t + j["outputs"][0]["file"], "rb").read())
nan = [v != v for v in o]
assert sum(nan) > 10 and nan == [v < 0 for v in x], "NaN where x < 0"
assert all(abs(a - b ** 0.5) < 1e-6 for a, b in zip(o, x) if b >= 0)
assert len(open(t + j["outputs"][1]["file"], "rb").read()) == 256
r = json.load(open(sys.argv[1] + "/rec.json"))
acc = r["ranks"][0]["accuracy"]
assert acc["status"] == "pass" and acc["outputs"][0]["rmse_vs_fp64"] is not None, acc
PY
    "$FG" run --graph "$T/nan.fg" --save-tensors "$T/no/such/t" >"$T/out" 2>&1; expect_rc $? 2
    expect_out "--save-tensors .*does not exist"
}

case_front_hands_over() {
    # fusegate is the front: explain, ops and list run there without
    # LibTorch, with fusegate-full's output to the byte; every other command
    # line is fusegate-full's (its exit code and message); without
    # fusegate-full beside it, cannot test
    full="$(dirname "$FG")/fusegate-full"
    [ -x "$full" ] || fail "no fusegate-full beside $FG"
    deps="$(ldd "$FG")"; grep -q libtorch <<<"$deps" && fail "the front links LibTorch"
    deps="$(ldd "$full")"; grep -q libtorch <<<"$deps" || fail "fusegate-full does not link LibTorch"
    for args in "ffn_allreduce --repro-dir $T/repros --world-size 2 --mode C" \
                "--graph $T/repros/ffn_allreduce.fg --backend cuda --fusion max-autotune"; do
      # shellcheck disable=SC2086
      "$FG" explain $args >"$T/front" 2>&1; expect_rc $? 0
      # shellcheck disable=SC2086
      "$full" explain $args >"$T/whole" 2>&1; expect_rc $? 0
      cmp -s "$T/front" "$T/whole" || fail "explain $args: the front's output differs from fusegate-full's"
    done
    "$FG" list >"$T/front" 2>&1; "$full" list >"$T/whole" 2>&1
    cmp -s "$T/front" "$T/whole" || fail "list differs"
    "$FG" ops where >"$T/front" 2>&1; "$full" ops where >"$T/whole" 2>&1
    cmp -s "$T/front" "$T/whole" || fail "ops differs"
    "$FG" run no_such_repro >"$T/out" 2>&1; expect_rc $? 2; expect_out "unknown repro 'no_such_repro'"
    "$FG" explain no_such_repro >"$T/out" 2>&1; expect_rc $? 2; expect_out "unknown repro 'no_such_repro'"
    "$FG" --help >"$T/out" 2>&1; expect_rc $? 0; expect_out "bisect"
    "$FG" explain --no-such-flag >"$T/out" 2>&1; expect_rc $? 2
    "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 --out "$T/rec.json" >"$T/out" 2>&1
    expect_rc $? 0; [ -s "$T/rec.json" ] || fail "run through the front wrote no record"
    mkdir -p "$T/alone"; cp "$FG" "$T/alone/fusegate"
    "$T/alone/fusegate" check >"$T/out" 2>&1; expect_rc $? 125; expect_out "cannot start .*fusegate-full"
    "$T/alone/fusegate" explain ffn_allreduce --repro-dir "$T/repros" >"$T/out" 2>&1; expect_rc $? 0
}

case_front_compiles_no_libtorch_header() {
    # The front is built without LibTorch, but this machine's LibTorch
    # headers sit on the default include path (Debian: /usr/include), so a
    # LibTorch header a front source includes compiles here and fails only
    # where LibTorch lives elsewhere (the GPU machine: the front's main.cpp
    # included c10/util/Exception.h). Every object linked into the front, its
    # libraries' included, is read from ninja's record of the headers each
    # compile read: none may be LibTorch's.
    B="$(cd "$(dirname "$FG")/.." && pwd)"
    [ -f "$B/build.ninja" ] || fail "no build.ninja in $B: this case reads ninja's header record"
    command -v ninja >/dev/null || fail "no ninja on PATH"
    inputs() { ninja -C "$B" -t query "$1" | sed -n '/^  input:/,/^  outputs:/p' | sed 's/^[ |]*//' | grep -E '\.(o|a)$'; }
    objs=""
    for i in $(inputs harness/fusegate | sort -u); do
      case "$i" in
        /*) ;;  # a system library
        *.a) objs="$objs $(inputs "$i" | grep '\.o$')" ;;
        *) objs="$objs $i" ;;
      esac
    done
    n=0
    for o in $objs; do
      d="$(ninja -C "$B" -t deps "$o")"
      grep -q "#deps" <<<"$d" || fail "ninja has no header record of $o"
      n=$((n + 1))
      hit="$(grep -E '/(c10|ATen|torch)/' <<<"$d" | head -1)"
      [ -z "$hit" ] || fail "$o, linked into the front, reads a LibTorch header: $hit"
    done
    [ "$n" -ge 20 ] || fail "read the headers of $n objects of the front: too few to have read them all"
    # the check sees one: fusegate-full's entry.cpp reads LibTorch's
    d="$(ninja -C "$B" -t deps harness/CMakeFiles/fusegate-full.dir/cli/entry.cpp.o)"
    grep -qE '/(c10|ATen|torch)/' <<<"$d" || fail "fusegate-full's entry.cpp reads no LibTorch header: the check sees nothing"
}
