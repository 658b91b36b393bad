"""The floor under any forward that runs cuBLAS's GEMMs: the block's GEMMs
(and with its attention) alone in one CUDA graph on the values a forward
gives them, timed on torch's side of the call (floor_inputs, build_floor,
run_floors); their rows from every rank (floor_rows), and what they leave
under 0.90 of torch's best, in time and in energy (floor_lines,
energy_floor_line)."""
import gc
import traceback

import torch
import torch.distributed as dist
import torch.nn.functional as F

from .config import B, GRAPHS, HEAD_DIM, HEADS, HIDDEN, S
from .helpers import exc_line, fmt, log
from .model import rms_norm
from .report import energy_cell, energy_notes
from .timing import device_kernels, time_ms
from .torch_configs import whole_graph


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
