"""The interleaved rounds (ABBA) of fusegate's and torch's best CUDA-graph
configurations, after the sweep (--rounds) or alone (--rounds-only)."""
import os
import pathlib

from .config import FUSEGATE_CONFIGS, GRAPHS, REPRO
from .fusegate_side import fusegate_run
from .helpers import dump_json, log
from .report import rounds_lines
from .torch_side import run_torch


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
