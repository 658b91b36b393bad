"""The PyTorch side: the ranks spawned by torch.multiprocessing (torch_worker,
which the spawned process imports by this module's path) and the spawn,
the wait and the rows that come back (run_torch)."""
import json
import os
import pathlib
import sys
import traceback

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from rank_wait import wait_for_ranks  # bench/rank_wait.py: no torch, tested in CI

from .config import FLOOR, GRAPHS, HOST, TORCH_EXIT_GRACE_S, TORCH_TIMEOUT_S, torch_configs
from .floors import FLOOR_CONFIGS, floor_inputs, floor_rows, run_floors
from .helpers import all_reduce_kernels, dump_json, exc_line, free_port, last_line, log, timeline
from .model import block, inputs
from .torch_configs import run_torch_config


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
        for label, cls, kind in torch_configs(world):
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
        for label, cls, kind in torch_configs(world):
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
                row["all_reduce"] = all_reduce_kernels(ev)
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
    want = {label for label, _, _ in torch_configs(world)}
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
    for label, cls, _ in torch_configs(world):
        if label not in done:
            rows.append({"name": label, "class": cls, "source": "torch", "ms": None,
                         "note": f"failed: {why or 'no result'}"})
    return rows, traces, floors
