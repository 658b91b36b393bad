#include "fusion/passes/gemm_epilogue.h"

#include <map>
#include <set>

#include "fusion/bisect.h"
#include "fusion/passes/vector_gemm.h"

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

namespace {

// the GEMM an add reads that can take the add's other operand as its bias:
// a plain 2-D linear or matmul whose one reader is the add
bool bias_takes(const Graph& g, const Node& gemm, const Node& bias, const std::vector<std::vector<int>>& users,
                const std::vector<bool>& is_output) {
  const bool linear = gemm.op == Op::Linear && gemm.inputs.size() == 2 && !gemm.attrs.count("epilogue") &&
                      g.node(gemm.inputs[0]).type.shape.size() == 2;
  const bool mm = gemm.op == Op::Matmul && g.node(gemm.inputs[0]).type.shape.size() == 2 &&
                  g.node(gemm.inputs[1]).type.shape.size() == 2;
  if (!(linear || mm) || is_output[static_cast<size_t>(gemm.id)] || users[static_cast<size_t>(gemm.id)].size() != 1)
    return false;
  // cuBLAS's addmm takes one dtype for all three
  const DType t = gemm.type.dtype;
  if (bias.type.dtype != t || g.node(gemm.inputs[0]).type.dtype != t || g.node(gemm.inputs[1]).type.dtype != t)
    return false;
  const int64_t n = gemm.type.shape.back();
  return bias.type.shape == Shape{n} || bias.type.shape == Shape{1, n};
}

}  // namespace

Graph fold_gemm_bias_adds(const Graph& g, std::vector<LedgerEntry>* ledger) {
  const auto users = g.users();
  std::vector<bool> is_output(g.nodes.size(), false);
  for (int o : g.outputs) is_output[static_cast<size_t>(o)] = true;
  std::map<int, std::pair<int, int>> fold;  // add -> (gemm, bias)
  std::set<int> folded_gemms;
  for (const Node& n : g.nodes) {
    if (n.op != Op::Add || n.inputs[0] == n.inputs[1]) continue;
    for (int k = 0; k < 2; ++k) {
      const Node& gemm = g.node(n.inputs[static_cast<size_t>(k)]);
      const Node& bias = g.node(n.inputs[static_cast<size_t>(1 - k)]);
      if (n.type != gemm.type || !bias_takes(g, gemm, bias, users, is_output)) continue;
      // where every reader is pointwise the add fuses with them instead
      if (only_pointwise_readers(g, n.id, users, is_output)) break;
      fold[n.id] = {gemm.id, bias.id};
      folded_gemms.insert(gemm.id);
      if (ledger) {
        LedgerEntry e;
        e.first = "gemm bias";
        e.second = g.ref(n.id) + " (add) into " + g.ref(gemm.id) + " (" + op_name(gemm.op) + ")";
        e.add_source(gemm.loc);
        e.add_source(n.loc);
        e.fused = true;
        e.reason = Reject::GemmBiasFolded;
        ledger->push_back(e);
      }
      break;
    }
  }
  if (fold.empty()) return g;
  return rebuild(g, [&](const Node& n, const std::vector<int>& in, const std::vector<int>& map, Graph& out) {
    if (folded_gemms.count(n.id)) return -1;  // read by its add alone, which takes its place
    auto f = fold.find(n.id);
    if (f == fold.end()) return copy_node(out, n, in);
    const Node& gemm = g.node(f->second.first);
    const int x = map[static_cast<size_t>(gemm.inputs[0])];
    int w = map[static_cast<size_t>(gemm.inputs[1])];
    if (gemm.op == Op::Matmul) w = out.add(Op::Transpose, {w}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}, nullptr, {}, gemm.loc);
    int b = map[static_cast<size_t>(f->second.second)];
    const int64_t cols = gemm.type.shape.back();
    if (out.node(b).type.shape.size() != 1) b = out.add(Op::Reshape, {b}, {{"shape", Shape{cols}}}, nullptr, {}, n.loc);
    const int id = out.add(Op::Linear, {x, w, b}, {}, &n.type, n.name, gemm.loc);
    out.nodes[static_cast<size_t>(id)].origin = "addmm";
    return id;
  });
}

}  // namespace fg
