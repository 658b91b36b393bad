"""Small helpers, pure (no GPU, no torch): error lines, kernel names and
timelines, the best row, number cells, the raw JSON files, a free port and
the progress log."""
import datetime
import json
import math
import os
import pathlib
import socket
import sys
import time

from .config import JSON_LIMIT


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


def all_reduce_kernels(events):
    """Which all-reduce ran in a traced forward, from its device kernels'
    names: e.g. "NCCL x2", "symm-mem two-shot x2", "none"."""
    kinds = {}
    for e in events:
        n = e["name"].lower()
        if n.startswith("triton_"):
            continue  # a generated kernel named after the ops it fused (an op named "linear_two_shot")
        kind = ("symm-mem one-shot" if "one_shot_all_reduce" in n else "symm-mem two-shot" if "two_shot_all_reduce" in n
                else "multimem" if "multimem_all_reduce" in n else "NCCL" if "nccl" in n and "allreduce" in n else None)
        if kind:
            kinds[kind] = kinds.get(kind, 0) + 1
    return ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items())) or "none"


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
