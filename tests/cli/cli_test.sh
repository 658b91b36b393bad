#!/usr/bin/env bash
# Command-line tests of the gate's stop-the-line behaviours. Usage:
#   cli_test.sh FUSEGATE SOURCE_DIR CASE [BACKEND [WORLD]]
# Each case runs fusegate on a scratch copy of a repro and its goldens and
# asserts the exit code and the message. BACKEND (default cpu) and WORLD
# (default 2) are read by the cases that also run on a GPU machine
# (bisect_ledger_diff, git_bisect_run: bench/gpu.sh bisect passes cuda).
set -uo pipefail
FG="$1"; SRC="$2"; CASE="$3"; BACKEND="${4:-cpu}"; WORLD="${5:-2}"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
export FUSEGATE_CACHE_DIR="${FUSEGATE_CACHE_DIR:-$T/cache}"
fail() { echo "FAIL($CASE): $*"; echo "--- output:"; cat "$T/out" 2>/dev/null; exit 1; }
expect_rc() { [ "$1" = "$2" ] || fail "exit code $1, expected $2"; }
expect_out() { grep -qE -- "$1" "$T/out" || fail "output lacks /$1/"; }

# a private copy of the .fg repro and its goldens
mkdir -p "$T/repros" "$T/golden/cpu"
cp "$SRC/repros/fg/ffn_allreduce.fg" "$T/repros/"
cp -r "$SRC/golden/cpu/ffn_allreduce" "$T/golden/cpu/"
cp -r "$SRC/golden/proofs" "$T/golden/"  # proofs live beside the goldens
G="$T/golden/cpu/ffn_allreduce/C_w1.json"
check() { "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode C --world-size 1 "$@" >"$T/out" 2>&1; }

case "$CASE" in
  pass)
    check --strict; expect_rc $? 0; expect_out "1 passed" ;;
  print_break)
    # a print added inside the block: a new graph break, named with its line
    line=$(grep -n "all_reduce" "$T/repros/ffn_allreduce.fg" | cut -d: -f1)
    sed -i "${line}a\\  %dbg = print(%7) : bf16[4,32,128]" "$T/repros/ffn_allreduce.fg"
    check; expect_rc $? 1
    expect_out "new graph break: host callback print"
    expect_out "ffn_allreduce.fg:$((line + 1))"
    expect_out "graph_break_count 0 -> 1" ;;
  more_kernels)
    # the golden records one kernel fewer than the run launches
    python3 - "$G" <<'PY'
import json, sys
p = sys.argv[1]; r = json.load(open(p))
for k in r["ranks"]: k["kernel_count"] -= 1
open(p, "w").write(json.dumps(r, indent=2, sort_keys=True) + "\n")
PY
    check; expect_rc $? 1; expect_out "FAIL"; expect_out "kernel_count [0-9]+ -> [0-9]+" ;;
  fewer_kernels)
    python3 - "$G" <<'PY'
import json, sys
p = sys.argv[1]; r = json.load(open(p))
for k in r["ranks"]: k["kernel_count"] += 1
open(p, "w").write(json.dumps(r, indent=2, sort_keys=True) + "\n")
PY
    check; expect_rc $? 0; expect_out "IMPROVED"
    # the hint repeats every flag the run needs: run as printed, it blesses
    # the scratch golden and the strict check passes
    expect_out "bless with: fusegate bless ffn_allreduce --mode C --world-size 1 --repro-dir $T/repros --golden-dir $T/golden\$"
    check --strict; expect_rc $? 1
    hint=$(grep -m1 -E "^  bless with: fusegate bless " "$T/out" | sed 's/^  bless with: fusegate //')
    eval "\"\$FG\" $hint" >/dev/null 2>&1 || fail "the bless hint failed: $hint"
    check --strict; expect_rc $? 0 ;;
  corrupted_golden)
    sed -i '3s/.*/  "broken": ,/' "$G"
    check; expect_rc $? 2; expect_out "C_w1.json:3:" ;;
  unknown_repro)
    "$FG" run no_such_block --mode C --world-size 2 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "unknown repro 'no_such_block'"; expect_out "tp_block_llama"; expect_out "tp_block_wan" ;;
  bad_flag)
    "$FG" run tp_block_llama --mode Z >"$T/out" 2>&1; expect_rc $? 2; expect_out "unknown mode 'Z'" ;;
  repros_after_repeated_flags)
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
    expect_rc $? 2; expect_out "unknown repro '2'" ;;
  rank_crash)
    # a leaked segment is one whose owner (/fusegate-<pid>-...) is gone; the
    # segments of tests running beside this one belong to live processes, and
    # their launchers remove them when they stop their ranks
    orphans() {
      for f in /dev/shm/fusegate-*; do
        [ -e "$f" ] || continue
        pid=${f#/dev/shm/fusegate-}; pid=${pid%%-*}
        [ -d "/proc/$pid" ] || echo "$f"
      done | sort
    }
    before=$(orphans)
    FUSEGATE_FAULT=crash:1 "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 2 >"$T/out" 2>&1
    expect_rc $? 125; expect_out "rank 1 crashed"
    # rank 1 dies holding its fast path's named segment while rank 0, holding
    # its own, waits for the exchange: the launcher removes both
    FUSEGATE_FAULT=crash_in_fast_path:1 "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 2 \
      --fast-paths all >"$T/out" 2>&1
    expect_rc $? 125; expect_out "rank 1 crashed"
    sleep 1
    left=$(comm -13 <(echo "$before") <(orphans))
    [ -z "$left" ] || fail "a crashed run left shared memory behind: $left" ;;
  rank_hang)
    start=$(date +%s)
    FUSEGATE_FAULT=hang:1 "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 2 --timeout 5 >"$T/out" 2>&1
    rc=$?; took=$(( $(date +%s) - start ))
    expect_rc $rc 125; expect_out "rank 1 .*did not finish within 5 s"
    [ "$took" -lt 30 ] || fail "took ${took}s to stop a hung run with --timeout 5"
    sleep 0.5
    if pgrep -f "_worker ffn_allreduce.*$T" >/dev/null; then fail "rank processes left behind"; fi ;;
  output_code)
    FUSEGATE_LOGS=output_code "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 --out "$T/rec.json" >"$T/out" 2>&1
    expect_rc $? 0; expect_out 'extern "C" void cpu_(poi|per|red)_fused_' ;;
  record_kernels)
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
    expect_out "record ok" ;;
  max_autotune)
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
    expect_out "max-autotune ok" ;;
  bless_missing)
    # bless --missing writes only the goldens that are not there, leaves the
    # others byte for byte, and says when there is nothing to bless
    rm "$G"
    sum_before=$(cd "$T/golden/cpu/ffn_allreduce" && cat $(ls | sort) | md5sum)
    "$FG" bless ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --missing --why "missing" \
      >"$T/out" 2>&1; expect_rc $? 0
    expect_out "1 of 9 selected checks have no golden file yet"; expect_out "running ffn_allreduce/C/w1/cpu"
    grep -q "running ffn_allreduce/A/w1" "$T/out" && fail "bless --missing ran a check whose golden exists"
    [ -f "$G" ] || fail "the missing golden was not written"
    sum_after=$(cd "$T/golden/cpu/ffn_allreduce" && cat $(ls | sort | grep -v '^C_w1.json$') | md5sum)
    [ "$sum_after" = "$sum_before" ] || fail "bless --missing changed a golden that was there"
    check; expect_rc $? 0
    "$FG" bless ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --missing >"$T/out" 2>&1; expect_rc $? 0
    expect_out "every one of the 9 selected checks has its golden file; nothing to bless" ;;
  gemm_choice_pinned)
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
    expect_out "kernel_count [0-9]+ -> [0-9]+.*tem [1-9][0-9]* -> 0" ;;
  ledger_diff)
    # a fusion rule that changed shows as a readable diff of decisions
    python3 - "$G" <<'PY'
import json, sys
p = sys.argv[1]; r = json.load(open(p))
for k in r["ranks"]:
    e = next(e for e in k["ledger"] if e["outcome"] == "fused")
    e["outcome"], e["reason"] = "rejected", "memory_deps_mismatch"
open(p, "w").write(json.dumps(r, indent=2, sort_keys=True) + "\n")
PY
    check; expect_rc $? 0
    expect_out "fusion decisions changed"
    expect_out "rejected \\(memory_deps_mismatch\\) -> fused" ;;
  explain_dot)
    "$FG" explain ffn_allreduce --repro-dir "$T/repros" --world-size 2 --dot "$T/dot" --svg >"$T/out" 2>&1; expect_rc $? 0
    for f in graph0.before graph0.after; do
      [ -s "$T/dot/$f.dot" ] || fail "no $f.dot"
      grep -q "<svg" "$T/dot/$f.svg" || fail "no $f.svg"
    done
    grep -q "subgraph cluster_k" "$T/dot/graph0.after.dot" || fail "after-fusion DOT has no kernel clusters"
    expect_out "1 graph\\(s\\), 0 graph break\\(s\\)" ;;
  explain_batch)
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
    expect_out "is a folder" ;;
  extern_dispatch_changed)
    # an extern carried out differently (another ATen operator underneath) at
    # an equal launch count: the gate must say which and fail
    python3 - "$G" <<'PY'
import json, sys
p = sys.argv[1]; r = json.load(open(p))
for k in r["ranks"]:
    e = next(e for e in k["kernels"] if e["kind"] == "extern" and e.get("aten_ops"))
    op = sorted(e["aten_ops"])[0]
    e["aten_ops"]["aten::renamed_in_golden"] = e["aten_ops"].pop(op)
open(p, "w").write(json.dumps(r, indent=2, sort_keys=True) + "\n")
PY
    check; expect_rc $? 1
    expect_out "extern extern_[a-z_]+ dispatches other ATen operators than the golden"
    expect_out "aten::renamed_in_golden [0-9]+ -> 0" ;;
  golden_without_real_figures)
    # a golden blessed before fusegate counted what really runs cannot vouch
    # for a run: no silent pass
    python3 - "$G" <<'PY'
import json, sys
p = sys.argv[1]; r = json.load(open(p))
for k in r["ranks"]: del k["aten_op_count"]
open(p, "w").write(json.dumps(r, indent=2, sort_keys=True) + "\n")
PY
    check; expect_rc $? 1; expect_out "the golden has no aten_op_count" ;;
  real_work_recorded)
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
    expect_out "aten ops ok" ;;
  unknown_fault)
    FUSEGATE_FAULT=atention_fallback "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 >"$T/out" 2>&1
    expect_rc $? 2; expect_out "unknown fault 'atention_fallback'"; expect_out "attention_fallback" ;;
  quarantine)
    # a failing check under an unexpired quarantine is FLAKY (exit 0, JUnit
    # skipped with the reason); at its expiry date it fails, saying so;
    # bless leaves the file alone; a malformed file is bad input
    python3 - "$G" <<'PY'
import json, sys
p = sys.argv[1]; r = json.load(open(p))
for k in r["ranks"]: k["kernel_count"] -= 1
open(p, "w").write(json.dumps(r, indent=2, sort_keys=True) + "\n")
PY
    # (a quarantine runs at most 90 days: its date is a month from today)
    exp=$(date -u -d '+30 days' +%F)
    cat >"$T/golden/quarantine.json" <<Q
{"format_version": 1, "checks": [{"id": "ffn_allreduce/C/w1/cpu", "reason": "kernel count flips on busy hosts",
  "link": "https://tracker.example/FG-7", "expires": "$exp"}]}
Q
    sum=$(sha256sum "$T/golden/quarantine.json")
    check --strict --junit "$T/q.xml"; expect_rc $? 0
    expect_out "ffn_allreduce/C/w1/cpu +FLAKY"; expect_out "1 flaky \(quarantined\)"
    grep -q "<skipped message=\"quarantined: kernel count flips on busy hosts (https://tracker.example/FG-7), until $exp\"" \
      "$T/q.xml" || fail "JUnit lacks the skipped case with the quarantine's reason"
    check --strict --as-of "$exp"; expect_rc $? 1
    expect_out "quarantine expired on $exp \(kernel count flips"
    # a quarantine with no end in sight is bad input (an audit: "9999-12-31"
    # excused any failure of the check for ever)
    sed "s/$exp/9999-12-31/" "$T/golden/quarantine.json" >"$T/q.json" && cp "$T/golden/quarantine.json" "$T/q.keep"
    cp "$T/q.json" "$T/golden/quarantine.json"
    check --strict; expect_rc $? 2; expect_out "expires on 9999-12-31, [0-9]+ days after today .*at most 90 days"
    cp "$T/q.keep" "$T/golden/quarantine.json"
    # the horizon runs from today: a past --as-of (bisecting an old commit)
    # keeps a valid entry valid
    check --strict --as-of 2020-01-01; expect_rc $? 0; expect_out "ffn_allreduce/C/w1/cpu +FLAKY"
    check --as-of 2030-13-01; expect_rc $? 2; expect_out "--as-of '2030-13-01' is not a date"
    "$FG" bless ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode C --world-size 1 >"$T/out" 2>&1
    expect_rc $? 0
    [ "$(sha256sum "$T/golden/quarantine.json")" = "$sum" ] || fail "bless touched the quarantine"
    echo '{"format_version": 1, "checks": [{"id": "nope/C/w1/cpu", "reason": "r", "link": "l", "expires": "2030-01-01"}]}' \
      >"$T/golden/quarantine.json"
    check; expect_rc $? 2; expect_out "quarantined check 'nope/C/w1/cpu' names no repro" ;;
  hung_rank_named)
    # a rank that stops answering (SIGSTOP) is the one named, not a rank
    # waiting on it in a collective: three tries, all right
    for try in 1 2 3; do
      # iterations enough that the run is still going when rank 1 stops (200
      # finished first once the kernel cache was warm: exit 0, a flaky test)
      "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 2 --timeout 5 --iters 1000000 >"$T/out" 2>&1 &
      lp=$!
      sd=""
      # up to 60 s for the ranks to start (a loaded machine compiling cold kernels)
      for i in $(seq 1 1200); do
        d=$(grep -lx "$lp" /tmp/fusegate-run-*/launcher.pid 2>/dev/null | head -1)
        if [ -n "$d" ] && [ -e "$(dirname "$d")/rank1.json.heartbeat" ]; then sd=$(dirname "$d"); break; fi
        sleep 0.05
      done
      [ -n "$sd" ] || fail "rank 1 of the run never started beating"
      r1=$(pgrep -P $lp -f -- "--rank 1 " | head -1)
      [ -n "$r1" ] || fail "no rank 1 process under launcher $lp"
      sleep 0.3
      kill -STOP "$r1"
      wait $lp; rc=$?
      expect_rc $rc 125
      expect_out "rank 1 \(stopped answering: no heartbeat for [0-9]+ s"
    done ;;
  ranks_disagree)
    # rank 1 compiles with another fusion rule: the ranks compare what they
    # compiled before the first collective and stop in seconds, naming the
    # first decision that differs (exit 1), instead of hanging in it
    start=$(date +%s)
    FUSEGATE_FAULT=diverge_fusion:1 "$FG" run tp_block_llama --mode C --world-size 2 --timeout 60 >"$T/out" 2>&1
    rc=$?; took=$(( $(date +%s) - start ))
    expect_rc $rc 1
    expect_out "rank 1 differs from rank 0 at decision [0-9]+ of graph 0: rank 0 has '.*buf2 \+ buf4 fused', rank 1 has '.*buf2 \+ buf4 rejected \(fault_refused\)'"
    [ "$took" -lt 10 ] || fail "took ${took}s to find ranks that compiled differently"
    # in check, a FAIL (a regression found), not CANNOT_TEST
    FUSEGATE_FAULT=diverge_fusion:1 "$FG" check tp_block_llama --mode C --world-size 2 --timeout 60 >"$T/out" 2>&1
    expect_rc $? 1; expect_out "tp_block_llama/C/w2/cpu +FAIL"; expect_out "differs from rank 0 at decision" ;;
  relative_locations)
    # a .fg repro's locations name its file alone, never its folder or an
    # absolute path that differs between machines: its goldens survive a move
    mkdir -p "$T/myfg"; cp "$T/repros/ffn_allreduce.fg" "$T/myfg/"
    line=$(grep -n "all_reduce" "$T/myfg/ffn_allreduce.fg" | cut -d: -f1)
    sed -i "${line}a\\  %dbg = print(%7) : bf16[4,32,128]" "$T/myfg/ffn_allreduce.fg"
    FUSEGATE_QUIET_PRINT=1 "$FG" run ffn_allreduce --repro-dir "$T/myfg" --mode C --world-size 1 --out "$T/rec.json" \
      >"$T/out" 2>&1; expect_rc $? 0
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
    ;;
  leftovers_after_kill)
    # nothing is left behind by a run or a bless that is stopped, and what a
    # SIGKILL leaves is swept at the next start; goldens are never touched
    dead=$(sh -c 'echo $$')  # a process that has exited
    D="$T/golden/cpu/ffn_allreduce"
    echo junk >"$D/.C_w1.json.tmp.$dead.0.123"
    echo junk >"$D/.C_w1.json.tmp.$$.0.456"  # a live writer's: kept
    "$FG" bless ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode C --world-size 1 >"$T/out" 2>&1
    expect_rc $? 0
    [ ! -e "$D/.C_w1.json.tmp.$dead.0.123" ] || fail "a dead bless's temporary file was left beside the golden"
    [ -e "$D/.C_w1.json.tmp.$$.0.456" ] || fail "a live process's temporary file was removed"
    rm -f "$D/.C_w1.json.tmp.$$.0.456"
    check --strict; expect_rc $? 0
    # a launcher stopped by SIGTERM removes its ranks and scratch folder
    started() {  # the scratch folder of launcher $1, once it exists
      for i in $(seq 1 200); do
        d=$(grep -lx "$1" /tmp/fusegate-run-*/launcher.pid 2>/dev/null | head -1)
        [ -n "$d" ] && { dirname "$d"; return 0; }
        sleep 0.1
      done
      return 1
    }
    FUSEGATE_FAULT=hang:1 "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 2 --timeout 60 \
      >"$T/out" 2>&1 &
    lp=$!
    sd=$(started $lp) || fail "the launcher made no scratch folder with its pid"
    sleep 1
    kill -TERM $lp; wait $lp; rc=$?
    [ $rc -eq 143 ] || fail "a launcher stopped by SIGTERM exited $rc, not 143"
    sleep 0.5
    [ ! -e "$sd" ] || fail "SIGTERM left the scratch folder $sd"
    if pgrep -f "_worker ffn_allreduce.*$T" >/dev/null; then fail "SIGTERM left rank processes"; fi
    # SIGKILL cannot be caught: the ranks die with their parent, the folder
    # stays until the next launcher sweeps it (any launcher's: one a test
    # beside this one starts may get there first, so the sweep is also
    # checked on a folder made here for a launcher that has exited)
    FUSEGATE_FAULT=hang:1 "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 2 --timeout 60 \
      >"$T/out" 2>&1 &
    lp=$!
    sd=$(started $lp) || fail "the launcher made no scratch folder with its pid"
    sleep 1
    kill -KILL $lp; wait $lp
    sleep 0.5
    if pgrep -f "_worker ffn_allreduce.*$T" >/dev/null; then fail "SIGKILL left rank processes"; fi
    stale=$(mktemp -d /tmp/fusegate-run-XXXXXX); echo "$dead" >"$stale/launcher.pid"
    "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 >"$T/out" 2>&1; expect_rc $? 0
    [ ! -e "$sd" ] || fail "the next run did not sweep the folder $sd of a killed launcher"
    [ ! -e "$stale" ] || fail "the next run did not sweep the folder $stale of a launcher that exited" ;;
  multi_node)
    # two launchers on this machine as two nodes of world 4 (two ranks each):
    # node 0 serves the store, gathers all four ranks' records and writes the
    # record; the one-host fast path is blocked across nodes, so the record
    # must equal a one-node run of the generic path, digest for digest
    free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
    port=$(free_port)
    nodes="--mode C --world-size 4 --nnodes 2 --master-addr 127.0.0.1 --master-port $port --timeout 60"
    "$FG" run tp_block_llama $nodes --node-rank 1 >"$T/n1.out" 2>&1 &
    n1=$!
    "$FG" run tp_block_llama $nodes --node-rank 0 --out "$T/multi.json" >"$T/out" 2>&1; expect_rc $? 0
    wait $n1; rc=$?
    [ $rc -eq 0 ] || fail "node 1 exited $rc: $(cat "$T/n1.out")"
    grep -q "node 1 ran ranks 2..3; node 0 gathers the record" "$T/n1.out" || fail "node 1 said: $(cat "$T/n1.out")"
    "$FG" run tp_block_llama --mode C --world-size 4 --fast-paths none --out "$T/one.json" >"$T/out" 2>&1
    expect_rc $? 0
    python3 - "$T/multi.json" "$T/one.json" <<'PY' || fail "the two-node record differs from the one-node run"
import json, sys
m, o = (json.load(open(p)) for p in sys.argv[1:])
assert [r["rank"] for r in m["ranks"]] == [0, 1, 2, 3], [r["rank"] for r in m["ranks"]]
for a, b in zip(m["ranks"], o["ranks"]):
    assert a["kernel_count"] == b["kernel_count"], (a["kernel_count"], b["kernel_count"])
    assert [x["exact"] for x in a["outputs"]] == [x["exact"] for x in b["outputs"]], a["rank"]
    st = {f["name"]: f["status"] for f in a["fast_paths"]}
    assert st["allreduce_residual_rmsnorm"] == \
        "blocked: needs every rank on one host, and the ranks span 2 nodes", st
    assert a["accuracy"]["status"] == "pass"
assert "nodes_differ" not in m["env"], m["env"]
PY
    # a node in another environment (its ATen kernels): the record's
    # environment says so, and is none a golden holds (node 0 alone had
    # measured it)
    port=$(free_port)
    nodes="--mode C --world-size 2 --nnodes 2 --master-addr 127.0.0.1 --master-port $port --timeout 60"
    ATEN_CPU_CAPABILITY=default "$FG" run ffn_allreduce --repro-dir "$T/repros" $nodes --node-rank 1 >"$T/n1.out" 2>&1 &
    n1=$!
    "$FG" run ffn_allreduce --repro-dir "$T/repros" $nodes --node-rank 0 --out "$T/mixed.json" >"$T/out" 2>&1
    expect_rc $? 0; wait $n1
    python3 - "$T/mixed.json" <<'PY' || fail "a node of another environment is not in the record's environment"
import json, sys
e = json.load(open(sys.argv[1]))["env"]
assert e["nodes_differ"].startswith("node 1: aten_capability "), e
PY
    # a rank that crashes on node 1: node 0 reports it as node 1's, at once
    port=$(free_port)
    nodes="--mode C --world-size 4 --nnodes 2 --master-port $port --timeout 60"
    FUSEGATE_FAULT=crash:2 "$FG" run tp_block_llama $nodes --node-rank 1 >"$T/n1.out" 2>&1 &
    n1=$!
    start=$(date +%s)
    "$FG" run tp_block_llama $nodes --node-rank 0 >"$T/out" 2>&1; expect_rc $? 125
    wait $n1; expect_rc $? 125
    grep -q "node 1: rank 2 crashed" "$T/out" || fail "node 0 did not report node 1's crashed rank"
    [ $(( $(date +%s) - start )) -le 30 ] || fail "node 0 took over 30 s to see node 1's crash"
    # a node that never arrives: node 0 alone stops within its timeout (125),
    # naming it; a node without node 0 the same
    port=$(free_port)
    start=$(date +%s)
    "$FG" run tp_block_llama --mode C --world-size 4 --nnodes 2 --node-rank 0 --master-port $port --timeout 6 \
      >"$T/out" 2>&1; expect_rc $? 125
    grep -q "node(s) 1 never arrived at 127.0.0.1:$port within 6 s" "$T/out" || fail "node 1's absence not named"
    [ $(( $(date +%s) - start )) -le 30 ] || fail "a missing node took over 30 s to report"
    "$FG" run tp_block_llama --mode C --world-size 4 --nnodes 2 --node-rank 1 --master-port $port --timeout 3 \
      >"$T/out" 2>&1; expect_rc $? 125
    grep -q "node 1: node 0's store at 127.0.0.1:$port did not answer within 3 s" "$T/out" || fail "node 0's absence"
    # bad flags, before anything starts
    "$FG" run tp_block_llama --world-size 4 --nnodes 3 --master-port $port >"$T/out" 2>&1; expect_rc $? 2
    grep -q "is not a multiple of --nnodes 3" "$T/out" || fail "world size not a multiple of nnodes"
    "$FG" run tp_block_llama --world-size 4 --nnodes 2 >"$T/out" 2>&1; expect_rc $? 2
    grep -q "needs --master-port" "$T/out" || fail "no --master-port"
    "$FG" run tp_block_llama --world-size 4 --nnodes 2 --node-rank 2 --master-port $port >"$T/out" 2>&1
    expect_rc $? 2
    grep -q "is not a node of --nnodes 2" "$T/out" || fail "node rank out of range" ;;
  multi_node_check)
    # check and bless across two launchers on this machine as two nodes of
    # world 2 (one rank each): node 0 serves one store for the command,
    # compares and writes; node 1 runs its ranks in step and exits with node
    # 0's verdict
    free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
    both() {  # both COMMAND ARGS...: node 1 (with N1 for ARGS if set) in the background, node 0 here; sets rc0 rc1
      local port; port=$(free_port)
      local cmd=$1; shift
      "$FG" $cmd ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --world-size 2 --nnodes 2 \
        --master-port $port --timeout 30 --node-rank 1 "${N1[@]:-$@}" >"$T/n1.out" 2>&1 &
      local n1=$!
      "$FG" $cmd ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --world-size 2 --nnodes 2 \
        --master-port $port --timeout 30 --node-rank 0 "$@" >"$T/out" 2>&1
      rc0=$?
      wait $n1; rc1=$?
    }
    N1=()
    both bless --mode B --mode C
    [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] || fail "bless across nodes: exit $rc0 / $rc1; node 1: $(cat "$T/n1.out")"
    grep -q "node 1: node 0's verdict (exit 0)" "$T/n1.out" || fail "node 1 said: $(cat "$T/n1.out")"
    grep -q "2 of 2 golden files changed" "$T/n1.out" || fail "node 1 lacks node 0's bless summary"
    [ -f "$T/golden/cpu/ffn_allreduce/C_w2.nodes2.json" ] || fail "no golden C_w2.nodes2.json"
    [ -f "$T/golden/cpu/ffn_allreduce/B_w2.nodes2.json" ] || fail "no golden B_w2.nodes2.json"
    # the golden across nodes is the one-node generic path, digest for digest
    "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 2 --fast-paths none --out "$T/one.json" \
      >/dev/null 2>&1 || fail "one-node run failed"
    python3 - "$T/golden/cpu/ffn_allreduce/C_w2.nodes2.json" "$T/one.json" <<'PY' || fail "golden across nodes differs"
import json, sys
m, o = (json.load(open(p)) for p in sys.argv[1:])
assert m["nodes"] == 2 and "nodes" not in o, (m.get("nodes"), o.get("nodes"))
for a, b in zip(m["ranks"], o["ranks"]):
    assert a["kernel_count"] == b["kernel_count"], (a["kernel_count"], b["kernel_count"])
    # the golden's one environment is this machine's, the run's
    assert [x["exact"] for x in a["outputs"]] == [{o["env"]["fingerprint"]: x["exact"]} for x in b["outputs"]], a["rank"]
PY
    both check --mode B --mode C --strict --junit "$T/j.xml"
    [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] || fail "check across nodes: exit $rc0 / $rc1; node 1: $(cat "$T/n1.out")"
    expect_out "2 checks: 2 passed"
    grep -q "2 checks: 2 passed" "$T/n1.out" || fail "node 1 lacks node 0's verdict: $(cat "$T/n1.out")"
    grep -q "ffn_allreduce/C/w2/cpu/nodes2" "$T/j.xml" || fail "node 0's JUnit lacks the check"
    # a changed fusion rule on every node: exit 1 on both, the finding on both
    export FUSEGATE_FAULT=refuse_fusion:reduction
    both check --mode C
    unset FUSEGATE_FAULT
    [ $rc0 -eq 1 ] && [ $rc1 -eq 1 ] || fail "regression across nodes: exit $rc0 / $rc1"
    grep -q "kernel_count" "$T/n1.out" || fail "node 1 does not show the finding: $(cat "$T/n1.out")"
    # nodes that mean other jobs: bad input on both, naming the first difference, in seconds
    N1=(--mode B)
    start=$(date +%s)
    both check --mode B --mode C
    [ $rc0 -eq 2 ] && [ $rc1 -eq 2 ] || fail "jobs that differ: exit $rc0 / $rc1"
    for f in "$T/out" "$T/n1.out"; do
      grep -q "node 1 would run other jobs than node 0: job 2 is 'ffn_allreduce/C/w2/cpu/nodes2' on node 0 and nothing on node 1" "$f" \
        || fail "the difference is not named in $f: $(cat "$f")"
    done
    [ $(( $(date +%s) - start )) -le 15 ] || fail "the job lists took over 15 s to be compared"
    N1=()
    # a rank of node 1 crashes in every job: each is CANNOT_TEST, exit 125 on both
    port=$(free_port)
    FUSEGATE_FAULT=crash:1 "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode B --mode C \
      --world-size 2 --nnodes 2 --master-port $port --timeout 30 --node-rank 1 >"$T/n1.out" 2>&1 &
    n1=$!
    "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode B --mode C --world-size 2 \
      --nnodes 2 --master-port $port --timeout 30 --node-rank 0 >"$T/out" 2>&1; expect_rc $? 125
    wait $n1; rc1=$?
    [ $rc1 -eq 125 ] || fail "node 1 exited $rc1 after its rank crashed: $(cat "$T/n1.out")"
    expect_out "2 checks: 0 passed, 0 failed, 0 improved, 0 missing, 2 cannot test"
    expect_out "node 1: rank 1 crashed"
    # node 1's launcher is killed in the first job: that job cannot test, the
    # second finds node 1 gone within the timeout, the third is not run
    port=$(free_port)
    FUSEGATE_FAULT=hang:1 "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode A --mode B \
      --mode C --world-size 2 --nnodes 2 --master-port $port --timeout 8 --node-rank 1 >"$T/n1.out" 2>&1 &
    n1=$!
    ( sleep 3; kill -9 $n1 ) &
    start=$(date +%s)
    "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode A --mode B --mode C --world-size 2 \
      --nnodes 2 --master-port $port --timeout 8 --node-rank 0 >"$T/out" 2>&1; expect_rc $? 125
    wait $n1
    expect_out "3 checks: 0 passed, 0 failed, 0 improved, 0 missing, 3 cannot test"
    expect_out "not run: node\(s\) 1 never arrived"
    [ $(( $(date +%s) - start )) -le 40 ] || fail "a node lost mid-command took over 40 s to end the command"
    # node 1 never comes: node 0 runs nothing and stops within its timeout
    start=$(date +%s)
    "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode C --world-size 2 --nnodes 2 \
      --master-port $(free_port) --timeout 5 >"$T/out" 2>&1; expect_rc $? 125
    expect_out "node\(s\) 1 never arrived at 127.0.0.1:[0-9]+ within 5 s; nothing was run"
    [ $(( $(date +%s) - start )) -le 20 ] || fail "a missing node took over 20 s to report"
    # a world size the nodes cannot share: bad input before anything starts
    "$FG" check ffn_allreduce --repro-dir "$T/repros" --world-size 1 --nnodes 2 --master-port 1 >"$T/out" 2>&1
    expect_rc $? 2; expect_out "is not a multiple of --nnodes 2"
    # a corrupted golden on node 0: bad input on both nodes, before any run
    cp "$T/golden/cpu/ffn_allreduce/C_w2.nodes2.json" "$T/keep.json"
    echo "{" >"$T/golden/cpu/ffn_allreduce/C_w2.nodes2.json"
    start=$(date +%s)
    both check --mode B --mode C
    [ $rc0 -eq 2 ] && [ $rc1 -eq 2 ] || fail "a corrupted golden: exit $rc0 / $rc1; node 1: $(cat "$T/n1.out")"
    grep -q "error: .*C_w2.nodes2.json" "$T/n1.out" || fail "node 1 does not name the golden: $(cat "$T/n1.out")"
    [ $(( $(date +%s) - start )) -le 15 ] || fail "a corrupted golden took over 15 s to stop both nodes"
    cp "$T/keep.json" "$T/golden/cpu/ffn_allreduce/C_w2.nodes2.json"
    # prove across nodes: node 0 writes the proof, its A/B figures those of
    # a one-node proof at the same world size made here (not the committed
    # one: eager's fp64 reference, and so rel_l2, differ in the fourth digit
    # between CPU models, an AMD EPYC here against the machine that proved it)
    cp -r "$T/golden" "$T/g1"
    "$FG" prove --fast-path qkv_rmsnorm_tp --world-size 2 --golden-dir "$T/g1" >"$T/out" 2>&1; expect_rc $? 0
    port=$(free_port)
    "$FG" prove --fast-path qkv_rmsnorm_tp --world-size 2 --golden-dir "$T/golden" --nnodes 2 --master-port $port \
      --node-rank 1 >"$T/n1.out" 2>&1 &
    n1=$!
    "$FG" prove --fast-path qkv_rmsnorm_tp --world-size 2 --golden-dir "$T/golden" --nnodes 2 --master-port $port \
      --node-rank 0 >"$T/out" 2>&1; expect_rc $? 0
    wait $n1; rc1=$?
    [ $rc1 -eq 0 ] || fail "prove on node 1: exit $rc1: $(cat "$T/n1.out")"
    grep -q "proven on cpu at world sizes 2 (1 cases)" "$T/n1.out" || fail "node 1 lacks the verdict: $(cat "$T/n1.out")"
    python3 - "$T/golden/proofs/cpu/qkv_rmsnorm_tp.json" "$T/g1/proofs/cpu/qkv_rmsnorm_tp.json" <<'PY' \
      || fail "the proof across nodes differs from the one-node proof at world size 2"
import json, sys
m, o = (json.load(open(p)) for p in sys.argv[1:])
assert m["world_sizes"] == [2] and m["command"].endswith("--nnodes 2"), (m["world_sizes"], m["command"])
mine = [(c["repro"], c["outputs"]) for c in m["cases"]]
theirs = [(c["repro"], c["outputs"]) for c in o["cases"] if c["world_size"] == 2]
assert mine and mine == theirs, (mine, theirs)
PY
    # the one-host fast path cannot be proven across nodes: bad input
    "$FG" prove --fast-path allreduce_residual_rmsnorm --world-size 2 --golden-dir "$T/golden" --nnodes 2 \
      --master-port 1 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "needs every rank on one host" ;;
  fuzz_finds_broken_rule)
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
    nodes=$(grep -cE '^  %[A-Za-z0-9_]+ = ' "$f")
    [ "$nodes" -ge 1 ] && [ "$nodes" -le 6 ] || fail "the finding has $nodes nodes (at most 6): $(cat "$f")"
    grep -qE '^  %[A-Za-z0-9_]+ = (sum|mean|var|amax|softmax|rms_norm|layer_norm)\(' "$f" || fail "no reduction in $(cat "$f")"
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" run --graph "$f" --mode C --out "$T/bad.json" >/dev/null 2>&1 \
      || fail "run --graph failed"
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
    "$FG" fuzz --graphs 1 --fusion fastest >"$T/out" 2>&1; expect_rc $? 2
    "$FG" run --graph "$T/missing.fg" >"$T/out" 2>&1; expect_rc $? 2; expect_out "not an .fg file" ;;
  fuzz_ranks_and_jobs)
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
    grep -q "^# replay: fusegate run --graph .* --world-size 2" "$f" || fail "replay line: $(grep replay "$f")"
    nodes=$(grep -cE '^  %[A-Za-z0-9_]+ = ' "$f")
    [ "$nodes" -ge 1 ] && [ "$nodes" -le 6 ] || fail "the finding has $nodes nodes (at most 6): $(cat "$f")"
    FUSEGATE_FAULT=broken_fusion:reduction "$FG" run --graph "$f" --mode C --world-size 2 --out "$T/bad.json" \
      >/dev/null 2>&1 || fail "run --graph at world size 2 failed"
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
    "$FG" fuzz --graphs 2 --fast-paths bogus >"$T/out" 2>&1; expect_rc $? 2; expect_out "unknown fast path 'bogus'" ;;
  junit_read_back)
    # the JUnit file, read by a real consumer, agrees with the verdict table
    # and the exit code, with and without --strict: one IMPROVED (the golden
    # records a kernel more), one MISSING (a golden removed), CANNOT_TEST
    # (rank 1 crashes at world size 2)
    python3 - "$G" <<'PY'
import json, sys
p = sys.argv[1]; r = json.load(open(p))
for k in r["ranks"]: k["kernel_count"] += 1
open(p, "w").write(json.dumps(r, indent=2, sort_keys=True) + "\n")
PY
    rm "$T/golden/cpu/ffn_allreduce/B_w1.json"
    for strict in "" --strict; do
      FUSEGATE_FAULT=crash:1 "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode B \
        --mode C --world-size 1 --world-size 2 --junit "$T/j.xml" --markdown "$T/m.md" $strict >"$T/out" 2>&1
      rc=$?
      if [ -n "$strict" ]; then expect_rc $rc 1; else expect_rc $rc 125; fi
      expect_out "IMPROVED"; expect_out "MISSING"; expect_out "CANNOT_TEST"
      /usr/bin/python3 - "$T/j.xml" "$T/out" "$T/m.md" "$rc" "$strict" <<'PY' || fail "JUnit or Markdown disagrees (strict='$strict')"
import re, sys
from junitparser import JUnitXml, Failure, Error, Skipped
xml, out, md, rc, strict = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), bool(sys.argv[5])
m = re.search(r"(\d+) checks: (\d+) passed, (\d+) failed, (\d+) improved, (\d+) missing, (\d+) cannot test",
              open(out).read())
n, p, f, i, mi, c = map(int, m.groups())
assert i >= 1 and mi >= 1 and c >= 1, m.group(0)
doc = JUnitXml.fromfile(xml)
suites = [doc] if doc._tag == "testsuite" else list(doc)
got = {"failure": 0, "error": 0, "skipped": 0, "passed": 0}
cases = 0
for s in suites:
    for case in s:
        cases += 1
        kinds = [type(r) for r in case.result]
        key = "failure" if Failure in kinds else "error" if Error in kinds else "skipped" if Skipped in kinds else "passed"
        got[key] += 1
want = {"failure": f + (i + mi if strict else 0), "error": c, "skipped": 0 if strict else mi,
        "passed": p + (0 if strict else i)}
assert cases == n, (cases, n)
assert got == want, (got, want)
assert suites[0].failures == want["failure"] and suites[0].errors == c and suites[0].skipped == want["skipped"], \
    (suites[0].failures, suites[0].errors, suites[0].skipped)
# a consumer that fails on failures and errors agrees with the exit code
assert (got["failure"] + got["error"] > 0) == (rc != 0), (got, rc)
first = open(md).readline()
assert ("exit %d" % rc) in first, first
PY
    done ;;
  cuda_cannot_test)
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
    expect_rc $? 125; expect_out "cannot test this commit" ;;
  profile_needs_cuda)
    "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 --profile "$T/p.json" >"$T/out" 2>&1
    expect_rc $? 2; expect_out "--profile .*needs --backend cuda" ;;
  empty_selection)
    # a selection that matches no check is bad input, never "0 checks" and a pass
    "$FG" check tp_block_llama --world-size 4096 --strict >"$T/out" 2>&1; expect_rc $? 2
    expect_out "matches no check"; expect_out "tp_block_llama \\(world sizes 1\\.\\.[0-9]+\\)" ;;
  selection_said)
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
    expect_out "2 checks: 2 passed" ;;
  bad_input_before_run)
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
    try "$FG" run ffn_allreduce --repro-dir "$T/repros" --iters 0; expect_rc $? 2; expect_out "--iters must be at least 1"
    try "$FG" run ffn_allreduce --repro-dir "$T/repros" --warmup-ms -5; expect_rc $? 2
    expect_out "--warmup-ms must be from 0 to 60000"
    FUSEGATE_LOGS=fusion,outputcode "$FG" explain --graph "$T/repros/ffn_allreduce.fg" >"$T/out" 2>&1; expect_rc $? 2
    expect_out "unknown view 'outputcode'"; expect_out "output_code"
    try "$FG" chek; expect_rc $? 2; expect_out "unknown command 'chek'; commands: list, run, check"
    [ $(( $(date +%s) - start )) -lt 30 ] || fail "bad input took more than 30 s to be refused" ;;
  warmup_steps_agree)
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
" "$T/rec.json" || fail "the ranks' warm-up counts: $(cat "$T/rec.json" | head -c 2000)" ;;
  ab_local_fails_under_tp)
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
      "$T/ab.json" || fail "--json lacks the failing verdict or the worst elements" ;;
  ab_gate_up_swiglu)
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
    ;;
  ab_bad_input)
    "$FG" ab --fast-path qkv_rmsnorm_tpp --repro tp_block_wan >"$T/out" 2>&1; expect_rc $? 2
    expect_out "unknown fast path 'qkv_rmsnorm_tpp'"; expect_out "qkv_rmsnorm_tp"
    "$FG" ab --fast-path qkv_rmsnorm_tp --repro tp_block_llama --world-size 2 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "does not apply to tp_block_llama .*not matched"
    "$FG" ab --fast-path qkv_rmsnorm_tp --repro tp_block_wan --mode A >"$T/out" 2>&1; expect_rc $? 2
    expect_out "eager runs no fast path"
    "$FG" run tp_block_wan --fast-paths nope >"$T/out" 2>&1; expect_rc $? 2; expect_out "unknown fast path 'nope'"
    FUSEGATE_FAULT=fastpath_edit:nope "$FG" run tp_block_wan >"$T/out" 2>&1; expect_rc $? 2
    expect_out "fastpath_edit:nope names no fast path" ;;
  fast_path_blocked_under_tp)
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
    grep -q '"status": "not used: lower priority than qkv_rmsnorm_tp"' "$T/r1.json" || fail "no priority status at w1" ;;
  fast_path_source_edit)
    # an edit of the kernel source invalidates its proof: the generic path
    # runs, and the golden, blessed with the fast path, fails
    FUSEGATE_FAULT=fastpath_edit:allreduce_residual_rmsnorm "$FG" check tp_block_llama --mode C --world-size 2 \
      >"$T/out" 2>&1
    expect_rc $? 1
    expect_out "fast path allreduce_residual_rmsnorm ran when the golden was blessed; now: blocked: proof invalidated \(source changed\)"
    expect_out "kernel_count 11 -> 12" ;;
  malformed_proof)
    mkdir -p "$T/g2/proofs"; cp -r "$SRC/golden/proofs/cpu" "$T/g2/proofs/"
    sed -i '2s/.*/  "backend": ,/' "$T/g2/proofs/cpu/qkv_rmsnorm_tp.json"
    "$FG" run tp_block_wan --mode C --world-size 2 --golden-dir "$T/g2" >"$T/out" 2>&1; expect_rc $? 2
    expect_out "qkv_rmsnorm_tp.json:2:[0-9]+: error: corrupted proof"; expect_out "fusegate prove --fast-path qkv_rmsnorm_tp"
    cp "$SRC/golden/proofs/cpu/qkv_rmsnorm_tp.json" "$T/g2/proofs/cpu/"
    sed -i 's/"verdict": "pass"/"verdict": "fail"/' "$T/g2/proofs/cpu/qkv_rmsnorm_tp.json"
    "$FG" check tp_block_wan --mode C --world-size 2 --golden-dir "$T/g2" >"$T/out" 2>&1; expect_rc $? 2
    expect_out "malformed proof: cases\[0\] did not pass" ;;
  prove_writes_proof)
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
    expect_out "matches no repro at world size 3" ;;
  proofs_inventory)
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
    expect_out '^\| gate_up_swiglu \| cpu \|  \| - \| - \| - \| none \(not needed: the cost model refuses it on cpu\) \|$'
    "$FG" proofs --golden-dir "$SRC/golden" --strict >"$T/out" 2>&1; expect_rc $? 0 ;;
  fast_paths_fewer_launches)
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
    done ;;
  bisect_names_the_decision)
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
      expect_out "replay, good: FUSEGATE_BISECT=.*decisions:[0-9]+ fusegate run $1"
      expect_out "replay, bad:  FUSEGATE_BISECT=.*decisions:[0-9]+ fusegate run $1"
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
    done ;;
  bisect_clean_and_bad_input)
    "$FG" bisect tp_block_llama --mode C --world-size 2 >"$T/out" 2>&1; expect_rc $? 0
    expect_out "nothing to bisect"
    FUSEGATE_FAULT=perturb:buf999 "$FG" run tp_block_llama --mode C --world-size 1 >"$T/out" 2>&1; expect_rc $? 2
    expect_out "has no scheduler node buf999"
    FUSEGATE_BISECT=decisions:x "$FG" run tp_block_llama >"$T/out" 2>&1; expect_rc $? 2
    expect_out "FUSEGATE_BISECT: 'decisions:x' is not SUBSYSTEM:K"
    # a repro with a graph break: limits count per graph, so no answer
    # rather than a wrong one (buf5: the second graph's fused norm)
    line=$(grep -n "linear(%5, %w2)" "$T/repros/ffn_allreduce.fg" | cut -d: -f1)
    sed -i "${line}a\\  %dbg = print(%6) : bf16[4,32,128]" "$T/repros/ffn_allreduce.fg"
    FUSEGATE_QUIET_PRINT=1 FUSEGATE_FAULT=perturb:buf5 "$FG" bisect ffn_allreduce --repro-dir "$T/repros" --mode C \
      --world-size 1 --fast-paths none >"$T/out" 2>&1
    expect_rc $? 125; expect_out "runs as 2 graphs .*searches one graph only: cannot test"
    "$FG" bisect tp_block_llama --mode A >"$T/out" 2>&1; expect_rc $? 2; expect_out "use --mode B or C" ;;
  bisect_ledger_diff)
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
    expect_out "buf2\+buf4 score \(2, 0, [0-9]+, -1\) at repros/tp_block_llama.cpp:[0-9]+ \(attention\): fused -> rejected \(fault_refused\)" ;;
  git_bisect_run)
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
    # (the commit has no repros folder left: bad input there, so 125)
    expect_rc $? 125; expect_out "--repro-dir repros: error: no such folder"; expect_out "cannot test this commit" ;;
  fg_inputs_as_declared)
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
assert o["out0"]["sum"] == n and o["out0"]["max_abs"] == 1, o["out0"]
assert o["out1"]["sumsq"] == 0, o["out1"]
assert o["out2"]["sum"] == n * (n + 1) / 2 and o["out2"]["max_abs"] == n, o["out2"]  # arange from 1
assert 2.0 <= mean(o["out3"]) <= 3.0 and o["out3"]["max_abs"] <= 3.0 and abs(mean(o["out3"]) - 2.5) < 0.05, o["out3"]
assert abs(mean(o["out4"]) - 5.0) < 0.05 and abs(math.sqrt(rms(o["out4"])**2 - mean(o["out4"])**2) - 0.5) < 0.05
# by use: a linear's weight is fan-in scaled (1/sqrt(256)), a norm's weight N(1, 0.1)
assert abs(rms(o["out5"]) - 1 / 16) < 0.004, rms(o["out5"])
assert abs(mean(o["out6"]) - 1.0) < 0.05 and rms(o["out6"]) < 1.1, o["out6"]
PY
    # the printed graph shows what each input got
    "$FG" explain inits --repro-dir "$T/init" --mode C >"$T/out" 2>&1; expect_rc $? 0
    expect_out '%w: f32\[32,256\] \{init = "normal", mean = 0.0, std = 0.0625\}'
    expect_out '%g: f32\[32\] \{init = "normal", mean = 1.0, std = 0.1\}'
    expect_out '%r: f32\[64,32\] \{init = "arange", start = 1.0, step = 1.0\}'
    expect_out '%u: f32\[64,32\] \{high = 3.0, init = "uniform", low = 2.0\}' ;;
  sharded_fg_matches_world1)
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
    assert out["out0"]["replicated"] and "gathered" not in out["out0"]
    assert not out["out1"]["replicated"] and out["out1"]["fingerprint"]["shape"] == [2, 8, 4]
    # the whole of each sharded output equals world 1's, bit for bit
    for k in ("out1", "out2"):
        assert out[k]["gathered"]["exact"] == one[k]["exact"], (r["rank"], k)
PY
    # a wrong layout (dim 1 instead of 2) is caught by the comparison with world 1
    sed -i 's/%8 {shard = 2}/%8 {shard = 1}/' "$T/tp/tp_qkv.fg"
    tp check --world-size 1 --world-size 2; expect_rc $? 1
    expect_out "output out1: world 2, gathered from every rank, drifts from world 1: shape \[2,8,16\] vs \[2,16,8\]"
    # so is a missing all-reduce: the partial sums differ across ranks
    sed -i 's/%8 {shard = 1}/%8 {shard = 2}/; s/  %7 = all_reduce(%6) {reduce_op = "sum"} : f32\[2,8,32\]/  %7 = neg(%6) : f32[2,8,32]/' \
      "$T/tp/tp_qkv.fg"
    tp check --world-size 1 --world-size 2; expect_rc $? 1
    expect_out "output out0 is replicated but rank 1"
    expect_out "world 2 rank 0 drifts from world 1" ;;
  explain_residual_placement)
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
    [ "$(grep -c 'fused: residual add moved in front of the all-reduce' "$T/out")" = 2 ] || fail "not two hoists" ;;
  fg_breaks_as_dynamo)
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
        "$FG" run branch_$arm --repro-dir "$T/br" --mode $mode --world-size 1 --out "$T/r.json" >"$T/out" 2>&1
        expect_rc $? 0
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
    done ;;
  environments_travel)
    # goldens blessed with LibTorch's own choice of CPU kernels pass under
    # every ATEN_CPU_CAPABILITY this CPU runs (the cheapest stand-in for
    # another machine): exact digests where the golden holds the run's
    # environment, elsewhere fingerprints and a note naming what differs;
    # --exact fails there, and a bless there adds that environment's digests
    # and changes nothing else
    G2="$T/g2"; mkdir -p "$G2"
    sel=(tp_block_llama --mode A --mode C --world-size 1 --golden-dir "$G2")
    env -u ATEN_CPU_CAPABILITY "$FG" bless "${sel[@]}" >"$T/out" 2>&1; expect_rc $? 0
    own=$(python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["environments"]
print(next(iter(e.values()))["aten_capability"])' "$G2/cpu/tp_block_llama/C_w1.json")
    [ -n "$own" ] || fail "the golden's environment names no ATen capability"
    # ATen's AVX2 and AVX512 kernels need these; elsewhere they would die of SIGILL
    caps="default"
    grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && caps="$caps avx2"
    if grep -qw avx512bw /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo && grep -qw avx512dq /proc/cpuinfo; then
      caps="$caps avx512"
    fi
    other=""
    for cap in $caps; do
      ATEN_CPU_CAPABILITY=$cap "$FG" check --strict "${sel[@]}" >"$T/out" 2>&1; expect_rc $? 0
      expect_out "^2 checks: 2 passed"
      if grep -q "exact digests not compared" "$T/out"; then
        expect_out "exact digests not compared: this environment is not among the golden's 1 \(aten_capability $own -> "
        [ -n "$other" ] || other=$cap
      fi
    done
    if [ "$caps" = default ]; then
      echo "note: this CPU runs ATen's default kernels only: no other capability to travel to"; echo "PASS($CASE)"; exit 0
    fi
    [ -n "$other" ] || fail "no ATEN_CPU_CAPABILITY changed the environment: the key does not see ATen's dispatch"
    ATEN_CPU_CAPABILITY=$other "$FG" check --exact "${sel[@]}" >"$T/out" 2>&1; expect_rc $? 1
    expect_out "exact digests required \(--exact\)"
    cp "$G2/cpu/tp_block_llama/C_w1.json" "$T/before.json"
    ATEN_CPU_CAPABILITY=$other "$FG" bless "${sel[@]}" >"$T/out" 2>&1; expect_rc $? 0
    expect_out "C_w1.json: this environment's exact digests added \(2 environment\(s\) now\); nothing else changed"
    expect_out "golden files changed in $G2"
    python3 - "$T/before.json" "$G2/cpu/tp_block_llama/C_w1.json" <<'PY' || fail "adding an environment changed more"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert len(b["environments"]) == 2 and set(a["environments"]) < set(b["environments"]), b["environments"]
for g in (a, b):
    del g["environments"]
    for r in g["ranks"]:
        for o in r["outputs"]:
            del o["exact"]
assert a == b, "the environment-free part of the golden changed"
PY
    for cap in "$other" ""; do
      if [ -n "$cap" ]; then export ATEN_CPU_CAPABILITY=$cap; else unset ATEN_CPU_CAPABILITY; fi
      "$FG" check --strict --exact "${sel[@]}" >"$T/out" 2>&1; expect_rc $? 0
      grep -q "exact digests not compared" "$T/out" && fail "exact digests not compared under '$cap'"
    done ;;
  bless_refuses)
    # bless never writes a state that check fails whatever its golden says
    # (exit 1, nothing written), and check fails such a state even against
    # a golden that recorded it
    mkdir -p "$T/br" "$T/g3"; cp "$T/repros/ffn_allreduce.fg" "$T/br/"
    F="$T/br/ffn_allreduce.fg"; B=(ffn_allreduce --repro-dir "$T/br" --golden-dir "$T/g3" --world-size 1)
    line=$(grep -n "all_reduce" "$F" | cut -d: -f1)
    sed -i "${line}a\\  %dbg = print(%7) : bf16[4,32,128]" "$F"
    # a break in mode C that the repro does not declare
    FUSEGATE_QUIET_PRINT=1 "$FG" bless "${B[@]}" --mode C >"$T/out" 2>&1; expect_rc $? 1
    expect_out "refused: check would fail it whatever the golden says"
    expect_out "graph break in mode C that the repro does not declare: host callback print\(\"%dbg\"\) at ffn_allreduce.fg:$((line + 1))"
    expect_out 'declare it, in a .fg as `expect break "host callback print"`'
    expect_out "graph_count 2 in mode C"
    expect_out "nothing was written: a bless writes its goldens only once every job of it can be blessed"
    [ ! -e "$T/g3/cpu/ffn_allreduce/C_w1.json" ] || fail "a refused bless wrote the golden"
    # declared, by the start of its reason: blessed and checked
    sed -i '/^graph /a\  expect break "host callback"' "$F"
    FUSEGATE_QUIET_PRINT=1 "$FG" bless "${B[@]}" --mode C >"$T/out" 2>&1; expect_rc $? 0
    FUSEGATE_QUIET_PRINT=1 "$FG" check --strict "${B[@]}" --mode C >"$T/out" 2>&1; expect_rc $? 0
    # the declaration gone: the golden that recorded the break excuses nothing
    sed -i '/expect break/d' "$F"
    FUSEGATE_QUIET_PRINT=1 "$FG" check --strict "${B[@]}" --mode C >"$T/out" 2>&1; expect_rc $? 1
    expect_out "does not declare: host callback print"
    # a declared break that did not happen is a stale declaration
    sed -i '/%dbg = print/d; /^graph /a\  expect break "host callback"' "$F"
    FUSEGATE_QUIET_PRINT=1 "$FG" check "${B[@]}" --mode C >"$T/out" 2>&1; expect_rc $? 1
    expect_out 'declares a graph break "host callback" that did not happen'
    sed -i '/expect break/d' "$F"
    # a TP-incorrect program: a row-parallel linear without its all-reduce,
    # its output declared replicated, differs across ranks
    cat >"$T/br/rowpar.fg" <<'FG'
graph rowpar(%x: bf16[4,32,256] {shard = 2}, %w: bf16[128,256] {shard = 1}) {
  %y = linear(%x, %w) : bf16[4,32,128]
  return %y
}
FG
    # (its jobs at world size 1 hold; the refusal at 2 writes none of them)
    "$FG" bless rowpar --repro-dir "$T/br" --golden-dir "$T/g3" --mode A --mode C --world-size 1 --world-size 2 \
      >"$T/out" 2>&1; expect_rc $? 1
    expect_out "rowpar/A/w2/cpu: refused"; expect_out "output out0 is replicated but rank 1 differs from rank 0"
    expect_out "nothing was written: a bless writes its goldens only once every job of it can be blessed"
    [ ! -e "$T/g3/cpu/rowpar" ] || fail "a bless with a refused job wrote goldens: $(ls -R "$T/g3/cpu/rowpar")"
    # with the all-reduce it is right, and blessed
    sed -i 's/^  return %y/  %z = all_reduce(%y) {reduce_op = "sum"} : bf16[4,32,128]\n  return %z/' "$T/br/rowpar.fg"
    "$FG" bless rowpar --repro-dir "$T/br" --golden-dir "$T/g3" --mode C --world-size 2 >"$T/out" 2>&1; expect_rc $? 0
    # a golden that is a link out of the golden folder: refused, naming both
    # paths, and what it names untouched
    echo theirs >"$T/outside.json"
    ln -s "$T/outside.json" "$T/g3/cpu/ffn_allreduce/A_w1.json"
    "$FG" bless "${B[@]}" --mode A >"$T/out" 2>&1; expect_rc $? 2
    expect_out "A_w1.json: error: is a link that leaves $T/g3 \(it would write $T/outside.json\); nothing was run"
    [ "$(cat "$T/outside.json")" = theirs ] || fail "bless wrote through a link out of the golden folder"
    # and a record under --records the same way
    mkdir -p "$T/recs"; ln -s "$T/outside.json" "$T/recs/ffn_allreduce_A_w1_cpu_default.json"
    "$FG" check ffn_allreduce --repro-dir "$T/br" --golden-dir "$T/golden" --mode A --world-size 1 \
      --records "$T/recs" >"$T/out" 2>&1; expect_rc $? 2
    expect_out "is a link that leaves $T/recs"
    [ "$(cat "$T/outside.json")" = theirs ] || fail "check wrote a record through a link out of --records" ;;
  names_mean_one_repro)
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
      --world-size 1 >"$T/out" 2>&1; expect_rc $? 0 ;;
  nothing_compared)
    # a check that compared nothing with a golden fails whatever the flags
    # (every golden MISSING passed without --strict)
    mkdir -p "$T/none" "$T/half/cpu/ffn_allreduce"
    "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/none" --mode C --world-size 1 >"$T/out" 2>&1
    expect_rc $? 1; expect_out "ffn_allreduce/C/w1/cpu +MISSING"; expect_out "nothing was compared"
    # one compared, one missing: the ratchet is --strict's
    cp "$G" "$T/half/cpu/ffn_allreduce/"; cp -r "$T/golden/proofs" "$T/half/"
    "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/half" --mode C --world-size 1 --world-size 2 \
      >"$T/out" 2>&1; expect_rc $? 0; expect_out "1 passed, 0 failed, 0 improved, 1 missing"
    "$FG" check --strict ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/half" --mode C --world-size 1 \
      --world-size 2 >"$T/out" 2>&1; expect_rc $? 1
    # a quarantined run that could not be tested compared nothing either
    printf '{"format_version": 1, "checks": [{"id": "ffn_allreduce/C/w2/cpu", "reason": "r", "link": "https://x.invalid/1", "expires": "%s"}]}\n' \
      "$(date -u -d '+30 days' +%F)" >"$T/none/quarantine.json"
    FUSEGATE_FAULT=crash:1 "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/none" --mode C \
      --world-size 1 --world-size 2 >"$T/out" 2>&1; expect_rc $? 1
    expect_out "1 missing, 0 cannot test, 1 flaky|1 flaky"; expect_out "nothing was compared" ;;
  rank_bad_input)
    # bad input inside a rank stays bad input (exit 2) in check and bisect,
    # never 125, which `git bisect run` skips
    FUSEGATE_FAULT=perturb:buf999 "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 1 \
      >"$T/out" 2>&1; expect_rc $? 2
    FUSEGATE_FAULT=perturb:buf999 check >/dev/null 2>&1; expect_rc $? 2
    FUSEGATE_FAULT=perturb:buf999 check; expect_out "bad input"; expect_out "buf999"
    FUSEGATE_FAULT=perturb:buf999 "$FG" bisect ffn_allreduce --repro-dir "$T/repros" --mode C >"$T/out" 2>&1
    expect_rc $? 2; expect_out "buf999" ;;
  folders_said)
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
    expect_out "not in this selection: the goldens of the shipped .fg repros mlp_swiglu_tails, qwen3_block, sp_gather_scatter, as --repro-dir took the place of $SRC/repros/fg"
    grep -q "golden folder of no repro" "$T/out" && fail "a shipped repro's goldens were failed as a folder of no repro"
    true ;;
  premerge_without_origin)
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
    expect_out "checks: [0-9]+ passed, 0 failed" ;;
  *) fail "unknown case" ;;
esac
echo "PASS($CASE)"
