"""Which fused attention kernel to run in the TP blocks (issue 17): PyTorch's
scaled_dot_product_attention backends (cuDNN, flash, memory-efficient) at
the blocks' attention shapes, each timed as it runs in the forward: a CUDA
graph of twenty [qkv projection -> attention -> output projection] steps,
replayed, minus the same graph without the attention; and the kernels and
memsets one step runs (torch.profiler). cuDNN's kernel needs a 4-byte memset
before it, and in the replayed forward idle time falls around it.

    python3 bench/attn_backends.py            # prints a Markdown table
"""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = {  # block: (batch, seq, heads, head_dim)
    "h2048": (2, 512, 16, 128),
    "h2048_s2048": (2, 2048, 16, 128),
    "h4096": (2, 512, 32, 128),
}
BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}
STEPS = 20


def graph_ms(fn, reps=5, iters=20):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    for _ in range(3):
        g.replay()
    best = 1e30
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(iters):
            g.replay()
        b.record()
        b.synchronize()
        best = min(best, a.elapsed_time(b) / iters)
    return best, g


def main():
    torch.manual_seed(0)
    dev = torch.cuda.get_device_name()
    print(f"{dev}; torch {torch.__version__}\n")
    print("| block | backend | attention in the forward us (a step) | kernels of one step (us) |")
    print("|---|---|---|---|")
    for blk, (b, s, h, d) in SHAPES.items():
        hid = h * d
        x = torch.randn(b * s, hid, device="cuda", dtype=torch.bfloat16)
        w_qkv = torch.randn(3 * hid, hid, device="cuda", dtype=torch.bfloat16) / hid ** 0.5
        w_o = torch.randn(hid, hid, device="cuda", dtype=torch.bfloat16) / hid ** 0.5

        def step(attn):
            qkv = F.linear(x, w_qkv)
            q, k, v = (t.view(b, s, h, d).transpose(1, 2) for t in qkv.split(hid, -1))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True) if attn else q
            return F.linear(a.transpose(1, 2).reshape(b * s, hid), w_o)

        base, _ = graph_ms(lambda: [step(False) for _ in range(STEPS)])
        for name, be in BACKENDS.items():
            try:
                with sdpa_kernel([be]):
                    ms, g = graph_ms(lambda: [step(True) for _ in range(STEPS)])
                    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                        g.replay()
                        torch.cuda.synchronize()
            except RuntimeError as e:
                print(f"| {blk} | {name} | does not run: {str(e).splitlines()[0][:80]} | |")
                continue
            evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            per = {}
            for e in evs:
                per.setdefault(e.name[:50], []).append(e.device_time)
            kern = "; ".join(f"{k} x{len(v) // STEPS} {sum(v) / len(v):.1f}" for k, v in per.items()
                             if "nvjet" not in k and "gemm" not in k.lower())
            print(f"| {blk} | {name} | {1000 * (ms - base) / STEPS:.1f} | {kern} |")


if __name__ == "__main__":
    main()
