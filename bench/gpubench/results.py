"""bench/results.json: one entry per (GPU model, date, world size, block),
the headline of one bench call as data -- fusegate's best CUDA-graph
configuration and torch's (the all-reduce it ran), the floors, each with
its median ms and its energy a forward, and the ratios the headlines quote.
entry() makes one from a call's rows (written as OUT/results_entry.json);
merge() puts entries into the file's list, a later call of the same key in
place of the earlier. Pure: no GPU, no torch."""
import json
import os
import pathlib

from .config import GRAPHS
from .helpers import best

KEY = ("gpu", "date", "world_size", "block")


def _side(row):
    if not row or row.get("ms") is None:
        return None
    e = row.get("energy") or {}
    out = {"config": row["name"], "ms": row["ms"], "mj_per_forward": e.get("mj_per_forward")}
    if row.get("all_reduce"):
        out["all_reduce"] = row["all_reduce"]
    if row.get("rel_err") is not None:
        out["rel_err"] = row["rel_err"]
    return out


def _ratio(a, b):
    return round(a["ms"] / b["ms"], 4) if a and b else None


def entry(gpu, machine, date, world, block, torch_version, fg_rows, torch_rows, floors):
    """The entry of one call: the best CUDA-graph row of each side (a
    host-launch row never enters a ratio with a graph one) and the floors."""
    def graphs(r):
        return r.get("class") == GRAPHS
    fg, th = _side(best(fg_rows, graphs)), _side(best(torch_rows, graphs))
    fl = {f.get("kind"): _side(f) for f in floors}
    return {"gpu": gpu, "machine": machine, "date": date, "world_size": world, "block": block, "torch": torch_version,
            "fusegate_best": fg, "torch_best": th, "floor_gemms": fl.get("gemms"),
            "floor_gemms_attention": fl.get("gemms+attention"),
            "fusegate_over_torch": _ratio(fg, th), "fusegate_over_floor": _ratio(fg, fl.get("gemms+attention"))}


def merge(entries, new):
    """entries with each of new in place of the one of its key (or added),
    sorted by key."""
    keyed = {tuple(e[k] for k in KEY): e for e in entries}
    for e in new:
        missing = [k for k in KEY if not e.get(k) and e.get(k) != 0]
        if missing:
            raise ValueError(f"a results entry without {', '.join(missing)}: {json.dumps(e)[:200]}")
        keyed[tuple(e[k] for k in KEY)] = e
    return [keyed[k] for k in sorted(keyed, key=lambda k: tuple(str(x) for x in k))]


def write_atomic(path, entries):
    path = pathlib.Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(entries, indent=1) + "\n")
    os.replace(tmp, path)
