#include "fusion/passes/gemm_epilogue.h"

#include <map>

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
    gelu_of[gm.id] = n.id;
    LedgerEntry e;
    e.first = g.ref(gm.id) + "(linear)";
    e.second = g.ref(n.id) + "(gelu)";
    e.fused = true;
    e.reason = Reject::GemmEpilogue;
    ledger->push_back(e);
  }
  if (gelu_of.empty()) return g;

  Graph out;
  out.name = g.name;
  std::vector<int> map(g.nodes.size(), -1);
  std::map<int, int> folded;  // gelu -> its linear
  for (const auto& [l, ge] : gelu_of) folded[ge] = l;
  for (const Node& n : g.nodes) {
    auto f = folded.find(n.id);
    if (f != folded.end()) {
      map[static_cast<size_t>(n.id)] = map[static_cast<size_t>(f->second)];
      continue;
    }
    std::vector<int> in;
    for (int i : n.inputs) in.push_back(map[static_cast<size_t>(i)]);
    Attrs attrs = n.attrs;
    if (gelu_of.count(n.id)) attrs["epilogue"] = std::string("gelu_tanh");
    int id = n.op == Op::Input ? out.add_input(n.name, n.type, n.loc) : out.add(n.op, in, attrs, &n.type, n.name, n.loc);
    // named as ATen names a GEMM with an activation epilogue
    out.nodes[static_cast<size_t>(id)].origin = gelu_of.count(n.id) ? "_addmm_activation" : n.origin;
    map[static_cast<size_t>(n.id)] = id;
  }
  for (int o : g.outputs) out.outputs.push_back(map[static_cast<size_t>(o)]);
  return out;
}

}  // namespace fg
