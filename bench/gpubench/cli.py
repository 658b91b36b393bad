"""The bench's command line (bench/gpu_bench.py calls main): the arguments,
the checks of the environment, then the sweep (fusegate, then torch, then
the profiles, the floor and the rounds) and bench.md."""
import argparse
import datetime
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import torch

from .config import (B, BLOCK, BLOCKS, FLOOR, FUSEGATE_CONFIGS, GRAPHS, HEAD_DIM, HEADS, HIDDEN, ITERS, MLP,
                     QUICK, REPRO, S, TORCH_CONFIGS, WARMUP, WARMUP_MS)
from .floors import floor_lines
from .fusegate_side import fusegate_profile, fusegate_rows
from .helpers import best, dump_json, slim_record
from .results import entry as results_entry
from .kernels import copy_bandwidth, kernel_gbps, kernel_lines
from .report import fusegate_profile_lines, headline, main_table, rounds_lines, torch_trace_lines, warmup_line
from .rounds import interleaved_rounds, rounds_only
from .torch_side import run_torch


def main(doc):
    """The bench; returns the exit status. doc: bench/gpu_bench.py's
    docstring, whose first paragraph is --help's description."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--fusegate", required=True, help="the fusegate binary")
    ap.add_argument("--out", required=True, help="folder for bench.md and the raw JSON")
    ap.add_argument("--world-size", type=int, default=1, help="tensor-parallel ranks, one GPU each (default 1)")
    ap.add_argument("--skip-torch", action="store_true", help="fusegate rows only")
    ap.add_argument("--kernels-only", action="store_true", help="only the kernel GB/s table")
    ap.add_argument("--block", choices=sorted(BLOCKS), default="h2048",
                    help="tp_block_llama_<BLOCK>: h2048 (default), h2048_s2048 (seq 2048), h4096 (hidden 4096)")
    ap.add_argument("--quick", action="store_true",
                    help="only the rows the headline compares (no eager or compiled-disabled rows, no kernel table)")
    ap.add_argument("--warmup-ms", type=int, default=WARMUP_MS,
                    help="untimed back-to-back forwards for this long before each side's timings (default "
                         "GPU_BENCH_WARMUP_MS or 6000): the GPU settles at its power cap first")
    ap.add_argument("--no-floor", action="store_true",
                    help="leave out the floor (the block's cuBLAS GEMMs alone, timed with torch's side)")
    ap.add_argument("--rounds", type=int, default=0,
                    help="after the sweep, time each side's best CUDA-graph configuration again in this many "
                         "interleaved rounds (ABBA) and report the median ratio; each round is a fresh process a "
                         "side, so torch recompiles its configuration every round (max-autotune: minutes)")
    ap.add_argument("--rounds-only", action="store_true",
                    help="no sweep: only the --rounds, of --fusegate-config against --torch-config (a call at "
                         "world size 2 cannot hold the sweep and the rounds)")
    ap.add_argument("--fusegate-config", default="fusegate C max-autotune + CUDA graphs",
                    help="with --rounds-only: fusegate's side (a label of the sweep's rows)")
    ap.add_argument("--torch-config", default="torch.compile reduce-overhead",
                    help="with --rounds-only: torch's side (a label of the sweep's rows, a CUDA-graph one)")
    a = ap.parse_args()
    if a.rounds_only:
        fg_cfg = [c for c in FUSEGATE_CONFIGS if c[0] == a.fusegate_config and c[1] == GRAPHS]
        t_cfg = [c for c in TORCH_CONFIGS if c[0] == a.torch_config and c[1] == GRAPHS]
        bad = []
        if a.rounds < 1:
            bad.append("--rounds-only needs --rounds N (1 or more)")
        if not fg_cfg:
            bad.append(f"--fusegate-config '{a.fusegate_config}' is none of the CUDA-graph rows: " +
                       ", ".join(c[0] for c in FUSEGATE_CONFIGS if c[1] == GRAPHS))
        if not t_cfg:
            bad.append(f"--torch-config '{a.torch_config}' is none of the CUDA-graph rows: " +
                       ", ".join(c[0] for c in TORCH_CONFIGS if c[1] == GRAPHS))
        if bad:
            print("gpu_bench: " + "; ".join(bad), file=sys.stderr)
            return 2
    if a.warmup_ms < 0:
        print(f"gpu_bench: --warmup-ms {a.warmup_ms}: must be 0 or more", file=sys.stderr)
        return 2
    if a.block != BLOCK or a.quick != QUICK or a.warmup_ms != WARMUP_MS or a.no_floor == FLOOR:
        # run again with the sizes set at import, where the spawned workers read them
        env = dict(os.environ, GPU_BENCH_BLOCK=a.block, GPU_BENCH_QUICK="1" if a.quick else "0",
                   GPU_BENCH_WARMUP_MS=str(a.warmup_ms), GPU_BENCH_FLOOR="0" if a.no_floor else "1")
        return subprocess.call([sys.executable] + sys.argv, env=env)
    os.makedirs(a.out, exist_ok=True)
    env = os.environ
    want = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
    wrong = [f"{k}={env.get(k)}" for k, v in want.items() if env.get(k) != v]
    if wrong:
        print("gpu_bench: NVLink multicast must stay off: set " + " ".join(f"{k}={v}" for k, v in want.items()) +
              " (found " + ", ".join(wrong) + ")", file=sys.stderr)
        return 2
    world = a.world_size
    ngpu = torch.cuda.device_count()
    if world < 1 or HEADS % world:
        print(f"gpu_bench: --world-size {world}: must divide the block's {HEADS} heads", file=sys.stderr)
        return 2
    if ngpu < world:
        print(f"gpu_bench: --world-size {world} needs {world} GPUs; {ngpu} visible", file=sys.stderr)
        return 2
    gpu = torch.cuda.get_device_name(0)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    header = (f"GPU: {ngpu} x {gpu}; torch {torch.__version__}; block {REPRO} (hidden {HIDDEN}, {HEADS} heads x "
              f"{HEAD_DIM}, MLP {MLP}, batch {B} x seq {S}, bf16); world size {world} (TP over NCCL); "
              f"median of {ITERS} CUDA-event timings after warm-up ({WARMUP_MS} ms of back-to-back forwards "
              f"each side); {started}")

    if a.rounds_only:
        return rounds_only(a, world, header)

    # the kernel GB/s table: one-kernel graphs at world size 1
    bw = copy_bandwidth()
    torch.cuda.empty_cache()
    records = {"runs": [], "bandwidth": []}
    kernels = []
    if not QUICK:
        with tempfile.TemporaryDirectory() as tmp:
            kernels = kernel_gbps(a.fusegate, tmp)
    records["bandwidth"] = [{"name": n, "result": v, "error": e[-500:]} for n, v, e in kernels]
    knotes = []
    klines = kernel_lines(bw, kernels, knotes)
    if a.kernels_only:
        text = "\n".join([header, ""] + klines + [f"note: {n}" for n in knotes])
        pathlib.Path(a.out, "bench.md").write_text(text + "\n")
        print(text)
        return 0

    # fusegate: the six timed configurations, then the best CUDA-graph one
    # once more with --profile
    notes = []
    fg_rows = fusegate_rows(a.fusegate, world, records)
    fg_best_graph = best(fg_rows, lambda r: r["class"] == GRAPHS)
    fg_prof, fg_prof_err = None, "failed: no fusegate CUDA-graph configuration ran"
    if fg_best_graph:
        fg_prof, fg_prof_err = fusegate_profile(a.fusegate, world, fg_best_graph, a.out, records)
    dump_json(pathlib.Path(a.out, "fusegate.json"), records,
              slim=lambda o: {**o, "runs": [{**x, "record": slim_record(x["record"])} for x in o["runs"]],
                              "profile_run": slim_record((o.get("profile_run") or {}).get("record"))})

    # PyTorch: every configuration in one group of workers
    torch_rows, traces, floors = [], {}, []
    if not a.skip_torch:
        torch_rows, traces, floors = run_torch(world, a.out)
    rows = fg_rows + torch_rows
    notes += [f"{r['name']}: {r['note']}" for r in rows if r.get("note")]
    notes += sorted({f"torch: {r['teardown']}" for r in torch_rows if r.get("teardown")})

    # per-kernel profiles side by side
    plines = ["## Per-kernel profiles: best CUDA-graph configuration of each side, one forward", ""]
    if fg_prof:
        plines += fusegate_profile_lines(fg_best_graph["name"], fg_prof)
    else:
        label = fg_best_graph["name"] if fg_best_graph else "fusegate"
        plines.append(f"### fusegate: {label}: profile {fg_prof_err}")
        notes.append(f"{label} --profile: {fg_prof_err}")
    plines.append("")
    t_best_graph = best(torch_rows, lambda r: r["class"] == GRAPHS)
    if a.skip_torch:
        plines.append("### PyTorch: skipped (--skip-torch)")
    elif t_best_graph and t_best_graph["name"] in traces:
        plines += torch_trace_lines(t_best_graph["name"], traces[t_best_graph["name"]])
    else:
        plines.append("### PyTorch: no CUDA-graph configuration ran")

    klines = ["## fusegate kernels at 8192 x 4096 bf16 (world size 1, CUDA-graph replays)", ""] + klines

    def report(rlines):
        """bench.md (written aside and renamed) with the main table last;
        returns its text"""
        mlines = ["## fusegate vs PyTorch", "", header, ""] + main_table(rows, torch_rows)
        mlines += [""] + headline(fg_rows, torch_rows, a.skip_torch)
        mlines += [""] + floor_lines(floors, fg_best_graph, t_best_graph, FLOOR and not a.skip_torch)
        if rlines:
            mlines += [""] + rlines
        mlines += [""] + [f"note: {n}" for n in notes + knotes]
        mlines += [f"timing: {r['name']}: {r['how']}" for r in fg_rows if r.get("how")]
        mlines += [f"ran: {r['name']}: {x}" for r in fg_rows for x in r.get("ran", [])]
        if torch_rows:
            mlines.append(f"timing: torch rows: rank 0, median of {ITERS} CUDA-event timings after {WARMUP} warm-up "
                          f"calls and {WARMUP_MS} ms more at the pace of {WARMUP} calls after them; kernels from "
                          "torch.profiler; reduce-overhead and max-autotune with static input addresses")
            w = warmup_line(torch_rows + floors)
            if w:
                mlines.append(f"timing: torch {w}")
        text = "\n".join(klines + [""] + plines + [""] + mlines)
        tmp = pathlib.Path(a.out, "bench.md.tmp")
        tmp.write_text(text + "\n")
        os.replace(tmp, pathlib.Path(a.out, "bench.md"))
        # the headline as data, for bench/record_results.py
        e = results_entry(gpu, f"{ngpu} x {gpu}", started[:10], world, BLOCK, torch.__version__, fg_rows, torch_rows, floors)
        dump_json(pathlib.Path(a.out, "results_entry.json"), e)
        return text

    # the interleaved rounds, after the sweep's report is on disk: a call
    # that runs out of time during them keeps the sweep (its interleaved
    # line says the rounds did not finish)
    rlines = []
    if a.rounds > 0 and not a.skip_torch:
        if fg_best_graph and t_best_graph and fg_best_graph.get("ms") and t_best_graph.get("ms"):
            report([f"- CUDA graphs, interleaved: not finished ({a.rounds} rounds started; "
                    "this file is rewritten when they end)"])
            rounds = interleaved_rounds(a.fusegate, world, a.out, fg_best_graph, t_best_graph, a.rounds)
            pathlib.Path(a.out, "rounds.json").write_text(json.dumps(rounds, indent=1) + "\n")
            rlines = rounds_lines(fg_best_graph, t_best_graph, rounds)
        else:
            rlines = ["- CUDA graphs, interleaved: not run (a side has no CUDA-graph configuration that ran)"]
    text = report(rlines)
    print(text)
    return 0
