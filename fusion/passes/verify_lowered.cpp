#include "fusion/passes/verify_lowered.h"

#include <cstdlib>
#include <map>
#include <sstream>

#include "fusion/errors.h"

namespace fg {

bool verify_passes_enabled() {
#ifndef NDEBUG
  return true;
#else
  const char* v = std::getenv("FUSEGATE_VERIFY");
  return v && *v && std::string(v) != "0";
#endif
}

namespace {

class Checker {
 public:
  Checker(const LoweredGraph& g, const char* pass) : g_(g), pass_(pass) {}

  [[noreturn]] void fail(const std::string& what) const {
    internal_error("verify after " + std::string(pass_) + ": graph '" + g_.name + "': " + what);
  }
  std::string node_name(int id) const {
    if (id < 0 || id >= static_cast<int>(g_.nodes.size())) return "node #" + std::to_string(id);
    const SchedNode& n = g_.nodes[static_cast<size_t>(id)];
    return n.name + (n.loc.known() ? " (" + n.loc.str() + ")" : "");
  }
  std::string buffer_name(int b) const {
    return valid_buffer(b) ? g_.buffers[static_cast<size_t>(b)].name : "buffer #" + std::to_string(b);
  }
  bool valid_buffer(int b) const { return b >= 0 && b < static_cast<int>(g_.buffers.size()); }
  void need_buffer(int b, const std::string& where) const {
    if (!valid_buffer(b)) fail(where + " names buffer #" + std::to_string(b) + ", which does not exist");
  }

 private:
  const LoweredGraph& g_;
  const char* pass_;
};

}  // namespace

void verify_lowered(const LoweredGraph& g, const char* after_pass) {
  Checker c(g, after_pass);
  std::vector<bool> ready(g.buffers.size(), false);
  for (size_t k = 0; k < g.input_buffers.size(); ++k) {
    c.need_buffer(g.input_buffers[k], "graph input " + std::to_string(k));
    ready[static_cast<size_t>(g.input_buffers[k])] = true;
  }
  for (size_t i = 0; i < g.buffers.size(); ++i)
    if (g.buffers[i].id != static_cast<int>(i)) c.fail("buffer " + g.buffers[i].name + ": id does not match its position");
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const SchedNode& n = g.nodes[i];
    const std::string who = "node " + c.node_name(static_cast<int>(i));
    if (n.id != static_cast<int>(i)) c.fail(who + ": id " + std::to_string(n.id) + " does not match its position");
    for (int d : n.deps)
      if (d < 0 || d >= n.id) c.fail(who + " depends on " + c.node_name(d) + ", which does not run before it");
    for (int b : n.reads) {
      c.need_buffer(b, who);
      if (!ready[static_cast<size_t>(b)])
        c.fail(who + " reads " + c.buffer_name(b) + " before any node writes it");
    }
    for (int b : n.writes) c.need_buffer(b, who);
    if (n.out_buffer >= 0) c.need_buffer(n.out_buffer, who);
    if (n.kind == SNKind::Extern || n.kind == SNKind::Collective) {
      if (n.args.empty() && n.op.op != Op::Full) c.fail(who + " is an extern or collective without arguments");
      for (const auto& a : n.args) {
        c.need_buffer(a.first, who + "'s argument");
        if (!ready[static_cast<size_t>(a.first)])
          c.fail(who + " takes " + c.buffer_name(a.first) + " as an argument before any node writes it");
      }
    } else if (!n.body && n.kind != SNKind::Template) {
      c.fail(who + " is generated code without a body");
    }
    for (int b : n.writes) ready[static_cast<size_t>(b)] = true;
    if (n.out_buffer >= 0) ready[static_cast<size_t>(n.out_buffer)] = true;
  }
  for (const auto& [b, l] : g.outputs) {
    c.need_buffer(b, "graph output");
    if (!ready[static_cast<size_t>(b)]) c.fail("graph output " + c.buffer_name(b) + " is never written");
  }
}

void verify_schedule(const LoweredGraph& g, const Schedule& s, const char* after_pass) {
  Checker c(g, after_pass);
  const int n_nodes = static_cast<int>(g.nodes.size());
  std::vector<int> group_of(g.nodes.size(), -1);
  for (size_t gi = 0; gi < s.groups.size(); ++gi)
    for (int n : s.groups[gi].nodes) {
      if (n < 0 || n >= n_nodes) c.fail("group " + std::to_string(gi) + " holds node #" + std::to_string(n) + ", which does not exist");
      if (group_of[static_cast<size_t>(n)] >= 0)
        c.fail("node " + c.node_name(n) + " is in groups " + std::to_string(group_of[static_cast<size_t>(n)]) + " and " +
               std::to_string(gi));
      group_of[static_cast<size_t>(n)] = static_cast<int>(gi);
    }
  for (int n = 0; n < n_nodes; ++n)
    if (group_of[static_cast<size_t>(n)] < 0) c.fail("node " + c.node_name(n) + " is in no group: it would never run");

  // run the groups in order: every kernel's inputs must be there
  std::vector<bool> ready(g.buffers.size(), false);
  std::vector<bool> ran(g.nodes.size(), false);
  for (int b : g.input_buffers) ready[static_cast<size_t>(b)] = true;
  for (size_t gi = 0; gi < s.groups.size(); ++gi) {
    const FusedGroup& grp = s.groups[gi];
    if (!grp.generated) {
      for (int n : grp.nodes) {
        SNKind k = g.nodes[static_cast<size_t>(n)].kind;
        if (k != SNKind::Extern && k != SNKind::Collective)
          c.fail("group " + std::to_string(gi) + " is an extern or collective launch but holds generated node " +
                 c.node_name(n));
      }
      // several library calls in one launch run as one batched GEMM: linear
      // layers over one input view, nothing else
      if (grp.nodes.size() > 1) {
        const SchedNode& a = g.nodes[static_cast<size_t>(grp.nodes[0])];
        for (int n : grp.nodes) {
          const SchedNode& b = g.nodes[static_cast<size_t>(n)];
          if (b.kind != SNKind::Extern || b.op.op != Op::Linear || b.args.empty() || a.args.empty() ||
              b.args[0] != a.args[0])
            c.fail("group " + std::to_string(gi) + " launches " + std::to_string(grp.nodes.size()) +
                   " library calls as one batched GEMM, but " + c.node_name(n) +
                   " is not a linear layer over the same input as " + c.node_name(grp.nodes[0]));
        }
      }
    } else {
      for (int n : grp.nodes)
        if (!g.nodes[static_cast<size_t>(n)].fusable())
          c.fail("generated kernel " + std::to_string(gi) + " holds " + c.node_name(n) +
                 ", which is a library call or a collective");
    }
    for (int n : grp.nodes) {
      const SchedNode& sn = g.nodes[static_cast<size_t>(n)];
      for (int d : sn.deps)
        if (!ran[static_cast<size_t>(d)])
          c.fail("kernel " + std::to_string(gi) + " runs " + c.node_name(n) + " before " + c.node_name(d) +
                 ", which it depends on");
      for (int b : sn.reads)
        if (!ready[static_cast<size_t>(b)])
          c.fail("kernel " + std::to_string(gi) + " runs " + c.node_name(n) + ", which reads " + c.buffer_name(b) +
                 " before it is written");
      for (int b : sn.writes) ready[static_cast<size_t>(b)] = true;
      if (sn.out_buffer >= 0) ready[static_cast<size_t>(sn.out_buffer)] = true;
      ran[static_cast<size_t>(n)] = true;
    }
  }

  // the ledger's fused pairs ended in one group (groups merge, never split)
  std::map<std::string, int> by_name;
  for (int n = 0; n < n_nodes; ++n)
    if (!by_name.emplace(g.nodes[static_cast<size_t>(n)].name, group_of[static_cast<size_t>(n)]).second)
      c.fail("two scheduler nodes are named " + g.nodes[static_cast<size_t>(n)].name + ": the ledger would be ambiguous");
  auto group_named = [&](const std::string& side, int* out) {
    std::stringstream ss(side);
    std::string part;
    int grp = -2;
    while (std::getline(ss, part, '+')) {
      auto it = by_name.find(part);
      if (it == by_name.end()) c.fail("the ledger names " + part + ", which is no scheduler node");
      if (grp != -2 && grp != it->second) {
        *out = -1;
        return true;
      }
      grp = it->second;
    }
    *out = grp;
    return grp != -2;
  };
  for (const LedgerEntry& e : s.ledger) {
    if (!e.fused) continue;
    int a = 0, b = 0;
    if (!group_named(e.first, &a) || !group_named(e.second, &b)) c.fail("a fused ledger entry names no node");
    if (a < 0 || b < 0 || a != b)
      c.fail("the ledger says " + e.first + " and " + e.second + " fused (" + reject_code(e.reason) +
             "), but they run in different kernels");
  }
}

}  // namespace fg
