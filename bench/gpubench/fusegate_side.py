"""The fusegate side: one `fusegate run` (fusegate_run), the rows of
FUSEGATE_CONFIGS with what each ran, and the profile of the best
CUDA-graph configuration."""
import json
import math
import pathlib
import subprocess

from .config import (FUSEGATE_CONFIGS, FUSEGATE_TIMEOUT_S, GRAPHS, HOST, ITERS, PROFILE_ITERS, REPRO,
                     WARMUP_MS)
from .helpers import last_line, log


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
