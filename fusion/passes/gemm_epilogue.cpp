#include "fusion/passes/gemm_epilogue.h"

#include <map>

#include "fusion/bisect.h"

namespace fg {

Graph fuse_gemm_epilogues(const Graph& g, std::vector<LedgerEntry>* ledger) {
  const auto users = g.users();
  std::vector<bool> is_output(g.nodes.size(), false);
  for (int o : g.outputs) is_output[static_cast<size_t>(o)] = true;
  std::map<int, int> gelu_of;  // linear -> the gelu folded into it
  for (const Node& n : g.nodes) {
    if (n.op != Op::Gelu || attr_str_or(n.attrs, "approximate", "none") != "tanh") continue;
    const Node& gm = g.node(n.inputs[0]);
    if (gm.op != Op::Linear || attr_str_or(gm.attrs, "epilogue", "") != "" || is_output[static_cast<size_t>(gm.id)] ||
        users[static_cast<size_t>(gm.id)].size() != 1 || gm.type != n.type)
      continue;
    LedgerEntry e;
    e.first = g.ref(gm.id) + "(linear)";
    e.second = g.ref(n.id) + "(gelu)";
    e.add_source(gm.loc);
    e.add_source(n.loc);
    const int64_t limit = bisect_limits().gemm_epilogue;
    if (limit >= 0 && static_cast<int64_t>(gelu_of.size()) >= limit) {
      e.reason = Reject::BisectLimit;
      ledger->push_back(e);
      continue;
    }
    gelu_of[gm.id] = n.id;
    e.fused = true;
    e.reason = Reject::GemmEpilogue;
    ledger->push_back(e);
  }
  if (gelu_of.empty()) return g;

  std::map<int, int> folded;  // gelu -> its linear
  for (const auto& [l, ge] : gelu_of) folded[ge] = l;
  return rebuild(g, [&](const Node& n, const std::vector<int>& in, const std::vector<int>& map, Graph& out) {
    auto f = folded.find(n.id);
    if (f != folded.end()) return map[static_cast<size_t>(f->second)];  // the GELU is the GEMM now
    int id = copy_node(out, n, in);
    if (gelu_of.count(n.id)) {
      Node& m = out.nodes[static_cast<size_t>(id)];
      m.attrs["epilogue"] = std::string("gelu_tanh");
      m.origin = "_addmm_activation";  // as ATen names a GEMM with an activation epilogue
    }
    return id;
  });
}

Graph split_gemm_epilogues(const Graph& g, std::vector<LedgerEntry>* ledger) {
  bool any = false;
  for (const Node& n : g.nodes) any = any || (n.op == Op::Linear && n.attrs.count("epilogue"));
  if (!any) return g;
  return rebuild(g, [&](const Node& n, const std::vector<int>& in, const std::vector<int>&, Graph& out) {
    if (n.op != Op::Linear || !n.attrs.count("epilogue")) return copy_node(out, n, in);
    Attrs plain = n.attrs;
    plain.erase("epilogue");
    // the GEMM keeps the node's name; the GELU, new, is named after it (an
    // unnamed node takes a name by its id, which a node copied later may
    // already hold once ids have moved)
    const int gemm = out.add(Op::Linear, in, plain, &n.type, n.name, n.loc);
    std::string name = "gelu_" + (n.name.empty() ? std::to_string(n.id) : n.name);
    while (g.has_name(name) || out.has_name(name)) name += "_";
    const int gelu = out.add(Op::Gelu, {gemm}, {{"approximate", std::string("tanh")}}, &n.type, name, n.loc);
    if (ledger) {
      LedgerEntry e;
      e.first = "gemm epilogue";
      e.second = g.ref(n.id) + " (linear {epilogue = \"gelu_tanh\"})";
      e.add_source(n.loc);
      e.fused = false;
      e.reason = Reject::GemmEpilogueSplit;
      ledger->push_back(e);
    }
    return gelu;
  });
}

}  // namespace fg
