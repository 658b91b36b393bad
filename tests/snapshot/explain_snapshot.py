#!/usr/bin/env python3
"""Explain snapshot: process replay of the compiler.

Runs `fusegate explain` over every case below and compares its full standard
output (graphs after each pass, fusion ledger, kernel list, every kernel's
source) with the snapshot stored under tests/snapshot/explain/. A refactor of
the compiler must leave it byte-identical; a change that moves it regenerates
it with --update and says why in its commit.

Cases:
  * every repro of `fusegate list` x mode B, C x world size 1, 2, 4
    x backend cpu, cuda x fusion default, max-autotune, none;
  * every .fg under tests/lit/ and repros/fg/ through `explain --graph`
    x backend x fusion.
A case that explain rejects as bad input (exit 2) is stored as its error
message and listed in a note, so a change in what explain accepts shows up
too; today it accepts every case (the GPU-sized *_h2048 repros compile for
cpu as well; `check` is what keeps them to cuda). Any other non-zero
exit is a failure.

Usage:
  explain_snapshot.py FUSEGATE              compare; on a difference print a
                                            unified diff per case, exit 1
  explain_snapshot.py FUSEGATE --update     regenerate the stored snapshot
  explain_snapshot.py FUSEGATE --self-test  prove the compare can fail, and the
                                            batch-against-process check (cheap)
  --only TEXT   only the groups (stored files) whose name contains TEXT
  --jobs N      explain processes at a time (default: CPU count)

Stored form: one file per repro or .fg file, holding its cases in a fixed
order. Within a file, a part of the output (a section starting with "=== " or
"--- ", or one kernel's source) that already appeared earlier in the same file
is written as `#=== same as HASH: FIRST LINE`, which keeps the snapshot at a
few MB; the compare expands these before diffing, so diffs show real text.
"""
import argparse
import concurrent.futures
import difflib
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from contextlib import redirect_stdout
from pathlib import Path

SRC = Path(__file__).resolve().parents[2]
SNAPSHOT_DIR = SRC / "tests" / "snapshot" / "explain"
MODES = ("B", "C")
WORLDS = (1, 2, 4)
BACKENDS = ("cpu", "cuda")
POLICIES = ("default", "max-autotune", "none")
GRAPH_DIRS = ("tests/lit", "repros/fg")
MARK = "#=== "
CASE = MARK + "case: "
SAME = MARK + "same as "
DIFF_LINES = 60
# The group used by --self-test: small, and a .fg so it needs no repro.
SELF_TEST_GROUP = "graph/tests-lit-schedule-pointwise_chain_is_one_kernel"
# Parts start at these lines: graph and pass headers, and each kernel's
# "// NAME: KIND" line in the kernels section.
PART_START = re.compile(r"(?m)^(?==== |--- |// \S+: \S+$)")


class Case:
    def __init__(self, group, key, argv):
        self.group, self.key, self.argv = group, key, argv


def repro_cases(fusegate, env):
    out = subprocess.run([fusegate, "list"], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"explain_snapshot: `{fusegate} list` failed ({out.returncode}):\n{out.stderr}")
    names = [line.split("\t")[0] for line in out.stdout.splitlines() if line.strip()]
    cases = []
    for name in names:
        for m in MODES:
            for w in WORLDS:
                for b in BACKENDS:
                    for p in POLICIES:
                        args = [name, "--mode", m, "--world-size", str(w), "--backend", b, "--fusion", p]
                        cases.append(Case("repro/" + name, " ".join(args), args))
    return cases


def graph_files():
    files = []
    for d in GRAPH_DIRS:
        files += sorted(p.relative_to(SRC).as_posix() for p in (SRC / d).rglob("*.fg"))
    return files


def graph_group(rel):
    return "graph/" + rel[: -len(".fg")].replace("/", "-")


def graph_cases():
    cases = []
    for rel in graph_files():
        for b in BACKENDS:
            for p in POLICIES:
                args = ["--graph", rel, "--backend", b, "--fusion", p]
                cases.append(Case(graph_group(rel), " ".join(args), args))
    return cases


def clean_env():
    # FUSEGATE_LOGS would add log text, FUSEGATE_FAULT would inject faults:
    # neither belongs in a snapshot of the compiler. The verifiers between
    # passes print nothing unless a pass broke the IR, so they run too.
    env = {k: v for k, v in os.environ.items() if not k.startswith("FUSEGATE_")}
    env["FUSEGATE_VERIFY"] = "1"
    return env


def normalise(text, fusegate):
    # explain prints repro locations relative to the source tree today; an
    # absolute source or build path (another checkout, a user's --repro-dir)
    # would make the snapshot depend on where it runs, so name them
    text = text.replace(str(SRC) + "/", "<src>/")
    build = Path(fusegate).resolve().parent.parent  # BUILD/harness/fusegate
    if build.parent != build and build != SRC:
        text = text.replace(str(build) + "/", "<build>/")
    return text


def run(fusegate, argv, env):
    p = subprocess.run([fusegate, "explain"] + argv, capture_output=True, text=True, env=env, cwd=SRC)
    return p.returncode, p.stdout, p.stderr


def outcome(fusegate, key, rc, out, err):
    """The stored text of a case, or raises on an internal failure."""
    if rc == 0:
        return normalise(out, fusegate)
    if rc == 2:
        # bad input: stored, so a change in what explain accepts shows up
        return f"explain rejected this as bad input (exit 2):\n{normalise(err, fusegate)}"
    raise RuntimeError(f"explain {key}: exit {rc}\n{err}")


def run_alone(fusegate, c, env):
    """One case in a process of its own: its stored text."""
    return outcome(fusegate, c.key, *run(fusegate, c.argv, env))


def fg_graph_names(path):
    text = re.sub(r"#[^\n]*", "", (SRC / path).read_text())
    return re.findall(r"(?m)^\s*graph\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(", text)


def run_graph_batch(fusegate, cases, env):
    """All .fg files of one backend and policy through as few explain
    processes as will take them.

    Starting fusegate costs ~0.6 s of CPU (binding LibTorch's ~290 shared
    libraries and running their static initialisers), more than compiling a
    lit graph. explain --graph compiles and prints each graph of a file on
    its own (no state crosses graphs), so the output for the concatenated
    files is the per-file outputs one after another; it is split back at
    the "=== graph NAME" headers. A file that explain rejects (a graph with
    a break, stored as its error) fails the whole process, so a batch that
    fails or whose headers do not match its files' graphs is halved and each
    half tried again, down to single files: a few rejected files cost a few
    processes each, not one process a file (before 2026-11-27 any failure
    ran every file of the batch alone: 95 processes a backend and policy,
    about half of this test's time)."""
    if len(cases) == 1:
        return {cases[0].key: run_alone(fusegate, cases[0], env)}
    files = [c.argv[1] for c in cases]
    names = [fg_graph_names(f) for f in files]
    with tempfile.TemporaryDirectory() as t:
        batch = Path(t) / "all.fg"
        batch.write_text("\n".join((SRC / f).read_text() for f in files) + "\n")
        rc, out, err = run(fusegate, ["--graph", str(batch)] + cases[0].argv[2:], env)
    graphs = re.split(r"(?m)^(?==== graph )", out)
    if rc == 0 and graphs[0] == "" and len(graphs) - 1 == sum(len(n) for n in names):
        results, i = {}, 1
        for c, ns in zip(cases, names):
            mine = graphs[i : i + len(ns)]
            if [g.split("\n", 1)[0].split()[2] for g in mine] != ns:
                break
            results[c.key] = outcome(fusegate, c.key, 0, "".join(mine), "")
            i += len(ns)
        else:
            return results
    half = len(cases) // 2
    return {**run_graph_batch(fusegate, cases[:half], env), **run_graph_batch(fusegate, cases[half:], env)}


def run_case_batch(fusegate, cases, env):
    """Repro cases through one `fusegate explain --batch -` process: each
    case framed as '#fusegate-explain-case N exit C out BYTES err BYTES'
    and its bytes. Cases the process did not frame (it failed part-way)
    run one a process, so a crash is reported against its own case."""
    p = subprocess.run([fusegate, "explain", "--batch", "-"], input=("\n".join(c.key for c in cases) + "\n").encode(),
                       capture_output=True, env=env, cwd=SRC)

    def text(b):  # as run()'s text=True reads a process's output
        return io.StringIO(b.decode(), newline=None).read()

    results, data, i = {}, p.stdout, 0
    for c in cases:
        nl = data.find(b"\n", i)
        head = data[i:nl].decode(errors="replace").split() if nl >= 0 else []
        if len(head) != 8 or head[0] != "#fusegate-explain-case" or head[1] != str(len(results)):
            break
        try:
            rc, n_out, n_err = int(head[3]), int(head[5]), int(head[7])
        except ValueError:
            break
        body = data[nl + 1 : nl + 1 + n_out + n_err]
        if len(body) != n_out + n_err:
            break
        results[c.key] = outcome(fusegate, c.key, rc, text(body[:n_out]), text(body[n_out:]))
        i = nl + 1 + n_out + n_err
    if len(results) < len(cases) or p.returncode != 0:
        print(f"explain_snapshot: `explain --batch` exit {p.returncode} after {len(results)} of {len(cases)} "
              f"cases; the rest one a process\n{p.stderr.decode(errors='replace')[-2000:]}", file=sys.stderr)
    for c in cases[len(results):]:
        results[c.key] = run_alone(fusegate, c, env)
    return results


# Repro cases a batch runs, spread over this many `explain --batch`
# processes whatever --jobs is, so that the same cases share a process on
# every machine; and every BATCH_CHECK_EVERY-th of them runs alone as well:
# its output must be the same bytes as in its batch (a batch that carried
# state from one case to the next would otherwise be stored by --update).
BATCH_CHUNKS = 8
BATCH_CHECK_EVERY = 25


def check_batch_against_processes(results, alone):
    """`alone`: the checked cases' texts, each from a process of its own."""
    for key, text in alone.items():
        if text != results[key]:
            raise RuntimeError(f"explain {key}: its output in `explain --batch` differs from its output as a "
                               "process of its own: the batch carried state between cases")


def run_all(fusegate, cases, jobs):
    env = clean_env()
    results = {}
    batches = {}
    singles = []
    for c in cases:
        if c.argv[0] == "--graph":
            batches.setdefault(tuple(c.argv[2:]), []).append(c)
        else:
            singles.append(c)
    # the repro cases in a few explain --batch processes (each starts
    # fusegate once), dealt out in turn so that each holds every size
    chunks = [singles[k::BATCH_CHUNKS] for k in range(BATCH_CHUNKS)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        # the long batches first, so the pool ends evenly
        futs = [pool.submit(run_graph_batch, fusegate, b, env) for b in batches.values()]
        futs += [pool.submit(run_case_batch, fusegate, ch, env) for ch in chunks if ch]
        checked = {c.key: pool.submit(run_alone, fusegate, c, env) for c in singles[::BATCH_CHECK_EVERY]}
        for f in futs:
            results.update(f.result())
        check_batch_against_processes(results, {k: f.result() for k, f in checked.items()})
    return results


def parts_of(text):
    return [p for p in PART_START.split(text) if p]


def digest(part):
    return hashlib.sha1(part.encode()).hexdigest()[:12]


def encode_group(group, cases):
    """cases: [(key, text)] in case order -> the stored file's text."""
    out = [f"# explain snapshot of {group}: written by tests/snapshot/explain_snapshot.py --update; "
           f"do not edit.\n# `{SAME}HASH: LINE` repeats the earlier part of this file with that hash.\n"]
    seen = set()
    for key, text in cases:
        out.append(f"{CASE}{key}\n")
        for part in parts_of(text):
            h = digest(part)
            if h in seen:
                out.append(f"{SAME}{h}: {part.splitlines()[0]}\n")
            else:
                seen.add(h)
                out.append(part)
    return "".join(out)


def decode_group(text):
    """The stored file's text -> {key: text}."""
    cases, known = {}, {}
    key, buf, body = None, [], []

    def flush_text():
        for part in parts_of("".join(buf)):
            known[digest(part)] = part
            body.append(part)
        buf.clear()

    def flush_case():
        flush_text()
        if key is not None:
            cases[key] = "".join(body)
        body.clear()

    for line in text.splitlines(keepends=True):
        if line.startswith(CASE):
            flush_case()
            key = line[len(CASE):].rstrip("\n")
        elif key is None:
            continue  # the file's header
        elif line.startswith(SAME):
            flush_text()
            h = line[len(SAME):].split(":", 1)[0]
            # a hand-edited part no longer has the hash its repeats name:
            # the repeats then differ from any output, and the diff says so
            body.append(known.get(h, f"(snapshot error: no earlier part with hash {h})\n"))
        else:
            buf.append(line)
    flush_case()
    return cases


def group_path(snapshot_dir, group):
    return Path(snapshot_dir) / (group + ".txt")


def stored_groups(snapshot_dir):
    d = Path(snapshot_dir)
    return sorted(p.relative_to(d).as_posix()[: -len(".txt")] for p in d.rglob("*.txt")) if d.is_dir() else []


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fusegate")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--snapshot-dir", default=str(SNAPSHOT_DIR))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args(argv)
    fusegate = str(Path(a.fusegate).resolve())
    if a.self_test:
        return self_test(fusegate, a.snapshot_dir)

    cases = [c for c in repro_cases(fusegate, clean_env()) + graph_cases() if a.only in c.group]
    if not cases:
        print(f"explain_snapshot: no case matches --only {a.only!r}")
        return 1
    try:
        live = run_all(fusegate, cases, max(1, a.jobs))
    except RuntimeError as e:
        print(f"explain_snapshot: {e}")
        return 1
    for key, text in live.items():
        # the stored form needs both: its marker lines must not be output,
        # and every part must end a line
        if any(line.startswith(MARK) for line in text.splitlines()):
            print(f"explain_snapshot: explain {key} prints a line starting with {MARK!r}; change MARK")
            return 1
        if text and not text.endswith("\n"):
            print(f"explain_snapshot: explain {key} does not end its output with a newline")
            return 1
    rejected = [c.key for c in cases if live[c.key].startswith("explain rejected")]
    if rejected:
        print(f"note: explain rejects {len(rejected)} case(s) as bad input; stored as their message:")
        for k in rejected:
            print("  " + k)

    groups = {}
    for c in cases:
        groups.setdefault(c.group, []).append((c.key, live[c.key]))

    if a.update:
        written = 0
        for g, cs in groups.items():
            p = group_path(a.snapshot_dir, g)
            text = encode_group(g, cs)
            if not p.exists() or p.read_text() != text:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text)
                written += 1
        stale = [g for g in stored_groups(a.snapshot_dir) if a.only in g and g not in groups]
        for g in stale:
            group_path(a.snapshot_dir, g).unlink()
        size = sum(group_path(a.snapshot_dir, g).stat().st_size for g in stored_groups(a.snapshot_dir))
        print(f"explain snapshot: {len(cases)} cases in {len(groups)} files, {written} rewritten, "
              f"{len(stale)} removed; {size / 1e6:.2f} MB under {a.snapshot_dir}")
        return 0

    changed = []
    for g in sorted(set(groups) | {s for s in stored_groups(a.snapshot_dir) if a.only in s}):
        p = group_path(a.snapshot_dir, g)
        stored = decode_group(p.read_text()) if p.exists() else {}
        keys = [k for k, _ in groups.get(g, [])]
        keys += [k for k in stored if k not in keys]
        now = dict(groups.get(g, []))
        for k in keys:
            old, new = stored.get(k), now.get(k)
            if old == new:
                continue
            changed.append(k)
            if old is None:
                print(f"--- explain {k}: new case, not in the snapshot ({p})")
                continue
            if new is None:
                print(f"--- explain {k}: in the snapshot ({p}) but no longer a case")
                continue
            diff = list(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                             f"snapshot: {k}", f"explain: {k}"))
            sys.stdout.writelines(diff[:DIFF_LINES])
            if len(diff) > DIFF_LINES:
                print(f"... ({len(diff) - DIFF_LINES} more diff lines)")
            print()
    if changed:
        print(f"explain snapshot: {len(changed)} of {len(cases)} case(s) changed:")
        for k in changed:
            print("  " + k)
        print("If the change is meant, regenerate with\n  python3 tests/snapshot/explain_snapshot.py "
              "build/harness/fusegate --update\nand say why the output moved in the commit message.")
        return 1
    print(f"explain snapshot: {len(cases)} cases identical")
    return 0


def self_test(fusegate, snapshot_dir):
    """The compare passes on a copy of one stored file and fails (exit 1,
    with a diff naming the change) once the copy is modified or removed."""
    src = group_path(snapshot_dir, SELF_TEST_GROUP)
    if not src.exists():
        print(f"self-test: {src} is missing; run --update first")
        return 1
    with tempfile.TemporaryDirectory() as t:
        copy = group_path(t, SELF_TEST_GROUP)
        copy.parent.mkdir(parents=True)
        shutil.copy(src, copy)
        checks = []

        def compare(label, expect_rc, expect_text):
            buf = io.StringIO()
            with redirect_stdout(buf):
                rc = main([fusegate, "--snapshot-dir", t, "--only", SELF_TEST_GROUP])
            ok = rc == expect_rc and expect_text in buf.getvalue()
            checks.append(ok)
            print(f"self-test {label}: exit {rc} (want {expect_rc}) {'ok' if ok else 'FAILED'}")
            if not ok:
                print(buf.getvalue())

        compare("unchanged copy", 0, "cases identical")
        text = copy.read_text()
        i = text.index("kernels (")
        copy.write_text(text[:i] + "kernels (999" + text[i + len("kernels ("):])
        compare("one line modified", 1, "-kernels (999")
        copy.unlink()
        compare("file removed", 1, "new case, not in the snapshot")
    # a batch whose output for a case is not that case's own process's
    # output (state carried between cases) is caught, and one whose output
    # is passes
    env = clean_env()
    args = ["ffn_allreduce", "--mode", "C", "--world-size", "1", "--backend", "cpu", "--fusion", "default"]
    c = Case("repro/ffn_allreduce", " ".join(args), args)
    for label, batch_text, want in (("batch as its processes", None, None),
                                    ("batch carrying state", "=== graph not_what_the_process_prints\n", "carried state")):
        alone = run_alone(fusegate, c, env)
        try:
            check_batch_against_processes({c.key: alone if batch_text is None else batch_text}, {c.key: alone})
            got = None
        except RuntimeError as e:
            got = str(e)
        ok = (got is None) if want is None else (got is not None and want in got)
        checks.append(ok)
        print(f"self-test {label}: {'ok' if ok else 'FAILED'}{'' if got is None else ': ' + got}")
    return 0 if all(checks) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
