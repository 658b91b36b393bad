// fusegate fuzz (harness/fuzz.h): the differential loop, the minimizer and
// the finding files.
#include "harness/fuzz.h"

#include <unistd.h>
#include <xxhash.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "fusion/errors.h"
#include "fusion/ir/text.h"
#include "fusion/passes/schedule.h"
#include "harness/digest.h"
#include "harness/forward.h"
#include "harness/fuzz_gen.h"
#include "harness/golden.h"
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
    if (n.op == Op::Input && read[static_cast<size_t>(n.id)]) map[n.id] = out.add_input(n.name, n.type);
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
  try {
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

std::optional<FuzzFinding> fuzz_check(const Graph& g, const std::string& name, const FuzzOptions& o,
                                      std::string* eager_error) {
  Repro r = graph_repro(g, name, "fuzz graph", name + ".fg");
  std::map<std::string, at::Tensor> inputs;
  ForwardResult eager, fp64;
  try {
    AtenExecutor ex(nullptr, 0, 1, FusionPolicy::Default, false, o.backend);
    for (const auto& s : r.inputs(1)) inputs[s.name] = make_input(r.name, s, 0, 1).to(ex.device());
    eager = forward(r, Mode::Eager, ex, inputs, false);
    AtenExecutor ref(nullptr, 0, 1, FusionPolicy::Default, true, o.backend);
    fp64 = forward(r, Mode::Eager, ref, inputs, true);
  } catch (const std::exception& e) {
    if (eager_error) *eager_error = first_line(e.what());
    return std::nullopt;
  }
  for (FusionPolicy p : o.policies) {
    FuzzFinding f;
    f.policy = p;
    ForwardResult c;
    try {
      AtenExecutor ex(nullptr, 0, 1, p, false, o.backend);
      c = forward(r, Mode::Compiled, ex, inputs, false);
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
      // RMS): 2x or 3x eager's error stays the bar
      const at::Tensor ref = keep(fp64.outputs[i]).to(at::kDouble);
      const double rms = std::sqrt(ref.pow(2).mean().item<double>());
      const bool low = c.outputs[i].scalar_type() == at::kBFloat16 || c.outputs[i].scalar_type() == at::kHalf;
      const double rtol = c.outputs[i].scalar_type() == at::kBFloat16 ? 1.6e-2
                          : c.outputs[i].scalar_type() == at::kHalf  ? 1e-3
                                                                     : 1.3e-6;
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

Graph minimize(const Graph& g, const FuzzFinding& f, const FuzzOptions& o, int* checks) {
  FuzzOptions one = o;
  one.policies = {f.policy};  // the policy that showed it
  auto shows = [&](const Graph& c) {
    ++*checks;
    auto got = fuzz_check(c, fuzz_name(c), one);
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
  }
  return best;
}

int cmd_fuzz(const FuzzOptions& o) {
  namespace fs = std::filesystem;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const bool tty = isatty(2);
  const std::set<std::string> universe = fuzz_op_universe(1);
  std::set<std::string> covered;
  int64_t graphs = 0, refused_by_eager = 0;
  std::map<std::string, uint64_t> refusals;  // what eager refused: the first seed of each
  std::vector<nlohmann::json> findings;
  double last_line = -1;
  FuzzGenOptions gen;
  gen.max_ops = o.max_ops;
  gen.half = o.backend != Backend::Cpu;
  std::string policies;
  for (FusionPolicy p : o.policies) policies += (policies.empty() ? "" : ",") + std::string(policy_name(p));
  auto progress = [&](bool final) {
    const double t = elapsed();
    char buf[200];
    std::snprintf(buf, sizeof buf, "fuzz: %lld graphs in %.0f s (%.2f/s), ops %zu/%zu, %zu findings",
                  static_cast<long long>(graphs), t, t > 0 ? graphs / t : 0.0, covered.size(), universe.size(),
                  findings.size());
    if (tty) std::cerr << "\r" << buf << (final ? "\n" : "") << std::flush;
    else if (final || t - last_line >= 30) std::cerr << buf << "\n";
    last_line = t;
  };
  while (elapsed() < o.seconds && (o.graphs == 0 || graphs < o.graphs) &&
         static_cast<int>(findings.size()) < o.max_findings) {
    const uint64_t seed = o.seed + static_cast<uint64_t>(graphs);
    FuzzGraph fg = generate_graph(seed, gen);
    ++graphs;
    const std::string name = fuzz_name(fg.graph);
    std::string why;
    std::optional<FuzzFinding> f = fuzz_check(fg.graph, name, o, &why);
    if (!f) {
      ++refused_by_eager;
      if (refusals.size() < 5 && !refusals.count(why)) refusals[why] = seed;
      continue;
    }
    covered.insert(fg.ops.begin(), fg.ops.end());
    if (f->kind.empty()) {
      if (tty || elapsed() - last_line >= 30) progress(false);
      continue;
    }
    if (tty) std::cerr << "\n";
    std::cerr << "fuzz: graph " << graphs << " (seed " << seed << "): " << f->kind << " under --fusion "
              << policy_name(f->policy) << ": " << f->detail << "\nfuzz: minimizing (" << op_nodes(fg.graph)
              << " nodes) ...\n";
    int checks = 0;
    const auto m0 = std::chrono::steady_clock::now();
    Graph small = minimize(fg.graph, *f, o, &checks);
    const double mins = std::chrono::duration<double>(std::chrono::steady_clock::now() - m0).count();
    const std::string sname = fuzz_name(small);
    // the file replays as its own repro, named by its own hash
    std::optional<FuzzFinding> again = fuzz_check(small, sname, o);
    const std::string cmd = "fusegate run --graph " + o.findings_dir + "/" + sname + ".fg --mode C" +
                            (f->policy == FusionPolicy::Default ? "" : std::string(" --fusion ") + policy_name(f->policy)) +
                            (o.backend == Backend::Cpu ? "" : std::string(" --backend ") + backend_name(o.backend));
    std::string text = "# fusegate fuzz finding: " + f->kind + " under --fusion " + policy_name(f->policy) + "\n" +
                       "# " + json_escape_free(again && !again->kind.empty() ? again->detail : f->detail) + "\n" +
                       "# from graph " + std::to_string(graphs) + " of fusegate fuzz --seed " + std::to_string(o.seed) +
                       " (seed " + std::to_string(seed) + ", " + std::to_string(op_nodes(fg.graph)) + " nodes; " +
                       std::to_string(op_nodes(small)) + " after " + std::to_string(checks) + " checks)\n" +
                       "# replay: " + cmd + "\n# bisect: fusegate bisect --graph " + o.findings_dir + "/" + sname +
                       ".fg --mode C" +
                       (f->policy == FusionPolicy::Default ? "" : std::string(" --fusion ") + policy_name(f->policy)) +
                       "\n" + print_graph(small);
    fs::create_directories(o.findings_dir);
    const std::string path = o.findings_dir + "/" + sname + ".fg";
    write_atomic(path, text);
    std::cerr << "fuzz: " << op_nodes(fg.graph) << " -> " << op_nodes(small) << " nodes in " << checks
              << " checks (" << static_cast<int>(mins) << " s); wrote " << path
              << (again && *again == *f ? "" : " (the minimized graph no longer shows it under its own name: replay the seed)")
              << "\n  replay: " << cmd << "\n";
    findings.push_back({{"kind", f->kind},
                        {"fusion", policy_name(f->policy)},
                        {"detail", f->detail},
                        {"seed", seed},
                        {"nodes", op_nodes(fg.graph)},
                        {"minimized_nodes", op_nodes(small)},
                        {"file", path},
                        {"replays", again && *again == *f}});
  }
  progress(true);
  std::string missing;
  for (const auto& op : universe)
    if (!covered.count(op)) missing += (missing.empty() ? "" : " ") + op;
  const double t = elapsed();
  std::cout << "fusegate fuzz: seed " << o.seed << ", --fusion " << policies << ", " << backend_name(o.backend) << ": "
            << graphs << " graphs in " << static_cast<int>(t) << " s (" << (t > 0 ? graphs / t : 0) << " graphs/s), ops "
            << covered.size() << "/" << universe.size() << (missing.empty() ? "" : " (never: " + missing + ")") << ", "
            << findings.size() << " findings"
            << (refused_by_eager ? ", " + std::to_string(refused_by_eager) + " graphs eager refused (a generator bug)"
                                 : "")
            << "\n";
  for (const auto& [why, seed] : refusals) std::cout << "  eager refused seed " << seed << ": " << why << "\n";
  if (!o.json_out.empty()) {
    nlohmann::json j = {{"seed", o.seed},
                        {"fusion", policies},
                        {"backend", backend_name(o.backend)},
                        {"graphs", graphs},
                        {"seconds", t},
                        {"graphs_per_second", t > 0 ? graphs / t : 0},
                        {"ops_covered", std::vector<std::string>(covered.begin(), covered.end())},
                        {"ops_total", universe.size()},
                        {"refused_by_eager", refused_by_eager},
                        {"findings", findings}};
    write_atomic(o.json_out, j.dump(2) + "\n");
  }
  if (graphs == 0) cannot_test("fuzz ran no graph (--seconds or --graphs too small)");
  return findings.empty() && refused_by_eager == 0 ? 0 : 1;
}

}  // namespace fg
