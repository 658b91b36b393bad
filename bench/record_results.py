#!/usr/bin/env python3
"""Puts the entries of bench calls into bench/results.json:

    python3 bench/record_results.py OUT/results_entry.json... [--file bench/results.json]

Each argument is the results_entry.json a `bench/gpu_bench.py` call wrote
next to its bench.md (gpubench/results.py says what an entry holds). A later
entry of the same GPU, date, world size and block replaces the earlier one;
the file is written whole or not at all. Exit 2 on an entry that cannot be
read."""
import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gpubench.results import merge, write_atomic  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("entries", nargs="+")
    ap.add_argument("--file", default=str(pathlib.Path(__file__).resolve().parent / "results.json"))
    a = ap.parse_args()
    path = pathlib.Path(a.file)
    new = []
    for p in [str(path)] * path.exists() + a.entries:
        try:
            got = json.loads(pathlib.Path(p).read_text())
        except (OSError, json.JSONDecodeError) as e:
            print(f"record_results: {p}: {e}; nothing was written", file=sys.stderr)
            return 2
        new.append(got)
    old = new.pop(0) if path.exists() else []
    try:
        entries = merge(old, new)
    except (ValueError, KeyError, TypeError) as e:
        print(f"record_results: {e}; nothing was written", file=sys.stderr)
        return 2
    write_atomic(path, entries)
    print(f"record_results: {len(new)} entr{'y' if len(new) == 1 else 'ies'} into {path} ({len(entries)} in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
