# shellcheck shell=bash
# Cases of ranks and nodes: a crashed, hung or stopped rank, ranks that
# compiled differently, what a killed run leaves behind, two nodes on this
# machine (run, check, bless, prove).
# Sourced by cli_test.sh after lib.sh; each case_NAME is the case NAME.

case_rank_crash() {
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
    [ -z "$left" ] || fail "a crashed run left shared memory behind: $left"
}

case_rank_hang() {
    start=$(date +%s)
    FUSEGATE_FAULT=hang:1 "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 2 --timeout 5 >"$T/out" 2>&1
    rc=$?; took=$(( $(date +%s) - start ))
    expect_rc $rc 125; expect_out "rank 1 .*did not finish within 5 s"
    [ "$took" -lt 30 ] || fail "took ${took}s to stop a hung run with --timeout 5"
    sleep 0.5
    if pgrep -f "_worker ffn_allreduce.*$T" >/dev/null; then fail "rank processes left behind"; fi
}

case_spawned_ranks_as_execd() {
    # CPU ranks are forked by the spawner (harness/run/spawner.h): they record
    # what exec'd ranks record (FUSEGATE_FAULT=exec_ranks) and are the launcher's
    # children with a rank's command line. (That they see the environment the
    # launcher has when it starts them, not when it started the spawner, the
    # bisect cases show: bisect sets FUSEGATE_BISECT between its runs.)
    "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 2 --out "$T/spawned.json" >"$T/out" 2>&1
    expect_rc $? 0
    FUSEGATE_FAULT=exec_ranks "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 2 --out "$T/execd.json" \
      >"$T/out" 2>&1
    expect_rc $? 0
    python3 - "$T/spawned.json" "$T/execd.json" <<'PY' || fail "spawned and exec'd ranks recorded different things"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
keys = ("hashes", "outputs", "kernel_count", "aten_op_count", "graph_count", "accuracy")
assert len(a["ranks"]) == len(b["ranks"]) == 2, (len(a["ranks"]), len(b["ranks"]))
for ra, rb in zip(a["ranks"], b["ranks"]):
    for k in keys:
        assert ra[k] == rb[k], (k, ra[k], rb[k])
assert a["env"] == b["env"]
PY
    for spawner in 1 0; do
      FUSEGATE_FAULT=$([ $spawner = 0 ] && echo exec_ranks) "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode C --world-size 2 --timeout 60 \
        --iters 1000000 >"$T/out" 2>&1 &
      lp=$!
      r1=""
      for i in $(seq 1 1200); do
        r1=$(pgrep -P $lp -f -- "_worker ffn_allreduce .*--rank 1 " | head -1)
        [ -n "$r1" ] && break
        sleep 0.05
      done
      sp=$(pgrep -P $lp -f -- "fusegate-full _spawner" | head -1)
      kill -TERM $lp; wait $lp
      [ -n "$r1" ] || fail "spawner $spawner: no rank 1 process, a child of launcher $lp, named as a rank"
      if [ $spawner = 1 ]; then
        [ -n "$sp" ] || fail "no spawner under launcher $lp"
      else
        [ -z "$sp" ] || fail "FUSEGATE_FAULT=exec_ranks and a spawner under launcher $lp"
      fi
    done
    sleep 0.5
    if pgrep -f "_worker ffn_allreduce.*$T" >/dev/null; then fail "rank processes left behind"; fi
}

case_hung_rank_named() {
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
    done
}

case_hung_compute_thread_named() {
    # a rank whose work stops between collectives while its heartbeat beats
    # (both ranks at the same step) is the one named: it is behind the
    # others in collectives entered; rank 1 and rank 0 in turn, world 2 and 4
    for spec in "1 2 C" "0 2 C" "2 4 B"; do
      set -- $spec
      FUSEGATE_FAULT=hang_before_collective:$1 "$FG" run ffn_allreduce --repro-dir "$T/repros" --mode $3 \
        --world-size $2 --timeout 5 >"$T/out" 2>&1
      expect_rc $? 125
      expect_out "rank $1 \(its work stopped (after [0-9]+ collectives?, while the others entered up to|before collective)"
    done
}

case_ranks_disagree() {
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
    expect_rc $? 1; expect_out "tp_block_llama/C/w2/cpu +FAIL"; expect_out "differs from rank 0 at decision"
}

case_leftovers_after_kill() {
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
    [ ! -e "$stale" ] || fail "the next run did not sweep the folder $stale of a launcher that exited"
}

case_multi_node() {
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
    grep -q "is not a node of --nnodes 2" "$T/out" || fail "node rank out of range"
}

case_multi_node_check() {
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
    expect_out "needs every rank on one host"
}
