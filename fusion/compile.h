// compile(): the pass pipeline as straight-line code (STYLE 3).
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fusion/codegen/kernel.h"
#include "fusion/ir/graph.h"
#include "fusion/options.h"
#include "fusion/passes/fast_paths.h"
#include "fusion/passes/lower.h"
#include "fusion/passes/schedule.h"

namespace fg {

struct CompileOptions {
  FusionPolicy fusion = FusionPolicy::Default;
  Backend backend = Backend::Cpu;
  std::vector<Layout> input_layouts;  // run-time layouts of the graph inputs
  // Graph inputs that hold the same value on every rank (the rest may be
  // sharded); TP rewrites use it as their proof (passes/tp_rewrite.h).
  std::set<std::string> replicated_inputs;
  // Fast paths asked for, and what their proofs allow (passes/fast_paths.h).
  FastPathSelection fast_paths;
  FastPathProofs proofs;
  // The ranks the graph runs on (0: not known). The fast paths' cost model
  // reads it (a fast path that only saves an exchange gains nothing on one
  // rank: passes/fast_paths.h).
  int world_size = 0;
  // cpu max-autotune: once chosen, the linear shapes (gemm_shape_key) that
  // run as generated templates; the rest run the library call
  // (kernels/cpu/gemm_choice.h). Unset: every linear is a template.
  std::optional<std::set<std::string>> template_gemms;
  // cuda max-autotune: the TP residual hoists (passes/tp_rewrite.h) left
  // undone, by site ("%30(linear) + %32(add)", residual_site), as the run's
  // measurement or the golden chose (the record's residual_placement).
  std::set<std::string> residuals_apart;
  // The graph's number in the run (0 first, as the record numbers graphs):
  // whose FUSEGATE_BISECT limits apply (fusion/bisect.h).
  int graph = 0;
  // The program Inductor runs for the graph: none of fusegate's own
  // departures from it (no fast path, no GELU folded into a cuBLASLt
  // epilogue, no residual moved onto a GEMM, no sibling GEMMs batched).
  // explain compiles it beside the program fusegate runs where the ledger
  // holds a departure, for the count Inductor gives (bench/inductor_parity.py).
  bool inductor_program = false;
};

// Whether a ledger entry is one of fusegate's own departures from the
// program Inductor runs (see CompileOptions::inductor_program).
bool departs_from_inductor(const LedgerEntry& e);

struct CompiledProgram {
  Graph captured;       // as captured
  Graph decomposed;     // after decompose (and the fast paths and rewrites)
  LoweredGraph lowered; // after lower
  Schedule schedule;    // after schedule
  KernelProgram program;
  std::map<std::string, FastPathStatus> fast_paths;  // every fast path's status in this graph
  std::vector<StageApplication> decompositions;      // the rewrites decompose made, in graph order
};

CompiledProgram compile(const Graph& g, const CompileOptions& opts);

// Text views of the intermediate results, for explain and FUSEGATE_LOGS.
std::string print_lowered(const LoweredGraph& g);
std::string print_schedule(const LoweredGraph& g, const Schedule& s, const KernelProgram& p);
std::string print_ledger(const Schedule& s);

// What every rank must have compiled alike before a collective runs, one
// item a line: the graph's hash, each fusion decision in ledger order, each
// fast path's status, and each collective or fast path launch with its
// shape. Ranks compare these (harness: agreement before the first
// collective) so that a rank that compiled differently fails in seconds
// instead of leaving its peers waiting in a collective.
std::vector<std::string> agreement_items(const CompiledProgram& p, const std::string& graph_hash);

}  // namespace fg
