#include "fusion/passes/tp_rewrite.h"

#include <map>

#include "fusion/bisect.h"
#include "fusion/errors.h"
#include "fusion/fastpaths/catalog.h"

namespace fg {

std::vector<bool> replicated_nodes(const Graph& g, const std::set<std::string>& replicated_inputs) {
  std::vector<bool> rep(g.nodes.size(), false);
  // an input the graph writes (copy_) may hold either value depending on
  // where it is read, and the value written may be sharded: not replicated
  std::set<int> written;
  for (const Node& n : g.nodes)
    if (n.op == Op::CopyInto) written.insert(n.inputs[0]);
  for (const Node& n : g.nodes) {
    bool all = true;
    for (int i : n.inputs) all = all && rep[static_cast<size_t>(i)];
    switch (fusion_kind(n.op)) {
      case FusionKind::Input:
        rep[static_cast<size_t>(n.id)] =
            n.op == Op::Full || (replicated_inputs.count(n.name) > 0 && !written.count(n.id));
        break;
      case FusionKind::Collective:
        // every rank receives the same bits (NCCL and Gloo both reduce and
        // then distribute one result); a reduce-scatter leaves each rank its
        // own slice
        rep[static_cast<size_t>(n.id)] = n.op == Op::AllReduce || n.op == Op::AllGather;
        break;
      case FusionKind::Pointwise: case FusionKind::Reduction: case FusionKind::View: case FusionKind::Scatter:
        rep[static_cast<size_t>(n.id)] = all;
        break;
      case FusionKind::Extern:
        // library kernels may pick algorithms per device; a fast path says
        // which of its inputs make its result replicated (its TP contract)
        rep[static_cast<size_t>(n.id)] = false;
        if (n.op == Op::FastPath) {
          if (const FastPathSpec* f = find_fast_path(attr_str_or(n.attrs, "name", ""));
              f && f->replicated_always) {
            rep[static_cast<size_t>(n.id)] = true;
          } else if (f && !f->replicated_given.empty()) {
            bool given = true;
            for (int i : f->replicated_given)
              given = given && i < static_cast<int>(n.inputs.size()) && rep[static_cast<size_t>(n.inputs[static_cast<size_t>(i)])];
            rep[static_cast<size_t>(n.id)] = given;
          }
        }
        break;
      default:
        // host ops and mutations are not values of the graph
        rep[static_cast<size_t>(n.id)] = false;
    }
  }
  return rep;
}

namespace {
// A summing all-reduce: the collective, or the allreduce_sum fast path that
// stands in its place (the fast paths pass runs first); the hoist puts the
// residual on the GEMM that feeds either.
bool is_sum_all_reduce(const Node& s) {
  if (s.op == Op::AllReduce) return attr_str_or(s.attrs, "reduce_op", "sum") == "sum";
  return s.op == Op::FastPath && attr_str_or(s.attrs, "name", "") == "allreduce_sum" && s.inputs.size() == 1;
}
}  // namespace

std::string residual_site(const LedgerEntry& e) { return e.first + " + " + e.second; }

Graph hoist_replicated_residuals(const Graph& g, const std::set<std::string>& replicated_inputs,
                                 std::vector<LedgerEntry>* ledger, const std::set<std::string>& apart) {
  const std::vector<bool> rep = replicated_nodes(g, replicated_inputs);
  const auto users = g.users();
  std::vector<int> uses(g.nodes.size(), 0);
  for (size_t i = 0; i < users.size(); ++i) uses[i] = static_cast<int>(users[i].size());
  for (int o : g.outputs) ++uses[static_cast<size_t>(o)];

  // gemm id -> addend id, and the add each rewrite removes -> its all-reduce
  std::map<int, int> addend_of;
  std::map<int, int> replaced_by;
  for (const Node& n : g.nodes) {
    if (n.op != Op::Add) continue;
    for (int side = 0; side < 2; ++side) {
      const Node& s = g.node(n.inputs[static_cast<size_t>(side)]);
      const Node& r = g.node(n.inputs[static_cast<size_t>(1 - side)]);
      if (!is_sum_all_reduce(s)) continue;
      const Node& gm = g.node(s.inputs[0]);
      if (gm.op != Op::Linear || gm.inputs.size() != 2 || !attr_str_or(gm.attrs, "epilogue", "").empty() ||
          uses[static_cast<size_t>(gm.id)] != 1 ||
          uses[static_cast<size_t>(s.id)] != 1 || r.type != n.type || gm.type != n.type || addend_of.count(gm.id))
        continue;
      LedgerEntry e;
      e.first = g.ref(gm.id) + "(linear)";
      e.second = g.ref(n.id) + "(add)";
      e.add_source(gm.loc);
      e.add_source(n.loc);
      if (!rep[static_cast<size_t>(r.id)]) {
        e.reason = Reject::TpAddendNotReplicated;
      } else if (r.id > gm.id) {
        e.reason = Reject::TpAddendAfterGemm;
      } else if (apart.count(residual_site(e))) {
        e.reason = Reject::TpResidualApart;
      } else if (bisect_limits().tp_rewrite >= 0 &&
                 static_cast<int64_t>(addend_of.size()) >= bisect_limits().tp_rewrite) {
        e.reason = Reject::BisectLimit;
      } else {
        e.fused = true;
        e.reason = Reject::TpResidualHoisted;
        addend_of[gm.id] = r.id;
        replaced_by[n.id] = s.id;
      }
      ledger->push_back(e);
      break;
    }
  }
  if (addend_of.empty()) return g;

  return rebuild(g, [&](const Node& n, const std::vector<int>& in, const std::vector<int>& map, Graph& out) {
    auto rb = replaced_by.find(n.id);
    if (rb != replaced_by.end()) return map[static_cast<size_t>(rb->second)];  // the add is the all-reduce now
    auto ad = addend_of.find(n.id);
    if (ad == addend_of.end()) return copy_node(out, n, in);
    std::vector<int> args = in;
    args.push_back(map[static_cast<size_t>(ad->second)]);
    int id = out.add(Op::LinearAddRank0, args, {}, nullptr, n.name, n.loc);
    out.nodes[static_cast<size_t>(id)].origin = n.origin;
    return id;
  });
}

}  // namespace fg
