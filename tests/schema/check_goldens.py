#!/usr/bin/python3
"""Every golden RunRecord in the repository against harness/record.schema.json
and every fast-path proof against harness/proof.schema.json, with a standard
validator (Debian's python3-jsonschema). Usage:
    check_goldens.py RECORD_SCHEMA PROOF_SCHEMA GOLDEN_DIR
Fails on any invalid golden or proof, on finding too few of either to vouch
for anything, and if a schema accepts a file broken on purpose (a golden
with "kernels": [1, 2] or another format_version; a proof of format 2, with
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
broken["format_version"] = 2
must_refuse(records, broken, 'a golden of "format_version": 2')
# every key `check` compares is required (a golden without one had that
# comparison skipped, with nothing said)
for path in (("env",), ("ranks", 0, "hashes"), ("ranks", 0, "hashes", "collectives"), ("ranks", 0, "recompile_count"),
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
