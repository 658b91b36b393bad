"""The PyTorch side's inputs, the very ones fusegate's worker makes (its
seeds and its sharding rebuilt here), and the block as a PyTorch function
(what tp_block_llama.cpp writes)."""
import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
import xxhash

from .config import B, HEAD_DIM, HEADS, HIDDEN, MLP, REPRO, S


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


def linear_all_reduce(a, w):
    """A row-parallel linear: the GEMM, then NCCL's all-reduce of its output."""
    o = F.linear(a, w)
    dist.all_reduce(o)
    return o


def make_block(linear_reduce=linear_all_reduce):
    """The block, its two row-parallel linears (the GEMM and the all-reduce
    after it) done by linear_reduce(a, w)."""
    def blk(x, ln1, w_qkv, w_o, ln2, w_gate, w_up, w_down):
        world = dist.get_world_size()
        local = HEADS // world * HEAD_DIM
        qkv = F.linear(rms_norm(x, ln1), w_qkv)
        q, k, v = (t.view(B, S, HEADS // world, HEAD_DIM).transpose(1, 2) for t in qkv.split(local, -1))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x2 = x + linear_reduce(a.transpose(1, 2).reshape(B, S, local), w_o)
        h2 = rms_norm(x2, ln2)
        return x2 + linear_reduce(F.silu(F.linear(h2, w_gate)) * F.linear(h2, w_up), w_down)
    return blk


block = make_block()
