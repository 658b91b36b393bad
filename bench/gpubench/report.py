"""The tables of bench.md: the main table, the headline, the per-kernel
profiles side by side, the rounds' table, and the energy cells with the
notes that say why a cell was not read. Pure: no GPU, no torch."""
from .config import GRAPHS, HOST, PROFILE_ITERS, TORCH_COMPILED_HOST
from .helpers import best, fmt, short


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
    ran = [f"{r['name']}: {r['all_reduce']}" for r in torch_rows if r.get("all_reduce")]
    if ran:
        lines += ["", "all-reduce kernels a torch forward ran (its trace): " + "; ".join(ran)]
    if torch_rows:
        lines.append("")
        lines.append("torch best of its class: " + "; ".join(
            f"{cls}: {b['name']} ({b['ms']:.3f} ms)" if b else f"{cls}: none"
            for cls, b in base.items()))
    return lines


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
