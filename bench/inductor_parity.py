#!/usr/bin/env python3
"""Kernel counts of `fusegate explain --backend cuda` against TorchInductor's own.

Each .fg graph is translated to PyTorch (bench/fg_torch.py) and compiled by
torch.compile on the GPU under mode default and max-autotune-no-cudagraphs;
Inductor's count is the launches of the Triton kernels it wrote that the
profiler sees in a second call (templates of GEMMs apart), beside
torch._inductor.metrics.generated_kernel_count after the first (the FX graph
cache off, so every graph is compiled; under max-autotune that metric counts
every candidate it compiled), and its launches all CUDA kernels of that call. fusegate's
count is the "N launches: G generated, E extern/collective" line of `explain
--graph F --backend cuda --fusion default|max-autotune`, run in one process
(`explain --batch`). The comparison is of generated kernels. Where Inductor
timed the padding of a GEMM (pad_mm: its count then depends on a benchmark),
or where max-autotune's timing chose a Triton GEMM template over the library
GEMM (its prologues and epilogues then fuse into the template), the graph is
compiled again with every padding timing answering "not faster" and the GEMM
choices limited to the library's (max_autotune_gemm_backends = "ATEN"), the
program explain models (fusegate's cuda GEMMs are cuBLAS(Lt) calls), and
compared with that count ("pinned"); the count as Inductor ran is shown
beside it.

    inductor_parity.py inductor FILE.fg ... --json I.json [--policies default,max-autotune] [--jobs N]
                       [--config KEY=JSON] [--code DIR]
        (on a GPU with torch 2.x: Inductor's counts)
    inductor_parity.py fusegate FUSEGATE FILE.fg ... --json F.json
        (anywhere: explain's counts; the cpu build gives the same)
    inductor_parity.py compare I.json F.json [--markdown OUT.md]
        (the table: agreement by set and policy, the graphs that differ by class)
    inductor_parity.py minimize FUSEGATE FILE.fg ... --policy P --out DIR [--jobs N]
        (on a GPU with torch 2.x: each graph shrunk by `fusegate minify --predicate` while explain's count
        and Inductor's still differ on the same side; DIR/minimized.md the table)

FILE arguments may be folders (every .fg under them). A graph's set is its
folder's name under the repository (tests/lit/*, repros/fg, ...) or "random".
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import fg_torch  # noqa: E402

POLICIES = {"default": None, "max-autotune": "max-autotune-no-cudagraphs"}
# Inductor's count compared, under every policy: the Triton kernels it wrote
# that ran, less GEMM templates (under default that equals
# metrics.generated_kernel_count; under max-autotune that metric counts every
# candidate compiled)
KEY = "triton"


def expand(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            for d, dirs, files in os.walk(p):
                dirs[:] = sorted(x for x in dirs if x != "Output")
                out += [os.path.join(d, f) for f in sorted(files) if f.endswith(".fg")]
        else:
            out.append(p)
    return [os.path.abspath(p) for p in out]


def set_of(path):
    rel = os.path.relpath(path, ROOT)
    if rel.startswith(".."):
        return "random" if os.path.basename(path).startswith("fuzz_") else "other"
    return os.path.dirname(rel)


# --- Inductor's side ---
_SHOULD_PAD = []  # pad_mm._should_pad as torch has it, wrapped once per process


def inductor_setup(config=()):
    """torch with Inductor set up for counting (caches off, `config` set,
    pad_mm's timings recorded and pinnable); returns
    (torch, metrics, iconfig, timed)."""
    os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
    os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")
    import torch
    import torch._dynamo
    from torch._inductor import metrics
    import torch._inductor.config as iconfig
    iconfig.fx_graph_cache = False
    for item in config:  # --config KEY=VALUE: an Inductor setting (JSON value), said in the output's meta
        key, _, value = item.partition("=")
        obj = iconfig
        *path, last = key.split(".")
        for part in path:
            obj = getattr(obj, part)
        if not hasattr(obj, last):
            raise SystemExit(f"inductor_parity: torch {torch.__version__} has no Inductor setting {key}")
        setattr(obj, last, json.loads(value))
    torch._dynamo.config.cache_size_limit = 64
    # Inductor pads a compute-bound GEMM's operands when timing says the
    # padded GEMM is faster (fx_passes/pad_mm.py): counted, and each answer
    # kept (from a timing or from the cache of earlier timings), so that a
    # count that depends on a timing is said (it can differ from one run or
    # GPU to the next). Such a graph is compiled a second time with every
    # timing's answer pinned to "not faster" (`_should_pad`, which the
    # pattern's check calls after its deterministic checks), the program
    # explain models: its count is `unpadded`.
    timed = {"n": 0, "answers": [], "pinned": False}
    try:
        from torch._inductor.fx_passes import pad_mm
        if not _SHOULD_PAD:
            _SHOULD_PAD.append(pad_mm._should_pad)
        should = _SHOULD_PAD[0]

        # the pattern's check calls _should_pad once its deterministic
        # checks hold; past them only a compute-bound GEMM is timed (or
        # answered from earlier timings, on disk or in memory)
        def pinned_should(match, mat1, mat2, op, input=None):
            if op is torch.ops.aten.bmm:
                m, k, n = mat1.shape[1], mat1.shape[2], mat2.shape[2]
            else:
                m, k, n = mat1.shape[0], mat1.shape[1], mat2.shape[1]
            bound = pad_mm.is_mm_compute_bound(int(m), int(k), int(n), mat1.dtype)
            if timed["pinned"]:
                return False
            v = should(match, mat1, mat2, op, input)
            if bound and not iconfig.force_shape_pad:
                timed["n"] += 1
                timed["answers"].append(bool(v))
            return v
        pad_mm._should_pad = pinned_should
    except (ImportError, AttributeError):  # a torch without pad_mm: nothing is timed
        pass
    return torch, metrics, iconfig, timed


def inductor_row_counts(path, policies, setup, code_dir=None):
    """One graph's row: its set, ops and, per policy, Inductor's counts (or
    why there are none)."""
    torch, metrics, iconfig, timed = setup
    from torch.profiler import ProfilerActivity, profile
    row = {"file": path, "set": set_of(path), "counts": {}}
    try:
        g = fg_torch.parse_file(path)[0]
        fn = fg_torch.build(g, device="cuda")
        host = fg_torch.make_inputs(g)
        row["ops"] = sorted(g.ops())
    except fg_torch.Untranslatable as e:
        row["untranslatable"] = str(e)
        return row
    except Exception as e:  # the translator failed: say so, keep going
        row["error"] = f"translate: {type(e).__name__}: {e}"
        return row
    for policy in policies:
        c = {}
        try:
            torch._dynamo.reset()
            metrics.reset()
            timed["n"] = 0
            timed["answers"] = []
            compiled = torch.compile(fn, mode=POLICIES[policy], dynamic=False)
            args = [x.to("cuda") for x in (host[r] for r, _, _, _ in g.inputs)]
            t0 = time.time()
            if code_dir:  # the first call also hands back the source Inductor wrote
                from torch._inductor.utils import run_and_get_code
                _, sources = run_and_get_code(compiled, *[a.clone() for a in args])
                stem = os.path.splitext(os.path.basename(path))[0]
                with open(os.path.join(code_dir, f"{set_of(path).replace('/', '_')}.{stem}.{policy}.py"), "w") as f:
                    f.write("\n\n# ---- next graph ----\n\n".join(sources))
            else:
                compiled(*[a.clone() for a in args])
            torch.cuda.synchronize()
            c["compile_s"] = round(time.time() - t0, 2)
            c["generated"] = int(metrics.generated_kernel_count)
            c["padding_timed"] = timed["n"]
            c["padding_answers"] = list(timed["answers"])
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                compiled(*[a.clone() for a in args])
                torch.cuda.synchronize()
            names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            c["launches"] = sum(1 for n in names if not n.startswith(("Memcpy", "Memset")))
            # the kernels Inductor wrote that ran (metrics count every
            # candidate max-autotune compiled): its GEMM templates apart
            c["triton"] = sum(1 for n in names if n.startswith("triton_") and not n.startswith("triton_tem"))
            c["templates"] = sum(1 for n in names if n.startswith("triton_tem"))
            c["kernels"] = names
            if c["padding_timed"] or c["templates"]:
                c.update(pinned_counts(torch, fn, args, policy, timed, metrics, iconfig))
        except Exception as e:
            c["error"] = f"{type(e).__name__}: {str(e)[:400]}"
            c["trace"] = traceback.format_exc()[-1500:]
        row["counts"][policy] = c
    return row


def inductor_counts(files, policies, out_json, config=(), code_dir=None):
    setup = inductor_setup(config)
    torch = setup[0]
    rows = []
    for path in files:
        rows.append(inductor_row_counts(path, policies, setup, code_dir))
        if len(rows) % 10 == 0 or len(rows) == len(files):
            # written as it goes: a run stopped by a time limit keeps what it measured
            meta = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
                    "date": time.strftime("%Y-%m-%d", time.gmtime()), "policies": policies, "config": list(config),
                    "complete": len(rows) == len(files)}
            with open(out_json + ".tmp", "w") as f:
                json.dump({"meta": meta, "rows": rows}, f, indent=1)
            os.replace(out_json + ".tmp", out_json)
            print(f"inductor: {len(rows)} of {len(files)}", file=sys.stderr, flush=True)


def pinned_counts(torch, fn, args, policy, timed, metrics, iconfig):
    """The graph compiled again with padding's timings answering "not
    faster" and GEMMs chosen among the library's kernels only (no Triton
    template): Inductor's program where explain's model of it holds."""
    from torch.profiler import ProfilerActivity, profile
    torch._dynamo.reset()
    metrics.reset()
    timed["pinned"] = True
    backends = iconfig.max_autotune_gemm_backends
    iconfig.max_autotune_gemm_backends = "ATEN"
    try:
        compiled = torch.compile(fn, mode=POLICIES[policy], dynamic=False)
        compiled(*[a.clone() for a in args])
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            compiled(*[a.clone() for a in args])
            torch.cuda.synchronize()
    finally:
        timed["pinned"] = False
        iconfig.max_autotune_gemm_backends = backends
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return {"unpadded": sum(1 for n in names if n.startswith("triton_") and not n.startswith("triton_tem")),
            "unpadded_kernels": names, "pinned_templates": sum(1 for n in names if n.startswith("triton_tem"))}


def inductor_parallel(files, policies, out_json, jobs, config=(), code_dir=None):
    """`jobs` processes, each a share of the files (compiling is host work)."""
    if code_dir:
        os.makedirs(code_dir, exist_ok=True)
    if jobs <= 1:
        return inductor_counts(files, policies, out_json, config, code_dir)
    procs = []
    for k in range(jobs):
        part = files[k::jobs]
        if not part:
            continue
        lst = f"{out_json}.part{k}.list"
        with open(lst, "w") as f:
            f.write("\n".join(part))
        env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS=os.environ.get("TORCHINDUCTOR_COMPILE_THREADS", "2"))
        procs.append((subprocess.Popen([sys.executable, __file__, "inductor", "--list", lst, "--json",
                                        f"{out_json}.part{k}", "--policies", ",".join(policies)] +
                                       [f"--config={c}" for c in config] +
                                       ([f"--code={code_dir}"] if code_dir else []), env=env),
                      f"{out_json}.part{k}", lst))
    rows, meta, bad = [], None, 0
    for p, part, lst in procs:
        if p.wait() != 0 or not os.path.exists(part):
            bad += 1
            continue
        with open(part) as f:
            j = json.load(f)
        rows += j["rows"]
        meta = j["meta"]
        os.remove(part)
        os.remove(lst)
    order = {f: i for i, f in enumerate(files)}
    rows.sort(key=lambda r: order.get(r["file"], 0))
    with open(out_json + ".tmp", "w") as f:
        json.dump({"meta": meta, "rows": rows, "lost_jobs": bad}, f, indent=1)
    os.replace(out_json + ".tmp", out_json)
    return 1 if bad else 0


# --- fusegate's side ---
CASE = re.compile(rb"#fusegate-explain-case (\d+) exit (-?\d+) out (\d+) err (\d+)\n")
COUNT = re.compile(r"(\d+) launches: (\d+) generated, (\d+) extern/collective")
# where fusegate departs from Inductor's program on purpose (a fast path, a
# GELU in cuBLASLt's epilogue, a residual on a GEMM), explain adds the count
# of the program Inductor runs, and that is the one compared
INDUCTOR = re.compile(r"Inductor's program, without fusegate's own \(([^)]*)\): (\d+) launches: (\d+) generated, "
                      r"(\d+) extern/collective")


def graph_counts(out):
    """Each explained graph's counts: (launches, generated, extern) of the
    program Inductor runs (fusegate's own where it departs from none), the
    departures by ledger code ("" for none), and fusegate's own generated
    count."""
    got = []
    for sec in re.split(r"^=== graph ", out, flags=re.M)[1:]:
        own, ind = COUNT.search(sec), INDUCTOR.search(sec)
        if not own:
            continue
        m = ind if ind else own
        launches, gen, ext = (int(x) for x in m.groups()[-3:])
        got.append((launches, gen, ext, ind.group(1) if ind else "", int(own.group(2))))
    return got


HOST_OPS = {"print", "item", "nonzero", "if"}


def breaks(path):
    """Whether the graph breaks under torch.compile (a host op, a disabled
    region): then several graphs, which explain counts as a repro's (mode B)."""
    try:
        g = fg_torch.parse_file(path)[0]
    except Exception:  # explain says what is wrong with it
        return False
    return bool(g.ops() & HOST_OPS) or any(s.region is not None for s in g.body)


def explain_args(f, policy):
    if breaks(f):
        name = os.path.splitext(os.path.basename(f))[0]
        return f"{name} --repro-dir {os.path.dirname(os.path.abspath(f))} --mode B --backend cuda --fusion {policy}"
    return f"--graph {f} --backend cuda --fusion {policy}"


def fusegate_counts(fusegate, files, policies, out_json):
    cases = [(f, p) for f in files for p in policies]
    text = "\n".join(explain_args(f, p) for f, p in cases) + "\n"
    res = subprocess.run([fusegate, "explain", "--batch", "-"], input=text.encode(), capture_output=True)
    data, pos, got = res.stdout, 0, {}
    while True:
        m = CASE.search(data, pos)
        if not m:
            break
        n, rc, no, ne = (int(x) for x in m.groups())
        out = data[m.end():m.end() + no].decode(errors="replace")
        err = data[m.end() + no:m.end() + no + ne].decode(errors="replace")
        pos = m.end() + no + ne
        f, p = cases[n]
        counts = graph_counts(out)
        c = {"exit": rc}
        if rc == 0 and counts:
            launches, gen, ext, _, _ = counts[-1]
            c.update(launches=launches, generated=gen, extern=ext, graphs=len(counts))
            if len(counts) > 1:
                c["generated"] = sum(x[1] for x in counts)
                c["launches"] = sum(x[0] for x in counts)
            departures = [x[3] for x in counts if x[3]]
            if departures:
                c["departures"] = "; ".join(departures)
                c["own_generated"] = sum(x[4] for x in counts)
        else:
            c["error"] = (err or out).strip()[-400:]
        got.setdefault(f, {})[p] = c
    rows = [{"file": f, "set": set_of(f), "counts": got.get(f, {})} for f in files]
    with open(out_json + ".tmp", "w") as fh:
        json.dump({"meta": {"fusegate": fusegate}, "rows": rows}, fh, indent=1)
    os.replace(out_json + ".tmp", out_json)
    missing = sum(1 for r in rows for p in policies if p not in r["counts"])
    if missing:
        print(f"fusegate: {missing} cases gave no answer (explain --batch exit {res.returncode})", file=sys.stderr)
        return 1
    return 0


# --- the comparison ---
TIMED = "GEMM padding decided by timing (Inductor benchmarks the padded GEMM; the count can change between runs)"
TEMPLATE = ("GEMM template chosen by timing (max-autotune's Triton template took prologues or epilogues; "
            "an older run's counts, no pinned compile)")


# A divergence's class, read from the kernels Inductor ran and the graph's
# ops: the first rule that holds names it (a rule is a lead for a fix, the
# smallest graph of the class its test case).
def divergence_class(row, ic, fc):
    names = [n for n in ic.get("kernels", []) if not n.startswith(("Memcpy", "Memset"))]
    if ic.get("padding_timed") and "unpadded" not in ic:  # an older run's counts: no pinned compile
        return TIMED
    if ic.get("templates") and "unpadded" not in ic:
        return TEMPLATE
    ops = set(row.get("ops", []))
    joined = " ".join(names)
    if ops & {"all_reduce", "all_gather", "reduce_scatter"} and fc.get("generated", 0) > modelled(ic):
        # the translation's world-size-1 program: each collective the
        # identity (Inductor drops a dead one and its input's copy), where
        # fusegate keeps them
        return "collective: the translation runs it as the identity at world size 1"
    if "sdpa" in ops and ("_safe_softmax" in joined or "prepare_softmax" in joined):
        return "sdpa: Inductor runs the math decomposition (no fused kernel takes the shape/dtype)"
    if "sdpa" in ops and "flash_attention_constant" in joined:
        return "sdpa: Inductor pads the head dim for the flash kernel"
    if "var" in ops and "welford" in joined:
        return "var: Welford reduction in Inductor"
    if ops & {"linear", "matmul"} and any("clone" in n or "permute" in n for n in names if n.startswith("triton_")):
        return "GEMM: Inductor copies an operand to row-major first"
    if ops & {"linear", "matmul"} and any(re.search(r"_fused_(.*_)?(mm|addmm|bmm)(_|$)", n) for n in names
                                           if n.startswith("triton_")):
        return "GEMM: Inductor pads or lays out an operand in a kernel of its own (alignment)"
    if ops & {"sort", "argsort", "topk", "cumsum"}:
        return "sort/topk/cumsum in the graph"
    if ops & {"linear", "matmul"}:
        return "GEMM in the graph"
    if ops & {"amax", "amin", "sum", "mean", "var", "softmax", "log_softmax", "rms_norm", "layer_norm", "argmax"}:
        return "reductions only"
    return "pointwise only"



def modelled(ic):
    """Inductor's count of the program explain models: where a GEMM's
    padding was timed or a GEMM template chosen by timing, the count with
    the timings pinned to "not faster" and the GEMMs the library's."""
    return ic["unpadded"] if (ic.get("padding_timed") or ic.get("templates")) and "unpadded" in ic else ic[KEY]


def compare(ind_json, fg_json, markdown):
    with open(ind_json) as f:
        ind = json.load(f)
    with open(fg_json) as f:
        fgj = json.load(f)
    fgc = {os.path.basename(r["file"]) + "|" + r["set"]: r["counts"] for r in fgj["rows"]}
    policies = ind["meta"]["policies"]
    # (set, policy) -> [equal as Inductor ran, compared, untranslatable,
    # errors, timed, equal with the timings pinned, padded by them, GEMM
    # template chosen]
    table = {}
    diffs = []
    for r in ind["rows"]:
        key = os.path.basename(r["file"]) + "|" + r["set"]
        for p in policies:
            t = table.setdefault((r["set"], p), [0, 0, 0, 0, 0, 0, 0, 0])
            if "untranslatable" in r:
                t[2] += 1
                continue
            ic = r["counts"].get(p, {})
            fc = fgc.get(key, {}).get(p, {})
            if "error" in r or "error" in ic or "generated" not in fc:
                t[3] += 1
                diffs.append((r, p, ic, fc, "error"))
                continue
            t[1] += 1
            t[0] += 1 if ic[KEY] == fc["generated"] else 0
            if ic.get("padding_timed"):
                t[4] += 1
                t[6] += 1 if any(ic.get("padding_answers", [])) else 0
            t[7] += 1 if ic.get("templates") else 0
            want = modelled(ic)
            if want == fc["generated"]:
                t[5] += 1
            else:
                diffs.append((r, p, ic, fc, "more" if fc["generated"] > want else "fewer"))
    meta = ind["meta"]
    lines = [f"Inductor: torch {meta['torch']} on {meta['gpu']}, {meta['date']}", "",
             "`equal`: as Inductor ran; `pinned`: with each timing of a GEMM's padding answering "
             "\"not faster\" and each GEMM the library's where timing had chosen a Triton template (the "
             "program explain models; the same count where nothing was timed)", "",
             "| set | policy | pinned: equal | compared | % | as run: equal | padding timed | padded by the timing "
             "| template chosen | untranslatable | errors |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (s_, p), (eq, n, u, e, tm, eqp, padded, tem) in sorted(table.items()):
        pct = f"{100.0 * eqp / n:.1f}" if n else "-"
        lines.append(f"| {s_} | {p} | {eqp} | {n} | {pct} | {eq} | {tm} | {padded} | {tem} | {u} | {e} |")
    # graphs where fusegate runs its own program on purpose: compared as the
    # program Inductor runs (explain's second count), each departure named
    departs = {}
    for r in fgj["rows"]:
        for p, fc in r["counts"].items():
            if fc.get("departures"):
                d = departs.setdefault(p, [0, {}])
                d[0] += 1
                for code, n in re.findall(r"([a-z_]+) (\d+)", fc["departures"]):
                    d[1][code] = d[1].get(code, 0) + int(n)
    if departs:
        lines += ["", "Where fusegate departs from Inductor's program on purpose (its ledger's entries), the count "
                  "compared is explain's count of the program Inductor runs:", ""]
        for p, (n, codes) in sorted(departs.items()):
            lines.append(f"- {p}: {n} graphs ({', '.join(f'{c} {k}' for c, k in sorted(codes.items()))})")
    classes = {}
    for r, p, ic, fc, kind in diffs:
        if kind == "error":
            continue
        cl = classes.setdefault((p, divergence_class(r, ic, fc)), [0, None])
        cl[0] += 1
        # the graph's statements (where the file is not here, as on another
        # machine's output, the kinds of op it holds)
        size = len(fg_torch.parse_file(r["file"])[0].body) if os.path.exists(r["file"]) else len(r.get("ops", []))
        if cl[1] is None or size < cl[1][0]:
            cl[1] = (size, r, ic, fc)
    lines += ["", "| policy | class | graphs | smallest (nodes): fusegate / Inductor |", "|---|---|---|---|"]
    for (p, name), (n, (size, r, ic, fc)) in sorted(classes.items(), key=lambda x: (x[0][0], -x[1][0])):
        lines.append(f"| {p} | {name} | {n} | {os.path.basename(r['file'])} ({size}): {fc['generated']} / "
                     f"{modelled(ic)} |")
    lines += ["", "| graph | policy | fusegate | Inductor | ops |", "|---|---|---|---|---|"]
    for r, p, ic, fc, kind in sorted(diffs, key=lambda d: (d[4], len(d[0].get("ops", [])))):
        fcs = fc.get("generated", fc.get("error", "?"))
        ics = modelled(ic) if KEY in ic else ic.get("error", r.get("error", "?"))
        lines.append(f"| {os.path.relpath(r['file'], ROOT) if r['set'] != 'random' else os.path.basename(r['file'])}"
                     f" | {p} | {fcs} | {str(ics)[:120]} | {' '.join(r.get('ops', []))} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if markdown:
        with open(markdown, "w") as f:
            f.write(text)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("inductor")
    a.add_argument("files", nargs="*")
    a.add_argument("--list", help="a file naming the .fg files, one a line")
    a.add_argument("--json", required=True)
    a.add_argument("--policies", default="default,max-autotune")
    a.add_argument("--jobs", type=int, default=1)
    a.add_argument("--config", action="append", default=[], metavar="KEY=JSON",
                   help="set an Inductor setting (torch._inductor.config) first, e.g. loop_ordering_after_fusion=false")
    a.add_argument("--code", metavar="DIR", help="write the source Inductor generated for each graph and policy "
                   "into DIR (SET.STEM.POLICY.py)")
    b = sub.add_parser("fusegate")
    b.add_argument("fusegate")
    b.add_argument("files", nargs="+")
    b.add_argument("--json", required=True)
    b.add_argument("--policies", default="default,max-autotune")
    m = sub.add_parser("minimize")
    m.add_argument("fusegate")
    m.add_argument("files", nargs="+")
    m.add_argument("--policy", default="default", choices=sorted(POLICIES))
    m.add_argument("--out", required=True, help="a folder: each minimized graph and the table (minimized.md)")
    m.add_argument("--jobs", type=int, default=1)
    m.add_argument("--timeout", type=int, default=600, help="seconds a judgment may take")
    k = sub.add_parser("_ask")
    k.add_argument("socket")
    k.add_argument("file")
    c = sub.add_parser("compare")
    c.add_argument("inductor_json")
    c.add_argument("fusegate_json")
    c.add_argument("--markdown")
    args = ap.parse_args()
    if args.cmd == "inductor":
        files = expand(args.files)
        if args.list:
            with open(args.list) as f:
                files += [x for x in f.read().split("\n") if x]
        return inductor_parallel(files, args.policies.split(","), args.json, args.jobs, args.config,
                                 args.code) or 0
    if args.cmd == "minimize":
        import parity_minimize
        return parity_minimize.minimize(expand(args.files), args.policy, args.fusegate, args.out, args.jobs,
                                        args.timeout)
    if args.cmd == "_ask":
        import parity_minimize
        return parity_minimize.ask(args.socket, args.file)
    if args.cmd == "fusegate":
        return fusegate_counts(args.fusegate, expand(args.files), args.policies.split(","), args.json)
    return compare(args.inductor_json, args.fusegate_json, args.markdown)


if __name__ == "__main__":
    sys.exit(main())
