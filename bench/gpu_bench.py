#!/usr/bin/env python3
"""Side-by-side speed of fusegate and PyTorch on one TP block, every figure
taken in one call (run by `bench/gpu.sh bench`; prints the main table last
and writes everything to OUT/bench.md).

    python3 bench/gpu_bench.py --fusegate ./build-gpu/harness/fusegate --out OUT
                               [--world-size N] [--skip-torch] [--kernels-only]
                               [--block B] [--quick] [--rounds N] [--no-floor]
                               [--rounds-only [--fusegate-config L] [--torch-config L]]

Configurations, each labelled with its class ("CUDA graphs" or "host
launches") so that a ratio never divides a CUDA-graph time by a host-launch
time:

- fusegate: `fusegate run tp_block_llama_h2048 --backend cuda --world-size N
  --iters 200` in modes A, B, C (default and max-autotune, with and without
  --cuda-graphs); the median is rank 0's `times_ms.forward_median`.
- PyTorch on the equivalent module (gpubench/model.py's block), TP=N over
  NCCL in torch.multiprocessing workers, with the very same inputs
  (fusegate's seeds and sharding rebuilt there): eager, torch.compile
  default, reduce-overhead (cudagraph trees), max-autotune (also CUDA
  graphs), the compiled default captured whole in one torch.cuda.graph and
  replayed, and max-autotune-no-cudagraphs. Median of ITERS CUDA-event
  timings after warm-up; kernels per forward from torch.profiler; relative
  error against an fp64 run of the block.
- with a warm-up (--warmup-ms, default 6000): each configuration's energy
  a forward (mJ), mean watts and SM clock over half as many forwards again
  right after its timings (fusegate's `times_ms.energy`, the torch side
  through the same NVML counter via ctypes), and the energy ratio of the
  best CUDA-graph pair beside the time ratio: at the power cap a forward's
  time follows its energy.
- what each fusegate configuration ran (`ran:` lines): the fast paths used
  and blocked (a blocked one means this GPU has no proof covering the run:
  the bench then times the generic path) and each GEMM whose cuBLASLt
  algorithm is not the top-1, with its check in the forward.
- per-kernel profiles side by side: fusegate's best CUDA-graph configuration
  (`--profile`, its rank 0's JSON) and PyTorch's best CUDA-graph
  configuration (a torch.profiler trace of one forward): duration of every
  device kernel, the idle gap before it, and span / busy / idle totals.
- with --rounds N: each side's best CUDA-graph configuration timed again
  in N interleaved rounds (ABBA: the side that goes first alternates), and
  the median of the rounds' ratios (rounds.json); with --rounds-only, no
  sweep: the rounds alone of the two named configurations, rounds.json and
  bench.md rewritten after each round.
- the floor (not with --no-floor or --skip-torch): the block's GEMMs as
  PyTorch runs them (cuBLAS through F.linear), and those with its attention
  (SDPA), alone in one CUDA graph on the values a forward gives them, timed
  on torch's side of the same call, with their energy and device kernels:
  how far under 0.90 of torch's best a forward that keeps these GEMMs can
  go at all (at the power cap their energy sets most of its time).
- the achieved GB/s of fusegate's RMSNorm and pointwise-chain kernels at
  8192 x 4096 bf16 against the measured device-to-device copy bandwidth
  (--kernels-only prints that table alone).

Raw data goes next to bench.md: fusegate.json (every RunRecord),
fusegate_profile.json (written by fusegate), torch.json (rows and traces).
Exit status 2 when fewer GPUs are visible than --world-size asks for.

The code is the package bench/gpubench/ beside this file, one module a
responsibility (its __init__ lists them); this file is its entry.
"""
import sys

from gpubench.cli import main

if __name__ == "__main__":
    sys.exit(main(__doc__))
