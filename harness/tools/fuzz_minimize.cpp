// fusegate fuzz: a finding made small, node by node and input by input,
// while it still shows (harness/tools/fuzz.h: minimize).
#include "harness/tools/fuzz.h"
#include "harness/tools/fuzz_parts.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "fusion/errors.h"
#include "fusion/fault.h"
#include "fusion/ir/text.h"
#include "fusion/passes/schedule.h"
#include "harness/run/digest.h"
#include "harness/run/forward.h"
#include "harness/tools/fuzz_gen.h"
#include "harness/record/files.h"
#include "harness/record/json_read.h"
#include "harness/run/nodes.h"
#include "harness/run/run.h"
#include "kernels/collectives/collectives.h"
#include "repros/registry.h"

namespace fg {

namespace {

constexpr int kNewInput = -1, kNoNode = -2;

// The graph without node `from`, its uses redirected to `to` (an earlier
// node, or kNewInput: a new input of from's type); from = kNoNode removes
// nothing. Every other node stays, used or not (the compiler compiles dead
// nodes too, and a finding may live in one); inputs nothing reads go.
// nullopt: the result does not type (an op refuses the new operand).
// Integer inputs hold valid indices for what they index: every gather or
// index_select reading an input gets it filled below the size of the dim it
// indexes, and any other integer input (a value the minimizer cut off) is
// zeros. Shrinking a graph must not make an index point past its tensor:
// ATen refuses that on the cpu and asserts on the device on cuda, which
// leaves the process's CUDA context unusable for every later graph.
void fit_index_ranges(Graph& g) {
  std::map<int, int64_t> bound;  // input id -> the smallest dim it indexes
  for (const Node& n : g.nodes) {
    if (n.op != Op::Gather && n.op != Op::IndexSelect) continue;
    const Node& x = g.node(n.inputs[0]);
    const int64_t d = norm_dim(attr_int(n.attrs, "dim", n.op), x.type.shape.size(), n.op);
    const int idx = n.inputs[1];
    if (g.node(idx).op != Op::Input) continue;
    const int64_t size = x.type.shape[static_cast<size_t>(d)];
    bound[idx] = bound.count(idx) ? std::min(bound[idx], size) : size;
  }
  for (Node& n : g.nodes) {
    if (n.op != Op::Input || is_floating(n.type.dtype) || n.type.dtype == DType::Bool) continue;
    // its fill, not its layout or the repro its values are drawn as
    for (const char* k : {"init", "mean", "std", "low", "high", "start", "step"}) n.attrs.erase(k);
    if (bound.count(n.id)) n.attrs["high"] = static_cast<double>(bound[n.id]);
    else n.attrs["init"] = std::string("zeros");
  }
}

// The `seed` of g's inputs (the repro whose values they draw), for an
// input the minimizer makes: a minified repro's inputs keep their values
// under any name; "" where the inputs have none (a generated graph).
std::string seed_of_inputs(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op == Op::Input && n.attrs.count("seed")) return attr_str_or(n.attrs, "seed", "");
  return "";
}

// A name no node of `g` has, from `base`.
std::string fresh_name(const Graph& g, const std::string& base) {
  std::string s = base;
  while (g.has_name(s)) s += "_";
  return s;
}

// The graph with every node in `cut` that a kept node (or an output) reads
// made a new input of its type, and every node no output needs removed:
// a chunk of the graph cut away at once. nullopt where it does not type.
std::optional<Graph> cut_nodes(const Graph& g, const std::vector<bool>& cut) {
  const size_t n = g.nodes.size();
  std::vector<bool> live(n, false);
  for (int o : g.outputs) live[static_cast<size_t>(o)] = true;
  for (size_t k = n; k-- > 0;)
    if (live[k] && !cut[k] && g.nodes[k].op != Op::Input)
      for (int i : g.nodes[k].inputs) live[static_cast<size_t>(i)] = true;
  Graph out;
  out.name = g.name;
  const std::string seed = seed_of_inputs(g);
  std::vector<int> map(n, -1);
  try {
    for (const Node& x : g.nodes) {  // inputs first, as the text has them
      const size_t k = static_cast<size_t>(x.id);
      if (!live[k] || (x.op != Op::Input && !cut[k])) continue;
      if (x.op == Op::Input) {
        map[k] = out.add(Op::Input, {}, x.attrs, &x.type, x.name);
      } else {
        Attrs a;
        if (!seed.empty()) a["seed"] = seed;
        map[k] = out.add(Op::Input, {}, a, &x.type, fresh_name(g, "m" + std::to_string(x.id)));
      }
    }
    for (const Node& x : g.nodes) {
      const size_t k = static_cast<size_t>(x.id);
      if (!live[k] || x.op == Op::Input || cut[k]) continue;
      std::vector<int> in;
      for (int i : x.inputs) in.push_back(map[static_cast<size_t>(i)]);
      map[k] = x.op == Op::Full ? out.add(x.op, {}, x.attrs, &x.type, x.name) : out.add(x.op, in, x.attrs, nullptr, x.name);
      if (out.nodes.back().type != x.type) return std::nullopt;
    }
    for (int o : g.outputs)
      if (std::find(out.outputs.begin(), out.outputs.end(), map[static_cast<size_t>(o)]) == out.outputs.end())
        out.outputs.push_back(map[static_cast<size_t>(o)]);
    fit_index_ranges(out);
    verify(out, true);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return out;
}

// The output a mismatch's detail names ("out2: ...", "rank 1: out2: ..."):
// its index, or -1.
int failing_output(const std::string& detail) {
  std::smatch m;
  static const std::regex out("(^|: )out([0-9]+):");
  return std::regex_search(detail, m, out) ? std::stoi(m[2].str()) : -1;
}

std::optional<Graph> replace_node(const Graph& g, int from, int to) {
  auto target = [&](int id) { return id == from && from >= 0 ? to : id; };
  std::vector<bool> read(g.nodes.size(), false);
  bool fresh_read = false;
  auto mark = [&](int id) {
    const int t = target(id);
    if (t == kNewInput) fresh_read = true;
    else read[static_cast<size_t>(t)] = true;
  };
  for (const Node& n : g.nodes)
    if (n.op != Op::Input && n.id != from)
      for (int i : n.inputs) mark(i);
  for (int o : g.outputs) mark(o);
  Graph out;
  out.name = g.name;
  std::map<int, int> map;
  int taken = 0;
  for (const Node& n : g.nodes)
    if (n.op == Op::Input) ++taken;
  // inputs first, as the text has them
  if (fresh_read) {
    Attrs a;
    if (const std::string seed = seed_of_inputs(g); !seed.empty()) a["seed"] = seed;
    map[kNewInput] = out.add(Op::Input, {}, a, &g.node(from).type, fresh_name(g, "m" + std::to_string(taken)));
  }
  for (const Node& n : g.nodes)
    if (n.op == Op::Input && read[static_cast<size_t>(n.id)])
      map[n.id] = out.add(Op::Input, {}, n.attrs, &n.type, n.name);
  for (const Node& n : g.nodes) {
    if (n.op == Op::Input || n.id == from) continue;
    std::vector<int> in;
    for (int i : n.inputs) in.push_back(map.at(target(i)));
    try {
      map[n.id] = n.op == Op::Full ? out.add(n.op, {}, n.attrs, &n.type) : out.add(n.op, in, n.attrs);
    } catch (const UserError&) {
      return std::nullopt;
    }
    if (out.nodes.back().type != n.type) return std::nullopt;  // a shape that moved: not the same graph
  }
  for (int o : g.outputs) {
    const int id = map.at(target(o));
    if (std::find(out.outputs.begin(), out.outputs.end(), id) == out.outputs.end()) out.outputs.push_back(id);
  }
  fit_index_ranges(out);
  try {
    verify(out, true);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return out;
}

// The graph with input `input`'s shape `shape` and every later type
// inferred again; nullopt where an op refuses it (an attribute holding a
// size: a reshape's target, a slice's bounds, a full's shape).
std::optional<Graph> with_input_shape(const Graph& g, int input, const Shape& shape) {
  Graph out;
  out.name = g.name;
  std::map<int, int> map;
  try {
    for (const Node& n : g.nodes) {
      if (n.op == Op::Input) {
        TensorType t = n.type;
        if (n.id == input) t.shape = shape;
        map[n.id] = out.add(Op::Input, {}, n.attrs, &t, n.name);
        continue;
      }
      std::vector<int> in;
      for (int i : n.inputs) in.push_back(map.at(i));
      map[n.id] = n.op == Op::Full ? out.add(n.op, {}, n.attrs, &n.type) : out.add(n.op, in, n.attrs);
    }
    for (int o : g.outputs) out.outputs.push_back(map.at(o));
    fit_index_ranges(out);
    verify(out, true);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return out;
}

}  // namespace

int op_nodes(const Graph& g) {
  int n = 0;
  for (const Node& x : g.nodes) n += x.op != Op::Input;
  return n;
}

Graph minimize(const Graph& g, const FuzzFinding& f, const FuzzOptions& o, FuzzRank& fr, int* checks) {
  FuzzOptions one = o;
  one.policies = {f.policy};  // the policy that showed it
  auto shows = [&](const Graph& c) {
    ++*checks;
    auto got = fuzz_check(c, fuzz_name(c), one, fr);
    return got && *got == f;
  };
  // a repro's minify keeps the output that failed, alone: "fails the same
  // way" is that output's mismatch
  const int keep = !o.minify_out.empty() && f.kind == "mismatch" ? failing_output(f.detail) : -1;
  return shrink(g, shows, keep);
}

Graph shrink(const Graph& g, const std::function<bool(const Graph&)>& shows, int keep_output) {
  Graph best = g;
  if (keep_output >= 0 && g.outputs.size() > 1) {
    const int k = keep_output;
    if (k >= 0 && k < static_cast<int>(g.outputs.size())) {
      Graph c = g;
      c.outputs = {g.outputs[static_cast<size_t>(k)]};
      if (auto d = cut_nodes(c, std::vector<bool>(c.nodes.size(), false)); d && shows(*d)) best = *d;
    }
  }
  // chunks of nodes cut away whole, halving (delta debugging): a finding in
  // a few nodes of a large block is reached in a few dozen checks, where
  // one node at a time takes one check a node a round
  {
    auto op_ids = [](const Graph& x) {
      std::vector<int> v;
      for (const Node& n : x.nodes)
        if (n.op != Op::Input) v.push_back(n.id);
      return v;
    };
    for (size_t parts = 2;;) {
      const std::vector<int> ops = op_ids(best);
      if (ops.size() < 2) break;
      parts = std::min(parts, ops.size());
      const size_t chunk = (ops.size() + parts - 1) / parts;
      bool cut_one = false;
      for (size_t s = 0; s < ops.size() && !cut_one; s += chunk) {
        std::vector<bool> cut(best.nodes.size(), false);
        for (size_t k = s; k < std::min(ops.size(), s + chunk); ++k) cut[static_cast<size_t>(ops[k])] = true;
        auto c = cut_nodes(best, cut);
        if (c && op_nodes(*c) < op_nodes(best) && op_nodes(*c) > 0 && shows(*c)) {
          best = *c;
          cut_one = true;
        }
      }
      if (cut_one) parts = std::max<size_t>(2, parts - 1);
      else if (chunk == 1) break;
      else parts *= 2;
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    // one output at a time
    if (best.outputs.size() > 1)
      for (int keep : best.outputs) {
        Graph c = best;
        c.outputs = {keep};
        if (auto d = replace_node(c, kNoNode, kNoNode); d && shows(*d)) {
          best = *d;
          changed = true;
          break;
        }
      }
    // an output moved up to what it is computed from (a view or a cast
    // after the value that goes wrong), what no output needs then removed
    for (size_t i = 0; i < best.outputs.size() && !changed; ++i) {
      const Node& o = best.node(best.outputs[i]);
      if (o.op == Op::Input) continue;
      for (int from : std::set<int>(o.inputs.begin(), o.inputs.end())) {
        if (best.node(from).op == Op::Input) continue;
        Graph c = best;
        c.outputs[i] = from;
        auto d = cut_nodes(c, std::vector<bool>(c.nodes.size(), false));
        if (d && op_nodes(*d) < op_nodes(best) && shows(*d)) {
          best = *d;
          changed = true;
          break;
        }
      }
    }
    // each node, from the last: bypassed through an operand of its type, or
    // cut off as a new input
    for (int id = static_cast<int>(best.nodes.size()) - 1; id >= 0; --id) {
      if (id >= static_cast<int>(best.nodes.size())) continue;
      const Node& n = best.node(id);
      if (n.op == Op::Input) continue;
      std::vector<int> tries;
      for (int i : n.inputs)
        if (best.node(i).type == n.type) tries.push_back(i);
      tries.push_back(kNewInput);
      for (int to : tries) {
        auto c = replace_node(best, id, to);
        if (!c || op_nodes(*c) >= op_nodes(best)) continue;
        if (shows(*c)) {
          best = *c;
          changed = true;
          break;
        }
      }
    }
    // each input's dims, one at a time: 1, else half, while it still shows
    // (a finding that needs a size across a chunk or block width keeps it)
    if (!changed)
      for (const Node& n : std::vector<Node>(best.nodes)) {
        if (n.op != Op::Input) continue;
        for (size_t d = 0; d < n.type.shape.size(); ++d)
          for (bool more = true; more;) {
            more = false;
            const int64_t now = best.node(n.id).type.shape[d];
            for (int64_t to : {int64_t{1}, now / 2}) {
              if (to < 1 || to >= now) continue;
              Shape sh = best.node(n.id).type.shape;
              sh[d] = to;
              auto c = with_input_shape(best, n.id, sh);
              if (c && shows(*c)) {
                best = *c;
                changed = more = true;
                break;
              }
            }
          }
      }
    // then attributes: each one an op may go without dropped, the op taking
    // its default (an eps, a tanh approximation, a keepdim the types allow)
    if (!changed)
      for (const Node& n : std::vector<Node>(best.nodes)) {
        if (n.op == Op::Input) continue;
        for (const AttrSpec& a : op_spec(n.op).attrs) {
          if (a.required || !best.node(n.id).attrs.count(a.name)) continue;
          Graph c = best;
          c.nodes[static_cast<size_t>(n.id)].attrs.erase(a.name);
          try {
            verify(c, true);
          } catch (const std::exception&) {
            continue;  // the types need it
          }
          if (shows(c)) {
            best = c;
            changed = true;
          }
        }
      }
  }
  return best;
}

}  // namespace fg
