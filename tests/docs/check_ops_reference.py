#!/usr/bin/env python3
"""docs/OPS.md against `fusegate ops`: the op reference is generated from the
op table, and a stale copy fails (the diff says what moved).

  check_ops_reference.py FUSEGATE            compare
  check_ops_reference.py FUSEGATE --update   rewrite docs/OPS.md
  check_ops_reference.py FUSEGATE --self-test
                                             a changed copy must be reported
"""
import difflib
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "OPS.md")


def generated(fusegate):
    p = subprocess.run([fusegate, "ops"], capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or not p.stdout.startswith("# "):
        raise SystemExit(f"fusegate ops failed (exit {p.returncode}): {p.stderr.strip()}")
    return p.stdout


def compare(want, have, name):
    if want == have:
        return 0
    diff = difflib.unified_diff(have.splitlines(True), want.splitlines(True), name, "fusegate ops")
    sys.stdout.writelines(list(diff)[:80])
    print(f"\n{name} is stale: regenerate it with tests/docs/check_ops_reference.py FUSEGATE --update")
    return 1


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    want = generated(sys.argv[1])
    flag = sys.argv[2] if len(sys.argv) > 2 else ""
    if flag == "--update":
        tmp = DOC + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(want)
        os.replace(tmp, DOC)
        print(f"wrote {DOC}")
        return 0
    if flag == "--self-test":
        if compare(want, want.replace("| **required** |", "| required |", 1), "changed copy") == 0:
            print("self-test: a changed copy was not reported")
            return 1
        print("self-test: passed")
        return 0
    try:
        with open(DOC, encoding="utf-8") as f:
            have = f.read()
    except OSError as e:
        print(f"{DOC}: {e.strerror}; write it with --update")
        return 1
    rc = compare(want, have, "docs/OPS.md")
    if rc == 0:
        print(f"docs/OPS.md is current ({want.count(chr(10) + '### ')} ops)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
