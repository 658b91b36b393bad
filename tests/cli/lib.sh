# shellcheck shell=bash
# What every case of cli_test.sh shares: the scratch folder T (removed on
# exit), the assertions, a private copy of the .fg repro ffn_allreduce and its
# goldens, and check, which runs its mode C check at world size 1. Sourced by
# cli_test.sh with FG, SRC and CASE set.
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
export FUSEGATE_CACHE_DIR="${FUSEGATE_CACHE_DIR:-$T/cache}"
fail() { echo "FAIL($CASE): $*"; echo "--- output:"; cat "$T/out" 2>/dev/null; exit 1; }
expect_rc() { [ "$1" = "$2" ] || fail "exit code $1, expected $2"; }
expect_out() { grep -qE -- "$1" "$T/out" || fail "output lacks /$1/"; }

# a private copy of the .fg repro and its goldens
mkdir -p "$T/repros" "$T/golden/cpu"
cp "$SRC/repros/fg/ffn_allreduce.fg" "$T/repros/"
cp -r "$SRC/golden/cpu/ffn_allreduce" "$T/golden/cpu/"
cp -r "$SRC/golden/proofs" "$T/golden/"  # proofs live beside the goldens
G="$T/golden/cpu/ffn_allreduce/C_w1.json"
check() { "$FG" check ffn_allreduce --repro-dir "$T/repros" --golden-dir "$T/golden" --mode C --world-size 1 "$@" >"$T/out" 2>&1; }
