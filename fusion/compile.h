// compile(): the pass pipeline as straight-line code (STYLE 3).
#pragma once
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
};

struct CompiledProgram {
  Graph captured;       // as captured
  Graph decomposed;     // after decompose (and the fast paths and rewrites)
  LoweredGraph lowered; // after lower
  Schedule schedule;    // after schedule
  KernelProgram program;
  std::map<std::string, FastPathStatus> fast_paths;  // every fast path's status in this graph
};

CompiledProgram compile(const Graph& g, const CompileOptions& opts);

// Text views of the intermediate results, for explain and FUSEGATE_LOGS.
std::string print_lowered(const LoweredGraph& g);
std::string print_schedule(const LoweredGraph& g, const Schedule& s, const KernelProgram& p);
std::string print_ledger(const Schedule& s);

}  // namespace fg
