#include "fusion/passes/dead_code.h"

#include <algorithm>

namespace fg {

namespace {

bool removable(const Node& n) {
  switch (fusion_kind(n.op)) {
    case FusionKind::Pointwise: case FusionKind::Reduction: case FusionKind::View: case FusionKind::Scatter:
      return true;
    case FusionKind::Extern: return n.op != Op::FastPath;
    case FusionKind::Input: return n.op == Op::Full;
    default: return false;
  }
}

// live, and read by a live node
std::vector<bool> mark_live(const Graph& g, std::vector<bool>* read) {
  std::vector<bool> live(g.nodes.size(), false);
  for (int o : g.outputs) live[static_cast<size_t>(o)] = true;
  read->assign(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if (!removable(n)) live[i] = true;
    if (!live[i]) continue;
    for (int in : n.inputs) {
      live[static_cast<size_t>(in)] = true;
      (*read)[static_cast<size_t>(in)] = true;
    }
  }
  return live;
}

}  // namespace

std::vector<bool> live_nodes(const Graph& g) {
  std::vector<bool> read;
  return mark_live(g, &read);
}

Graph eliminate_dead_code(const Graph& g, std::vector<LedgerEntry>* ledger) {
  std::vector<bool> read;
  const std::vector<bool> live = mark_live(g, &read);
  bool any = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const bool unused = !read[i] && std::find(g.outputs.begin(), g.outputs.end(), n.id) == g.outputs.end();
    const bool kept_collective = fusion_kind(n.op) == FusionKind::Collective && unused;
    if (live[i] && !kept_collective) continue;
    any = any || !live[i];
    if (!ledger) continue;
    LedgerEntry e;
    e.first = "dead code";
    e.second = g.ref(n.id) + " (" + op_name(n.op) + ")";
    e.add_source(n.loc);
    e.fused = !live[i];
    e.reason = live[i] ? Reject::CollectiveKept : Reject::DeadCodeRemoved;
    ledger->push_back(e);
  }
  // a cast to its input's own dtype is its input, as x.to(x.dtype) is x
  // (returned, too: torch.compile returns the input itself)
  std::vector<bool> noop(g.nodes.size(), false);
  for (const Node& n : g.nodes) {
    if (n.op != Op::Cast || !live[static_cast<size_t>(n.id)] || n.type.dtype != g.node(n.inputs[0]).type.dtype)
      continue;
    noop[static_cast<size_t>(n.id)] = any = true;
    if (!ledger) continue;
    LedgerEntry e;
    e.first = "no-op cast";
    e.second = g.ref(n.id) + " (cast to " + dtype_name(n.type.dtype) + ")";
    e.add_source(n.loc);
    e.fused = true;
    e.reason = Reject::NoOpCastRemoved;
    ledger->push_back(e);
  }
  if (!any) return g;
  return rebuild(g, [&](const Node& n, const std::vector<int>& in, const std::vector<int>&, Graph& out) {
    if (!live[static_cast<size_t>(n.id)]) return -1;
    if (noop[static_cast<size_t>(n.id)]) return in[0];
    return copy_node(out, n, in);
  });
}

}  // namespace fg
