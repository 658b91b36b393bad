#!/usr/bin/env python3
"""No source file of the project over 600 lines.

A file that long holds more than one responsibility: split it by
responsibility, not by line count (docs/ARCHITECTURE.md, "The house").
Test data and records are not source: golden files, the explain snapshot,
the lit graphs, JSON and Markdown. Files are those git tracks, or, outside a
git checkout, every file under the tree but build folders.

  check_file_length.py            check the tree (run from its root)
  check_file_length.py --self-test  a made-up long file must be reported
"""
import os
import subprocess
import sys
import tempfile

LIMIT = 600
NOT_SOURCE_DIRS = ("golden/", "tests/snapshot/", "tests/lit/")
NOT_SOURCE_SUFFIXES = (".md", ".json")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True)
        files = [f for f in out.stdout.decode().split("\0") if f]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, subdirs, names in os.walk(root):
        subdirs[:] = [s for s in subdirs if not s.startswith((".", "build"))]
        for n in names:
            files.append(os.path.relpath(os.path.join(d, n), root))
    return files


def is_source(path):
    return not path.startswith(NOT_SOURCE_DIRS) and not path.endswith(NOT_SOURCE_SUFFIXES)


def too_long(root, files):
    found = []
    for f in files:
        p = os.path.join(root, f)
        if not is_source(f) or not os.path.isfile(p):
            continue
        try:
            with open(p, "rb") as fh:
                n = fh.read().count(b"\n")
        except OSError:
            continue
        if n > LIMIT:
            found.append((n, f))
    return sorted(found, reverse=True)


def self_test():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "harness"))
        os.makedirs(os.path.join(d, "golden"))
        with open(os.path.join(d, "harness", "long.cpp"), "w") as f:
            f.write("x\n" * (LIMIT + 1))
        with open(os.path.join(d, "harness", "short.cpp"), "w") as f:
            f.write("x\n" * LIMIT)
        with open(os.path.join(d, "golden", "data.txt"), "w") as f:
            f.write("x\n" * (LIMIT * 2))
        got = too_long(d, ["harness/long.cpp", "harness/short.cpp", "golden/data.txt"])
        if got != [(LIMIT + 1, "harness/long.cpp")]:
            print(f"check_file_length self-test: expected only harness/long.cpp, got {got}")
            return 1
    print("check_file_length self-test: a long file is reported, a file at the limit and test data are not")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = os.getcwd()
    files = tracked_files(root)
    if not files:
        print("check_file_length: no files found under " + root + ": run it from the project's root")
        return 1
    found = too_long(root, files)
    for n, f in found:
        print(f"{f}: {n} lines, over {LIMIT}: split it by responsibility (docs/ARCHITECTURE.md, \"The house\")")
    if found:
        return 1
    print(f"check_file_length: {sum(1 for f in files if is_source(f))} source files, none over {LIMIT} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
