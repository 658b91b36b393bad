"""What the bench runs: the block sizes, the switches the environment sets
(read at import, so that the spawned PyTorch workers see the very values of
the process that spawned them), the iteration counts and timeouts, and the
fusegate and PyTorch configurations. No torch."""
import os


# the block sizes (`--block`; repros/registry.cpp's GPU sizes of tp_block_llama):
# name -> (batch, seq, hidden, heads, head_dim, mlp)
BLOCKS = {
    "h2048": (2, 512, 2048, 16, 128, 8192),
    "h2048_s2048": (2, 2048, 2048, 16, 128, 8192),
    "h4096": (2, 512, 4096, 32, 128, 14336),
}
# the spawned PyTorch workers import the package afresh: they read the block
# and the quick flag from the environment cli.main sets
BLOCK = os.environ.get("GPU_BENCH_BLOCK", "h2048")
B, S, HIDDEN, HEADS, HEAD_DIM, MLP = BLOCKS.get(BLOCK, BLOCKS["h2048"])
REPRO = "tp_block_llama_" + BLOCK
QUICK = os.environ.get("GPU_BENCH_QUICK") == "1"
FLOOR = os.environ.get("GPU_BENCH_FLOOR", "1") == "1"  # --no-floor: 0
WARMUP, ITERS = 20, 200
# Then more untimed calls for this long, as many as fill it at the pace of
# WARMUP more calls after the first WARMUP (time_ms), queued back to back (both sides alike: fusegate's
# `run --warmup-ms`). Under sustained load an H100 settles at its 700 W cap
# with the SM clock near 1.4-1.6 GHz instead of 1.98; a run that times from
# a cool start straddles the change, and its median moved 5-10% from process
# to process (bench/RESULTS.md, tenth step). 6000 since 2026-11-27: after
# a real 2000 ms fusegate's forward at h4096 on two H100 still got about
# 1.5% faster through its 200 timings (sixteenth step). 0: the old way.
WARMUP_MS = int(os.environ.get("GPU_BENCH_WARMUP_MS", "6000"))
PROFILE_ITERS = 20          # iterations of the extra fusegate --profile run
FUSEGATE_TIMEOUT_S = 500    # one `fusegate run`
TORCH_TIMEOUT_S = 1800      # all PyTorch configurations together
TORCH_EXIT_GRACE_S = 20     # for the ranks to exit once every figure is written
JSON_LIMIT = 1_000_000      # bytes per raw JSON file under --out

GRAPHS, HOST = "CUDA graphs", "host launches"

# (label, class, mode, extra fusegate flags)
FUSEGATE_CONFIGS = [
    ("fusegate A eager", HOST, "A", []),
    ("fusegate B compiled-disabled", HOST, "B", []),
    ("fusegate C default", HOST, "C", []),
    ("fusegate C default + CUDA graphs", GRAPHS, "C", ["--cuda-graphs"]),
    ("fusegate C max-autotune", HOST, "C", ["--fusion", "max-autotune"]),
    ("fusegate C max-autotune + CUDA graphs", GRAPHS, "C", ["--fusion", "max-autotune", "--cuda-graphs"]),
]

# --quick leaves out the rows no headline reads (eager, compiled-disabled)
if QUICK:
    FUSEGATE_CONFIGS = [c for c in FUSEGATE_CONFIGS if c[2] == "C"]

# (label, class, kind); every rank runs them in this order
TORCH_CONFIGS = [
    ("torch eager", HOST, "eager"),
    ("torch.compile default", HOST, "default"),
    ("torch.compile reduce-overhead", GRAPHS, "reduce-overhead"),
    ("torch.compile max-autotune", GRAPHS, "max-autotune"),
    ("torch.compile default + whole-forward CUDA graph", GRAPHS, "default+graph"),
    ("torch.compile max-autotune-no-cudagraphs", HOST, "max-autotune-no-cudagraphs"),
]
# The strongest all-reduce a PyTorch user can ask for today, each with the
# whole forward in one CUDA graph (torch_configs.py says how each is built);
# only where there is something to reduce (world size 2 and more):
# - Inductor's own lowering of the all-reduce to symmetric memory's one-shot
#   kernel (config._collective.auto_select, its size threshold raised to the
#   block's message, the group enabled for symmetric memory);
# - each of the two GEMMs before an all-reduce written straight into a
#   symmetric-memory buffer and reduced there by symm_mem's one-shot or
#   two-shot kernel (a custom op around the GEMM and the exchange).
TORCH_SYMM_CONFIGS = [
    ("torch.compile default + symm-mem one-shot (Inductor's lowering) + whole-forward CUDA graph", GRAPHS,
     "symm-inductor+graph"),
    ("torch.compile default + GEMM into symm-mem + one-shot all-reduce + whole-forward CUDA graph", GRAPHS,
     "symm-one-shot+graph"),
    ("torch.compile default + GEMM into symm-mem + two-shot all-reduce + whole-forward CUDA graph", GRAPHS,
     "symm-two-shot+graph"),
]
TORCH_CONFIGS += TORCH_SYMM_CONFIGS
if QUICK:
    TORCH_CONFIGS = [c for c in TORCH_CONFIGS if c[2] != "eager"]
# the compiled host-launch configurations the headline compares against
TORCH_COMPILED_HOST = ("torch.compile default", "torch.compile max-autotune-no-cudagraphs")


def torch_configs(world):
    """TORCH_CONFIGS at this world size (the symmetric-memory ones from 2),
    or the one an interleaved round asks for (GPU_BENCH_TORCH_ONLY, set
    before the workers are spawned)."""
    only = os.environ.get("GPU_BENCH_TORCH_ONLY")
    return [c for c in TORCH_CONFIGS if (not only or c[0] == only) and (world > 1 or c not in TORCH_SYMM_CONFIGS)]
