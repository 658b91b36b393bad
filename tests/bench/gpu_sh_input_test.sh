#!/usr/bin/env bash
# bench/gpu.sh refuses bad settings before it builds anything (exit 2), and
# the world sizes of a call follow the GPUs there (world_sizes, sourced
# from bench/gpu/setup.sh): no GPU, no torch. cmake, ninja, nvidia-smi and
# python3 are stubs that exit 99 here, so a refusal that regressed fails at
# once instead of building.
set -u
cd "$(dirname "$0")/../.."
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
for t in cmake ninja nvidia-smi python3; do printf '#!/bin/sh\nexit 99\n' >"$stub/$t"; chmod +x "$stub/$t"; done
clean=(env -u GPU_WORLDS -u BENCH_WORLD -u BENCH_BLOCKS -u BENCH_FLOOR -u BENCH_ROUNDS -u BENCH_ROUNDS_ONLY
       -u BENCH_WARMUP_MS -u EXCHANGE_FAST_PATH -u PLACEMENT_GEMMS -u EXCHANGE_BLESS -u ATTN_VARIANT
       -u ATTN_VARIANT_SMEM PATH="$stub:$PATH")
fails=0
expect() {  # expect RC WORDS -- COMMAND...
  local want="$1" words="$2"; shift 3
  out=$("$@" 2>&1); got=$?
  if [ "$got" != "$want" ] || [[ "$out" != *"$words"* ]]; then
    echo "FAIL: $* -> exit $got (want $want), output: $out"; fails=$((fails + 1))
  fi
}
expect 2 "unknown mode 'nonsense'" -- "${clean[@]}" bash bench/gpu.sh nonsense
expect 2 "GPU_WORLDS is world sizes" -- "${clean[@]}" GPU_WORLDS=3 bash bench/gpu.sh check
expect 2 "GPU_WORLDS is world sizes" -- "${clean[@]}" GPU_WORLDS="1 2," bash bench/gpu.sh check
expect 2 "names world size 2 twice" -- "${clean[@]}" GPU_WORLDS="1,2 2" bash bench/gpu.sh check
expect 2 "BENCH_WORLD must be 1, 2, 4 or 8" -- "${clean[@]}" BENCH_WORLD=3 bash bench/gpu.sh bench
expect 2 "BENCH_BLOCKS names 'h1024'" -- "${clean[@]}" BENCH_BLOCKS=h1024 bash bench/gpu.sh bench
# settings that are right pass check_input
for v in "1" "1 2" "1,2,4" "2 4 8"; do
  expect 0 "" -- "${clean[@]}" GPU_WORLDS="$v" bash -c 'what=check; source bench/gpu/setup.sh && check_input'
done
# world_sizes: every size the GPUs allow, or GPU_WORLDS's
sizes() { "${clean[@]}" ${2:+GPU_WORLDS="$2"} bash -c "source bench/gpu/setup.sh && world_sizes $1"; }
for c in "1||1" "2||1 2" "3||1 2" "4||1 2 4" "8||1 2 4" "4|1,4|1 4" "2|2|2"; do
  IFS='|' read -r n g want <<<"$c"
  got=$(sizes "$n" "$g" 2>/dev/null)
  [ "$got" = "$want" ] || { echo "FAIL: world_sizes $n with GPU_WORLDS='$g': '$got', want '$want'"; fails=$((fails + 1)); }
done
expect 125 "world size 4 needs 4 GPUs; 2 here" -- "${clean[@]}" GPU_WORLDS="1 4" bash -c 'source bench/gpu/setup.sh && world_sizes 2'
[ "$fails" = 0 ] && echo "gpu_sh_input: every case holds" || { echo "gpu_sh_input: $fails failed"; exit 1; }
