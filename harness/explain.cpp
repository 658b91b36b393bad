// explain --graph FILE.fg: the compiler alone (no ranks, no LibTorch run):
// the graph after each pass, the fusion decisions, then every kernel with
// its source; optionally Graphviz DOT of the graph before and after fusion.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "fusion/compile.h"
#include "fusion/errors.h"
#include "fusion/ir/text.h"
#include "harness/commands.h"
#include "harness/golden.h"

namespace fg {

namespace {

std::string dot_before(const Graph& g) {
  std::ostringstream o;
  o << "digraph \"" << g.name << "\" {\n  rankdir=TB;\n  node [shape=box, fontname=monospace];\n";
  for (const auto& n : g.nodes)
    o << "  n" << n.id << " [label=\"" << g.ref(n.id) << " = " << op_name(n.op) << "\\n" << n.type.str() << "\"];\n";
  for (const auto& n : g.nodes)
    for (int i : n.inputs) o << "  n" << i << " -> n" << n.id << ";\n";
  return o.str() + "}\n";
}

std::string dot_after(const CompiledProgram& c) {
  const LoweredGraph& lg = c.lowered;
  std::ostringstream o;
  o << "digraph \"" << lg.name << "_fused\" {\n  rankdir=TB;\n  node [shape=box, fontname=monospace];\n";
  std::map<int, int> kernel_of;
  for (size_t k = 0; k < c.program.kernels.size(); ++k) {
    const Kernel& kr = c.program.kernels[k];
    o << "  subgraph cluster_k" << k << " {\n    label=\"" << kr.name << "\";\n";
    for (int n : kr.nodes) {
      kernel_of[n] = static_cast<int>(k);
      o << "    s" << n << " [label=\"" << lg.nodes[static_cast<size_t>(n)].name << "\\n"
        << sn_kind_name(lg.nodes[static_cast<size_t>(n)].kind) << "\"];\n";
    }
    o << "  }\n";
  }
  for (const auto& n : lg.nodes)
    for (int d : n.deps) o << "  s" << d << " -> s" << n.id << ";\n";
  return o.str() + "}\n";
}

}  // namespace

int cmd_explain(const std::string& graph_file, const std::string& fusion, const std::string& dot_dir, bool svg) {
  FusionPolicy p;
  if (!parse_policy(fusion, &p)) user_error("unknown fusion policy '" + fusion + "': use default, max-autotune or none");
  std::vector<Graph> graphs = parse_graph_file(graph_file);
  for (const Graph& g : graphs) {
    for (const auto& n : g.nodes)
      if (fusion_kind(n.op) == FusionKind::Host)
        user_error(graph_file + ":" + std::to_string(n.loc.line) + ": " + g.ref(n.id) + " = " + op_name(n.op) +
                   " is a host op: the graph breaks there. explain compiles one graph; split the file at the break, "
                   "or run it with `fusegate run` to see the breaks");
    CompileOptions o;
    o.fusion = p;
    CompiledProgram c = compile(g, o);
    std::cout << "=== graph " << g.name << " (fusion policy " << fusion << ")\n\n";
    std::cout << "--- captured\n" << print_graph(c.captured) << "\n";
    std::cout << "--- after decompose\n" << print_graph(c.decomposed) << "\n";
    std::cout << "--- after lower\n" << print_lowered(c.lowered) << "\n";
    std::cout << "--- after schedule\n" << print_ledger(c.schedule) << "\n";
    std::cout << print_schedule(c.lowered, c.schedule, c.program);
    int gen = 0;
    for (const auto& k : c.program.kernels) gen += k.generated();
    std::cout << "  " << c.program.kernels.size() << " launches: " << gen << " generated, "
              << c.program.kernels.size() - static_cast<size_t>(gen) << " extern/collective\n\n";
    std::cout << "--- kernels\n";
    for (const auto& k : c.program.kernels)
      if (k.generated()) std::cout << "// " << k.name << ": " << k.kind << "\n" << k.source << "\n";
    if (!dot_dir.empty()) {
      std::filesystem::create_directories(dot_dir);
      std::string before = dot_dir + "/" + g.name + ".before.dot", after = dot_dir + "/" + g.name + ".after.dot";
      write_atomic(before, dot_before(c.captured));
      write_atomic(after, dot_after(c));
      std::cout << "wrote " << before << " and " << after << "\n";
      if (svg)
        for (const auto& f : {before, after}) {
          std::string cmd = "dot -Tsvg -o '" + f.substr(0, f.size() - 4) + ".svg' '" + f + "'";
          if (std::system(cmd.c_str()) != 0) user_error("graphviz `dot` failed on " + f + " (apt-get install graphviz)");
        }
    }
  }
  return 0;
}

}  // namespace fg
