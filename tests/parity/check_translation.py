#!/usr/bin/env python3
"""The .fg -> PyTorch translator (bench/fg_torch.py) against `fusegate run`.

For each .fg (default: every graph under tests/lit, repros/fg and bench/fg),
`fusegate run --graph F --mode A --save-tensors D` (cpu, world size 1:
eager, the same ATen kernels a PyTorch program calls; the runs go through
`run --batch`, a few processes for all of them) writes its inputs and
outputs; the translation makes the inputs itself, which must
equal fusegate's bit for bit, and runs eagerly, whose outputs must equal
fusegate's in dtype and shape and agree in value within the dtype's
tolerance (exactly for integers and bool).

A graph the translator cannot express (a hand-written fast path) is listed as
such; any other mismatch, a run that fails, or no graph compared at all
fails the check (exit 1). --self-test breaks the translation on purpose (mul
translated as add; inputs seeded by another name) and fails unless the check
sees both.

    check_translation.py FUSEGATE [FILE.fg ...] [--fuzz N] [--jobs N] [--self-test]
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import fg_torch  # noqa: E402

# |ours - fusegate's| <= atol + rtol * |fusegate's|, per element
TOLERANCE = {"bf16": (2e-2, 2e-2), "f16": (2e-3, 2e-3), "f32": (1e-4, 1e-4), "f64": (1e-9, 1e-9)}
# bf16 and f16 may part past TOLERANCE in at most this fraction of the
# elements, none by more than this many times the bound, and with a relative
# RMS difference of at most this
LOW_PRECISION = {"bf16": (1e-3, 4.0, 1e-2), "f16": (1e-3, 4.0, 1e-2)}


# eager: the reference the gate judges its compiled runs against, on the
# kernels the translation calls too (mode C would mix in the compiler's own
# error: bf16 layer_norm over a dim of 1 is 0.5 apart there, eager ATen's
# cancellation, not the translation's)
MODE = "A"


def default_files():
    out = []
    for top in ("tests/lit", "repros/fg", "bench/fg"):
        for dirpath, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = sorted(d for d in dirs if d != "Output")
            out += [os.path.join(dirpath, f) for f in sorted(files) if f.endswith(".fg")]
    return out


def load(dirpath, entry):
    import torch
    with open(os.path.join(dirpath, entry["file"]), "rb") as f:
        raw = bytearray(f.read())
    t = fg_torch.torch_dtype(entry["dtype"])
    x = torch.frombuffer(raw, dtype=t) if raw else torch.empty(0, dtype=t)
    return x.reshape(entry["shape"])


def compare(name, ours, theirs, dtype):
    """'' when they agree, else why not."""
    import torch
    if ours.dtype != theirs.dtype or list(ours.shape) != list(theirs.shape):
        return f"{name}: ours {ours.dtype}{list(ours.shape)}, fusegate's {theirs.dtype}{list(theirs.shape)}"
    if dtype not in TOLERANCE:
        bad = int((ours != theirs).sum())
        return f"{name}: {bad} of {ours.numel()} elements differ" if bad else ""
    a, b = ours.double(), theirs.double()
    nan_a, nan_b = torch.isnan(a), torch.isnan(b)
    if not torch.equal(nan_a, nan_b):
        return f"{name}: NaN in different places ({int(nan_a.sum())} ours, {int(nan_b.sum())} fusegate's)"
    a, b = a[~nan_a], b[~nan_b]
    same_inf = (a == b) | (torch.isfinite(a) & torch.isfinite(b))
    if not bool(same_inf.all()):
        return f"{name}: infinities differ"
    fin = torch.isfinite(a)
    a, b = a[fin], b[fin]
    atol, rtol = TOLERANCE[dtype]
    bound = atol + rtol * b.abs()
    over = (a - b).abs() / bound
    if not over.numel() or float(over.max()) <= 1:
        return ""
    k = int(over.argmax())
    n_over = int((over > 1).sum())
    worst = (f"{n_over} of {over.numel()} elements past atol {atol} rtol {rtol}; "
             f"worst ours {float(a[k]):.6g} fusegate's {float(b[k]):.6g}")
    # bf16 and f16: a long chain rounds each step to a few bits, and two
    # correct programs part by a few units in the last place here and there;
    # a wrong translation moves most elements, or one far
    if dtype in LOW_PRECISION:
        frac, far, rel = LOW_PRECISION[dtype]
        rel_rms = float((a - b).norm() / b.norm().clamp_min(1e-30))
        if n_over <= frac * over.numel() and float(over.max()) <= far and rel_rms <= rel:
            return ""
        return f"{name}: {worst}; relative RMS difference {rel_rms:.3g}"
    return f"{name}: {worst}"


def max_error(ours, theirs):
    import torch
    if not ours.is_floating_point() or ours.numel() == 0:
        return 0.0
    d = (ours.double() - theirs.double()).abs()
    d = d[torch.isfinite(d)]
    return float(d.max()) if d.numel() else 0.0


def prepare(path):
    """(graph, program) or (verdict, detail) where there is nothing to run."""
    try:
        graphs = fg_torch.parse_file(path)
    except fg_torch.FgError as e:
        return "FAIL", f"translator cannot read it: {e}"
    if len(graphs) != 1:
        return "FAIL", f"{len(graphs)} graphs: a .fg repro holds one"
    g = graphs[0]
    try:
        fn = fg_torch.build(g)
    except fg_torch.Untranslatable as e:
        return "untranslatable", str(e)
    return g, fn


CASE = re.compile(rb"#fusegate-run-case (\d+) exit (-?\d+) out (\d+) err (\d+)\n")


def run_args(path, d):
    return ["--graph", path, "--mode", MODE, "--iters", "1", "--save-tensors", os.path.join(d, "t"),
            "--out", os.path.join(d, "record.json")]


def fusegate_runs(fusegate, cases, jobs):
    """{path: (exit code, stderr)} of `fusegate run` for each (path, folder):
    `jobs` processes, each a share of the cases through `run --batch` (one
    start-up of fusegate and its rank spawner for all of them, where a
    process a case costs two); a case whose paths hold white space, which a
    batch line cannot carry, runs as a process of its own."""
    got, batchable = {}, []
    for path, d in cases:
        if not any(ch.isspace() for a in run_args(path, d) for ch in a):
            batchable.append((path, d))
            continue
        p = subprocess.run([fusegate, "run"] + run_args(path, d), capture_output=True, text=True)
        got[path] = (p.returncode, p.stderr or p.stdout)

    def one_batch(part):
        text = "".join(" ".join(run_args(path, d)) + "\n" for path, d in part)
        p = subprocess.run([fusegate, "run", "--batch", "-"], input=text.encode(), capture_output=True)
        out, pos, n = p.stdout, 0, 0
        while True:
            m = CASE.search(out, pos)
            if not m:
                break
            k, rc, no, ne = (int(x) for x in m.groups())
            o, e = out[m.end():m.end() + no], out[m.end() + no:m.end() + no + ne]
            pos = m.end() + no + ne
            if k < len(part):
                got[part[k][0]] = (rc, (e or o).decode(errors="replace"))
                n += 1
        for path, _ in part[n:]:  # the batch died before these cases
            got.setdefault(path, (p.returncode, f"run --batch exit {p.returncode}: "
                                               f"{p.stderr.decode(errors='replace').strip()[-400:]}"))

    parts = [batchable[k::jobs] for k in range(max(1, jobs))]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(parts)) as pool:
        list(pool.map(one_batch, [p for p in parts if p]))
    return got


def judge(g, fn, d, rc, err):
    """(verdict, detail) of one graph's translation against fusegate's run in d."""
    if rc != 0:
        return "FAIL", f"fusegate run exit {rc}: {err.strip()[-400:]}"
    with open(os.path.join(d, "t", "tensors.json"), encoding="utf-8") as f:
        saved = json.load(f)
    import torch
    ins = fg_torch.make_inputs(g)
    problems = []
    if [e["name"] for e in saved["inputs"]] != [r for r, _, _, _ in g.inputs]:
        problems.append(f"inputs {[e['name'] for e in saved['inputs']]} against the header's")
    for e in saved["inputs"]:
        theirs = load(os.path.join(d, "t"), e)
        ours = ins.get(e["name"])
        if ours is None or ours.dtype != theirs.dtype or not torch.equal(ours.contiguous(), theirs):
            problems.append(f"input {e['name']}: not fusegate's bits")
    # the program may write into an input (copy_): run it on copies
    outs = fn(*[ins[r].clone() for r, _, _, _ in g.inputs])
    if len(outs) != len(saved["outputs"]):
        problems.append(f"{len(outs)} outputs, fusegate {len(saved['outputs'])}")
    worst = 0.0
    for k, (y, e) in enumerate(zip(outs, saved["outputs"])):
        theirs = load(os.path.join(d, "t"), e)
        why = compare(f"output {k} ({e['name']})", y.contiguous(), theirs, e["dtype"])
        if why:
            problems.append(why)
        elif y.dtype == theirs.dtype and list(y.shape) == list(theirs.shape):
            worst = max(worst, max_error(y, theirs))
    if problems:
        return "FAIL", "; ".join(problems)
    return "ok", f"{len(saved['inputs'])} inputs bit-exact, {len(outs)} outputs, max |diff| {worst:.3g}"


def run(fusegate, files, jobs):
    rel = lambda p: os.path.relpath(p, ROOT) if p.startswith(ROOT + os.sep) else os.path.basename(p)  # noqa: E731
    counts = {"ok": 0, "untranslatable": 0, "FAIL": 0}
    with tempfile.TemporaryDirectory(prefix="fg-translate-") as scratch:
        prepared = {}
        for f in files:
            try:
                prepared[f] = prepare(f)
            except Exception as e:  # a translation that raises is a failure of the translator
                prepared[f] = ("FAIL", f"{type(e).__name__}: {e}")
        folders = {f: tempfile.mkdtemp(dir=scratch) for f in files if not isinstance(prepared[f][0], str)}
        ran = fusegate_runs(fusegate, list(folders.items()), jobs)
        for f in files:
            if f in folders:
                try:
                    verdict, detail = judge(*prepared[f], folders[f], *ran.get(f, (-1, "no answer from the batch")))
                except Exception as e:
                    verdict, detail = "FAIL", f"{type(e).__name__}: {e}"
            else:
                verdict, detail = prepared[f]
            counts[verdict] += 1
            print(f"{verdict:14} {rel(f)}: {detail}", flush=True)
    print(f"translation: {counts['ok']} agree, {counts['FAIL']} fail, {counts['untranslatable']} untranslatable "
          f"(fast paths) of {len(files)}")
    if counts["ok"] == 0:
        print("translation: no graph was compared: the check saw nothing")
        return 1
    return 1 if counts["FAIL"] else 0


def self_test(fusegate, jobs):
    files = [os.path.join(ROOT, "tests/lit/inductor/rms_norm_then_rope_with_cat_stores_its_halves.fg"),
             os.path.join(ROOT, "tests/lit/inductor/strided_var_mean_5x5_is_one_kernel.fg")]
    if run(fusegate, files, jobs) != 0:
        print("self-test: the true translation failed")
        return 1
    ok = True
    saved = dict(fg_torch._BINARY)
    fg_torch._BINARY["mul"] = "torch.add"
    try:
        if run(fusegate, files[:1], jobs) == 0:
            print("self-test: mul translated as add passed the check")
            ok = False
    finally:
        fg_torch._BINARY.clear()
        fg_torch._BINARY.update(saved)
    real = fg_torch.make_inputs
    fg_torch.make_inputs = lambda g, repro=None: real(g, repro="another")
    try:
        if run(fusegate, files[1:], jobs) == 0:
            print("self-test: inputs seeded by another name passed the check")
            ok = False
    finally:
        fg_torch.make_inputs = real
    print("self-test: " + ("each broken translation was caught" if ok else "FAILED"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fusegate")
    ap.add_argument("files", nargs="*")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--fuzz", type=int, default=0, metavar="N",
                    help="also N graphs of the fuzzer's generator (fusegate fuzz --emit, seeds FUZZ_SEED on)")
    ap.add_argument("--fuzz-seed", type=int, default=1)
    args = ap.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError:
        print("translation: PyTorch is not importable by " + sys.executable +
              " (ci/setup.sh installs Debian's python3-torch)")
        return 1
    if args.self_test:
        return self_test(args.fusegate, args.jobs)
    files = [os.path.abspath(f) for f in args.files] or default_files()
    with tempfile.TemporaryDirectory(prefix="fg-emitted-") as emitted:
        if args.fuzz > 0:
            p = subprocess.run([args.fusegate, "fuzz", "--emit", emitted, "--graphs", str(args.fuzz), "--seed",
                                str(args.fuzz_seed)], capture_output=True, text=True)
            got = sorted(os.path.join(emitted, f) for f in os.listdir(emitted) if f.endswith(".fg"))
            if p.returncode != 0 or len(got) != args.fuzz:
                print(f"translation: fusegate fuzz --emit gave exit {p.returncode} and {len(got)} of {args.fuzz} "
                      f"graphs: {p.stderr.strip()}")
                return 1
            files += got
        return run(args.fusegate, files, args.jobs)


if __name__ == "__main__":
    sys.exit(main())
