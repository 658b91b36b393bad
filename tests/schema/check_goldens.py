#!/usr/bin/python3
"""Every golden RunRecord in the repository against harness/record/record.schema.json
and every fast-path proof against harness/record/proof.schema.json, with a standard
validator (Debian's python3-jsonschema). Usage:
    check_goldens.py RECORD_SCHEMA PROOF_SCHEMA GOLDEN_DIR
Fails on any invalid golden or proof, on finding too few of either to vouch
for anything, and if a schema accepts a file broken on purpose (a golden
with "kernels": [1, 2], another format_version or a digest not keyed by
environment; a proof of format 2, with
a failed case, or a cuda proof naming no GPU), or a golden without a key
that `check` compares (its environment, hashes, recompiles, an output's
exact digest or fingerprint)."""
import copy
import json
import pathlib
import sys

import jsonschema


def validator_of(path):
    schema = json.loads(pathlib.Path(path).read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def check(validator, files, what, least):
    bad = 0
    for p in files:
        for e in validator.iter_errors(json.loads(p.read_text())):
            bad += 1
            print(f"{p}: {'/'.join(str(x) for x in e.absolute_path)}: {e.message}")
    if len(files) < least:
        print(f"check_goldens: only {len(files)} {what} found: nothing to vouch for")
        sys.exit(1)
    return bad


def must_refuse(validator, doc, what):
    if validator.is_valid(doc):
        print(f"check_goldens: the schema accepts {what}")
        sys.exit(1)


records, proofs = validator_of(sys.argv[1]), validator_of(sys.argv[2])
root = pathlib.Path(sys.argv[3])
goldens = sorted(p for b in ("cpu", "cuda") for p in (root / b).glob("*/*.json"))
# proofs/cpu/NAME.json, proofs/cuda/<GPU model>/NAME.json
proof_files = sorted((root / "proofs").rglob("*.json"))
bad = check(records, goldens, "goldens", 50) + check(proofs, proof_files, "proofs", 4)

g = json.loads(goldens[0].read_text())
broken = copy.deepcopy(g)
broken["ranks"][0]["kernels"] = [1, 2]
must_refuse(records, broken, '"kernels": [1, 2]')
broken = copy.deepcopy(g)
broken["format_version"] = 3
must_refuse(records, broken, 'a golden of "format_version": 3')
broken = copy.deepcopy(g)
del broken["format_version"]
must_refuse(records, broken, "a golden without format_version (format 1)")
# format 2: each output's exact digest per environment, environments of strings
broken = copy.deepcopy(g)
broken["ranks"][0]["outputs"][0]["exact"] = "0123456789abcdef"
must_refuse(records, broken, "a golden whose exact digest is not keyed by environment")
broken = copy.deepcopy(g)
broken["environments"] = {}
must_refuse(records, broken, "a golden of no environment")
broken = copy.deepcopy(g)
next(iter(broken["environments"].values()))["isa"] = 7
must_refuse(records, broken, "an environment holding a number")
# a record: one environment, string digests
rec = copy.deepcopy(g)
env = next(iter(rec.pop("environments").values()))
rec["env"] = dict(env, fingerprint="0")
for r in rec["ranks"]:
    for o in r["outputs"]:
        o["exact"] = next(iter(o["exact"].values()))
if not records.is_valid(rec):
    print("check_goldens: the schema refuses a record made from a golden")
    sys.exit(1)
broken = copy.deepcopy(rec)
broken["ranks"][0]["outputs"][0]["exact"] = {"x": "y"}
must_refuse(records, broken, "a record whose exact digest is an object")
# every key `check` compares is required (a golden without one had that
# comparison skipped, with nothing said)
for path in (("environments",), ("ranks", 0, "hashes"), ("ranks", 0, "hashes", "collectives"), ("ranks", 0, "recompile_count"),
             ("ranks", 0, "outputs", 0, "exact"), ("ranks", 0, "outputs", 0, "fingerprint")):
    broken = copy.deepcopy(g)
    o = broken
    for k in path[:-1]:
        o = o[k]
    del o[path[-1]]
    must_refuse(records, broken, "a golden without " + ".".join(map(str, path)))

cuda = [p for p in proof_files if "cuda" in p.relative_to(root).parts]
pr = json.loads((cuda or proof_files)[0].read_text())
for change, what in ((lambda d: d.update(schema=2), "a proof of format 2"),
                     (lambda d: d["cases"][0].update(verdict="fail"), "a proof with a failed case"),
                     (lambda d: d["env"].pop("gpu", None) if d["backend"] == "cuda" else d.update(world_sizes=[]),
                      "a cuda proof naming no GPU (or a proof of no world size)")):
    broken = copy.deepcopy(pr)
    change(broken)
    must_refuse(proofs, broken, what)
print(f"check_goldens: {len(goldens)} goldens, {len(proof_files)} proofs, {bad} errors")
sys.exit(1 if bad else 0)
