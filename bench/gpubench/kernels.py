"""The kernel GB/s table: fusegate's RMSNorm and pointwise chain at
8192 x 4096 bf16 against the measured device-to-device copy bandwidth
(`--kernels-only` prints it alone)."""
import pathlib

import torch

from .fusegate_side import fusegate_run
from .helpers import last_line
from .timing import time_ms


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
