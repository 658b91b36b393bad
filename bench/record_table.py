#!/usr/bin/env python3
"""Prints a short table of RunRecords (a folder of `fusegate check --records`):
graphs, breaks, launches per forward (fusegate's count, and the device
kernels that really ran) and their split, accuracy against the
fp64 run, and the median forward time of rank 0."""
import json
import pathlib
import sys

rows = []
for p in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    r = json.loads(p.read_text())
    k = r["ranks"][0]
    by = k["kernel_count_by_kind"]
    split = " ".join(f"{n}={by[n]}" for n in ("poi", "red", "per", "tem", "extern", "collective") if by.get(n))
    acc = k.get("accuracy", {})
    a = acc.get("outputs", [{}])[0] if acc else {}
    err = f"{a['rmse_vs_fp64']:.5f}/{a['eager_rmse_vs_fp64']:.5f}" if a else "-"
    same = len({x["outputs"][0]["exact"] for x in r["ranks"]}) == 1
    dev = k.get("device_kernel_count", "-")
    rows.append((r["repro"], r["mode"], r["fusion"], r["world_size"], k["graph_count"], k["graph_break_count"],
                 k["kernel_count"], dev, split, acc.get("status", "-"), err, "yes" if same else "NO",
                 f"{k['times_ms']['forward_median']:.3f}"))
hdr = ("repro", "mode", "fusion", "w", "graphs", "breaks", "launches", "device kernels", "split", "acc", "rmse cand/eager", "ranks equal",
       "fwd ms")
w = [max(len(str(x[i])) for x in rows + [hdr]) for i in range(len(hdr))]
for x in [hdr] + rows:
    print("  ".join(str(v).ljust(w[i]) for i, v in enumerate(x)))
