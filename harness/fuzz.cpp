// fusegate fuzz (harness/fuzz.h): the differential loop, the minimizer and
// the finding files.
#include "harness/fuzz.h"

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
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "fusion/errors.h"
#include "fusion/fault.h"
#include "fusion/ir/text.h"
#include "fusion/passes/schedule.h"
#include "harness/digest.h"
#include "harness/forward.h"
#include "harness/fuzz_gen.h"
#include "harness/golden.h"
#include "harness/json_read.h"
#include "harness/nodes.h"
#include "harness/run.h"
#include "kernels/collectives/collectives.h"
#include "repros/registry.h"

namespace fg {

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

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

int op_nodes(const Graph& g) {
  int n = 0;
  for (const Node& x : g.nodes) n += x.op != Op::Input;
  return n;
}

std::string json_escape_free(const std::string& s) {
  std::string r;
  for (char c : s) r += c == '\n' ? ' ' : c;
  return r;
}

}  // namespace

std::string fuzz_name(const Graph& g) {
  const std::string text = print_graph(g);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(XXH64(text.data(), text.size(), 0)));
  return "f" + std::string(buf).substr(0, 12);
}

namespace {

// This rank's part of fuzz_check: nullopt where eager refused the graph;
// `digests` gets every output's exact digest (eager, then each policy's),
// which the ranks of a job compare.
// The most terms any one value of `g` sums: a reduction's reduced
// elements, a GEMM's K, attention's keys and head dim, an all-reduce's
// ranks (1: nothing sums). The rounding error of a sum scales with its
// terms' magnitude, not its result's, which cancellation can make small.
int64_t longest_sum(const Graph& g, int world) {
  int64_t most = 1;
  for (const Node& n : g.nodes) {
    if (n.inputs.empty()) continue;
    const Shape& in = g.node(n.inputs[0]).type.shape;
    int64_t terms = 1;
    switch (n.op) {
      case Op::Sum: case Op::Mean: case Op::Var:
        terms = numel(in) / std::max<int64_t>(1, numel(n.type.shape));
        break;
      case Op::Softmax: case Op::LogSoftmax: case Op::RmsNorm: case Op::LayerNorm: case Op::Linear:
      case Op::Matmul:
        terms = in.empty() ? 1 : in.back();
        break;
      case Op::Cumsum:
        terms = in.empty() ? 1 : in[static_cast<size_t>(norm_dim(attr_int(n.attrs, "dim", n.op), in.size(), n.op))];
        break;
      case Op::Sdpa:
        if (n.inputs.size() > 1 && in.size() >= 2)
          terms = std::max(in.back(), g.node(n.inputs[1]).type.shape.end()[-2]);
        break;
      case Op::AllReduce: case Op::ReduceScatter:
        terms = world;
        break;
      default:
        break;
    }
    most = std::max(most, terms);
  }
  return most;
}

std::optional<FuzzFinding> local_check(const Graph& g, const std::string& name, const FuzzOptions& o, FuzzRank& fr,
                                       std::string* eager_error, std::vector<std::string>* digests) {
  Repro r = graph_repro(g, name, "fuzz graph", name + ".fg");
  std::map<std::string, at::Tensor> inputs;
  std::set<std::string> replicated;  // a graph's inputs are the same on every rank
  ForwardResult eager, fp64;
  try {
    AtenExecutor ex(fr.coll, fr.rank, fr.world, FusionPolicy::Default, false, o.backend);
    for (const auto& s : r.inputs(fr.world)) {
      inputs[s.name] = make_input(r.name, s, fr.rank, fr.world).to(ex.device());
      replicated.insert(s.name);
    }
    eager = forward(r, Mode::Eager, ex, inputs, false);
    AtenExecutor ref(fr.coll, fr.rank, fr.world, FusionPolicy::Default, true, o.backend);
    fp64 = forward(r, Mode::Eager, ref, inputs, true);
  } catch (const std::exception& e) {
    if (eager_error) *eager_error = first_line(e.what());
    return std::nullopt;
  }
  // the outputs every rank must agree on bit for bit: all but those a
  // reduce_scatter's slice reaches (and no all_gather or all_reduce
  // makes whole again); the inputs are the same on every rank
  std::vector<bool> varies(g.nodes.size(), false);
  for (const Node& n : g.nodes) {
    if (n.op == Op::ReduceScatter) varies[static_cast<size_t>(n.id)] = true;
    else if (n.op != Op::AllGather && n.op != Op::AllReduce)
      for (int i : n.inputs) varies[static_cast<size_t>(n.id)] = varies[static_cast<size_t>(n.id)] || varies[static_cast<size_t>(i)];
  }
  auto same_everywhere = [&](size_t out) {
    return out < g.outputs.size() && !varies[static_cast<size_t>(g.outputs[out])];
  };
  for (size_t i = 0; i < eager.outputs.size(); ++i)
    if (same_everywhere(i)) digests->push_back("out" + std::to_string(i) + " eager " + exact_digest(eager.outputs[i]));
  // the least precise floating type among each value and those it is
  // computed from (bf16 < f16 < f32 < f64)
  auto rank_of = [](DType t) { return t == DType::BF16 ? 0 : t == DType::F16 ? 1 : t == DType::F32 ? 2 : 3; };
  std::vector<DType> least_precise(g.nodes.size(), DType::F64);
  for (const Node& n : g.nodes) {
    DType& l = least_precise[static_cast<size_t>(n.id)];
    if (is_floating(n.type.dtype)) l = n.type.dtype;
    for (int in : n.inputs)
      if (rank_of(least_precise[static_cast<size_t>(in)]) < rank_of(l)) l = least_precise[static_cast<size_t>(in)];
  }
  double input_rms = 0;  // the largest of the floating inputs'
  for (const auto& [k, t] : inputs)
    if (t.is_floating_point() && t.numel() > 0)
      input_rms = std::max(input_rms, std::sqrt(t.to(at::kDouble).pow(2).mean().item<double>()));
  for (FusionPolicy p : o.policies) {
    FuzzFinding f;
    f.policy = p;
    ForwardResult c;
    try {
      AtenExecutor ex(fr.coll, fr.rank, fr.world, p, false, o.backend);
      ex.set_replicated_inputs(replicated);
      ex.set_fast_paths(parse_fast_paths(o.fast_paths), fr.proofs);
      c = forward(r, Mode::Compiled, ex, inputs, false);
    } catch (const RanksDisagree& e) {
      f.kind = "rank disagreement";
      f.detail = first_line(e.what());
      return f;
    } catch (const InternalError& e) {
      f.kind = "crash";
      f.detail = first_line(e.what());
      return f;
    } catch (const UserError& e) {
      f.kind = "compile error";
      f.detail = first_line(e.what());
      return f;
    } catch (const std::exception& e) {
      f.kind = "crash";
      f.detail = first_line(e.what());
      return f;
    }
    if (c.graph_count != 1 || !c.breaks.empty()) {
      f.kind = "graph break";
      f.detail = std::to_string(c.graph_count) + " graphs, " + std::to_string(c.breaks.size()) + " breaks";
      return f;
    }
    for (size_t i = 0; i < c.outputs.size(); ++i)
      if (same_everywhere(i))
        digests->push_back("out" + std::to_string(i) + " under --fusion " + policy_name(p) + " " +
                         exact_digest(c.outputs[i]));
    if (c.outputs.size() != eager.outputs.size()) {
      f.kind = "mismatch";
      f.detail = std::to_string(c.outputs.size()) + " outputs, eager has " + std::to_string(eager.outputs.size());
      return f;
    }
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      const std::string out = "out" + std::to_string(i);
      if (c.outputs[i].sizes() != eager.outputs[i].sizes() || c.outputs[i].scalar_type() != eager.outputs[i].scalar_type()) {
        f.kind = "mismatch";
        f.detail = out + ": shape or dtype differs from eager";
        return f;
      }
      // NaN or inf where eager has a finite value (or the other way round)
      if (!at::equal(at::isfinite(c.outputs[i]), at::isfinite(eager.outputs[i]))) {
        f.kind = "mismatch";
        f.detail = out + ": non-finite values where eager has none, or the other way round";
        return f;
      }
      at::Tensor finite = at::isfinite(eager.outputs[i]);
      if (!finite.any().item<bool>()) continue;  // nothing finite (or nothing at all) to compare
      auto keep = [&](const at::Tensor& t) { return t.masked_select(finite); };
      nlohmann::json a = judge_accuracy(out, keep(c.outputs[i]), keep(eager.outputs[i]), keep(fp64.outputs[i]));
      // the gate's rule has an absolute slack; a random graph's outputs span
      // many scales, so here the slack scales with the output (rtol of its
      // RMS): 2x or 3x eager's error stays the bar. A sum's rounding
      // scales with its terms, not its result: where terms cancel (9225
      // values of RMS 1 summing to -0.5, found on cuda: compiled 1.7e-5
      // from fp64, eager 4e-6, both a few ulp of the partial sums) the
      // scale is the inputs' RMS times the square root of the longest sum
      const at::Tensor ref = keep(fp64.outputs[i]).to(at::kDouble);
      const double rms = std::max(std::sqrt(ref.pow(2).mean().item<double>()),
                                  input_rms * std::sqrt(static_cast<double>(longest_sum(g, fr.world))));
      // the precision of the output is that of the least precise value it
      // is computed from: an f32 output of bf16 values carries bf16
      // rounding, which compiled code and eager take at different places
      // (a kernel keeps inlined bf16 values unrounded, as Inductor does):
      // found as f32 outputs of bf16 chains 2x to 40x eager's error on 15
      // elements or one, where eager's own rounding happened to cancel
      const DType least = least_precise[static_cast<size_t>(g.outputs[i])];
      const bool low = least == DType::BF16 || least == DType::F16;
      const double rtol = least == DType::BF16 ? 1.6e-2 : least == DType::F16 ? 1e-3 : 1.3e-6;
      const bool scaled_ok = a["rmse_vs_fp64"].get<double>() <=
                             (low ? 3.0 : 2.0) * a["eager_rmse_vs_fp64"].get<double>() + rtol * rms;
      if (!a["pass"].get<bool>() && !scaled_ok) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "%s: rmse vs fp64 %.3g against eager's %.3g, max |compiled - eager| %.3g",
                      out.c_str(), a["rmse_vs_fp64"].get<double>(), a["eager_rmse_vs_fp64"].get<double>(),
                      a["max_abs_vs_eager"].get<double>());
        f.kind = "mismatch";
        f.detail = buf;
        return f;
      }
    }
  }
  return FuzzFinding{};
}


// Every rank's verdict, exchanged: each rank goes on with the same one.
std::vector<nlohmann::json> exchange_verdicts(FuzzRank& fr, const nlohmann::json& mine) {
  if (!fr.coll || fr.world < 2) return {mine};
  std::vector<nlohmann::json> all;
  for (const auto& t : fr.coll->exchange("fuzz/" + std::to_string(fr.exchanged++), mine.dump()))
    all.push_back(nlohmann::json::parse(t));
  return all;
}

}  // namespace

std::optional<FuzzFinding> fuzz_check(const Graph& g, const std::string& name, const FuzzOptions& o, FuzzRank& fr,
                                      std::string* eager_error) {
  std::string why;
  std::vector<std::string> digests;
  std::optional<FuzzFinding> f;
  try {
    f = local_check(g, name, o, fr, &why, &digests);
  } catch (const std::exception& e) {  // past the policies' own catches: this rank's harness
    f = FuzzFinding{"crash", FusionPolicy::Default, first_line(e.what())};
  }
  nlohmann::json mine = {{"refused", !f.has_value()}, {"why", why}, {"digests", digests}};
  if (f) mine.update({{"kind", f->kind}, {"policy", static_cast<int>(f->policy)}, {"detail", f->detail}});
  const std::vector<nlohmann::json> all = exchange_verdicts(fr, mine);
  if (all.size() == 1) {
    if (!f && eager_error) *eager_error = why;
    return f;
  }
  auto who = [](size_t r) { return "rank " + std::to_string(r) + ": "; };
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r]["refused"].get<bool>()) {
      if (eager_error) *eager_error = who(r) + all[r]["why"].get<std::string>();
      return std::nullopt;
    }
  for (size_t r = 0; r < all.size(); ++r)
    if (!all[r]["kind"].get<std::string>().empty())
      return FuzzFinding{all[r]["kind"].get<std::string>(), static_cast<FusionPolicy>(all[r]["policy"].get<int>()),
                         who(r) + all[r]["detail"].get<std::string>()};
  // every rank ran the same graph on the same inputs: the same bits
  const auto ref = all[0]["digests"].get<std::vector<std::string>>();
  for (size_t r = 1; r < all.size(); ++r) {
    const auto other = all[r]["digests"].get<std::vector<std::string>>();
    for (size_t i = 0; i < std::max(ref.size(), other.size()); ++i) {
      const std::string a = i < ref.size() ? ref[i] : "(nothing)", b = i < other.size() ? other[i] : "(nothing)";
      if (a == b) continue;
      FuzzFinding d{"rank disagreement", FusionPolicy::Default,
                    "rank " + std::to_string(r) + " differs from rank 0: rank 0 has " + a + ", rank " +
                        std::to_string(r) + " has " + b};
      for (FusionPolicy p : o.policies)
        if (a.find(std::string(" --fusion ") + policy_name(p) + " ") != std::string::npos) d.policy = p;
      return d;
    }
  }
  return FuzzFinding{};
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

namespace {

// What a job (or the whole run) saw.
struct Tally {
  int64_t graphs = 0, refused = 0;
  std::map<int, int64_t> by_world;             // graphs run at each world size
  std::set<std::string> covered;               // op names of the graphs run
  std::map<std::string, uint64_t> refusals;    // what eager refused: the first seed of each
  std::vector<nlohmann::json> findings;
};

nlohmann::json tally_json(const Tally& t) {
  nlohmann::json by_world = nlohmann::json::object();
  for (const auto& [w, n] : t.by_world) by_world[std::to_string(w)] = n;
  nlohmann::json refusals = nlohmann::json::array();
  for (const auto& [why, seed] : t.refusals) refusals.push_back({{"why", why}, {"seed", seed}});
  return {{"graphs", t.graphs},       {"refused_by_eager", t.refused},
          {"graphs_by_world", by_world}, {"ops_covered", std::vector<std::string>(t.covered.begin(), t.covered.end())},
          {"refusals", refusals},     {"findings", t.findings}};
}

void add_tally(Tally& into, const nlohmann::json& j) {
  into.graphs += j.at("graphs").get<int64_t>();
  into.refused += j.at("refused_by_eager").get<int64_t>();
  for (const auto& [w, n] : j.at("graphs_by_world").items()) into.by_world[std::stoi(w)] += n.get<int64_t>();
  for (const auto& op : j.at("ops_covered")) into.covered.insert(op.get<std::string>());
  for (const auto& r : j.at("refusals"))
    if (into.refusals.size() < 5) into.refusals.emplace(r.at("why").get<std::string>(), r.at("seed").get<uint64_t>());
  for (const auto& f : j.at("findings")) into.findings.push_back(f);
}

std::string policies_text(const FuzzOptions& o) {
  std::string s;
  for (FusionPolicy p : o.policies) s += (s.empty() ? "" : ",") + std::string(policy_name(p));
  return s;
}

std::set<std::string> op_universe(const FuzzOptions& o) {
  std::set<std::string> u;
  for (int w : o.worlds) {
    auto part = fuzz_op_universe(w);
    u.insert(part.begin(), part.end());
  }
  return u;
}

std::string progress_line(const Tally& t, double secs, size_t universe) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "fuzz: %lld graphs in %.0f s (%.2f/s), ops %zu/%zu, %zu findings",
                static_cast<long long>(t.graphs), secs, secs > 0 ? t.graphs / secs : 0.0, t.covered.size(), universe,
                t.findings.size());
  return buf;
}

// Job `job` of `jobs`: graphs first, first + jobs, ... (first is job, or
// where a restarted job goes on; seed o.seed + index) at
// world size fr.world, until the time, the graph count or the findings run
// out (at world size > 1 the ranks agree each time to go on). `note` is
// called before each graph with where the job is, `after` after each.
FuzzGenOptions gen_options(const FuzzOptions& o, int world) {
  FuzzGenOptions gen;
  gen.max_ops = o.max_ops;
  gen.half = o.backend != Backend::Cpu;
  gen.world = world;
  return gen;
}

// The flags that replay a finding with `fusegate run --graph` (and
// bisect): its policy where one policy showed it (null: a job that died,
// under all of them), the backend, world size and fast paths of the run.
std::string replay_flags(const FuzzOptions& o, const FusionPolicy* policy, int world) {
  return " --mode C" +
         (!policy || *policy == FusionPolicy::Default ? "" : std::string(" --fusion ") + policy_name(*policy)) +
         (o.backend == Backend::Cpu ? "" : std::string(" --backend ") + backend_name(o.backend)) +
         (world > 1 ? " --world-size " + std::to_string(world) : "") +
         (o.fast_paths == "proven" ? "" : " --fast-paths " + o.fast_paths);
}

// The prefix of a job's files in a supervised run's folder: one set a life.
std::string job_stem(const std::string& dir, int job, int life) {
  return dir + "/job" + std::to_string(job) + "." + std::to_string(life);
}

void run_job(const FuzzOptions& o, int job, int jobs, int64_t first, FuzzRank& fr, Tally& t,
             const std::function<void(const std::string&)>& note, const std::function<void()>& after,
             double deadline_s, const std::function<double()>& elapsed) {
  namespace fs = std::filesystem;
  const FuzzGenOptions gen = gen_options(o, fr.world);
  const std::string who = jobs > 1 ? "fuzz job " + std::to_string(job) + ": " : "fuzz: ";
  for (int64_t index = first;; index += jobs) {
    bool go = elapsed() < deadline_s && (o.graphs == 0 || index < o.graphs) &&
              static_cast<int>(t.findings.size()) < o.max_findings;
    if (fr.world > 1) {  // every rank goes on, or none
      for (const auto& v : exchange_verdicts(fr, nlohmann::json(go))) go = go && v.get<bool>();
    }
    if (!go) break;
    const uint64_t seed = o.seed + static_cast<uint64_t>(index);
    note("graph " + std::to_string(index) + " (seed " + std::to_string(seed) + ")");
    FuzzGraph fg = generate_graph(seed, gen);
    if (o.print_graphs && fr.rank == 0)
      std::cerr << "# graph " << index << " (seed " << seed << ")\n" << print_graph(fg.graph) << std::flush;
    ++t.graphs;
    ++t.by_world[fr.world];
    const std::string name = fuzz_name(fg.graph);
    std::string why;
    std::optional<FuzzFinding> f = fuzz_check(fg.graph, name, o, fr, &why);
    if (!f) {
      ++t.refused;
      if (t.refusals.size() < 5 && !t.refusals.count(why)) t.refusals[why] = seed;
      after();
      continue;
    }
    t.covered.insert(fg.ops.begin(), fg.ops.end());
    if (f->kind.empty()) {
      after();
      continue;
    }
    const bool speak = fr.rank == 0;
    if (speak)
      std::cerr << "\n" << who << "graph " << index << " (seed " << seed << (fr.world > 1 ? ", world size " + std::to_string(fr.world) : "")
                << "): " << f->kind << " under --fusion " << policy_name(f->policy) << ": " << f->detail << "\n"
                << who << "minimizing (" << op_nodes(fg.graph) << " nodes) ...\n";
    note("minimizing graph " + std::to_string(index) + " (seed " + std::to_string(seed) + ")");
    int checks = 0;
    const auto m0 = std::chrono::steady_clock::now();
    Graph small = minimize(fg.graph, *f, o, fr, &checks);
    const double mins = std::chrono::duration<double>(std::chrono::steady_clock::now() - m0).count();
    const std::string sname = fuzz_name(small);
    // the file replays as its own repro, named by its own hash
    std::optional<FuzzFinding> again = fuzz_check(small, sname, o, fr);
    const std::string flags = replay_flags(o, &f->policy, fr.world);
    const std::string path = o.findings_dir + "/" + sname + ".fg";
    const std::string cmd = "fusegate run --graph " + path + flags;
    const bool replays = again && *again == *f;
    if (speak) {
      std::string text = "# fusegate fuzz finding: " + f->kind + " under --fusion " + policy_name(f->policy) +
                         (fr.world > 1 ? " at world size " + std::to_string(fr.world) : "") + "\n" + "# " +
                         json_escape_free(again && !again->kind.empty() ? again->detail : f->detail) + "\n" +
                         "# from graph " + std::to_string(index) + " of fusegate fuzz --seed " + std::to_string(o.seed) +
                         " (seed " + std::to_string(seed) + ", " + std::to_string(op_nodes(fg.graph)) + " nodes; " +
                         std::to_string(op_nodes(small)) + " after " + std::to_string(checks) + " checks)\n" +
                         "# replay: " + cmd + "\n# bisect: fusegate bisect --graph " + path + flags + "\n" +
                         print_graph(small);
      fs::create_directories(o.findings_dir);
      write_atomic(path, text);
      std::cerr << who << op_nodes(fg.graph) << " -> " << op_nodes(small) << " nodes in " << checks << " checks ("
                << static_cast<int>(mins) << " s); wrote " << path
                << (replays ? "" : " (the minimized graph no longer shows it under its own name: replay the seed)")
                << "\n  replay: " << cmd << "\n";
    }
    t.findings.push_back({{"kind", f->kind},
                          {"fusion", policy_name(f->policy)},
                          {"detail", f->detail},
                          {"seed", seed},
                          {"world_size", fr.world},
                          {"nodes", op_nodes(fg.graph)},
                          {"minimized_nodes", op_nodes(small)},
                          {"file", path},
                          {"replays", replays}});
    after();
  }
}

// The summary both ways of running print, and write with --json.
int summarize(const FuzzOptions& o, const Tally& t, double secs, bool tty) {
  const std::set<std::string> universe = op_universe(o);
  std::cerr << (tty ? "\r" : "") << progress_line(t, secs, universe.size()) << "\n";
  std::string missing;
  for (const auto& op : universe)
    if (!t.covered.count(op)) missing += (missing.empty() ? "" : " ") + op;
  std::string worlds;
  for (const auto& [w, n] : t.by_world)
    worlds += (worlds.empty() ? "" : ", ") + std::to_string(n) + " at world size " + std::to_string(w);
  std::cout << "fusegate fuzz: seed " << o.seed << ", --fusion " << policies_text(o) << ", " << backend_name(o.backend)
            << ", --jobs " << o.jobs << ": " << t.graphs << " graphs in " << static_cast<int>(secs) << " s ("
            << (secs > 0 ? t.graphs / secs : 0) << " graphs/s" << (worlds.empty() ? "" : "; " + worlds) << "), ops "
            << t.covered.size() << "/" << universe.size() << (missing.empty() ? "" : " (never: " + missing + ")")
            << ", " << t.findings.size() << " findings"
            << (t.refused ? ", " + std::to_string(t.refused) + " graphs eager refused (a generator bug)" : "") << "\n";
  for (const auto& [why, seed] : t.refusals) std::cout << "  eager refused seed " << seed << ": " << why << "\n";
  if (!o.json_out.empty()) {
    nlohmann::json j = tally_json(t);
    j.update({{"seed", o.seed},
              {"fusion", policies_text(o)},
              {"backend", backend_name(o.backend)},
              {"world_sizes", o.worlds},
              {"jobs", o.jobs},
              {"fast_paths", o.fast_paths},
              {"seconds", secs},
              {"graphs_per_second", secs > 0 ? t.graphs / secs : 0},
              {"ops_total", universe.size()}});
    write_atomic(o.json_out, j.dump(2) + "\n");
  }
  if (t.graphs == 0 && t.findings.empty()) cannot_test("fuzz ran no graph (--seconds or --graphs too small)");
  return t.findings.empty() && t.refused == 0 ? 0 : 1;
}

nlohmann::json options_json(const FuzzOptions& o) {
  std::vector<int> policies;
  for (FusionPolicy p : o.policies) policies.push_back(static_cast<int>(p));
  return {{"seconds", o.seconds},       {"graphs", o.graphs},
          {"seed", o.seed},             {"backend", static_cast<int>(o.backend)},
          {"policies", policies},       {"max_ops", o.max_ops},
          {"findings_dir", o.findings_dir}, {"max_findings", o.max_findings},
          {"worlds", o.worlds},         {"jobs", o.jobs},
          {"fast_paths", o.fast_paths}, {"golden_dir", o.golden_dir},
          {"timeout_s", o.timeout_s}, {"print_graphs", o.print_graphs}};
}

FuzzOptions options_from(const nlohmann::json& j) {
  FuzzOptions o;
  o.seconds = j.at("seconds").get<double>();
  o.graphs = j.at("graphs").get<int64_t>();
  o.seed = j.at("seed").get<uint64_t>();
  o.backend = static_cast<Backend>(j.at("backend").get<int>());
  o.policies.clear();
  for (int p : j.at("policies").get<std::vector<int>>()) o.policies.push_back(static_cast<FusionPolicy>(p));
  o.max_ops = j.at("max_ops").get<int>();
  o.findings_dir = j.at("findings_dir").get<std::string>();
  o.max_findings = j.at("max_findings").get<int>();
  o.worlds = j.at("worlds").get<std::vector<int>>();
  o.jobs = j.at("jobs").get<int>();
  o.fast_paths = j.at("fast_paths").get<std::string>();
  o.golden_dir = j.at("golden_dir").get<std::string>();
  o.timeout_s = j.at("timeout_s").get<int>();
  o.print_graphs = j.at("print_graphs").get<bool>();
  return o;
}

std::string trim_text(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The graph index in a job's status line ("graph I (seed S)" or
// "minimizing graph I (seed S)"); -1: none yet.
int64_t status_index(const std::string& where) {
  const size_t at = where.find("graph ");
  return at == std::string::npos ? -1 : std::strtoll(where.c_str() + at + 6, nullptr, 10);
}

// The supervisor of --jobs > 1 or a world size > 1 (see harness/fuzz.h).
// A job that dies or hangs is a finding (its graph written unminimized, the
// job's ranks having died with it) and starts again at its next graph, a
// new life: its ranks' files and store keys carry the life's number.
int supervise(const FuzzOptions& o) {
  namespace fs = std::filesystem;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const bool tty = isatty(2);
  char tmpl[] = "/tmp/fusegate-fuzz-XXXXXX";
  if (!mkdtemp(tmpl)) cannot_test("fuzz: cannot make a folder under /tmp");
  const std::string dir = tmpl;
  write_atomic(dir + "/options.json", options_json(o).dump(2) + "\n");
  NodeSpec here;  // one machine: a store on any free port of 127.0.0.1
  std::unique_ptr<c10d::TCPStore> store = open_node_store(here, o.timeout_s);
  const int port = store->getPort();
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  struct Rank {
    int job, life, rank;
    pid_t pid;
    bool running = true;
  };
  std::vector<Rank> ranks;
  std::vector<int> lives(static_cast<size_t>(o.jobs), 0);  // the current life of each job
  auto world_of = [&](int j) { return o.worlds[static_cast<size_t>(j) % o.worlds.size()]; };
  auto stem = [&](int j, int life) { return job_stem(dir, j, life); };
  auto start_job = [&](int j, int64_t first) {
    const int life = lives[static_cast<size_t>(j)];
    const double left = o.seconds - elapsed();
    for (int r = 0; r < world_of(j); ++r) {
      std::vector<std::string> args = {self, "_fuzzjob", "--dir", dir, "--job", std::to_string(j), "--life",
                                       std::to_string(life), "--from", std::to_string(first), "--seconds-left",
                                       std::to_string(left), "--rank", std::to_string(r), "--port",
                                       std::to_string(port)};
      pid_t pid = fork();
      if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        execv(self.c_str(), argv.data());
        _exit(127);
      }
      if (pid < 0) cannot_test("fuzz: cannot start job " + std::to_string(j));
      ranks.push_back({j, life, r, pid});
    }
  };
  for (int j = 0; j < o.jobs; ++j) start_job(j, j);
  auto status_of = [&](int j, int life, int r) {
    std::string s = file_text(stem(j, life) + ".rank" + std::to_string(r) + ".status");
    return s.empty() ? std::string("starting") : s;
  };
  Tally lost;  // what the supervisor itself found: jobs that died or hung
  int worst_exit = 0;  // a job's 2 (bad input) or 125 (cannot test)
  auto stop_job = [&](int j) {
    for (Rank& x : ranks)
      if (x.job == j && x.running) {
        kill(x.pid, SIGKILL);
        waitpid(x.pid, nullptr, 0);
        x.running = false;
      }
  };
  // the tally of every life of every job so far: a life that ended wrote
  // its .json, one that died left the .progress of its last graph
  auto tally_now = [&] {
    Tally now = lost;
    for (int j = 0; j < o.jobs; ++j)
      for (int life = 0; life <= lives[static_cast<size_t>(j)]; ++life) {
        std::string p = file_text(stem(j, life) + ".json");
        if (p.empty()) p = file_text(stem(j, life) + ".progress");
        try {
          if (!p.empty()) add_tally(now, nlohmann::json::parse(p));
        } catch (const std::exception&) {  // being rewritten: the next look
        }
      }
    return now;
  };
  auto lose = [&](const Rank& x, const std::string& what) {
    const int j = x.job, world = world_of(j);
    const std::string where = trim_text(status_of(j, x.life, x.rank));
    stop_job(j);
    std::cerr << (tty ? "\n" : "") << "fuzz job " << j << " rank " << x.rank << " " << what << " on " << where << "\n";
    const int64_t index = status_index(where);
    nlohmann::json seed = nullptr;
    std::string file;
    if (index >= 0) {
      // the graph it was on, unminimized (a graph that kills its job is
      // not shrunk: each try could take a job down)
      seed = o.seed + static_cast<uint64_t>(index);
      const Graph g = generate_graph(seed.get<uint64_t>(), gen_options(o, world)).graph;
      file = o.findings_dir + "/" + fuzz_name(g) + ".fg";
      const std::string cmd = "fusegate run --graph " + file + replay_flags(o, nullptr, world);
      fs::create_directories(o.findings_dir);
      write_atomic(file, "# fusegate fuzz finding: job " + std::to_string(j) + " rank " + std::to_string(x.rank) + " " +
                             what + " on this graph (under --fusion " + policies_text(o) + ")\n# from graph " +
                             std::to_string(index) + " of fusegate fuzz --seed " + std::to_string(o.seed) + " (seed " +
                             std::to_string(seed.get<uint64_t>()) + "; not minimized)\n# replay: " + cmd + "\n" +
                             print_graph(g));
      std::cerr << "  wrote " << file << "\n  replay: " << cmd << "\n";
    }
    lost.findings.push_back({{"kind", what.find("silent") != std::string::npos ? "hang" : "crash"},
                             {"detail", "job " + std::to_string(j) + " rank " + std::to_string(x.rank) + " " + what},
                             {"at", where},
                             {"seed", seed},
                             {"world_size", world},
                             {"file", file},
                             {"replays", false}});
    // the job goes on at its next graph while time, graphs and findings last
    const int64_t next = index >= 0 ? index + o.jobs : j;
    if (elapsed() < o.seconds && (o.graphs == 0 || next < o.graphs) &&
        static_cast<int>(tally_now().findings.size()) < o.max_findings * o.jobs) {
      ++lives[static_cast<size_t>(j)];
      start_job(j, next);
    }
  };
  double last_line = -1;
  const size_t universe = op_universe(o).size();
  for (;;) {
    bool any = false;
    for (size_t k = 0; k < ranks.size(); ++k) {  // lose() may add ranks
      Rank x = ranks[k];
      if (!x.running) continue;
      int st = 0;
      pid_t got = waitpid(x.pid, &st, WNOHANG);
      if (got == 0) {
        any = true;
        // a job silent 3 timeouts long: hung (each rank notes each graph and check)
        struct stat sb {};
        const std::string sf = stem(x.job, x.life) + ".rank" + std::to_string(x.rank) + ".status";
        if (::stat(sf.c_str(), &sb) == 0 && std::time(nullptr) - sb.st_mtime > 3 * o.timeout_s)
          lose(x, "was silent for " + std::to_string(3 * o.timeout_s) + " s");
        continue;
      }
      ranks[k].running = false;
      if (WIFSIGNALED(st)) {
        lose(x, std::string("was killed by signal ") + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) +
                    ")");
        any = true;
      } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 1) {
        const int code = WEXITSTATUS(st);
        if (code == 2 || code == 125) {
          worst_exit = std::max(worst_exit, code);
          stop_job(x.job);
        } else {
          lose(x, "exited " + std::to_string(code));
          any = true;
        }
      }
    }
    // the line: every job's progress so far
    if (any && (tty || elapsed() - last_line >= 30)) {
      const Tally now = tally_now();
      if (tty) std::cerr << "\r" << progress_line(now, elapsed(), universe) << std::flush;
      else std::cerr << progress_line(now, elapsed(), universe) << "\n";
      last_line = elapsed();
    }
    if (!any) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const Tally t = tally_now();
  remove_tree(dir);
  if (worst_exit) {
    std::cerr << "fuzz: a job stopped with exit code " << worst_exit << " (its message is above)\n";
    return worst_exit;
  }
  return summarize(o, t, elapsed(), tty);
}

}  // namespace

int cmd_fuzz(const FuzzOptions& o) {
  if (o.jobs > 1 || o.worlds != std::vector<int>{1}) return supervise(o);
  // one job at world size 1: in this process
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const bool tty = isatty(2);
  const size_t universe = op_universe(o).size();
  FuzzRank fr;
  fr.proofs = fast_path_proofs(o.golden_dir, o.backend, 1, true);
  Tally t;
  double last_line = -1;
  run_job(
      o, 0, 1, 0, fr, t, [](const std::string&) {},
      [&] {
        if (!tty && elapsed() - last_line < 30) return;
        if (tty) std::cerr << "\r" << progress_line(t, elapsed(), universe) << std::flush;
        else std::cerr << progress_line(t, elapsed(), universe) << "\n";
        last_line = elapsed();
      },
      o.seconds, elapsed);
  return summarize(o, t, elapsed(), tty);
}

int fuzz_job_main(const FuzzJobSpec& spec) {
  at::set_num_threads(1);  // jobs share the cores; the ranks of a job compute the same bits
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const std::string& dir = spec.dir;
  const int job = spec.job, rank = spec.rank;
  const FuzzOptions o = options_from(nlohmann::json::parse(file_text(dir + "/options.json")));
  const int world = o.worlds[static_cast<size_t>(job) % o.worlds.size()];
  const std::string stem = job_stem(dir, job, spec.life);
  const std::string status = stem + ".rank" + std::to_string(rank) + ".status";
  write_atomic(status, "joining the process group\n");
  if (o.backend == Backend::Cuda) cuda_select_device(rank);
  std::unique_ptr<Collectives> coll;
  if (world > 1)
    coll = std::make_unique<Collectives>("127.0.0.1", spec.port, rank, world, o.timeout_s,
                                         o.backend == Backend::Cuda ? "nccl" : "gloo",
                                         "job" + std::to_string(job) + "." + std::to_string(spec.life) + "/");
  // FUSEGATE_FAULT=diverge_fusion:R: rank R alone compiles with another
  // fusion rule (what the ranks' agreement must catch)
  if (fault_argument("diverge_fusion") == std::to_string(rank)) fault_enable("refuse_fusion", "reduction");
  FuzzRank fr;
  fr.coll = coll.get();
  fr.rank = rank;
  fr.world = world;
  fr.proofs = fast_path_proofs(o.golden_dir, o.backend, world, true);
  Tally t;
  run_job(
      o, job, o.jobs, spec.first, fr, t,
      [&](const std::string& where) {
        write_atomic(status, where + "\n");
        // FUSEGATE_FAULT=crash:R or hang:R: rank R of every job aborts or
        // stops answering at its first graph, in its first life (the
        // supervisor must name it, and go on); crash_at:I kills the rank 0
        // that runs graph I
        if (spec.life == 0 && fault_argument("crash") == std::to_string(rank)) std::abort();
        if (spec.life == 0 && fault_argument("hang") == std::to_string(rank))
          for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));
        if (rank == 0 && !fault_argument("crash_at").empty() && where.rfind("graph ", 0) == 0 &&
            std::to_string(status_index(where)) == fault_argument("crash_at"))
          std::abort();
      },
      [&] {  // after each graph: what a supervisor counts if this rank dies next
        if (rank == 0) write_atomic(stem + ".progress", tally_json(t).dump() + "\n");
      },
      spec.seconds_left, elapsed);
  if (rank == 0) write_atomic(stem + ".json", tally_json(t).dump() + "\n");
  if (coll) coll->barrier();  // no rank leaves while another may still need the group
  return t.findings.empty() && t.refused == 0 ? 0 : 1;
}

}  // namespace fg
