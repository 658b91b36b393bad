"""One PyTorch configuration (TORCH_CONFIGS' kinds): built as a zero-argument
forward (eager, torch.compile's modes, the compiled default captured whole
in one CUDA graph), then timed or traced."""
import gc
import traceback

import torch

from .helpers import exc_line
from . import symm
from .model import block, make_block
from .timing import kernel_trace, time_ms


def cudagraph_skips():
    """Inductor's count of graphs it compiled without the CUDA graphs asked
    for (process-wide); compared either side of a configuration."""
    try:
        from torch._dynamo.utils import counters
        return int(counters["inductor"]["cudagraph_skips"])
    except Exception:
        return 0


def build(kind, args):
    """The zero-argument forward of one PyTorch configuration."""
    if kind == "eager":
        return lambda: block(*args)
    if kind in ("default", "max-autotune-no-cudagraphs"):
        c = torch.compile(block, fullgraph=True, mode=None if kind == "default" else kind)
        return lambda: c(*args)
    if kind in ("reduce-overhead", "max-autotune"):
        # cudagraph trees copy every input whose address is not known to be
        # static into the graph's own buffer before each replay. fusegate's
        # CUDA graphs (and the whole-forward capture below) read the inputs
        # in place, as a model's parameters are read, so these inputs are
        # marked static too. Aliases carry the mark, so that the other
        # configurations see the tensors unmarked.
        static = [a.detach() for a in args]
        for t in static:
            torch._dynamo.mark_static_address(t)
        c = torch.compile(block, fullgraph=True, mode=kind)
        return lambda: c(*static)
    if kind == "default+graph":
        # the compiled default function captured whole in one CUDA graph on
        # static inputs
        c = torch.compile(block, fullgraph=True)
        return whole_graph(lambda: c(*args))
    if kind == "symm-inductor+graph":
        # Inductor lowers the all-reduce to symm_mem's one-shot kernel (its
        # threshold raised to the block's message: the residual's bytes)
        x = args[0]
        _UNDO.append(symm.inductor_one_shot(x.numel() * x.element_size()))
        c = torch.compile(block, fullgraph=True)
        return whole_graph(lambda: c(*args))
    if kind in ("symm-one-shot+graph", "symm-two-shot+graph"):
        op = symm.linear_op(two_shot=kind.startswith("symm-two"))
        c = torch.compile(make_block(op), fullgraph=True)
        return whole_graph(lambda: c(*args))
    raise ValueError(kind)


_UNDO = []  # what a configuration changed in torch's settings, undone after it


def whole_graph(fn):
    """fn() captured whole in one CUDA graph: warmed on a side stream (it
    compiles, and the allocator settles), then captured thread-locally
    (NCCL's watchdog thread keeps querying events); returns the
    zero-argument replay, which returns the captured outputs."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode="thread_local"):
        out = fn()
    torch.cuda.synchronize()

    def replay():
        g.replay()
        return out
    return replay


def run_torch_config(kind, args, ref, traced):
    """One configuration: timed (traced=False) or profiled (traced=True);
    returns its figures, or {"error": line}. Every configuration is timed
    before any is profiled: the profiler's CUPTI overhead can outlive it and
    would slow the timings that follow."""
    fn = None
    try:
        torch._dynamo.reset()
        skips0 = cudagraph_skips()
        fn = build(kind, args)
        fn()  # compiles (or records), outside the warm-up count
        if traced:
            return {"trace": kernel_trace(fn)}
        energy = {}
        ms = time_ms(fn, energy)
        y = fn().float()
        err = ((y - ref).norm() / ref.norm()).item()
        del y
        return {"ms": ms, "rel_err": err, "cudagraph_skips": max(0, cudagraph_skips() - skips0),
                "energy": energy or None}
    except Exception as e:
        traceback.print_exc()
        return {"error": exc_line(e)}
    finally:
        # drain the device before the graphs and their memory are released
        try:
            torch.cuda.synchronize()
        except Exception:
            pass
        fn = None
        gc.collect()
        while _UNDO:
            _UNDO.pop()()
