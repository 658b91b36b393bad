#include "fusion/ir/graph.h"

#include <algorithm>

#include <xxhash.h>

#include <cctype>
#include <cstdio>
#include <set>
#include <unordered_set>

#include "fusion/errors.h"
#include "fusion/ir/text.h"

namespace fg {

int Graph::add(Op op, std::vector<int> in, Attrs attrs, const TensorType* type, std::string nm, SourceLoc loc) {
  Node n;
  n.id = static_cast<int>(nodes.size());
  n.op = op;
  n.inputs = std::move(in);
  n.attrs = std::move(attrs);
  n.name = std::move(nm);
  n.loc = std::move(loc);
  if (op == Op::Input || op == Op::Full) {
    FG_CHECK(type != nullptr, "input/full need a declared type");
    FG_CHECK(n.inputs.empty(), std::string(op_name(op)) + " takes no inputs");
    n.type = *type;
  } else {
    std::vector<TensorType> ts;
    for (int i : n.inputs) {
      FG_CHECK(i >= 0 && i < n.id, std::string(op_name(op)) + ": input " + std::to_string(i) + " is not defined yet");
      ts.push_back(node(i).type);
    }
    n.type = infer_type(op, ts, n.attrs);
  }
  // Names print as the node: unique, and never the bare id of another node.
  // A pass that rebuilds a graph keeps its nodes' names, numeric labels of
  // a .fg with gaps among them (a minimized fuzz finding), and adds unnamed
  // nodes, which print as their ids: where the two would meet, the newcomer
  // takes "_<id>" (or more underscores) instead.
  auto taken = [&](const std::string& p) {
    bool number = !p.empty() && p.size() < 10;
    for (char c : p) number = number && std::isdigit(static_cast<unsigned char>(c)) != 0;
    if (number) {  // an unnamed node prints as its id
      const size_t k = std::stoul(p);
      if (k < nodes.size() && nodes[k].name.empty()) return true;
    }
    return has_name(p);
  };
  const bool numeric = !n.name.empty() && std::all_of(n.name.begin(), n.name.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
  if (n.name.empty() || numeric) {
    const std::string printed = n.name.empty() ? std::to_string(n.id) : n.name;
    if (taken(printed)) {
      std::string alt = "_" + printed;
      while (taken(alt)) alt = "_" + alt;
      n.name = alt;
    }
  }
  nodes.push_back(std::move(n));
  return nodes.back().id;
}

bool Graph::has_name(const std::string& name) const {
  // nodes may have been dropped or replaced since (a copy cut short): start
  // over when what the index holds no longer matches
  auto stale = [&] {
    if (named_upto_ > nodes.size()) return true;
    auto it = name_ids_.find(name);
    return it != name_ids_.end() &&
           (static_cast<size_t>(it->second) >= nodes.size() || nodes[static_cast<size_t>(it->second)].name != name);
  };
  if (stale()) {
    name_ids_.clear();
    named_upto_ = 0;
  }
  for (; named_upto_ < nodes.size(); ++named_upto_)
    if (!nodes[named_upto_].name.empty()) name_ids_.emplace(nodes[named_upto_].name, static_cast<int>(named_upto_));
  return name_ids_.count(name) > 0;
}

int Graph::add_input(const std::string& nm, const TensorType& type, SourceLoc loc) {
  return add(Op::Input, {}, {}, &type, nm, std::move(loc));
}

Graph rebuild(const Graph& g, const EmitFn& emit) {
  Graph out;
  out.name = g.name;
  std::vector<int> map(g.nodes.size(), -1);
  for (const Node& n : g.nodes) {
    std::vector<int> in;
    for (int i : n.inputs) in.push_back(map[static_cast<size_t>(i)]);
    map[static_cast<size_t>(n.id)] = emit(n, in, map, out);
  }
  for (int o : g.outputs) out.outputs.push_back(map[static_cast<size_t>(o)]);
  out.output_attrs = g.output_attrs;
  return out;
}

int copy_node(Graph& out, const Node& n, const std::vector<int>& in) {
  int id = out.add(n.op, n.op == Op::Input ? std::vector<int>{} : in, n.attrs, &n.type, n.name, n.loc);
  out.nodes[static_cast<size_t>(id)].origin = n.origin;
  return id;
}

std::vector<int> Graph::input_ids() const {
  std::vector<int> r;
  for (const auto& n : nodes)
    if (n.op == Op::Input) r.push_back(n.id);
  return r;
}

std::vector<std::vector<int>> Graph::users() const {
  std::vector<std::vector<int>> u(nodes.size());
  for (const auto& n : nodes)
    for (int i : n.inputs) u[static_cast<size_t>(i)].push_back(n.id);
  return u;
}

std::string Graph::ref(int id) const {
  const Node& n = node(id);
  return "%" + (n.name.empty() ? std::to_string(id) : n.name);
}

void verify(const Graph& g, bool as_user) {
  auto fail = [&](const Node* n, const std::string& what) {
    std::string m = "graph '" + g.name + "'";
    if (n) m += ", node " + g.ref(n->id) + " (" + op_name(n->op) + ")" + (n->loc.known() ? " at " + n->loc.str() : "");
    m += ": " + what;
    if (as_user) user_error(m);
    internal_error(m);
  };
  std::unordered_set<std::string> names;
  names.reserve(g.nodes.size());
  std::vector<TensorType> ts;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.id != static_cast<int>(i)) fail(&n, "id does not match its position");
    // a name must print and read back as this node: an identifier, unique,
    // and not the bare id of another node
    std::string printed = n.name.empty() ? std::to_string(n.id) : n.name;
    if (!n.name.empty()) {
      bool ident = std::isalpha(static_cast<unsigned char>(n.name[0])) || n.name[0] == '_';
      for (char c : n.name) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.');
      bool number = true;
      for (char c : n.name) number = number && std::isdigit(static_cast<unsigned char>(c));
      if (!ident && !number) fail(&n, "name '" + n.name + "' is neither an identifier nor a number");
    }
    if (!names.insert(printed).second) fail(&n, "name %" + printed + " is used twice");
    for (int in : n.inputs)
      if (in < 0 || in >= n.id) fail(&n, "input " + std::to_string(in) + " is not defined before its use");
    if (n.op == Op::Input || n.op == Op::Full) {
      if (!n.inputs.empty()) fail(&n, "takes no inputs");
      AttrProblem bad;
      if (!check_attrs(n.op, n.attrs, &bad)) fail(&n, bad.message);
      continue;
    }
    ts.clear();
    for (int in : n.inputs) ts.push_back(g.node(in).type);
    TensorType t;
    try {
      t = infer_type(n.op, ts, n.attrs);
    } catch (const UserError& e) {
      fail(&n, e.what());
    }
    if (t != n.type && n.op != Op::Nonzero) fail(&n, "declared type " + n.type.str() + " but the op gives " + t.str());
    // every dim at least 1 (nonzero's -1: known at run time), and an element
    // count the compiler's 64-bit index arithmetic holds
    int64_t numel = 1;
    for (int64_t d : n.type.shape) {
      if (d == -1 && n.op == Op::Nonzero) continue;
      if (d < 1) fail(&n, "type " + n.type.str() + " has a dim below 1");
      if (__builtin_mul_overflow(numel, d, &numel) || numel > (int64_t{1} << 48))
        fail(&n, "type " + n.type.str() + " has more than 2^48 elements");
    }
  }
  for (int o : g.outputs)
    if (o < 0 || o >= static_cast<int>(g.nodes.size())) fail(nullptr, "output " + std::to_string(o) + " does not exist");
  if (!g.output_attrs.empty() && g.output_attrs.size() != g.outputs.size())
    fail(nullptr, "output attributes for " + std::to_string(g.output_attrs.size()) + " of " +
                      std::to_string(g.outputs.size()) + " outputs");
}

std::string graph_hash(const Graph& g) {
  std::string text = print_graph(g);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(XXH64(text.data(), text.size(), 0)));
  return buf;
}

}  // namespace fg
