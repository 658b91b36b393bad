"""A difference between explain's kernel count and Inductor's made small
(`inductor_parity.py minimize`): each graph shrunk by fusegate's own
minimizer (`fusegate minify --graph F --predicate CMD`, the shrinking the
fuzzer's findings get) while explain's count still differs from Inductor's
on the same side. Every candidate is judged by the process that holds torch
with Inductor set up once: the predicate command (`inductor_parity.py _ask
SOCKET`) hands it the file over a unix socket, where a fresh python per
candidate would import torch each time."""
import json
import os
import subprocess
import sys

from inductor_parity import KEY, explain_args, fg_torch, graph_counts, inductor_row_counts, inductor_setup, modelled

PARITY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inductor_parity.py")


def sign(x):
    return (x > 0) - (x < 0)


def explain_generated(fusegate, path, policy):
    """explain's count of the program Inductor runs for one graph, None where
    explain refuses it."""
    res = subprocess.run([fusegate, "explain"] + explain_args(path, policy).split(), capture_output=True, text=True)
    counts = graph_counts(res.stdout)
    return sum(x[1] for x in counts) if res.returncode == 0 and counts else None


def inductor_counter(setup):
    """Inductor's count of one graph, as compared (pinned where timed), None
    where there is none (untranslatable, a compile error)."""
    def count(path, policy):
        row = inductor_row_counts(path, [policy], setup)
        ic = row["counts"].get(policy, {})
        if "untranslatable" in row or "error" in row or "error" in ic or KEY not in ic:
            return None
        return modelled(ic)
    return count


def op_count(path):
    try:
        return len(fg_torch.parse_file(path)[0].body)
    except Exception:
        return None


def minimize_one(path, policy, fusegate, counter, out_dir, timeout=600):
    """`path` shrunk while explain and Inductor still differ on the same
    side under `policy`: the minimized graph in out_dir, and the counts
    before and after."""
    import socket
    import tempfile
    stem = os.path.splitext(os.path.basename(path))[0]
    out = os.path.join(out_dir, f"{stem}.{policy}.min.fg")
    res = {"file": path, "policy": policy, "out": out, "checks": 0}
    with tempfile.TemporaryDirectory() as d:
        sock_path = os.path.join(d, "judge.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(sock_path)
        srv.listen(4)
        srv.settimeout(1.0)
        cmd = [fusegate, "minify", "--graph", path, "--backend", "cuda", "--fusion", policy, "--out", out,
               "--timeout", str(timeout), "--predicate",
               f"{sys.executable} {PARITY} _ask {sock_path}"]
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
            side = None
            while proc.poll() is None:
                try:
                    conn, _ = srv.accept()
                except socket.timeout:
                    continue
                with conn, conn.makefile("r") as fh:
                    f = fh.readline().strip()
                    res["checks"] += 1
                    fc = explain_generated(fusegate, f, policy)
                    ic = counter(f, policy) if fc is not None else None
                    if side is None:  # the graph as given
                        if fc is None or ic is None:
                            verdict = 2
                        else:
                            side = sign(fc - ic)
                            res["before"] = {"fusegate": fc, "inductor": ic, "ops": op_count(f)}
                            verdict = 0 if side else 1
                        if side is not None:
                            res["after"] = dict(res["before"])
                    else:
                        verdict = 0 if fc is not None and ic is not None and sign(fc - ic) == side else 1
                        if verdict == 0:  # the minimizer keeps each graph that still shows it
                            res["after"] = {"fusegate": fc, "inductor": ic, "ops": op_count(f)}
                            with open(out + ".counts", "w") as cf:  # kept if the run is stopped
                                json.dump(res["after"], cf)
                    conn.sendall(f"{verdict}\n".encode())
            res["exit"] = proc.returncode
            res["log"] = proc.stdout.read()[-600:]
    return res


_COUNTER = []


def _minimize_worker(args):
    path, policy, fusegate, out_dir, timeout = args
    if not _COUNTER:  # once per process: torch set up, then every graph it takes
        _COUNTER.append(inductor_counter(inductor_setup()))
    return minimize_one(path, policy, fusegate, _COUNTER[0], out_dir, timeout)


def minimize(files, policy, fusegate, out_dir, jobs=1, timeout=600):
    """Each graph of `files` minimized (`jobs` at once, each a process with
    torch); the table of them written to out_dir/minimized.md and .json."""
    import multiprocessing as mp
    os.makedirs(out_dir, exist_ok=True)
    tasks = [(f, policy, os.path.abspath(fusegate), os.path.abspath(out_dir), timeout) for f in files]
    results = []
    # the table written after each graph: a run stopped by a time limit keeps what it finished
    if jobs <= 1:
        for t in tasks:
            results.append(_minimize_worker(t))
            write_minimized(results, out_dir)
    else:
        with mp.get_context("spawn").Pool(jobs) as pool:
            for r in pool.imap_unordered(_minimize_worker, tasks, chunksize=1):
                results.append(r)
                write_minimized(results, out_dir)
    with open(os.path.join(out_dir, "minimized.md")) as f:
        print(f.read())
    return 0 if all(r.get("exit") in (0, 1) for r in results) else 1


def write_minimized(results, out_dir):
    lines = ["| graph | policy | before: ops, fusegate / Inductor | minimized: ops, fusegate / Inductor | checks | file |",
             "|---|---|---|---|---|---|"]
    for r in results:
        b, a = r.get("before"), r.get("after")
        before = f"{b['ops']}, {b['fusegate']} / {b['inductor']}" if b else "not judged"
        after = f"{a['ops']}, {a['fusegate']} / {a['inductor']}" if a and r.get("exit") == 1 else (
            "equal: nothing to minimize" if b and b["fusegate"] == b["inductor"] else f"exit {r.get('exit')}")
        lines.append(f"| {os.path.basename(r['file'])} | {r['policy']} | {before} | {after} | {r['checks']} | "
                     f"{os.path.basename(r['out']) if r.get('exit') == 1 else '-'} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, "minimized.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out_dir, "minimized.json.tmp"), "w") as f:
        json.dump(results, f, indent=1)
    os.replace(os.path.join(out_dir, "minimized.json.tmp"), os.path.join(out_dir, "minimized.json"))


def ask(sock_path, path):
    """The predicate fusegate minify runs: the judge's verdict on `path`."""
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    with s, s.makefile("r") as fh:
        s.sendall((os.path.abspath(path) + "\n").encode())
        return int(fh.readline().strip() or 2)
