#!/usr/bin/python3
"""Every golden RunRecord in the repository against harness/record.schema.json,
with a standard validator (Debian's python3-jsonschema). Usage:
    check_goldens.py SCHEMA GOLDEN_DIR
Fails on any invalid golden, on finding too few goldens to vouch for anything,
and if the schema accepts a golden broken on purpose ("kernels": [1, 2])."""
import copy
import json
import pathlib
import sys

import jsonschema

schema = json.loads(pathlib.Path(sys.argv[1]).read_text())
jsonschema.Draft7Validator.check_schema(schema)
validator = jsonschema.Draft7Validator(schema)
root = pathlib.Path(sys.argv[2])
files = sorted(p for b in ("cpu", "cuda") for p in (root / b).glob("*/*.json"))
bad = 0
for p in files:
    for e in validator.iter_errors(json.loads(p.read_text())):
        bad += 1
        print(f"{p}: {'/'.join(str(x) for x in e.absolute_path)}: {e.message}")
if len(files) < 50:
    print(f"check_goldens: only {len(files)} goldens under {root}: nothing to vouch for")
    sys.exit(1)
broken = copy.deepcopy(json.loads(files[0].read_text()))
broken["ranks"][0]["kernels"] = [1, 2]
if validator.is_valid(broken):
    print("check_goldens: the schema accepts \"kernels\": [1, 2]")
    sys.exit(1)
print(f"check_goldens: {len(files)} goldens, {bad} errors")
sys.exit(1 if bad else 0)
