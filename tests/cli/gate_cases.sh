# shellcheck shell=bash
# Cases of the gate's verdicts against goldens: pass, breaks, kernel counts,
# ledger and extern changes, corrupted or incomplete goldens, bless (missing,
# refused, environments), quarantine, the JUnit file, nothing compared.
# Sourced by cli_test.sh after lib.sh; each case_NAME is the case NAME.

case_pass() {
    check --strict; expect_rc $? 0; expect_out "1 passed"
}

case_print_break() {
    # a print added inside the block: a new graph break, named with its line
    line=$(grep -n "all_reduce" "$T/repros/ffn_allreduce.fg" | cut -d: -f1)
    sed -i "${line}a\\  %dbg = print(%7) : bf16[4,32,128]" "$T/repros/ffn_allreduce.fg"
    check; expect_rc $? 1
    expect_out "new graph break: host callback print"
    expect_out "ffn_allreduce.fg:$((line + 1))"
    expect_out "graph_break_count 0 -> 1"
}

case_more_kernels() {
    # the golden records one kernel fewer than the run launches
    python3 - "$G" <<'PY'
import json, sys
p = sys.argv[1]; r = json.load(open(p))
for k in r["ranks"]: k["kernel_count"] -= 1
open(p, "w").write(json.dumps(r, indent=2, sort_keys=True) + "\n")
PY
    check; expect_rc $? 1; expect_out "FAIL"; expect_out "kernel_count [0-9]+ -> [0-9]+"
}

case_fewer_kernels() {
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
    check --strict; expect_rc $? 0
}

case_corrupted_golden() {
    sed -i '3s/.*/  "broken": ,/' "$G"
    check; expect_rc $? 2; expect_out "C_w1.json:3:"
}

case_ledger_diff() {
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
    expect_out "rejected \\(memory_deps_mismatch\\) -> fused"
}

case_extern_dispatch_changed() {
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
    expect_out "aten::renamed_in_golden [0-9]+ -> 0"
}

case_golden_without_real_figures() {
    # a golden blessed before fusegate counted what really runs cannot vouch
    # for a run: no silent pass
    python3 - "$G" <<'PY'
import json, sys
p = sys.argv[1]; r = json.load(open(p))
for k in r["ranks"]: del k["aten_op_count"]
open(p, "w").write(json.dumps(r, indent=2, sort_keys=True) + "\n")
PY
    check; expect_rc $? 1; expect_out "the golden has no aten_op_count"
}

case_bless_missing() {
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
    expect_out "every one of the 9 selected checks has its golden file; nothing to bless"
}

case_quarantine() {
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
    check; expect_rc $? 2; expect_out "quarantined check 'nope/C/w1/cpu' names no repro"
}

case_junit_read_back() {
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
    done
}

case_environments_travel() {
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
    done
}

case_bless_refuses() {
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
    expect_out "rowpar/A/w2/cpu: refused"; expect_out "output y is replicated but rank 1 differs from rank 0"
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
    [ "$(cat "$T/outside.json")" = theirs ] || fail "check wrote a record through a link out of --records"
}

case_nothing_compared() {
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
    expect_out "1 missing, 0 cannot test, 1 flaky|1 flaky"; expect_out "nothing was compared"
}
