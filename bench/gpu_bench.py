#!/usr/bin/env python3
"""Side-by-side speed of fusegate and torch.compile on one TP block, on a
2-GPU machine (run by bench/gpu.sh; prints a table last).

- fusegate: `fusegate run tp_block_llama_h2048 --backend cuda --world-size 2`
  in modes A, B, C (default and max-autotune, with and without CUDA graphs).
- torch.compile on the equivalent PyTorch module, TP=2 over NCCL, with the
  very same inputs (fusegate's seeds and sharding rebuilt here): eager,
  default, max-autotune-no-cudagraphs.
- launches per forward (torch.profiler kernel events for PyTorch; fusegate's
  own count), median ms over CUDA events after warm-up, the ratio to
  torch.compile default, and the relative error against an fp64 run.
- the achieved GB/s of fusegate's RMSNorm and pointwise-chain kernels at
  8192 x 4096 bf16 against the measured device-to-device copy bandwidth.
"""
import argparse
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
import xxhash

B, S, HIDDEN, HEADS, HEAD_DIM, MLP = 2, 512, 2048, 16, 128, 8192
REPRO = "tp_block_llama_h2048"
WARMUP, ITERS = 10, 100


# ---- the same inputs as fusegate's worker ---------------------------------
def make_input(name, shape, mean, std, shard_dim, blocks, rank, world):
    seed = xxhash.xxh64_intdigest(f"{REPRO}/{name}".encode(), seed=0)
    g = torch.Generator().manual_seed(seed)
    full = (torch.randn(shape, generator=g, dtype=torch.float32) * std + mean).to(torch.bfloat16)
    if shard_dim < 0 or world == 1:
        return full.contiguous()
    parts = [blk.chunk(world, shard_dim)[rank] for blk in full.chunk(blocks, shard_dim)]
    return torch.cat(parts, shard_dim).contiguous()


def inputs(rank, world):
    sh = 1 / math.sqrt(HIDDEN)
    specs = [
        ("x", (B, S, HIDDEN), 0.0, 1.0, -1, 1),
        ("ln1", (HIDDEN,), 1.0, 0.1, -1, 1),
        ("w_qkv", (3 * HEADS * HEAD_DIM, HIDDEN), 0.0, sh, 0, 3),
        ("w_o", (HIDDEN, HEADS * HEAD_DIM), 0.0, 1 / math.sqrt(HEADS * HEAD_DIM), 1, 1),
        ("ln2", (HIDDEN,), 1.0, 0.1, -1, 1),
        ("w_gate", (MLP, HIDDEN), 0.0, sh, 0, 1),
        ("w_up", (MLP, HIDDEN), 0.0, sh, 0, 1),
        ("w_down", (HIDDEN, MLP), 0.0, 1 / math.sqrt(MLP), 1, 1),
    ]
    return {n: make_input(n, s, m, d, sd, b, rank, world) for n, s, m, d, sd, b in specs}


# ---- the PyTorch module (what tp_block_llama.cpp writes) ------------------
def rms_norm(x, w, eps=1e-6):
    xf = x if x.dtype == torch.float64 else x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return y.to(x.dtype) * w


def block(x, ln1, w_qkv, w_o, ln2, w_gate, w_up, w_down):
    world = dist.get_world_size()
    local = HEADS // world * HEAD_DIM
    qkv = F.linear(rms_norm(x, ln1), w_qkv)
    q, k, v = (t.view(B, S, HEADS // world, HEAD_DIM).transpose(1, 2) for t in qkv.split(local, -1))
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    o = F.linear(a.transpose(1, 2).reshape(B, S, local), w_o)
    dist.all_reduce(o)
    x2 = x + o
    h2 = rms_norm(x2, ln2)
    d = F.linear(F.silu(F.linear(h2, w_gate)) * F.linear(h2, w_up), w_down)
    dist.all_reduce(d)
    return x2 + d


def time_ms(fn, args):
    for _ in range(WARMUP):
        fn(*args)
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(ITERS)]
    for a, b in ev:
        a.record()
        fn(*args)
        b.record()
    torch.cuda.synchronize()
    t = sorted(a.elapsed_time(b) for a, b in ev)
    return t[len(t) // 2]


def launches(fn, args):
    from torch.profiler import ProfilerActivity, profile
    fn(*args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(*args)
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return sum(1 for n in names if "memset" not in n.lower() and "memcpy" not in n.lower())


def torch_worker(rank, world, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    w = {k: v.cuda() for k, v in inputs(rank, world).items()}
    args = [w[n] for n in ("x", "ln1", "w_qkv", "w_o", "ln2", "w_gate", "w_up", "w_down")]
    with torch.no_grad():
        ref = block(*[a.double() for a in args]).float()
        rows = []
        for name, fn in [("torch eager", block),
                         ("torch.compile default", torch.compile(block, fullgraph=True)),
                         ("torch.compile max-autotune-no-cudagraphs",
                          torch.compile(block, fullgraph=True, mode="max-autotune-no-cudagraphs"))]:
            y = fn(*args).float()
            err = ((y - ref).norm() / ref.norm()).item()
            rows.append({"name": name, "launches": launches(fn, args), "ms": time_ms(fn, args), "rel_err": err})
    if rank == 0:
        pathlib.Path(out, "torch.json").write_text(json.dumps(rows))
    dist.barrier()
    dist.destroy_process_group()


# ---- fusegate ---------------------------------------------------------------
def fusegate_run(fg, repro, mode, world, extra, repro_dir=None, iters=ITERS):
    cmd = [fg, "run", repro, "--backend", "cuda", "--mode", mode, "--world-size", str(world), "--iters", str(iters)]
    cmd += extra
    if repro_dir:
        cmd += ["--repro-dir", repro_dir]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=500)
    if p.returncode != 0:
        return None, p.stderr[-2000:]
    return json.loads(p.stdout), ""


def rel_err(rec):
    k = rec["ranks"][0]
    acc = k.get("accuracy")
    if not acc:
        return float("nan")
    o = k["outputs"][0]["fingerprint"]
    rms = math.sqrt(o["sumsq"] / o["numel"])
    return acc["outputs"][0]["rmse_vs_fp64"] / rms


def copy_bandwidth():
    n = 1 << 30  # 1 GiB each way
    a = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    b = torch.empty_like(a)
    ms = time_ms(lambda: b.copy_(a), [])
    return 2 * n / (ms * 1e-3) / 1e9


def kernel_gbps(fg, tmp):
    """fusegate's RMSNorm and pointwise chain at 8192 x 4096 bf16, timed as
    CUDA-graph replays of one-kernel graphs; bytes = read once + write once."""
    d = pathlib.Path(tmp, "fg")
    d.mkdir(exist_ok=True)
    (d / "bw_rms_norm.fg").write_text("""graph bw_rms_norm(%x: bf16[8192,4096], %w_norm: bf16[4096]) {
  %2 = rms_norm(%x, %w_norm) {eps = 1e-06} : bf16[8192,4096]
  return %2
}
""")
    (d / "bw_pointwise.fg").write_text("""graph bw_pointwise(%x: bf16[8192,4096], %y: bf16[8192,4096]) {
  %2 = add(%x, %y) : bf16[8192,4096]
  %3 = gelu(%2) {approximate = "tanh"} : bf16[8192,4096]
  %4 = full() {value = 0.5} : f32[]
  %5 = mul(%3, %4) : bf16[8192,4096]
  return %5
}
""")
    out = []
    for name, tensors in (("bw_rms_norm", 2), ("bw_pointwise", 3)):
        rec, err = fusegate_run(fg, name, "C", 1, ["--cuda-graphs"], str(d))
        if rec is None:
            out.append((name, None, err))
            continue
        k = rec["ranks"][0]
        ms = k["times_ms"]["forward_median"]
        nbytes = tensors * 8192 * 4096 * 2
        out.append((name, (k["kernel_count"], ms, nbytes / (ms * 1e-3) / 1e9, k["times_ms"]["how"]), ""))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fusegate", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--kernels-only", action="store_true", help="only the kernel GB/s table")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    env = os.environ
    for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        assert env.get(k) in ("0", "1"), f"{k} must be set"
    gpu = torch.cuda.get_device_name(0)
    bw = copy_bandwidth()
    with tempfile.TemporaryDirectory() as tmp:
        kernels = kernel_gbps(a.fusegate, tmp)

    rows, notes = [], []
    for label, mode, extra in [] if a.kernels_only else [("fusegate A eager", "A", []),
                               ("fusegate B compiled-disabled", "B", []),
                               ("fusegate C default", "C", []),
                               ("fusegate C default + CUDA graphs", "C", ["--cuda-graphs"]),
                               ("fusegate C max-autotune", "C", ["--fusion", "max-autotune"]),
                               ("fusegate C max-autotune + CUDA graphs", "C", ["--fusion", "max-autotune", "--cuda-graphs"])]:
        rec, err = fusegate_run(a.fusegate, REPRO, mode, 2, extra)
        if rec is None:
            notes.append(f"{label}: failed: {err.strip().splitlines()[-1] if err.strip() else '?'}")
            continue
        k = rec["ranks"][0]
        rows.append({"name": label, "launches": k["kernel_count"], "ms": k["times_ms"]["forward_median"],
                     "rel_err": rel_err(rec), "how": k["times_ms"]["how"]})
        pathlib.Path(a.out, f"fusegate_{mode}_{len(rows)}.json").write_text(json.dumps(rec)[:200000])
    if not a.skip_torch and not a.kernels_only:
        mp.spawn(torch_worker, args=(2, 29577, a.out), nprocs=2, join=True)
        rows += json.loads(pathlib.Path(a.out, "torch.json").read_text())
    base = next((r["ms"] for r in rows if r["name"] == "torch.compile default"), float("nan"))

    lines = [f"GPU: 2 x {gpu}; torch {torch.__version__}; block {REPRO} (hidden {HIDDEN}, {HEADS} heads x {HEAD_DIM}, "
             f"MLP {MLP}, batch {B} x seq {S}, bf16), TP=2 over NCCL; median of {ITERS} after {WARMUP} warm-up (CUDA events)",
             "",
             "| run | launches / forward | median ms | vs torch.compile default | rel. error vs fp64 |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['launches']} | {r['ms']:.3f} | {r['ms'] / base:.2f} | {r['rel_err']:.2e} |")
    lines += ["", f"device-to-device copy: {bw:.0f} GB/s (bytes read + written)", "",
              "| kernel (8192 x 4096 bf16) | launches | median ms | GB/s | of copy |", "|---|---|---|---|---|"]
    for name, v, err in kernels:
        if v is None:
            lines.append(f"| {name} | failed | | | |")
            notes.append(f"{name}: {err.strip().splitlines()[-1] if err.strip() else '?'}")
        else:
            lines.append(f"| {name} | {v[0]} | {v[1]:.4f} | {v[2]:.0f} | {100 * v[2] / bw:.0f}% |")
    lines += [""] + [f"note: {n}" for n in notes] + [f"timing: {r['name']}: {r['how']}" for r in rows if "how" in r]
    text = "\n".join(lines)
    pathlib.Path(a.out, "bench.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
