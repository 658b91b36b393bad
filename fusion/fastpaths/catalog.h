// The fast paths: hand-written fused kernels that the compiler puts in place
// of a pattern of graph nodes (passes/fast_paths). Each fast path has
//   - a pattern: `match` finds its sites in a decomposed graph;
//   - a TP contract in words (what it assumes about how the ranks hold the
//     data) and a priority (where sites of two fast paths overlap, the higher
//     one runs: the TP-aware one first);
//   - whether it computes every output in the generic path's order on the
//     host (then `fusegate ab` requires identical digests there, else it
//     compares distances to the fp64 reference);
//   - its kernel source per backend, kept as text in kernels/fastpaths
//     (host/NAME.cpp, cuda/NAME.cu; kernels/fastpaths/sources.h), embedded
//     at build time and compiled at run time like generated kernels, so that
//     the hash of what runs is the hash a proof records (golden/proofs/,
//     harness/record/proofs.h). The two q/k fast paths repeat their row loops in
//     their own files on purpose: a file is what one proof hashes, and an
//     edit of one must not pass for the other. Two fast paths that are one
//     kernel template share its file (FastPathSpec::source): an edit of it
//     invalidates both proofs.
// This folder is what the compiler matches (the patterns in *_patterns.cpp,
// the catalog in catalog.cpp); the kernels and their runtimes are in
// kernels/fastpaths, which reads this catalog, never the other way.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/options.h"

namespace fg {

// One place in a graph where a fast path applies.
struct FastPathSite {
  std::string name;           // the fast path
  std::vector<int> covered;   // the nodes it replaces, sorted
  std::vector<int> inputs;    // the values it reads (ids in the matched graph)
  std::vector<int> replaced;  // covered nodes that others may read, in the order emit() returns them
  std::string shape_class;    // the dims its code depends on: "bf16,norm_dim=128,vec=8"
  // Emits the fast path into `out`, reading `in` (the ids of `inputs` there);
  // returns the ids that stand for `replaced`, in order.
  std::function<std::vector<int>(Graph& out, const std::vector<int>& in)> emit;
};

struct FastPathSpec {
  std::string name;
  int priority = 0;
  std::string contract;       // the TP contract
  std::string pattern;        // what it matches, in words
  // computes each output in the generic path's order, rounding for rounding,
  // on the host backend (the cuda kernels reduce in their own order)
  bool generic_order_host = false;
  std::function<std::vector<FastPathSite>(const Graph&)> match;
  // The inputs (by position) whose being the same on every rank makes the
  // result the same on every rank; empty: the result is never (a shard).
  // What passes/tp_rewrite's proof of replication reads of a fast path.
  std::vector<int> replicated_given;
  // its result is the same on every rank whatever its inputs (a sum over the
  // ranks, computed in one order everywhere): replicated by construction
  bool replicated_always = false;
  // its exchange maps the other ranks' memory (POSIX shared memory, CUDA
  // IPC): every rank must be on one host, so a multi-node run blocks it
  bool one_host = false;
  // all it saves over the generic path is the exchange it fuses: on one rank
  // there is none, and the cost model (passes/fast_paths.h) refuses it where
  // it was measured slower than the generic path's kernels
  bool exchange_only_gain = false;
  // it is the exchange, with no arithmetic of the graph's besides the sum
  // and at most the residual add after it (allreduce_sum,
  // allreduce_residual): on one rank it has nothing to exchange, on any
  // backend
  bool exchange_alone = false;
  // the default fusion policy stays faithful to Inductor: the fast path runs
  // only in max-autotune (forced runs, ab and prove, take it in any policy)
  bool max_autotune_only = false;
  // its host kernel is a reference loop, not a tuned GEMM: on the cpu
  // backend the cost model refuses it (ab and prove still run it there)
  bool cuda_gain_only = false;
  // measured slower on cuda than what runs without it: the cost model
  // refuses it there too, with this measurement as its reason (ab and prove
  // still run it); empty: no such measurement
  const char* cuda_measured_slower = "";
  // the architecture its cuda source is compiled for when it needs one
  // exactly ("sm_90a": wgmma, TMA multicast, setmaxnreg); empty: the device's
  const char* cuda_arch = "";
  // the stem of its kernel files when they are another fast path's (one
  // kernel template with two entry points: rmsnorm_gate_up_swiglu is
  // gate_up_swiglu's kernel with the norm folded in); empty: its own name.
  // Both proofs hash the same file, so an edit invalidates both.
  const char* source = "";
  // its kernels read their inputs through their strides (causal_attention's
  // q, k, v are views of the qkv projection); otherwise each input must be
  // row-major, and lowering copies one that is a strided view for it
  // (passes/lower.cpp, lower_extern)
  bool strided_inputs = false;
  bool generic_order(Backend b) const { return b == Backend::Cpu && generic_order_host; }
  // the stem of the files it runs: `source`, or its name
  std::string file() const { return *source ? source : name; }
};

// gate_up_swiglu's tile width, 128 or 112 output columns, for h [M, K] and
// weights [N, K] (N a multiple of 128): the one whose rounds of tiles on 132
// SMs times its width is least (catalog.cpp says why). The fast path's node
// carries it (attr tile_n) and its shape class names it.
int swiglu_tile_n(int64_t M, int64_t N);

// In priority order, highest first.
const std::vector<FastPathSpec>& fast_path_catalog();
const FastPathSpec* find_fast_path(const std::string& name);
std::string fast_path_names();  // "allreduce_residual_rmsnorm, gate_up_swiglu, ..., rmsnorm_gate_up_swiglu"


}  // namespace fg
