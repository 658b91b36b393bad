"""Timing on the GPU: the warm-up count, NVML (the energy counter, the power
limit, the SM clock), the energy window of a run of forwards, the median of
CUDA-event timings, and the device kernels of a forward under
torch.profiler."""
import functools
import math
import operator
import sys
import time

import torch
import torch.distributed as dist

from .config import ITERS, WARMUP, WARMUP_MS
from .helpers import log


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
