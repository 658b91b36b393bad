# shellcheck shell=bash
# Sourced by bench/gpu.sh: the cuda goldens across GPU models (issue 44),
# the travel mode (gpu.sh's header says what it does).

# travel
step_travel() {
  if [ -n "${TRAVEL_FROM:-}" ] && [ ! -f "$TRAVEL_FROM" ]; then
    echo "gpu.sh: TRAVEL_FROM names '$TRAVEL_FROM', which is not a file (carry it)" >&2; exit 2
  fi
  read -r -a targs <<<"${TRAVEL_ARGS:---mode C --world-size 1}"
  sel=(--backend cuda "${targs[@]}")
  TR="$PWD/build-gpu/travel"; rm -rf "$TR"; mkdir -p "$TR/here/golden"
  cp -r golden/proofs "$TR/here/golden/"
  verdicts() { grep -E "^[0-9]+ checks:" "$1" | tail -1; }
  $FG run "${TRAVEL_ENV_REPRO:-ffn_allreduce}" --backend cuda --mode A --world-size 1 --iters 1 \
    --out "$OUTDIR/travel-env.json" >/dev/null 2>&1 &&
    python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["env"]; print("environment key here:", json.dumps(e, sort_keys=True))' \
      "$OUTDIR/travel-env.json"
  if [ "${TRAVEL_HERE:-1}" = 1 ]; then
    $FG bless "${sel[@]}" --golden-dir "$TR/here/golden" --why "travel: blessed on $gpu_model" \
      >"$OUTDIR/travel-bless-here.txt" 2>"$OUTDIR/travel-bless-here.err"
    echo "bless here: exit $? ($(tail -1 "$OUTDIR/travel-bless-here.txt"))"
    $FG check --strict --exact "${sel[@]}" --golden-dir "$TR/here/golden" >"$OUTDIR/travel-check-here.txt" 2>&1
    r=$?; [ $r -ne 0 ] && rc=$r
    echo "check --strict --exact of this GPU's goldens: exit $r ($(verdicts "$OUTDIR/travel-check-here.txt"))"
    phase "blessed and checked here"
  fi
  if [ -n "${TRAVEL_FROM:-}" ]; then
    mkdir -p "$TR/from"; tar xzf "$TRAVEL_FROM" -C "$TR/from" && cp -r golden/proofs "$TR/from/golden/"
    $FG check --strict "${sel[@]}" --golden-dir "$TR/from/golden" >"$OUTDIR/travel-check-from.txt" 2>&1
    r=$?; [ $r -ne 0 ] && rc=$r
    echo "check --strict of the carried goldens: exit $r ($(verdicts "$OUTDIR/travel-check-from.txt"))"
    grep -E "^  (FAIL|note) " "$OUTDIR/travel-check-from.txt" | sed -E 's/rank [0-9]+: //' | sort | uniq -c | sort -rn | head -12
    # --exact fails where the carried goldens lack this environment (another
    # GPU model, driver or library), and passes where they hold it
    want=$(python3 - "$TR/from/golden" "$OUTDIR/travel-env.json" <<'PY'
import glob, json, sys
fp = json.load(open(sys.argv[2]))["env"]["fingerprint"]
held = all(fp in json.load(open(f))["environments"] for f in glob.glob(sys.argv[1] + "/cuda/*/*.json"))
print(0 if held else 1)
PY
)
    $FG check --exact "${sel[@]}" --golden-dir "$TR/from/golden" >"$OUTDIR/travel-exact-from.txt" 2>&1
    r=$?
    echo "check --exact of the carried goldens: exit $r ($want expected: their environments $([ "$want" = 0 ] && echo hold || echo lack) this one)"
    [ "$r" = "$want" ] || rc=1
    $FG bless "${sel[@]}" --golden-dir "$TR/from/golden" --why "travel: $gpu_model added" \
      >"$OUTDIR/travel-merge.txt" 2>"$OUTDIR/travel-merge.err"
    echo "bless into the carried goldens: exit $? ($(tail -1 "$OUTDIR/travel-merge.txt"))"
    grep -E "^/.*: (this environment|replaced|[0-9]+ environment)" "$OUTDIR/travel-merge.txt" | sed -E 's|^.*/cuda/||' | head -30
    $FG check --strict --exact "${sel[@]}" --golden-dir "$TR/from/golden" >"$OUTDIR/travel-check-merged.txt" 2>&1
    r=$?; [ $r -ne 0 ] && rc=$r
    echo "check --strict --exact after the bless: exit $r ($(verdicts "$OUTDIR/travel-check-merged.txt"))"
    tar czf "$OUTDIR/travel-merged.tgz" -C "$TR/from" golden/cuda
  fi
  [ "${TRAVEL_HERE:-1}" = 1 ] && tar czf "$OUTDIR/travel-$(tr ' ' '_' <<<"$gpu_model").tgz" -C "$TR/here" golden/cuda
  # the verdicts in one file: what comes back from a device call is at most
  # 8 files, and the merged goldens must be among them
  (cd "$OUTDIR" && shopt -s nullglob && logs=(travel-*.txt travel-*.err travel-env.jso[n]) &&
     [ ${#logs[@]} -gt 0 ] && tar czf travel-logs.tgz "${logs[@]}" && rm -f "${logs[@]}")
  phase "travel done"
}
