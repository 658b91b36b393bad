#!/usr/bin/env python3
"""The fast paths on the GPU: a block in mode C with the proven fast paths
against the generic path (--fast-paths none), both timed as CUDA-graph
replays and as host launches, in the same call; and the all-reduce + norm
fast path's own time against what it replaces (the NCCL all-reduce and the
norm kernel after it), from per-kernel profiles of the same runs.

  fastpath_bench.py --fusegate FG --out DIR [--world-size N] [--repro R]
"""
import argparse
import json
import os
import subprocess
import sys


def run(fg, repro, world, out, fast, graphs, iters, extra=()):
    tag = f"{repro}_w{world}_{'fast' if fast else 'generic'}_{'graphs' if graphs else 'host'}"
    rec, prof = os.path.join(out, tag + ".json"), os.path.join(out, tag + ".profile.json")
    cmd = [fg, "run", repro, "--backend", "cuda", "--mode", "C", "--world-size", str(world), "--iters", str(iters),
           "--out", rec, "--profile", prof] + (["--cuda-graphs"] if graphs else []) + \
          ([] if fast else ["--fast-paths", "none"]) + list(extra)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr[-2000:]}")
    return json.load(open(rec)), json.load(open(prof))


def replaced_ms(profile, fast):
    """The fast path's kernels, or the all-reduce and the norm kernel after it."""
    # memsets and copies are rows of the profile too (kind "memory"): not kernels
    rows = [k for k in profile["kernels"] if k.get("kind") != "memory"]
    if fast:
        return sum(k["ms"] for k in rows if k.get("launch") == "fastpath_allreduce_residual_rmsnorm"), \
               [k["device_kernel"] for k in rows if k.get("launch") == "fastpath_allreduce_residual_rmsnorm"]
    # the first all-reduce of a block with fast paths is the O projection's;
    # the generated kernel right after it is the residual add + RMSNorm
    # (bf16: the f32 all-reduces of the q/k norms' sums of squares are not it)
    for i, k in enumerate(rows):
        if k.get("launch") == "collective_all_reduce" and "bf16" in k["device_kernel"]:
            j = i + 1
            while j < len(rows) and rows[j].get("launch") == "collective_all_reduce":
                j += 1
            picked = rows[i:j + 1]
            return sum(x["ms"] for x in picked), [x["device_kernel"] for x in picked]
    return float("nan"), []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fusegate", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--world-size", type=int, default=1)
    ap.add_argument("--repro", action="append")
    ap.add_argument("--iters", type=int, default=50)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    repros = a.repro or ["tp_block_llama", "tp_block_llama_h2048", "tp_block_wan_h2048"]
    lines = []
    lines.append(f"| repro | world | path | launches | device kernels | CUDA graphs ms | host launches ms | "
                 f"replaced part ms | its kernels |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for repro in repros:
        for fast in (False, True):
            rg, pg = run(a.fusegate, repro, a.world_size, a.out, fast, True, a.iters)
            rh, _ = run(a.fusegate, repro, a.world_size, a.out, fast, False, a.iters)
            k = rg["ranks"][0]
            used = [f["name"] for f in k["fast_paths"] if f["status"] == "used"]
            ms, names = replaced_ms(pg, fast)
            lines.append(f"| {repro} | {a.world_size} | {'fast paths: ' + ', '.join(used) if fast else 'generic'} | "
                         f"{k['kernel_count']} | {k.get('device_kernel_count', '?')} | "
                         f"{k['times_ms']['forward_median']:.4f} | {rh['ranks'][0]['times_ms']['forward_median']:.4f} | "
                         f"{ms * 1000:.1f} us | {', '.join(n[:40] for n in names)} |")
    print(f"device: {pg['device']}")
    print("\n".join(lines))
    # The replaced part alone, timed in steady state: the per-kernel column
    # above comes from one traced forward after a synchronize, where the
    # first collective of a step also waits for the slower rank to arrive.
    # Here a graph of eight all-reduce + residual add + RMSNorm layers
    # (bench/fg) runs --iters times back to back; per layer = median / 8.
    fg_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fg")
    micro, layers = "allreduce_norm_h2048", 8
    rows, med = [], {}
    for fast in (False, True):
        for graphs in (True, False):
            r, p = run(a.fusegate, micro, a.world_size, a.out, fast, graphs, 4 * a.iters, ["--repro-dir", fg_dir])
            k = r["ranks"][0]
            if fast and not any(f["status"] == "used" for f in k["fast_paths"]):
                sys.exit(f"{micro}: the fast path did not run: {k['fast_paths']}")
            med[(fast, graphs)] = k["times_ms"]["forward_median"] * 1000 / layers
            if graphs:
                per = {}
                for x in (y for y in p["kernels"] if y.get("kind") != "memory"):
                    per.setdefault(x["device_kernel"][:40], []).append(x["ms"] * 1000)
                kern = ", ".join(f"{name} x{len(v)} median {sorted(v)[len(v) // 2]:.1f}" for name, v in per.items())
                rows.append((fast, k["kernel_count"], k.get("device_kernel_count", "?"), kern, k["accuracy"]["status"]))
    print(f"\n{micro}: {layers} layers of all-reduce + add + RMSNorm on 4 MiB bf16, world {a.world_size}, "
          f"{4 * a.iters} iterations; us per layer (median / {layers}):")
    print("| path | launches | device kernels | CUDA graphs us/layer | host launches us/layer | accuracy | "
          "kernels (one traced step, us) |")
    print("|---|---|---|---|---|---|---|")
    for fast, launches, dev, kern, acc in rows:
        print(f"| {'fast path: allreduce_residual_rmsnorm' if fast else 'generic: NCCL all-reduce + fused add+norm'} | "
              f"{launches} | {dev} | {med[(fast, True)]:.1f} | {med[(fast, False)]:.1f} | {acc} | {kern} |")
    print(f"speed-up of the fast path: {med[(False, True)] / med[(True, True)]:.2f}x with CUDA graphs, "
          f"{med[(False, False)] / med[(True, False)]:.2f}x with host launches")

if __name__ == "__main__":
    main()
