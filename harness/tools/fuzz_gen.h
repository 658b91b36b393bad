// The fuzzer's graph generator: a seeded random graph over the IR's op kinds
// (pointwise math, comparisons and where, casts, cat, reductions over one,
// several and all dims, softmax and the norms, GEMMs and attention, views,
// broadcasts, the ops of real blocks (clamp, log_softmax, cumsum, flip, pad,
// gather, index_select, argmax of inputs, arange, contiguous, abs, erf,
// minimum, amin), collectives at world size > 1), dtypes bf16, f16 and f32 and
// shapes with odd sizes, size-1 dims and sizes just around the chunk and
// block widths. Every graph it returns passes verify(); the same seed gives
// the same graph.
#pragma once
#include <cstdint>
#include <set>
#include <string>

#include "fusion/ir/graph.h"

namespace fg {

struct FuzzGenOptions {
  int world = 1;      // > 1: collectives (world attribute) may appear
  int max_ops = 12;   // nodes added after the inputs, at most
  // f16 too (bf16 and f32 always): off on the cpu backend, where the
  // LibTorch of the reference (Debian's 1.13) lacks most f16 CPU kernels
  bool half = true;
};

// The graph, and the op names it holds (for coverage).
struct FuzzGraph {
  Graph graph;
  std::set<std::string> ops;
};

FuzzGraph generate_graph(uint64_t seed, const FuzzGenOptions& opts);

// Every op name the generator can emit (what coverage is counted against).
std::set<std::string> fuzz_op_universe(int world);

}  // namespace fg
