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
    n.attrs.clear();
    if (bound.count(n.id)) n.attrs["high"] = static_cast<double>(bound[n.id]);
    else n.attrs["init"] = std::string("zeros");
  }
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
  if (fresh_read) map[kNewInput] = out.add_input("m" + std::to_string(taken), g.node(from).type);
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
  Graph best = g;
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
  }
  return best;
}

}  // namespace fg
