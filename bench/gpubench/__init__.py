"""The GPU bench run by bench/gpu_bench.py (its docstring says what it
measures and how it is called), one module a responsibility:

- config: the block's sizes, the switches the environment sets, the
  iteration counts and timeouts, fusegate's and torch's configurations;
- model: the inputs (fusegate's seeds and sharding) and the PyTorch block;
- helpers: small pure helpers (errors, kernel timelines, JSON, the log);
- timing: CUDA-event timing, the warm-up count, NVML's energy window and
  torch.profiler's kernel traces;
- torch_configs: one PyTorch configuration built, timed or traced;
- floors: the floor (the block's GEMMs, and its attention, alone in one
  CUDA graph), its rows and its lines;
- torch_side: the PyTorch ranks (the worker spawned by
  torch.multiprocessing, and the spawn and wait);
- fusegate_side: `fusegate run`, its rows, what each ran and its profile;
- kernels: the RMSNorm and pointwise GB/s table;
- rounds: the interleaved rounds (ABBA) and --rounds-only;
- report: the tables of bench.md (main table, headline, profiles, rounds,
  energy cells and notes);
- cli: the arguments, the checks of the environment and the sweep.

The spawned PyTorch workers import the package afresh (torch_side's
torch_worker by its module path): config reads the block and the switches
from the environment that cli.main sets.
"""
