#!/usr/bin/env bash
# The cost of minify and of bisect's predicates, in wall seconds, on this
# machine: what bench/BISECT.md records (the tests assert what they find,
# not how fast). Run from the repository root after a build:
#   bash bench/minify_bisect.sh [path/to/fusegate]
set -u
FG="${1:-build/harness/fusegate}"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
row() {  # name, fault, command...
  local name="$1" fault="$2"; shift 2
  local s e rc
  s=$(date +%s.%N)
  FUSEGATE_FAULT="$fault" "$FG" "$@" >"$T/out" 2>&1; rc=$?
  e=$(date +%s.%N)
  printf "| %s | %s | %s | %s | %s s |\n" "$name" "$fault" "$rc" \
    "$(grep -oE '[0-9]+ -> [0-9]+ nodes in [0-9]+ checks|application [0-9]+ (of [0-9]+ )?of [a-z_]+( in graph [0-9]+ of [0-9]+)? \([0-9]+ runs' "$T/out" | tail -1)" \
    "$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.1f", b - a }')"
}
echo "$(date -u +%F), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo "| what | fault | exit | result | wall |"
echo "|---|---|---|---|---|"
row "minify qwen3_block w1" broken_fusion:reduction minify qwen3_block --out "$T/q1.fg"
row "minify qwen3_block w2" broken_fusion:reduction minify qwen3_block --world-size 2 --out "$T/q2.fg"
row "minify tp_block_llama w1" broken_fusion:reduction minify tp_block_llama --out "$T/l.fg"
row "bisect crash, tp_block_llama w1" crash_lowering:silu bisect tp_block_llama --mode C --fast-paths none
row "bisect hang (--timeout 4), tp_block_llama w1" hang_lowering:silu bisect tp_block_llama --mode C --fast-paths none --timeout 4
row "bisect ranks, tp_block_llama w2" diverge_fusion:1 bisect tp_block_llama --mode C --world-size 2 --fast-paths none
row "bisect mode B, tp_block_llama w2" perturb:buf12 bisect tp_block_llama --mode B --world-size 2 --fast-paths none
