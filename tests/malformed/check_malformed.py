#!/usr/bin/env python3
"""The malformed .fg corpus: each file here is one mistake a user makes, and
its first line says where fusegate must place it and what it must say:

    # error: LINE:COL: what the message must contain
    # args: --fusion max-autotune          (optional: more explain arguments)

(`# error: LINE: what ...`, without a column: any column of that line.)

Every file is explained in one `fusegate explain --batch` process. A file
passes when explain exits 2 with `FILE:LINE:COL: error:` and the text in its
message, and no internal error. Usage:

  check_malformed.py FUSEGATE [DIR]     check every .fg in DIR (default: here)
  check_malformed.py FUSEGATE --mutants WRITER COUNT
                                        check COUNT mutants of generated graphs
                                        that WRITER (write_mutants) makes afresh
  check_malformed.py --self-test FUSEGATE
                                        a file whose expectation is wrong must fail
"""
import os
import re
import subprocess
import sys
import tempfile

HEADER = re.compile(r"^# error: (\d+)(?::(\d+))?: (.+)$")


def expectation(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    m = HEADER.match(lines[0]) if lines else None
    if not m:
        raise SystemExit(f"{path}:1: the first line must be '# error: LINE:COL: MESSAGE'")
    args = []
    if len(lines) > 1 and lines[1].startswith("# args:"):
        args = lines[1][len("# args:"):].split()
    return int(m.group(1)), (int(m.group(2)) if m.group(2) else None), m.group(3), args


def run_batch(fusegate, cases):
    text = "".join(" ".join(["--graph", path] + args) + "\n" for path, args in cases)
    p = subprocess.run([fusegate, "explain", "--batch", "-"], input=text.encode(), capture_output=True, timeout=600)
    out = p.stdout
    results = []
    pos = 0
    frame = re.compile(rb"#fusegate-explain-case (\d+) exit (\d+) out (\d+) err (\d+)\n")
    while pos < len(out):
        m = frame.match(out, pos)
        if not m:
            raise SystemExit("explain --batch: cannot read its output at byte %d:\n%s\nstderr:\n%s" %
                             (pos, out[pos:pos + 300].decode(errors="replace"), p.stderr.decode(errors="replace")))
        rc, n_out, n_err = int(m.group(2)), int(m.group(3)), int(m.group(4))
        pos = m.end()
        pos += n_out
        err = out[pos:pos + n_err].decode(errors="replace")
        pos += n_err
        results.append((rc, err))
    if len(results) != len(cases):
        raise SystemExit(f"explain --batch answered {len(results)} of {len(cases)} cases (exit {p.returncode}):\n"
                         + p.stderr.decode(errors="replace"))
    return results


def check(fusegate, folder):
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".fg"))
    if not files:
        print(f"no .fg files in {folder}: nothing was checked")
        return 1
    cases = []
    expected = []
    for path in files:
        line, col, msg, args = expectation(path)
        path = os.path.abspath(path)
        cases.append((path, args))
        expected.append((line, col, msg))
    failures = 0
    for (path, _), (line, col, msg), (rc, err) in zip(cases, expected, run_batch(fusegate, cases)):
        at = re.search(re.escape(f"{path}:{line}:") + (re.escape(f"{col}") if col is not None else r"\d+")
                       + re.escape(": error: "), err)
        problems = []
        if rc != 2:
            problems.append(f"exit {rc}, not 2")
        if "internal error" in err.lower():
            problems.append("an internal error")
        if not at:
            problems.append(f"not placed at {line}" + (f":{col}" if col is not None else ""))
        elif msg not in err[at.start():]:
            problems.append(f"message lacks: {msg}")
        if problems:
            failures += 1
            print(f"FAIL {os.path.basename(path)}: " + "; ".join(problems) + "\n  said: " + err.strip())
    print(f"{len(files) - failures} of {len(files)} malformed .fg files give exit 2 at their line and column"
          + ("" if not failures else f"; {failures} do not"))
    return 1 if failures else 0


def self_test(fusegate):
    with tempfile.TemporaryDirectory() as d:
        body = "graph g(%a: f32[4]) {\n  %y = neg(%a) {x = 1} : f32[4]\n  return %y\n}\n"
        with open(os.path.join(d, "wrong_column.fg"), "w") as f:
            f.write("# error: 3:99: unknown attribute 'x'\n" + body)
        if check(fusegate, d) == 0:
            print("self-test: a wrong column was not reported")
            return 1
        with open(os.path.join(d, "wrong_column.fg"), "w") as f:
            f.write("# error: 3:17: unknown attribute 'x'\n" + body)
        if check(fusegate, d) != 0:
            print("self-test: a right expectation was reported")
            return 1
    with tempfile.TemporaryDirectory() as d:
        if check(fusegate, d) == 0:
            print("self-test: an empty folder passed")
            return 1
    print("self-test: passed")
    return 0


def mutants(fusegate, writer, count):
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([writer, d, str(count)], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{writer} {d} {count}: exit {p.returncode}\n{p.stdout}{p.stderr}")
            return 1
        made = len([f for f in os.listdir(d) if f.endswith(".fg")])
        if made != count:
            print(f"{writer} wrote {made} mutants, not {count}")
            return 1
        return check(fusegate, d)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--self-test":
        sys.exit(self_test(sys.argv[2]))
    if len(sys.argv) == 5 and sys.argv[2] == "--mutants":
        sys.exit(mutants(sys.argv[1], sys.argv[3], int(sys.argv[4])))
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        sys.exit(2)
    sys.exit(check(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else os.path.dirname(os.path.abspath(__file__))))
