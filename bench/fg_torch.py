#!/usr/bin/env python3
"""A .fg text graph as PyTorch: the program a user would write for it.

Each graph of a .fg file becomes a Python function of ATen/PyTorch calls with
the .fg's dtypes and attributes (`source()` shows it), and its inputs are made
as `fusegate run` makes them: a CPU generator seeded by XXH64 of
"<repro>/<input>", filled by the input's init (said, or implied by its first
use), laid out by its dim_order. The function is what `torch.compile` is given
by bench/inductor_parity.py; tests/parity/check_translation.py checks it
numerically against `fusegate run --save-tensors` on cpu.

The translation is of the program at world size 1: a collective is the
identity there (all_reduce a copy), `linear_add_rank0` adds its addend, and a
graph holding a `fast_path` (a hand-written kernel) is not translated
(`Untranslatable`). Host ops break the graph as in Python: print, .item(), a
data-dependent nonzero, an `if` on a value; a `disabled` region runs under
torch._dynamo.disable where torch has it.

    python3 bench/fg_torch.py FILE.fg            # prints the Python source
    python3 bench/fg_torch.py FILE.fg --run      # runs it eagerly, prints outputs
"""
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fg_text import FgError, Graph, Stmt, parse, parse_file  # noqa: E402,F401

# --- XXH64 (seed 0 by default), the hash `fusegate run` seeds inputs with ---
_M = (1 << 64) - 1
_P1, _P2, _P3, _P4, _P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                           0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc, lane):
    return (_rotl((acc + lane * _P2) & _M, 31) * _P1) & _M


def xxh64(data, seed=0):
    n = len(data)
    i = 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed & _M, (seed - _P1) & _M]
        while i + 32 <= n:
            for k in range(4):
                v[k] = _round(v[k], int.from_bytes(data[i + 8 * k:i + 8 * k + 8], "little"))
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
        for k in range(4):
            h = (((h ^ _round(0, v[k])) * _P1) + _P4) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 8 <= n:
        h ^= _round(0, int.from_bytes(data[i:i + 8], "little"))
        h = (_rotl(h, 27) * _P1 + _P4) & _M
        i += 8
    if i + 4 <= n:
        h ^= (int.from_bytes(data[i:i + 4], "little") * _P1) & _M
        h = (_rotl(h, 23) * _P2 + _P3) & _M
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M
        h = (_rotl(h, 11) * _P1) & _M
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M
    h ^= h >> 29
    h = (h * _P3) & _M
    h ^= h >> 32
    return h


class Untranslatable(Exception):
    """A graph with an op that has no PyTorch program (a hand-written fast path)."""




# --- inputs, as `fusegate run` makes them ---
def torch_dtype(name):
    import torch
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f64": torch.float64,
            "i64": torch.int64, "i32": torch.int32, "u8": torch.uint8, "bool": torch.bool}[name]


_FLOATING = {"bf16", "f16", "f32", "f64"}


def _uses(stmts):
    for s in stmts:
        yield s
        for arm, _ in s.arms or []:
            yield from _uses(arm)


def input_init(g, ref, dtype, shape, attrs):
    """(kind, a, b) as the input's attributes say, or as its first use implies
    (a GEMM's weight fan-in scaled, a norm's weight N(1, 0.1), its bias N(0, 0.1))."""
    kind = attrs.get("init", "")
    if not kind:
        if "mean" in attrs or "std" in attrs:
            kind = "normal"
        elif "low" in attrs or "high" in attrs:
            kind = "uniform"
        elif "start" in attrs or "step" in attrs:
            kind = "arange"
    fan_in = lambda s: ("normal", 0.0, 1.0 / math.sqrt(s[-1]))  # noqa: E731
    if kind == "normal":
        return ("normal", float(attrs.get("mean", 0.0)), float(attrs.get("std", 1.0)))
    if kind == "uniform":
        return ("uniform", float(attrs.get("low", 0.0)), float(attrs.get("high", 1.0)))
    if kind in ("ones", "zeros"):
        return (kind, 0.0, 0.0)
    if kind == "arange":
        return ("arange", float(attrs.get("start", 0.0)), float(attrs.get("step", 1.0)))
    if kind == "fan_in":
        return fan_in(shape)
    if dtype in _FLOATING:
        types = {r: s for r, _, s, _ in g.inputs}
        for s in _uses(g.body):
            if s.arms is None:
                types[s.ref] = s.shape
            if ref not in s.args:
                continue
            k = s.args.index(ref)
            if s.op in ("linear", "linear_add_rank0") and k == 1:
                return fan_in(shape)
            if s.op == "linear" and k == 2:
                return fan_in(types[s.args[1]])
            if s.op in ("rms_norm", "layer_norm") and k == 1:
                return ("normal", 1.0, 0.1)
            if s.op == "layer_norm" and k == 2:
                return ("normal", 0.0, 0.1)
            return ("normal", 0.0, 1.0)
    return ("normal", 0.0, 1.0)


def make_inputs(g, repro=None):
    """The graph's inputs by name, at world size 1, on the cpu; `repro`
    defaults to the file's stem, as `fusegate run --graph` names it."""
    import torch
    repro = repro or os.path.splitext(os.path.basename(g.path))[0]
    out = {}
    for ref, dtype, shape, attrs in g.inputs:
        seed = xxh64((attrs.get("seed", repro) + "/" + ref).encode())
        gen = torch.Generator()
        gen.manual_seed(seed)
        kind, a, b = input_init(g, ref, dtype, shape, attrs)
        t = torch_dtype(dtype)
        n = 1
        for d in shape:
            n *= d
        if kind == "normal":
            if dtype in _FLOATING:
                x = torch.randn(shape, generator=gen, dtype=torch.float32).mul(b).add(a).to(t)
            else:
                x = torch.randint(0, 2 if dtype == "bool" else max(2, int(b)), shape, generator=gen, dtype=t)
        elif kind == "uniform":
            if dtype in _FLOATING:
                x = torch.rand(shape, generator=gen, dtype=torch.float64).mul(b - a).add(a).to(t)
            else:
                x = torch.randint(math.ceil(a), math.ceil(b), shape, generator=gen, dtype=t)
        elif kind == "ones":
            x = torch.ones(shape, dtype=t)
        elif kind == "zeros":
            x = torch.zeros(shape, dtype=t)
        else:
            x = torch.arange(n, dtype=torch.float64).mul(b).add(a).reshape(shape).to(t)
        order = attrs.get("dim_order")
        if order:
            inverse = [0] * len(order)
            for k, d in enumerate(order):
                inverse[d] = k
            x = x.permute(order).contiguous().permute(inverse)
        else:
            x = x.contiguous()
        out[ref] = x
    return out


# --- the program ---
def _py(ref):
    return "v_" + re.sub(r"[^A-Za-z0-9_]", "_", ref)


def _lit(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "math.nan"
        if math.isinf(v):
            return "math.inf" if v > 0 else "-math.inf"
    return repr(v)


_UNARY = {"neg": "torch.neg", "exp": "torch.exp", "log": "torch.log", "sqrt": "torch.sqrt",
          "rsqrt": "torch.rsqrt", "relu": "torch.relu", "silu": "F.silu", "sigmoid": "torch.sigmoid",
          "tanh": "torch.tanh", "sin": "torch.sin", "cos": "torch.cos", "erf": "torch.erf",
          "abs": "torch.abs", "contiguous": "_contiguous", "nonzero": "torch.nonzero"}
_BINARY = {"add": "torch.add", "sub": "torch.sub", "mul": "torch.mul", "div": "torch.div",
           "pow": "torch.pow", "maximum": "torch.maximum", "minimum": "torch.minimum",
           "eq": "torch.eq", "ne": "torch.ne", "lt": "torch.lt", "le": "torch.le", "gt": "torch.gt",
           "ge": "torch.ge"}
# ops whose torch call takes the first operand, the dim, then the others
_ALONG_DIM = {"index_select", "gather", "softmax", "log_softmax", "scatter", "scatter_add", "index_add"}
_REDUCE = {"sum": "torch.sum", "mean": "torch.mean", "amax": "torch.amax", "amin": "torch.amin"}


def _expr(s, shapes):
    """The Python expression of one statement (not an if)."""
    a = [_py(r) for r in s.args]
    at = s.attrs
    dt = f"torch.{_TORCH_NAME[s.dtype]}"
    op = s.op
    if op in _UNARY:
        return f"{_UNARY[op]}({a[0]})"
    if op in _BINARY:
        return f"{_BINARY[op]}({a[0]}, {a[1]})"
    if op in _ALONG_DIM:  # torch.OP(x, dim, the other operands)
        return f"torch.{op}({', '.join([a[0], str(at['dim'])] + a[1:])})"
    if op in _REDUCE:
        dims = at.get("dims") or list(range(len(shapes[s.args[0]])))
        return f"{_REDUCE[op]}({a[0]}, dim={dims}, keepdim={bool(at.get('keepdim', 0))})"
    if op == "var":
        dims = at.get("dims") or list(range(len(shapes[s.args[0]])))
        return f"torch.var({a[0]}, dim={dims}, correction={at.get('correction', 1)}, keepdim={bool(at.get('keepdim', 0))})"
    if op == "full":
        return f"torch.full({s.shape}, {_lit(float(at['value']))}, dtype={dt}, device=DEVICE)"
    if op == "gelu":
        return f"F.gelu({a[0]}, approximate={at.get('approximate', 'none')!r})"
    if op == "clamp":
        return f"torch.clamp({a[0]}, min={_lit(at.get('min'))}, max={_lit(at.get('max'))})"
    if op == "where":
        return f"torch.where({a[0]}, {a[1]}, {a[2]})"
    if op == "cast":
        return f"{a[0]}.to({dt})"
    if op == "cat":
        return f"torch.cat([{', '.join(a)}], dim={at['dim']})"
    if op == "arange":
        return (f"torch.arange({_lit(at.get('start', 0))}, {_lit(at['end'])}, {_lit(at.get('step', 1))}, "
                f"dtype={dt}, device=DEVICE)")
    if op == "pad":
        return f"F.pad({a[0]}, {at['pad']}, value={_lit(float(at.get('value', 0)))})"
    if op == "one_hot":
        return f"F.one_hot({a[0]}, {at['num_classes']})"
    if op == "argmax":
        d = at.get("dim")
        return f"torch.argmax({a[0]}, dim={d}, keepdim={bool(at.get('keepdim', 0))})"
    if op == "cumsum":
        return f"torch.cumsum({a[0]}, {at['dim']}, dtype={dt})"
    if op == "rms_norm":
        return f"_rms_norm({a[0]}, {a[1]}, {_lit(float(at.get('eps', 1e-6)))})"
    if op == "layer_norm":
        return f"F.layer_norm({a[0]}, [{a[0]}.shape[-1]], {a[1]}, {a[2]}, {_lit(float(at.get('eps', 1e-5)))})"
    if op == "linear":
        y = f"F.linear({', '.join(a)})"
        return f"F.gelu({y}, approximate='tanh')" if at.get("epilogue") == "gelu_tanh" else y
    if op == "linear_add_rank0":
        return f"F.linear({a[0]}, {a[1]}) + {a[2]}"
    if op == "matmul":
        return f"_matmul({a[0]}, {a[1]})"
    if op == "sdpa":
        return f"_sdpa({a[0]}, {a[1]}, {a[2]}, {bool(at.get('causal', 1))}, {_lit(float(at['scale'])) if 'scale' in at else None})"
    if op == "embedding":
        return f"F.embedding({a[1]}, {a[0]})"
    if op == "topk":
        return (f"torch.topk({a[0]}, {at['k']}, dim={at.get('dim', -1)}, "
                f"largest={bool(at.get('largest', 1))}, sorted=True).indices")
    if op in ("sort", "argsort"):
        part = "values" if op == "sort" else "indices"
        return (f"torch.sort({a[0]}, dim={at.get('dim', -1)}, descending={bool(at.get('descending', 0))}, "
                f"stable=True).{part}")
    if op == "reshape":
        return f"{a[0]}.reshape({s.shape})"
    if op == "permute":
        return f"{a[0]}.permute({at['dims']})"
    if op == "transpose":
        return f"{a[0]}.transpose({at['dim0']}, {at['dim1']})"
    if op == "slice":
        return _slice(a[0], at, shapes[s.args[0]])
    if op == "expand":
        return f"{a[0]}.expand({s.shape})"
    if op == "flip":
        return f"torch.flip({a[0]}, {at['dims']})"
    if op == "all_reduce":
        return a[0] if at.get("inplace") else f"{a[0]}.clone()"
    if op in ("all_gather", "reduce_scatter"):
        return a[0]
    if op == "copy_":
        return f"{a[0]}.copy_({a[1]})"
    if op == "print":
        return f"_print({a[0]})"
    if op == "item":
        return f"torch.full((), {a[0]}.item(), dtype=torch.float64, device=DEVICE)"
    if op == "fast_path":
        raise Untranslatable(f"{s.ref}: fast_path {at.get('name')!r} is a hand-written kernel with no PyTorch program")
    raise Untranslatable(f"line {s.line}: op {op!r} has no translation")


_TORCH_NAME = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64", "i64": "int64",
               "i32": "int32", "u8": "uint8", "bool": "bool"}


def _slice(x, at, shape):
    dim = at["dim"] % len(shape)
    n = shape[dim]
    if "blocks" in at:
        blocks = at["blocks"]
        k = sum(blocks) // n  # the world size the line is read at
        start = sum(blocks[:at["index"]]) // k
        end = start + blocks[at["index"]] // k
        step = 1
    else:
        start, end, step = at.get("start", 0), at.get("end", n), at.get("step", 1)
        start = start + n if start < 0 else start
        end = end + n if end < 0 else end
        start = min(max(start, 0), n)
        end = min(max(end, start), n)
    idx = ", ".join([":"] * dim + [f"{start}:{end}" + (f":{step}" if step != 1 else "")])
    return f"{x}[{idx}]"


def source(g):
    """The graph as the Python function a user would write (its name the graph's)."""
    shapes = {r: s for r, _, s, _ in g.inputs}
    lines = [f"def {g.name}({', '.join(_py(r) for r, _, _, _ in g.inputs)}):"]

    def emit(stmts, indent):
        k = 0
        while k < len(stmts):
            s = stmts[k]
            if s.region is not None:
                region = [t for t in stmts[k:] if t.region == s.region]
                k += len(region)
                name = f"_region_{s.region}"
                lines.append(" " * indent + f"def {name}():")
                emit([_Plain(t) for t in region], indent + 4)
                outs = ", ".join(_py(t.ref) for t in region)
                lines.append(" " * (indent + 4) + f"return ({outs},)")
                lines.append(" " * indent + f"({outs},) = _disable({name})()")
                continue
            k += 1
            if s.arms is not None:
                lines.append(" " * indent + f"if bool({_py(s.args[0])}):")
                for n, (arm, y) in enumerate(s.arms):
                    if n == 1:
                        lines.append(" " * indent + "else:")
                    emit(arm, indent + 4)
                    lines.append(" " * (indent + 4) + f"{_py(s.ref)} = {_py(y)}")
                shapes[s.ref] = s.shape
                continue
            lines.append(" " * indent + f"{_py(s.ref)} = {_expr(s, shapes)}")
            shapes[s.ref] = s.shape

    emit(g.body, 4)
    lines.append(f"    return ({', '.join(_py(r) for r in g.outputs)},)")
    return "\n".join(lines) + "\n"


class _Plain(Stmt):
    """A region's statement, emitted inside the region's function."""

    def __init__(self, s):
        super().__init__(s.ref, s.op, s.args, s.attrs, s.dtype, s.shape, s.line, None)
        self.arms = s.arms


# --- what the program calls beyond torch ---
def _rms_norm(x, w, eps):
    import torch
    xf = x if x.dtype in (torch.float32, torch.float64) else x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return y.to(x.dtype) * w


def _matmul(a, b):
    import torch
    t = torch.promote_types(a.dtype, b.dtype)
    return torch.matmul(a.to(t), b.to(t))


def version_tuple(version):
    """(major, minor) of a torch version: "2.11.0+cu130" is (2, 11), later than
    (2, 5), which a comparison of the strings would not say."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2)))


def torch_version():
    import torch
    return version_tuple(torch.__version__)


# Whether _sdpa calls F.scaled_dot_product_attention: decided by build(),
# outside the traced function (a regex there is a graph break in Dynamo, and
# the attention then a graph of its own that is never dead code)
_SDPA_FUSED = False


def _sdpa(q, k, v, causal, scale=None):
    import torch
    import torch.nn.functional as F
    if _SDPA_FUSED:
        # grouped-query attention as the model codebases call it (torch 2.5 on)
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                              enable_gqa=k.shape[1] != q.shape[1])
    if k.shape[1] != q.shape[1]:
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    s = torch.matmul(q.float(), k.float().transpose(-2, -1)) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        L, S = q.shape[-2], k.shape[-2]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1), -math.inf)
    return torch.matmul(torch.softmax(s, -1), v.float()).to(q.dtype)


def _contiguous(x):
    return x.contiguous()


def _print(x):
    print(f"print: {tuple(x.shape)}", file=sys.stderr)
    return x


def _disable(fn):
    import torch
    dynamo = getattr(torch, "_dynamo", None)
    return dynamo.disable(fn) if dynamo is not None and hasattr(dynamo, "disable") else fn


def build(g, device="cpu"):
    """The graph's function, compiled from source() with DEVICE set."""
    import torch
    import torch.nn.functional as F
    global _SDPA_FUSED
    _SDPA_FUSED = hasattr(F, "scaled_dot_product_attention") and torch_version() >= (2, 5)
    scope = {"torch": torch, "F": F, "math": math, "DEVICE": torch.device(device), "_rms_norm": _rms_norm,
             "_matmul": _matmul, "_sdpa": _sdpa, "_contiguous": _contiguous, "_print": _print,
             "_disable": _disable}
    code = compile(source(g), f"<{g.path}:{g.name}>", "exec")
    exec(code, scope)  # noqa: S102: the text is ours, made above
    return scope[g.name]


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fg")
    ap.add_argument("--run", action="store_true", help="run it eagerly on the cpu and print the outputs")
    args = ap.parse_args(argv)
    try:
        graphs = parse_file(args.fg)
        for g in graphs:
            print(source(g))
            if args.run:
                ins = make_inputs(g)
                for k, y in enumerate(build(g)(*[ins[r] for r, _, _, _ in g.inputs])):
                    print(f"# output {k} ({g.outputs[k]}): {y.dtype} {tuple(y.shape)}\n{y}")
    except (FgError, Untranslatable, OSError) as e:
        print(f"fg_torch: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
