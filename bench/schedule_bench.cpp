// Scheduler cost on generated graphs (not a test: prints times): chains of
// norm blocks and chains of relus whose nodes carry source lines. Each norm
// block is RMSNorm -> scale -> residual add -> GELU, the shape of graph
// Inductor's fuse_nodes was measured on (0.24 s at ~275 nodes, 2.4 s at
// ~1.1k, 10.4 s at ~4.4k).
//
//   schedule_bench [norm_chain|relu_chain] [nodes...]
//     default: both kinds at 1000 10000 50000
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fusion/codegen/cpp_printer.h"
#include "fusion/compile.h"
#include "fusion/ir/graph.h"
#include "fusion/passes/decompose.h"
#include "fusion/passes/lower.h"
#include "fusion/passes/schedule.h"

using namespace fg;

namespace {

Graph norm_chain(int target_nodes) {
  Graph g;
  g.name = "norm_chain";
  TensorType xt{DType::BF16, {8, 512}}, wt{DType::BF16, {512}}, st{DType::BF16, {}};
  int x = g.add_input("x", xt);
  int w = g.add_input("w", wt);
  while (static_cast<int>(g.nodes.size()) < target_nodes) {
    int h = g.add(Op::RmsNorm, {x, w}, {{"eps", 1e-6}});
    int c = g.add(Op::Full, {}, {{"value", 0.5}}, &st);
    int y = g.add(Op::Add, {x, g.add(Op::Mul, {h, c})});
    x = g.add(Op::Gelu, {y}, {{"approximate", std::string("tanh")}});
  }
  g.outputs = {x};
  return g;
}

// A chain of relus, each node at its own line of a made-up .fg file, as a
// parsed graph carries them: a chain the lowering inlines into one node that
// covers every line (the ledger's source lists then hold thousands).
Graph relu_chain(int target_nodes) {
  Graph g;
  g.name = "relu_chain";
  int x = g.add_input("x", TensorType{DType::F32, {64, 64}});
  for (int line = 2; static_cast<int>(g.nodes.size()) < target_nodes; ++line) {
    x = g.add(Op::Relu, {x});
    g.nodes[static_cast<size_t>(x)].loc = SourceLoc{"chain.fg", line, ""};
  }
  g.outputs = {x};
  return g;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  std::vector<std::string> kinds = {"norm_chain", "relu_chain"};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "norm_chain" || a == "relu_chain")
      kinds = {a};
    else
      sizes.push_back(std::atoi(argv[i]));
  }
  if (sizes.empty()) sizes = {1000, 10000, 50000};
  std::printf("%-11s %10s %12s %12s %12s %12s %10s %10s %12s\n", "graph", "nodes", "decomposed", "sched nodes",
              "lower ms", "schedule ms", "kernels", "codegen ms", "compile ms");
  for (int n : sizes) {
    for (const std::string& kind : kinds) {
      Graph g = kind == "norm_chain" ? norm_chain(n) : relu_chain(n);
      // the whole pipeline as `explain` and a run call it (verify,
      // decompose, dead code, fast paths, lower, schedule, codegen), first,
      // on the heap a fresh process has; then its stages one by one
      auto t0 = std::chrono::steady_clock::now();
      double all_ms = 0;
      {
        CompiledProgram whole = compile(g, CompileOptions{});
        all_ms = ms_since(t0);
      }
      Graph d = decompose(g);
      t0 = std::chrono::steady_clock::now();
      LoweredGraph lg = lower(d);
      double lower_ms = ms_since(t0);
      t0 = std::chrono::steady_clock::now();
      Schedule s = schedule(lg, FusionPolicy::Default);
      double sched_ms = ms_since(t0);
      t0 = std::chrono::steady_clock::now();
      KernelProgram p = generate_cpp(lg, s);
      double cg_ms = ms_since(t0);
      std::printf("%-11s %10zu %12zu %12zu %12.1f %12.1f %10zu %10.1f %12.1f\n", kind.c_str(), g.nodes.size(), d.nodes.size(),
                  lg.nodes.size(), lower_ms, sched_ms, p.kernels.size(), cg_ms, all_ms);
      std::fflush(stdout);
    }
  }
  return 0;
}
