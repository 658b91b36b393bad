#!/usr/bin/env python3
"""Side-by-side speed of fusegate and PyTorch on one TP block, every figure
taken in one call (run by `bench/gpu.sh bench`; prints the main table last
and writes everything to OUT/bench.md).

    python3 bench/gpu_bench.py --fusegate ./build-gpu/harness/fusegate --out OUT
                               [--world-size N] [--skip-torch] [--kernels-only]
                               [--block B] [--quick] [--rounds N] [--no-floor]
                               [--rounds-only [--fusegate-config L] [--torch-config L]]

Configurations, each labelled with its class ("CUDA graphs" or "host
launches") so that a ratio never divides a CUDA-graph time by a host-launch
time:

- fusegate: `fusegate run tp_block_llama_h2048 --backend cuda --world-size N
  --iters 200` in modes A, B, C (default and max-autotune, with and without
  --cuda-graphs); the median is rank 0's `times_ms.forward_median`.
- PyTorch on the equivalent module (the block below), TP=N over NCCL in
  torch.multiprocessing workers, with the very same inputs (fusegate's seeds
  and sharding rebuilt here): eager, torch.compile default, reduce-overhead
  (cudagraph trees), max-autotune (also CUDA graphs), the compiled default
  captured whole in one torch.cuda.graph and replayed, and
  max-autotune-no-cudagraphs. Median of ITERS CUDA-event timings after
  warm-up; kernels per forward from torch.profiler; relative error against
  an fp64 run of the block.
- with a warm-up (--warmup-ms, default 6000): each configuration's energy
  a forward (mJ), mean watts and SM clock over half as many forwards again
  right after its timings (fusegate's `times_ms.energy`, the torch side
  through the same NVML counter via ctypes), and the energy ratio of the
  best CUDA-graph pair beside the time ratio: at the power cap a forward's
  time follows its energy.
- what each fusegate configuration ran (`ran:` lines): the fast paths used
  and blocked (a blocked one means this GPU has no proof covering the run:
  the bench then times the generic path) and each GEMM whose cuBLASLt
  algorithm is not the top-1, with its check in the forward.
- per-kernel profiles side by side: fusegate's best CUDA-graph configuration
  (`--profile`, its rank 0's JSON) and PyTorch's best CUDA-graph
  configuration (a torch.profiler trace of one forward): duration of every
  device kernel, the idle gap before it, and span / busy / idle totals.
- with --rounds N: each side's best CUDA-graph configuration timed again
  in N interleaved rounds (ABBA: the side that goes first alternates), and
  the median of the rounds' ratios (rounds.json); with --rounds-only, no
  sweep: the rounds alone of the two named configurations, rounds.json and
  bench.md rewritten after each round.
- the floor (not with --no-floor or --skip-torch): the block's GEMMs as
  PyTorch runs them (cuBLAS through F.linear), and those with its attention
  (SDPA), alone in one CUDA graph on the values a forward gives them, timed
  on torch's side of the same call, with their energy and device kernels:
  how far under 0.90 of torch's best a forward that keeps these GEMMs can
  go at all (at the power cap their energy sets most of its time).
- the achieved GB/s of fusegate's RMSNorm and pointwise-chain kernels at
  8192 x 4096 bf16 against the measured device-to-device copy bandwidth
  (--kernels-only prints that table alone).

Raw data goes next to bench.md: fusegate.json (every RunRecord),
fusegate_profile.json (written by fusegate), torch.json (rows and traces).
Exit status 2 when fewer GPUs are visible than --world-size asks for.
"""
import argparse
import datetime
import functools
import gc
import json
import math
import operator
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time
import traceback

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
import xxhash

from rank_wait import wait_for_ranks  # bench/rank_wait.py: no torch, tested in CI

# the block sizes (`--block`; repros/registry.cpp's GPU sizes of tp_block_llama):
# name -> (batch, seq, hidden, heads, head_dim, mlp)
BLOCKS = {
    "h2048": (2, 512, 2048, 16, 128, 8192),
    "h2048_s2048": (2, 2048, 2048, 16, 128, 8192),
    "h4096": (2, 512, 4096, 32, 128, 14336),
}
# the spawned PyTorch workers import this file afresh: they read the block
# and the quick flag from the environment main() sets
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
if QUICK:
    TORCH_CONFIGS = [c for c in TORCH_CONFIGS if c[2] != "eager"]
# the compiled host-launch configurations the headline compares against
TORCH_COMPILED_HOST = ("torch.compile default", "torch.compile max-autotune-no-cudagraphs")

# (label, kind): the floor under any forward that runs cuBLAS's GEMMs. The
# block's GEMMs (and with the attention) as PyTorch runs them (F.linear,
# gate and up apart), alone in one CUDA graph on inputs that hold the very
# values a forward gives them, timed as a configuration is. At the 700 W cap
# a forward's time follows its energy and the GEMMs spend most of it, so no
# fusion of the rest can take a forward that keeps these GEMMs below this
# time: where it lies above 0.90 of torch's best, 0.90 needs GEMMs that beat
# cuBLAS's. Not configurations: no row of torch's best is ever one of these.
FLOOR_CONFIGS = [
    ("floor: the block's GEMMs alone (cuBLAS)", "gemms"),
    ("floor: the block's GEMMs and attention (cuBLAS + SDPA)", "gemms+attention"),
]


def torch_configs():
    """TORCH_CONFIGS, or the one an interleaved round asks for
    (GPU_BENCH_TORCH_ONLY, set before the workers are spawned)."""
    only = os.environ.get("GPU_BENCH_TORCH_ONLY")
    return [c for c in TORCH_CONFIGS if not only or c[0] == only]


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


# ---- small helpers (pure; no GPU needed) ------------------------------------
def exc_line(e):
    """'Type: message' of an exception, its first two non-empty message lines
    (compiler errors often say 'backend raised:' first, then the cause)."""
    msg = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return (f"{type(e).__name__}: " + " ".join(msg[:2]))[:300]


def last_line(text):
    """The last non-empty line of an error text (a child's stderr, a
    traceback), or '?'."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "?"


def short(name, n=60):
    """A kernel name cut to about n characters, safe inside a Markdown cell."""
    name = name.replace("|", "\\|")
    return name if len(name) <= n else name[: n - 3] + "..."


def timeline(events):
    """events: (name, start_us, end_us) of device kernels, any order and any
    stream. Returns the kernels in start order, each with its duration and
    the idle time on the device before it (time since every kernel started
    before it had ended; 0 for the first and for overlapping kernels), and
    the totals: span (first start to last end), busy (union of the kernels'
    intervals) and idle = span - busy, the bubbles."""
    out, frontier, busy, first = [], None, 0.0, None
    for name, s, e in sorted(events, key=lambda t: (t[1], t[2])):
        if frontier is None:
            first, gap, busy, frontier = s, 0.0, e - s, e
        else:
            gap = max(0.0, s - frontier)
            busy += max(0.0, e - max(s, frontier))
            frontier = max(frontier, e)
        out.append({"name": name, "start_us": s, "dur_us": e - s, "gap_us": gap})
    span = (frontier - first) if out else 0.0
    return out, {"span_us": span, "busy_us": busy, "idle_us": span - busy}


def best(rows, pred=lambda r: True):
    """The fastest row among those that ran and satisfy pred, or None."""
    ok = [r for r in rows if r.get("ms") is not None and pred(r)]
    return min(ok, key=lambda r: r["ms"]) if ok else None


def fmt(x, spec, missing="-"):
    """format(x, spec), or missing for None / NaN, or str(x) if spec does not fit."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return missing
    try:
        return format(x, spec)
    except (TypeError, ValueError):
        return str(x)


def slim_record(rec):
    """A RunRecord cut down for the raw dump: rank 0 without its ledger, the
    other ranks as their counts and times."""
    if not isinstance(rec, dict) or not rec.get("ranks"):
        return rec
    r = dict(rec)
    r0 = {k: v for k, v in rec["ranks"][0].items() if k != "ledger"}
    r["ranks"] = [r0] + [{k: x.get(k) for k in ("rank", "kernel_count", "device_kernel_count", "times_ms")}
                         for x in rec["ranks"][1:]]
    return r


def dump_json(path, obj, slim=None):
    """Writes obj as JSON, at most JSON_LIMIT bytes: first whole, then through
    slim(obj), then as a marked, truncated text. Written aside and renamed, so
    that a reader never sees half a file."""
    s = json.dumps(obj)
    if len(s) > JSON_LIMIT and slim is not None:
        s = json.dumps(slim(obj))
    if len(s) > JSON_LIMIT:
        s = json.dumps({"truncated": True, "json_head": s[: JSON_LIMIT - 200]})
    tmp = pathlib.Path(f"{path}.tmp")
    tmp.write_text(s)
    os.replace(tmp, path)


def free_port():
    """A TCP port free right now, for one process group's rendezvous; every
    group asks anew, so successive groups never wait on a port in TIME_WAIT."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_LOG_T0 = time.monotonic()


def log(msg):
    """A progress line with the UTC time and the seconds since this process
    began: a call that runs out of time shows where the time went (a
    world-size-2 round at h4096 once did not fit 570 s, and the log could
    not say which phase took it)."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M:%S")
    print(f"[gpu_bench {now} +{time.monotonic() - _LOG_T0:.0f} s] {msg}", file=sys.stderr, flush=True)


# ---- timing and kernel traces on the GPU -----------------------------------
def warm_count(ms, pace_ms, local=False):
    """How many calls fill `ms` at `pace_ms` each: rank 0's count on every
    rank (a forward holds all-reduces, and a rank that ran one more would
    pair them wrongly); `local`, this rank's own count and no collective
    (a call that holds none, as the floors: a rank whose floor failed
    then leaves no broadcast unpaired)."""
    n = math.ceil(ms / max(pace_ms, 1e-3))
    if local or not (dist.is_initialized() and dist.get_world_size() > 1):
        return n
    t = torch.tensor([n], dtype=torch.int64, device="cuda")
    dist.broadcast(t, 0)
    return int(t.item())


class Nvml:
    """NVML through the driver's libnvidia-ml.so.1 (ctypes: nothing to
    install), as fusegate reads it (kernels/cuda/device_power.h): the
    energy counter (mJ), the enforced power limit, the SM clock and the
    reasons it is held down. `why` says when it cannot read."""
    REASONS = [(0x1, "gpu_idle"), (0x2, "applications_clocks"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
               (0x10, "sync_boost"), (0x20, "sw_thermal"), (0x40, "hw_thermal"), (0x80, "hw_power_brake"),
               (0x100, "display_clocks")]

    def __init__(self):
        import ctypes
        self.c, self.why, self.dev = ctypes, None, None
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
            if self.lib.nvmlInit_v2() != 0:
                raise OSError("nvmlInit failed")
            p = torch.cuda.get_device_properties(torch.cuda.current_device())
            bus = f"{p.pci_domain_id:08x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0".encode()
            h = ctypes.c_void_p()
            if self.lib.nvmlDeviceGetHandleByPciBusId_v2(bus, ctypes.byref(h)) != 0:
                raise OSError(f"no NVML device at PCI {bus.decode()}")
            self.dev = h
        except (OSError, AttributeError) as e:
            self.why = f"NVML: {e}"

    @classmethod
    def reasons_text(cls, mask):
        """NVML's reason bits by name, unknown bits in hex; "none"."""
        names = [n for bit, n in cls.REASONS if mask & bit]
        left = mask & ~sum(bit for bit, _ in cls.REASONS)
        if left:
            names.append(hex(left))
        return " | ".join(names) or "none"

    def read(self):
        """(energy mJ, power limit W or None, SM MHz or None, reasons bit
        mask or None), or None where the energy counter did not read: a
        figure the device did not give is None, never 0."""
        if self.dev is None:
            return None
        c = self.c
        mj, mw, mhz, why = c.c_ulonglong(), c.c_uint(), c.c_uint(), c.c_ulonglong()
        if self.lib.nvmlDeviceGetTotalEnergyConsumption(self.dev, c.byref(mj)) != 0:
            self.why = "NVML: the energy counter could not be read"
            return None
        limit = mw.value / 1000.0 if self.lib.nvmlDeviceGetEnforcedPowerLimit(self.dev, c.byref(mw)) == 0 else None
        clock = mhz.value if self.lib.nvmlDeviceGetClockInfo(self.dev, 1, c.byref(mhz)) == 0 else None  # NVML_CLOCK_SM
        get = getattr(self.lib, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            getattr(self.lib, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        reasons = why.value if get is not None and get(self.dev, c.byref(why)) == 0 else None
        return mj.value, limit, clock, reasons


_NVML = None
ENERGY_POLL_S = 0.002  # as fusegate's kEnergyPollMs: the counter steps about every 100 ms


def nvml():
    """The process's Nvml, made on first use (before any warm-up: loading
    it idles the device)."""
    global _NVML
    if _NVML is None:
        _NVML = Nvml()
    return _NVML


def energy_from_steps(samples, window_ms):
    """The power between the energy counter's first and last steps inside
    the window, as fusegate's energy_from_steps (kernels/cuda/energy_steps.h):
    samples are (ms since the window opened, counter mJ) in time order.
    Returns (watts, over_ms, periods, why)."""
    steps = []
    for (_, prev), (at, mj) in zip(samples, samples[1:]):
        if mj < prev:
            return None, None, None, "NVML's energy counter went back during the window"
        if mj != prev and 0 < at <= window_ms:
            steps.append((at, mj))
    if len(steps) < 2:
        return None, None, None, (f"NVML's energy counter stepped {len(steps)} time(s) in the window of "
                                  f"{window_ms:.0f} ms (it steps about every 100 ms; two steps are needed)")
    over = steps[-1][0] - steps[0][0]
    if over <= 0:
        return None, None, None, "NVML's energy counter stepped twice at one instant"
    return (steps[-1][1] - steps[0][1]) / over, over, len(steps) - 1, None


def energy_window(fn, steps):
    """The energy of `steps` more calls of fn() back to back from a drained
    device to a drained device, as fusegate's record has it
    (times_ms.energy): a thread polls NVML while they run, and the power is
    read between the counter's first and last steps in the window (whole
    update periods); mJ a forward is that power times the window's time a
    forward; the SM clock is the mean of the polls, the reasons every one
    seen. The calls run whether or not NVML reads (they hold all-reduces
    that pair with the other ranks')."""
    import threading
    n = nvml()
    e = {"forwards": steps}
    polls, failed, done = [], [], threading.Event()
    torch.cuda.synchronize()
    t0 = time.perf_counter()

    def poll():
        while not done.is_set():
            r = n.read()
            at = (time.perf_counter() - t0) * 1e3
            if r is None:
                failed.append(n.why or "NVML could not be read")
                return
            polls.append((at, r))
            time.sleep(ENERGY_POLL_S)

    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.001)  # the poller runs between the calls' Python
    th = threading.Thread(target=poll, daemon=True)
    th.start()
    try:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
    finally:
        done.set()
        th.join()
        sys.setswitchinterval(switch)
    if failed:
        return {**e, "why": failed[0]}
    watts, over, periods, why = energy_from_steps([(at, r[0]) for at, r in polls], ms)
    if why:
        return {**e, "why": why}
    out = {**e, "ms": ms, "mj_per_forward": watts * ms / steps, "watts": watts, "read_over_ms": over,
           "counter_periods": periods}
    limits = [r[1] for _, r in polls if r[1] is not None]
    clocks = [r[2] for _, r in polls if r[2] is not None]
    masks = [r[3] for _, r in polls if r[3] is not None]
    if limits:  # a figure the device did not give is left out
        out["power_limit_w"] = limits[-1]
    if clocks:
        out["sm_mhz"] = round(sum(clocks) / len(clocks))
    if masks:  # every reason a poll saw
        out["clock_reasons"] = Nvml.reasons_text(functools.reduce(operator.or_, masks))
    return out


def time_ms(fn, energy=None, local=False):
    """Median of ITERS CUDA-event timings of fn() after WARMUP calls and
    about WARMUP_MS of them (as many as fill it at the pace of WARMUP more
    calls, warm_count). With WARMUP_MS and a dict `energy`, it gets the
    energy_window of half as many calls again (at most about 1 s of them),
    right after the timings, and the warm-up's count and pace.

    The pace is taken from a second WARMUP calls, not the first: the first
    calls of a compiled configuration still do lazy work (2026-11-27, two
    H200, h4096: max-autotune-no-cudagraphs' first 20 calls paced its "6000
    ms" at about 15 ms a forward, so it warmed about 0.26 s, and its energy
    window of 43 ms saw no step of the counter), as fusegate's warm-up once
    ran at the pace of host launches while it replayed a graph. `local`:
    fn holds no collective, and the warm-up count is this rank's own
    (warm_count)."""
    if energy is not None and WARMUP_MS > 0:
        nvml()
    torch.cuda.synchronize()
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    n = 0
    if WARMUP_MS > 0:
        t0 = time.perf_counter()
        for _ in range(WARMUP):
            fn()
        torch.cuda.synchronize()
        pace = (time.perf_counter() - t0) * 1e3 / WARMUP
        n = warm_count(WARMUP_MS, pace, local)
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        if energy is not None:
            energy.update(warmup_forwards=n, warmup_pace_ms=pace)
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(ITERS)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    t = sorted(a.elapsed_time(b) for a, b in ev)
    steps = min(n // 2, n * 1000 // WARMUP_MS) if WARMUP_MS > 0 else 0
    if energy is not None and steps > 0:
        energy.update(energy_window(fn, steps))
    elif energy is not None and WARMUP_MS > 0:
        energy["why"] = f"no window: {n} warm-up forwards leave none to read"
    return t[len(t) // 2]


def device_kernels(fn, calls):
    """The device kernels of `calls` back-to-back calls of fn() under
    torch.profiler (CUDA activity), memsets and copies excluded, as (name,
    start_us, end_us) in start order. Kernels inside a CUDA-graph replay
    are reported too."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    out = []
    for e in prof.events():
        # device events that are not kernels: record_function ranges mirrored
        # onto the GPU timeline (user annotations), memsets and copies
        if e.device_type != torch.autograd.DeviceType.CUDA or getattr(e, "is_user_annotation", False):
            continue
        low = e.name.lower()
        if "memset" in low or "memcpy" in low:
            continue
        out.append((e.name, float(e.time_range.start), float(e.time_range.end)))
    return sorted(out, key=lambda k: k[1])


def kernel_trace(fn):
    """One forward's device kernels (device_kernels). With WARMUP_MS, the
    forward traced is the last of about WARMUP_MS / 4 of them back to back,
    so that it meets the GPU in the state the timings did, as fusegate's
    profile does (its kernels are the last ones of the trace, as many as
    one forward alone runs); the names must agree, else the lone forward's
    trace is kept and said in the log."""
    fn()
    one = device_kernels(fn, 1)
    if WARMUP_MS <= 0 or not one:
        return one
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    calls = warm_count(WARMUP_MS / 4, (time.perf_counter() - t0) * 1e3 / 3) + 1
    many = device_kernels(fn, calls)
    last = many[-len(one):]
    if [k[0] for k in last] != [k[0] for k in one]:
        log(f"kernel trace: the last of {calls} forwards ran other kernels than one alone: the lone one is shown")
        return one
    return last


def cudagraph_skips():
    """Inductor's count of graphs it compiled without the CUDA graphs asked
    for (process-wide); compared either side of a configuration."""
    try:
        from torch._dynamo.utils import counters
        return int(counters["inductor"]["cudagraph_skips"])
    except Exception:
        return 0


def build(kind, args):
    """The zero-argument forward of one PyTorch configuration."""
    if kind == "eager":
        return lambda: block(*args)
    if kind in ("default", "max-autotune-no-cudagraphs"):
        c = torch.compile(block, fullgraph=True, mode=None if kind == "default" else kind)
        return lambda: c(*args)
    if kind in ("reduce-overhead", "max-autotune"):
        # cudagraph trees copy every input whose address is not known to be
        # static into the graph's own buffer before each replay. fusegate's
        # CUDA graphs (and the whole-forward capture below) read the inputs
        # in place, as a model's parameters are read, so these inputs are
        # marked static too. Aliases carry the mark, so that the other
        # configurations see the tensors unmarked.
        static = [a.detach() for a in args]
        for t in static:
            torch._dynamo.mark_static_address(t)
        c = torch.compile(block, fullgraph=True, mode=kind)
        return lambda: c(*static)
    if kind == "default+graph":
        # the compiled default function captured whole in one CUDA graph on
        # static inputs
        c = torch.compile(block, fullgraph=True)
        return whole_graph(lambda: c(*args))
    raise ValueError(kind)


def whole_graph(fn):
    """fn() captured whole in one CUDA graph: warmed on a side stream (it
    compiles, and the allocator settles), then captured thread-locally
    (NCCL's watchdog thread keeps querying events); returns the
    zero-argument replay, which returns the captured outputs."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode="thread_local"):
        out = fn()
    torch.cuda.synchronize()

    def replay():
        g.replay()
        return out
    return replay


def run_torch_config(kind, args, ref, traced):
    """One configuration: timed (traced=False) or profiled (traced=True);
    returns its figures, or {"error": line}. Every configuration is timed
    before any is profiled: the profiler's CUPTI overhead can outlive it and
    would slow the timings that follow."""
    fn = None
    try:
        torch._dynamo.reset()
        skips0 = cudagraph_skips()
        fn = build(kind, args)
        fn()  # compiles (or records), outside the warm-up count
        if traced:
            return {"trace": kernel_trace(fn)}
        energy = {}
        ms = time_ms(fn, energy)
        y = fn().float()
        err = ((y - ref).norm() / ref.norm()).item()
        del y
        return {"ms": ms, "rel_err": err, "cudagraph_skips": max(0, cudagraph_skips() - skips0),
                "energy": energy or None}
    except Exception as e:
        traceback.print_exc()
        return {"error": exc_line(e)}
    finally:
        # drain the device before the graphs and their memory are released
        try:
            torch.cuda.synchronize()
        except Exception:
            pass
        fn = None
        gc.collect()


def floor_inputs(args):
    """What each GEMM (and the attention) of the block reads in a forward,
    from one eager forward at this world size, as tensors that stay put:
    the tensor cores' power depends on the values they multiply, so the
    floor multiplies the forward's own. No collective, so that a rank that
    fails here leaves the other waiting on nothing: at world size N the
    o-proj's partial sum stands for the all-reduced one (the norm after it
    scales the row to unit RMS either way, and the residual x holds most of
    it)."""
    x, ln1, w_qkv, w_o, ln2, w_gate, w_up, w_down = args
    local = HEADS // dist.get_world_size() * HEAD_DIM
    h1 = rms_norm(x, ln1).reshape(B * S, HIDDEN).contiguous()
    qkv = F.linear(h1, w_qkv)
    q, k, v = (t.view(B, S, -1, HEAD_DIM).transpose(1, 2) for t in qkv.split(local, -1))
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B * S, local).contiguous()
    o = F.linear(a, w_o)
    h2 = rms_norm(x.reshape(B * S, HIDDEN) + o, ln2).contiguous()
    p = (F.silu(F.linear(h2, w_gate)) * F.linear(h2, w_up)).contiguous()
    return {"h1": h1, "q": q, "k": k, "v": v, "a": a, "h2": h2, "p": p}


def build_floor(kind, args, t):
    """The zero-argument replay of one FLOOR_CONFIGS graph: the block's
    GEMMs (gemms+attention: and its attention) back to back on the static
    inputs t (floor_inputs), captured as the whole-forward configuration
    is (whole_graph)."""
    _, _, w_qkv, w_o, _, w_gate, w_up, w_down = args

    def steps():
        outs = [F.linear(t["h1"], w_qkv)]
        if kind == "gemms+attention":
            outs.append(F.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=True))
        elif kind != "gemms":
            raise ValueError(kind)
        outs += [F.linear(t["a"], w_o), F.linear(t["h2"], w_gate), F.linear(t["h2"], w_up),
                 F.linear(t["p"], w_down)]
        return outs
    return whole_graph(steps)


def run_floors(args, t):
    """Every FLOOR_CONFIGS graph: each timed with its energy (time_ms, its
    own warm-up count: no collective), then, once every one is timed, each
    one's device kernels counted in one replay (the profiler's overhead
    can outlive it and would slow a timing after it). Returns label ->
    result, or {"error": line} for a floor that failed."""
    out, fns = {}, {}
    try:
        for label, kind in FLOOR_CONFIGS:
            if dist.get_rank() == 0:
                log(label)
            try:
                fns[label] = build_floor(kind, args, t)
                fns[label]()
                energy = {}
                ms = time_ms(fns[label], energy, local=True)
                out[label] = {"ms": ms, "energy": energy or None}
            except Exception as e:
                traceback.print_exc()
                out[label] = {"error": exc_line(e)}
                fns.pop(label, None)
        for label, fn in fns.items():
            try:
                out[label]["kernels"] = [k[0] for k in device_kernels(fn, 1)]
            except Exception as e:
                traceback.print_exc()
                out[label] = {"error": f"its kernel count: {exc_line(e)}"}
    finally:
        try:
            torch.cuda.synchronize()
        except Exception:
            pass
        fns.clear()
        gc.collect()
    return out


def floor_rows(world, results):
    """FLOOR_CONFIGS' rows from every rank's results (label -> result): a
    floor that failed on any rank is a failed row, its first error said."""
    rows = []
    for label, kind in FLOOR_CONFIGS:
        got = [r.get(label) or {"error": "no result"} for r in results]
        bad = [(i, g["error"]) for i, g in enumerate(got) if g.get("error")]
        row = {"name": label, "kind": kind, "class": GRAPHS, "source": "floor", "ms": None}
        if bad:
            i, e = bad[0]
            row["note"] = f"failed: {e}" + (f" (rank {i})" if world > 1 else "")
        else:
            g = got[0]
            row.update(ms=g["ms"], energy=g.get("energy"), device_kernels=len(g["kernels"]),
                       kernels=g["kernels"])
        rows.append(row)
    return rows


def torch_worker(rank, world, port, out):
    """One rank of the PyTorch side. Every rank runs TORCH_CONFIGS in the same
    order and they agree on each one's outcome before the next, so that a
    configuration failing on one rank fails on all and the collectives keep
    matching. Rank 0 rewrites OUT/torch.json after each configuration."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    cfg = torch._dynamo.config
    for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                 "accumulated_recompile_limit"):
        if hasattr(cfg, name):
            try:
                setattr(cfg, name, max(getattr(cfg, name), 256))
            except Exception:
                pass
    w = {k: v.cuda() for k, v in inputs(rank, world).items()}
    args = [w[n] for n in ("x", "ln1", "w_qkv", "w_o", "ln2", "w_gate", "w_up", "w_down")]
    rows, traces = [], {}
    with torch.no_grad():
        ref = block(*[a.double() for a in args]).float()
        torch.cuda.empty_cache()
        timed = {}
        # an interleaved round times one configuration and traces none
        trace = not os.environ.get("GPU_BENCH_TORCH_ONLY")
        for label, cls, kind in torch_configs():
            if rank == 0:
                log(f"torch: {label}")
            timed[label] = run_torch_config(kind, args, ref, traced=False)
        floors = {}
        if trace and FLOOR:
            # the floors run where the sweep does, not in a round
            try:
                t = floor_inputs(args)
            except Exception as e:  # the configurations' figures are not lost for it
                traceback.print_exc()
                t, floors = None, {label: {"error": f"its inputs: {exc_line(e)}"} for label, _ in FLOOR_CONFIGS}
            if t is not None:
                floors = run_floors(args, t)
            t = None
            torch.cuda.empty_cache()
        every = [None] * world
        dist.all_gather_object(every, floors)
        floor = floor_rows(world, every) if floors else []
        if rank == 0 and floor:
            # kept at once: a worker that dies in the traces keeps them
            dump_json(pathlib.Path(out, "torch.json"), {"world_size": world, "rows": [], "traces": {},
                                                        "floors": floor})
        for label, cls, kind in torch_configs():
            res = timed[label]
            if "error" not in res and trace:
                res.update(run_torch_config(kind, args, ref, traced=True))
            errors = [None] * world
            dist.all_gather_object(errors, res.get("error"))
            if rank != 0:
                continue
            row = {"name": label, "class": cls, "source": "torch", "ms": None}
            bad = [(r, e) for r, e in enumerate(errors) if e]
            if bad:
                r, e = bad[0]
                row["note"] = f"failed: {e}" + (f" (rank {r})" if world > 1 else "")
            elif "trace" not in res:
                row.update(ms=res["ms"], rel_err=res["rel_err"], energy=res.get("energy"))
                if res["cudagraph_skips"] and cls == GRAPHS:
                    row["class"] = HOST
                    row["note"] = f"inductor skipped CUDA graphs for {res['cudagraph_skips']} graph(s)"
            else:
                ev, totals = timeline(res["trace"])
                row.update(ms=res["ms"], rel_err=res["rel_err"], launches=len(ev), device_kernels=len(ev),
                           energy=res.get("energy"))
                if res["cudagraph_skips"] and cls == GRAPHS:
                    # it ran without CUDA graphs: its class is what ran
                    row["class"] = HOST
                    row["note"] = (f"inductor skipped CUDA graphs for {res['cudagraph_skips']} graph(s); "
                                   "timed as it ran, with the host-launch class")
                traces[label] = {"kernels": ev, **totals}
            rows.append(row)
            dump_json(pathlib.Path(out, "torch.json"),
                      {"world_size": world, "rows": rows, "traces": traces, "floors": floor},
                      slim=lambda o: {**o, "traces": {}})
    # Out at once, with no last barrier, no destroy_process_group and none
    # of the interpreter's exit handlers: at world size 2 ranks that had
    # replayed CUDA graphs holding NCCL's all-reduce stayed in that teardown
    # (the barrier, destroy_process_group or the exit: which one was never
    # seen) for more than 20 s after their last figure (reduce-overhead's
    # rounds, thirteenth step; max-autotune's in both rounds at h4096,
    # 2026-11-27), stopped by wait_for_ranks each time. Nothing is lost: the
    # last all_gather_object above needed every rank, rank 0 has written
    # torch.json whole (dump_json) since, and no rank needs another after
    # it. The process's end frees what destroy would. The line says where a
    # rank got to, should it still hang.
    print(f"torch rank {rank}: figures written, leaving without teardown", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_torch(world, out):
    """Spawns the PyTorch ranks (a fresh rendezvous port), waits at most
    TORCH_TIMEOUT_S, and returns (rows, traces, floors); a configuration
    that never reported comes back as a failed row. The floors are rows of
    their own (floor_rows), never among torch's configurations; none where
    the sweep did not reach them."""
    path = pathlib.Path(out, "torch.json")
    path.unlink(missing_ok=True)
    want = {label for label, _, _ in torch_configs()}
    try:
        ctx = mp.spawn(torch_worker, args=(world, free_port(), out), nprocs=world, join=False)
        why, teardown = wait_for_ranks(ctx, path, want, TORCH_TIMEOUT_S, TORCH_EXIT_GRACE_S, log=log)
    except Exception as e:  # the spawn itself failed
        why, teardown = f"torch workers: {last_line(str(e))}", None
    try:
        data = json.loads(path.read_text()) if path.exists() else {}
    except json.JSONDecodeError:
        data = {}
    rows, traces, floors = data.get("rows", []), data.get("traces", {}), data.get("floors", [])
    done = {r["name"] for r in rows}
    if teardown:
        for r in rows:
            r["teardown"] = teardown
    for label, cls, _ in torch_configs():
        if label not in done:
            rows.append({"name": label, "class": cls, "source": "torch", "ms": None,
                         "note": f"failed: {why or 'no result'}"})
    return rows, traces, floors


# ---- fusegate ---------------------------------------------------------------
def fusegate_run(fg, repro, mode, world, extra, repro_dir=None, iters=ITERS):
    """One `fusegate run`; returns (RunRecord, "") or (None, error text)."""
    cmd = [fg, "run", repro, "--backend", "cuda", "--mode", mode, "--world-size", str(world), "--iters", str(iters),
           "--warmup-ms", str(WARMUP_MS)]
    cmd += extra
    if repro_dir:
        cmd += ["--repro-dir", repro_dir]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=FUSEGATE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {FUSEGATE_TIMEOUT_S} s"
    if p.returncode != 0:
        return None, p.stderr[-2000:] or f"exit status {p.returncode}"
    try:
        return json.loads(p.stdout), ""
    except json.JSONDecodeError as e:
        return None, f"no RunRecord on stdout ({e})"


def rel_err(rec):
    """RMSE against fp64 over the output's RMS (NaN where the record has no
    accuracy section: mode A)."""
    k = rec["ranks"][0]
    acc = k.get("accuracy")
    if not acc:
        return float("nan")
    try:
        o = k["outputs"][0]["fingerprint"]
        rms = math.sqrt(o["sumsq"] / o["numel"])
        return acc["outputs"][0]["rmse_vs_fp64"] / rms
    except (KeyError, IndexError, ZeroDivisionError):
        return float("nan")


def copy_bandwidth():
    n = 1 << 30  # 1 GiB each way
    a = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    b = torch.empty_like(a)
    ms = time_ms(lambda: b.copy_(a))
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


def kernel_lines(bw, kernels, notes):
    lines = [f"device-to-device copy: {bw:.0f} GB/s (bytes read + written)", ""]
    if not kernels:  # an empty table would read as a table that was measured
        return lines + ["kernels not timed: BENCH_QUICK=1 (--quick) skips them; `bash bench/gpu.sh kernels` times them"]
    lines += ["| kernel (8192 x 4096 bf16) | launches | median ms | GB/s | of copy |", "|---|---|---|---|---|"]
    for name, v, err in kernels:
        if v is None:
            lines.append(f"| {name} | failed | | | |")
            notes.append(f"{name}: failed: {last_line(err)}")
        else:
            lines.append(f"| {name} | {v[0]} | {v[1]:.4f} | {v[2]:.0f} | {100 * v[2] / bw:.0f}% |")
    return lines


def what_ran(rank):
    """What a rank's record says ran besides the generated kernels: the fast
    paths used and blocked (a bench whose GPU lacks a proof runs the generic
    path, and must say so), and each GEMM whose cuBLASLt algorithm is not the
    top-1, with its check in the forward."""
    fps = rank.get("fast_paths") or []
    used = sorted(f.get("name", "?") for f in fps if f.get("status") == "used")
    blocked = sorted(f"{f.get('name', '?')} ({f['status'][len('blocked: '):]})" for f in fps
                     if str(f.get("status", "")).startswith("blocked"))
    parts = ["fast paths used: " + (", ".join(used) if used else "none")]
    if blocked:
        parts.append("BLOCKED: " + ", ".join(blocked))
    gemms = []
    for g in rank.get("gemm_algos") or []:
        if not isinstance(g, dict) or not g.get("choice"):
            continue
        fw = g.get("forward") or {}
        check = (f", forward {fw.get('choice_ms')} against top-1 {fw.get('top1_ms')} ms, "
                 f"{'CUDA graphs' if fw.get('graph') else 'host launches'}" if fw else ", no forward check")
        gemms.append(f"{g.get('shape', '?')}: candidate {g['choice']}{check}")
    parts.append("GEMMs off the top-1: " + ("; ".join(gemms) if gemms else "none"))
    return parts


def fusegate_rows(fg, world, records):
    rows = []
    for label, cls, mode, extra in FUSEGATE_CONFIGS:
        log(f"fusegate: {label}")
        rec, err = fusegate_run(fg, REPRO, mode, world, extra)
        row = {"name": label, "class": cls, "source": "fusegate", "mode": mode, "extra": extra, "ms": None}
        if rec is not None:
            records["runs"].append({"name": label, "record": rec})
            try:
                k = rec["ranks"][0]
                row.update(launches=k.get("kernel_count"), device_kernels=k.get("device_kernel_count"),
                           ms=float(k["times_ms"]["forward_median"]), rel_err=rel_err(rec),
                           how=k["times_ms"].get("how", "?"), energy=k["times_ms"].get("energy"))
                # the class is what ran: --cuda-graphs falls back to host
                # launches when the forward is not one graph or capture fails
                row["class"] = GRAPHS if "CUDA graph replay" in row["how"] else HOST
                row["ran"] = what_ran(k)
                if row["class"] != cls:
                    row["note"] = f"asked for {cls}, ran as {row['class']} ({row['how']})"
            except (KeyError, IndexError, TypeError, ValueError) as e:
                row["ms"], err, rec = None, f"RunRecord without {e}", None
        if rec is None:
            row["note"] = f"failed: {last_line(err)}"
        rows.append(row)
    return rows


def fusegate_profile(fg, world, row, out, records):
    """Runs a CUDA-graph configuration once more with --profile; returns the
    profile (its rank 0's JSON) or an error line."""
    path = pathlib.Path(out).resolve() / "fusegate_profile.json"
    path.unlink(missing_ok=True)
    log(f"fusegate: profile of {row['name']}")
    rec, err = fusegate_run(fg, REPRO, row["mode"], world, row["extra"] + ["--profile", str(path)],
                            iters=PROFILE_ITERS)
    if rec is None:
        return None, f"failed: {last_line(err)}"
    records["profile_run"] = {"name": row["name"], "record": rec}
    if not path.exists():
        return None, "failed: fusegate wrote no profile"
    try:
        return json.loads(path.read_text()), ""
    except json.JSONDecodeError as e:
        return None, f"failed: unreadable profile ({e})"


def interleaved_rounds(fg, world, out, fg_row, t_row, n, on_round=None):
    """fusegate's and torch's best CUDA-graph configurations timed again in
    n rounds, alternating which side goes first (ABBA), each run as in the
    sweep (a fresh process, warm-up, ITERS timings); returns one dict a
    round: order, fusegate and torch medians (None where a run failed).
    Between calls on machines of one kind the sweep's ratios moved by 5-15%
    while the kernels' own time stayed put: a ratio is claimed from the
    median of rounds, where both sides saw the same stretch of the GPU's
    life, not from one pair of runs. `on_round(rounds)` is called after
    each round (the rounds so far), so that a call that runs out of time
    keeps the rounds it finished."""
    scratch = pathlib.Path(out, "rounds")
    scratch.mkdir(parents=True, exist_ok=True)
    os.environ["GPU_BENCH_TORCH_ONLY"] = t_row["name"]
    rounds = []
    try:
        for i in range(n):
            order = ("fusegate", "torch") if i % 2 == 0 else ("torch", "fusegate")
            got = {"order": order}
            for side in order:
                log(f"round {i + 1}/{n}: {side}")
                # a run that did not replay a CUDA graph (capture failed,
                # inductor skipped it) is a failed round, not another class
                if side == "fusegate":
                    rec, _ = fusegate_run(fg, REPRO, fg_row["mode"], world, fg_row["extra"])
                    try:
                        times = rec["ranks"][0]["times_ms"]
                        ok = "CUDA graph replay" in times.get("how", "")
                        got["fusegate"] = float(times["forward_median"]) if ok else None
                        got["fusegate_energy"] = times.get("energy")
                    except (TypeError, KeyError, IndexError, ValueError):
                        got["fusegate"] = None
                else:
                    rows, _, _ = run_torch(world, scratch)
                    ok = rows and rows[0].get("class") == GRAPHS
                    got["torch"] = rows[0].get("ms") if ok else None
                    got["torch_energy"] = rows[0].get("energy") if rows else None
                    if rows and rows[0].get("teardown"):
                        got["torch_teardown"] = rows[0]["teardown"]
            rounds.append(got)
            if on_round:
                on_round(rounds)
    finally:
        os.environ.pop("GPU_BENCH_TORCH_ONLY", None)
    return rounds


def rounds_lines(fg_row, t_row, rounds):
    """The rounds' table and the median of their ratios."""
    lines = [f"## Interleaved rounds (ABBA): {fg_row['name']} against {t_row['name']}", "",
             "| round | first | fusegate ms | torch ms | ratio | mJ / forward, fusegate / torch |",
             "|---|---|---|---|---|---|"]
    ratios = []
    for i, r in enumerate(rounds):
        f, t = r.get("fusegate"), r.get("torch")
        q = f / t if f and t else None
        if q is not None:
            ratios.append(q)
        lines.append(f"| {i + 1} | {r['order'][0]} | {fmt(f, '.3f', 'failed')} | {fmt(t, '.3f', 'failed')} "
                     f"| {fmt(q, '.3f')} | {energy_cell(r.get('fusegate_energy'))} / "
                     f"{energy_cell(r.get('torch_energy'))} |")
    lines.append("")
    lines += energy_notes(pair for i, r in enumerate(rounds)
                          for pair in ((f"round {i + 1}, fusegate", r.get("fusegate_energy")),
                                       (f"round {i + 1}, torch", r.get("torch_energy"))))
    lines += [f"- round {i + 1}: torch's {r['torch_teardown']}" for i, r in enumerate(rounds) if r.get("torch_teardown")]
    if len(ratios) < len(rounds) or not ratios:
        lines.append(f"- CUDA graphs, interleaved: {len(rounds) - len(ratios)} of {len(rounds)} rounds failed: "
                     "no ratio claimed")
    else:
        ratios.sort()
        med = ratios[len(ratios) // 2] if len(ratios) % 2 else (ratios[len(ratios) // 2 - 1] +
                                                                  ratios[len(ratios) // 2]) / 2
        lines.append(f"- CUDA graphs, interleaved: median of {len(ratios)} rounds {med:.3f} "
                     f"(min {ratios[0]:.3f}, max {ratios[-1]:.3f})")
    return lines


# ---- tables -------------------------------------------------------------------
PROFILE_HEADER = ["| device kernel | launch | kind | µs | gap µs | GB/s or TFLOP/s | % of peak |",
                  "|---|---|---|---|---|---|---|"]


def totals_line(span_us, busy_us, idle_us, n):
    pct = f" ({100 * idle_us / span_us:.0f}% of span)" if span_us > 0 else ""
    return f"totals: {n} kernels; span {span_us:.1f} µs, busy {busy_us:.1f} µs, idle (bubbles) {idle_us:.1f} µs{pct}"


def fusegate_profile_lines(label, prof):
    lines = [f"### fusegate: {label} (rank 0; {prof.get('how', '?')}; `--profile`, {PROFILE_ITERS} iterations)",
             "",
             f"{prof.get('device', '?')}; peaks: copy {fmt(prof.get('copy_gbps'), '.0f')} GB/s, "
             f"GEMM {fmt(prof.get('gemm_tflops'), '.0f')} TFLOP/s", ""] + PROFILE_HEADER
    ks = prof.get("kernels", [])
    for k in ks:
        compute = k.get("bound") == "compute"
        rate = k.get("tflops") if compute else k.get("gbps")
        rate_s = "" if not rate else (f"{rate:.1f} TFLOP/s" if compute else f"{rate:.0f} GB/s")
        peak = k.get("of_peak")
        peak_s = "" if peak is None else f"{100 * peak:.0f}%"
        lines.append(f"| {short(k.get('device_kernel') or k.get('launch', '?'))} | {short(k.get('launch', ''), 40)} "
                     f"| {k.get('kind', '')} | {fmt(1000 * k['ms'] if 'ms' in k else None, '.1f')} "
                     f"| {fmt(1000 * k['gap_ms'] if 'gap_ms' in k else None, '.1f')} | {rate_s} | {peak_s} |")
    busy = prof.get("busy_ms", sum(k.get("ms", 0.0) for k in ks))
    idle = prof.get("idle_ms", sum(k.get("gap_ms", 0.0) for k in ks))
    span = prof.get("span_ms", busy + idle)
    n_mem = sum(1 for k in ks if k.get("kind") == "memory")  # memsets and copies: rows, not kernels
    lines += ["", totals_line(1000 * span, 1000 * busy, 1000 * idle, len(ks) - n_mem)
              + (f" (and {n_mem} memsets or copies)" if n_mem else "")
              + (f"; {1000 * prof['between_steps_ms']:.1f} µs on the device between steps"
                 if prof.get("between_steps_ms") is not None else "")]
    if prof.get("forward_tflops"):
        lines.append(f"forward: {prof['forward_flops'] / 1e9:.1f} GFLOP (GEMMs and attention) in "
                     f"{1000 * span:.1f} µs: {prof['forward_tflops']:.0f} TFLOP/s, "
                     f"{100 * prof.get('forward_of_gemm_peak', 0):.0f}% of the measured GEMM peak")
    if prof.get("note"):  # fusegate says when launches and device kernels did not pair up
        lines.append(f"fusegate: {prof['note']}")
    return lines


def torch_trace_lines(label, trace):
    lines = [f"### PyTorch: {label} (rank 0; torch.profiler, one forward after warm-up)", ""] + PROFILE_HEADER
    for k in trace["kernels"]:
        lines.append(f"| {short(k['name'])} | | | {k['dur_us']:.1f} | {k['gap_us']:.1f} | | |")
    return lines + ["", totals_line(trace["span_us"], trace["busy_us"], trace["idle_us"], len(trace["kernels"]))]


def ratio_line(what, num, den):
    if num is None or den is None:
        side = "fusegate" if num is None else "torch"
        return f"{what}: n/a (no {side} configuration of this class ran)"
    return (f"{what}: {num['name']} {num['ms']:.3f} ms / {den['name']} {den['ms']:.3f} ms "
            f"= {num['ms'] / den['ms']:.2f}")


def headline(fg_rows, torch_rows, skip_torch):
    if skip_torch:
        return ["headline: n/a (--skip-torch)"]
    lines = ["headline (median ms in this call; < 1 means fusegate is faster):",
             "- " + ratio_line("CUDA graphs", best(fg_rows, lambda r: r["class"] == GRAPHS),
                               best(torch_rows, lambda r: r["class"] == GRAPHS)),
             "- " + ratio_line("host launches, compiled", best(fg_rows, lambda r: r["class"] == HOST
                                                               and r["name"].startswith("fusegate C")),
                               best(torch_rows, lambda r: r["name"] in TORCH_COMPILED_HOST))]
    fg_g, t_g = best(fg_rows, lambda r: r["class"] == GRAPHS), best(torch_rows, lambda r: r["class"] == GRAPHS)
    fe, te = (fg_g or {}).get("energy") or {}, (t_g or {}).get("energy") or {}
    if fe.get("mj_per_forward") and te.get("mj_per_forward"):
        # at the power cap a forward's time follows its energy: the two ratios side by side
        lines.append(f"- CUDA graphs, energy: {fe['mj_per_forward']:.1f} mJ / {te['mj_per_forward']:.1f} mJ a forward "
                     f"= {fe['mj_per_forward'] / te['mj_per_forward']:.2f} (mean {fe['watts']:.0f} W and "
                     f"{te['watts']:.0f} W, SM {fe.get('sm_mhz', '?')} and {te.get('sm_mhz', '?')} MHz, "
                     f"{fe.get('clock_reasons', '?')} and {te.get('clock_reasons', '?')})")
    fa, ta = best(fg_rows), best(torch_rows)
    if fa is None or ta is None or fa["class"] == ta["class"]:
        lines.append("- " + ratio_line("best of all", fa, ta) + (f" (both {fa['class']})" if fa and ta else ""))
    else:
        # a CUDA-graph time is never divided by a host-launch time
        lines.append(f"- best of all: {fa['name']} {fa['ms']:.3f} ms ({fa['class']}) vs {ta['name']} "
                     f"{ta['ms']:.3f} ms ({ta['class']}): no ratio across classes")
    return lines


def floor_lines(floors, fg_best, t_best, ran):
    """The floor's table (FLOOR_CONFIGS' rows) against torch's and
    fusegate's best CUDA-graph rows, and what it leaves under 0.90 of
    torch's best. `ran` False: the sweep asked for no floor (--no-floor or
    --skip-torch); a floor asked for and missing says so."""
    lines = ["## The floor: the block's GEMMs alone, one CUDA graph", ""]
    if not ran:
        return lines + ["- floor: not asked for (--no-floor or --skip-torch)"]
    if not floors:
        return lines + ["- floor: asked for and not measured (the torch workers did not reach it)"]
    tb = t_best.get("ms") if t_best else None
    fb = fg_best.get("ms") if fg_best else None
    lines += ["| floor | device kernels | median ms | of torch's best | fusegate's best over it "
              "| mJ / forward (mean W, SM clock) |", "|---|---|---|---|---|---|"]
    for r in floors:
        ms = r.get("ms")
        lines.append(f"| {r['name']} | {fmt(r.get('device_kernels'), 'd')} | {fmt(ms, '.3f', 'failed')} "
                     f"| {fmt(ms / tb if ms and tb else None, '.2f')} | {fmt(fb / ms if ms and fb else None, '.2f')} "
                     f"| {energy_cell(r.get('energy'))} |")
    lines.append("")
    # the verdict first (gpu.sh's summary reads the first "- " line that
    # starts with "0.90 of torch's best" or "floor"), then the notes
    g = next((r for r in floors if r.get("ms") and r.get("kind") == "gemms"), None)
    if g is None or not tb:
        lines.append("- floor against 0.90 of torch's best: n/a (" +
                     ("the GEMMs' floor failed" if g is None else "no torch CUDA-graph configuration ran") + ")")
    else:
        goal = 0.90 * tb
        head = (f"- 0.90 of torch's best is {goal:.3f} ms and the GEMMs alone take {g['ms']:.3f} "
                f"({g['ms'] / tb:.2f} of torch's best): ")
        if g["ms"] > goal:
            head += ("no forward that runs these GEMMs reaches 0.90; it needs GEMMs that beat these (cuBLAS "
                     "through F.linear, gate and up apart)")
        else:
            head += f"{1000 * (goal - g['ms']):.1f} µs under 0.90 for all that is not these GEMMs"
        if fb:
            head += f"; fusegate's best is {1000 * (fb - g['ms']):.1f} µs above them"
        lines.append(head)
        lines.append(energy_floor_line(floors, goal, fg_best))
    lines += energy_notes((r["name"], r.get("energy")) for r in floors)
    lines += [f"- {r['name']}: {r['note']}" for r in floors if r.get("note")]
    return lines


# How near the energy budget a floor may come before energy_floor_line gives
# no verdict, as a fraction of the budget. The budget is the limit times a
# CUDA-event median, the floors' mJ a forward are the window's watts times
# the window's own pace, and the two differ: on one H100 (2026-11-27, h2048)
# the floors' windows ran 1.4-1.5% faster a forward than their medians,
# torch's best about 2% slower, and one floor drew 704 W under the 700 W limit.
ENERGY_SPREAD = 0.02


def energy_floor_line(floors, goal_ms, fg_best):
    """The floor in energy, an estimate: at the enforced power limit P a
    forward timed at the sustained state takes about its energy over P, so
    0.90 of torch's best (goal_ms) holds about P x goal_ms mJ a forward.
    The floors run their GEMMs (and SDPA's attention) at the limit at lower
    mean SM clocks than the forwards run (the clocks are printed); at the
    limit a GPU spends less a FLOP at a lower clock, so a forward that runs
    these kernels is taken to spend at least what they spend here (not
    proven: the clock printed is a window's mean, not the GEMMs' own). A
    time floor alone says less: inside a forward the GEMMs run at higher
    clocks than alone, because the memory-bound kernels beside them draw
    less. Within ENERGY_SPREAD of the budget the line gives no verdict. One
    line whenever the GEMMs' floor ran: a figure not read says which."""
    def mj(r):
        e = (r or {}).get("energy") or {}
        return e.get("mj_per_forward"), e.get("sm_mhz")
    g = next((r for r in floors if r.get("ms") and r.get("kind") == "gemms"), None)
    a_row = next((r for r in floors if r.get("kind") != "gemms"), None)
    a = a_row if a_row and a_row.get("ms") else None
    limit = next((e.get("power_limit_w") for e in [(r.get("energy") or {}) for r in floors] +
                  [(fg_best or {}).get("energy") or {}] if e.get("power_limit_w")), None)
    head = "- energy at the power limit"
    g_mj, g_mhz = mj(g)
    if limit is None or g_mj is None:
        return head + ": n/a (" + ("NVML gave no enforced power limit" if limit is None else
                                   "the GEMMs' floor read no energy") + ")"
    budget = limit * goal_ms  # W x ms = mJ
    at = lambda mhz: f" at {mhz} MHz" if mhz else ""
    line = (f"{head} ({limit:.0f} W), an estimate: 0.90 of torch's best ({goal_ms:.3f} ms) holds about "
            f"{budget:.1f} mJ a forward; the GEMMs alone spend {g_mj:.1f}{at(g_mhz)}")
    a_mj, a_mhz = mj(a)
    if a_mj is not None:
        line += f", with the attention {a_mj:.1f}{at(a_mhz)}"
    elif a_row is not None:
        line += " (the attention's floor " + ("failed" if a is None else "read no energy") + ")"
    most = max(g_mj, a_mj) if a_mj is not None else g_mj
    margin = (most - budget) / budget
    if abs(margin) <= ENERGY_SPREAD:
        line += (f": within {100 * ENERGY_SPREAD:.0f}% of it ({100 * margin:+.1f}%), the spread of these "
                 "figures: no verdict")
    elif g_mj > budget:
        line += (f": {g_mj - budget:.1f} mJ ({100 * (g_mj - budget) / budget:.1f}%) over, so no forward that "
                 "runs these GEMMs reaches 0.90 at this limit")
    elif most > budget:
        line += (f": {most - budget:.1f} mJ ({100 * margin:.1f}%) over, so no forward that runs these GEMMs "
                 "and an attention that spends what SDPA's does reaches 0.90 at this limit")
    else:
        line += (f": {budget - most:.1f} mJ ({-100 * margin:.1f}%) left for all that is not " +
                 ("these kernels" if a_mj is not None else "these GEMMs"))
    f_mj, f_mhz = mj(fg_best)
    if f_mj is not None:
        line += f"; fusegate's best spends {f_mj:.1f}{at(f_mhz)}"
    return line


def energy_cell(e):
    """A run's energy window (times_ms.energy, or the torch side's): mJ a
    forward with the mean watts and the SM clock; '-' where none was taken
    (no warm-up), 'not read' where NVML could not read it (energy_notes
    says why, under the table)."""
    if not e:
        return "-"
    if e.get("why") or e.get("mj_per_forward") is None:
        return "not read"
    clock = f", {e['sm_mhz']} MHz" if e.get("sm_mhz") else ""
    return f"{e['mj_per_forward']:.1f} ({e['watts']:.0f} W{clock})"


def warmup_line(rows):
    """How long each torch row and floor warmed up: its forwards and their
    pace (time_ms), so that a row that was not timed at the sustained
    state shows it; '' where no row says."""
    got = [f"{r['name']} {r['energy']['warmup_forwards']} x {r['energy']['warmup_pace_ms']:.3f} ms"
           for r in rows if (r.get("energy") or {}).get("warmup_forwards") is not None]
    return ("warm-up (forwards x pace): " + "; ".join(got)) if got else ""


def energy_notes(named):
    """Why each 'not read' energy cell of a table was not read: one line a
    cell, from (label, energy window) pairs. A cell that says "not read"
    with no reason under it hid the cause (2026-11-27: torch max-autotune's
    window at seq 2048 and h2048, its JSON not kept)."""
    return [f"- energy not read for {label}: {e.get('why') or 'the window gave no figure'}"
            for label, e in named if e and (e.get("why") or e.get("mj_per_forward") is None)]


def main_table(rows, torch_rows):
    base = {cls: best(torch_rows, lambda r, c=cls: r["class"] == c) for cls in (GRAPHS, HOST)}
    lines = ["| run | class | launches / forward | device kernels | median ms | vs torch best of its class "
             "| rel. error vs fp64 | mJ / forward (mean W, SM clock) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b = base.get(r["class"])
        vs = f"{r['ms'] / b['ms']:.2f}" if r.get("ms") is not None and b else "-"
        lines.append(f"| {r['name']} | {r['class']} | {fmt(r.get('launches'), 'd')} | "
                     f"{fmt(r.get('device_kernels'), 'd')} | {fmt(r.get('ms'), '.3f', 'failed')} | {vs} | "
                     f"{fmt(r.get('rel_err'), '.2e')} | {energy_cell(r.get('energy'))} |")
    notes = energy_notes((r["name"], r.get("energy")) for r in rows)
    if notes:
        lines += [""] + notes
    if torch_rows:
        lines.append("")
        lines.append("torch best of its class: " + "; ".join(
            f"{cls}: {b['name']} ({b['ms']:.3f} ms)" if b else f"{cls}: none"
            for cls, b in base.items()))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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


def rounds_only(a, world, header):
    """--rounds-only: the interleaved rounds of the two named CUDA-graph
    configurations, no sweep; rounds.json and bench.md rewritten after each
    round (a call that runs out of time keeps the rounds it finished)."""
    fg_cfg = next(c for c in FUSEGATE_CONFIGS if c[0] == a.fusegate_config)
    fg_row = {"name": fg_cfg[0], "mode": fg_cfg[2], "extra": fg_cfg[3]}
    t_row = {"name": a.torch_config}

    def write(rounds, done):
        lines = rounds_lines(fg_row, t_row, rounds)
        if not done:
            lines.append(f"- CUDA graphs, interleaved: {len(rounds)} of {a.rounds} rounds so far (not finished)")
        text = "\n".join(["## Interleaved rounds only (no sweep)", "", header, ""] + lines)
        dump_json(pathlib.Path(a.out, "rounds.json"), rounds)
        tmp = pathlib.Path(a.out, "bench.md.tmp")
        tmp.write_text(text + "\n")
        os.replace(tmp, pathlib.Path(a.out, "bench.md"))
        return text

    rounds = interleaved_rounds(a.fusegate, world, a.out, fg_row, t_row, a.rounds,
                                on_round=lambda rs: write(rs, False))
    print(write(rounds, True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
