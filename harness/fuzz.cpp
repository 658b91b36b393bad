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

namespace {

// This rank's part of fuzz_check: nullopt where eager refused the graph;
// `digests` gets every output's exact digest (eager, then each policy's),
// which the ranks of a job compare.
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

// Job `job` of `jobs`: graphs job, job + jobs, ... (seed o.seed + index) at
// world size fr.world, until the time, the graph count or the findings run
// out (at world size > 1 the ranks agree each time to go on). `note` is
// called before each graph with where the job is, `after` after each.
void run_job(const FuzzOptions& o, int job, int jobs, FuzzRank& fr, Tally& t,
             const std::function<void(const std::string&)>& note, const std::function<void(bool)>& after,
             double deadline_s, const std::function<double()>& elapsed) {
  namespace fs = std::filesystem;
  FuzzGenOptions gen;
  gen.max_ops = o.max_ops;
  gen.half = o.backend != Backend::Cpu;
  gen.world = fr.world;
  const std::string who = jobs > 1 ? "fuzz job " + std::to_string(job) + ": " : "fuzz: ";
  const std::string at_world = fr.world > 1 ? " --world-size " + std::to_string(fr.world) : "";
  const FuzzFinding none;
  for (int64_t index = job;; index += jobs) {
    bool go = elapsed() < deadline_s && (o.graphs == 0 || index < o.graphs) &&
              static_cast<int>(t.findings.size()) < o.max_findings;
    if (fr.world > 1) {  // every rank goes on, or none
      for (const auto& v : exchange_verdicts(fr, nlohmann::json(go))) go = go && v.get<bool>();
    }
    if (!go) break;
    const uint64_t seed = o.seed + static_cast<uint64_t>(index);
    note("graph " + std::to_string(index) + " (seed " + std::to_string(seed) + ")");
    FuzzGraph fg = generate_graph(seed, gen);
    ++t.graphs;
    ++t.by_world[fr.world];
    const std::string name = fuzz_name(fg.graph);
    std::string why;
    std::optional<FuzzFinding> f = fuzz_check(fg.graph, name, o, fr, &why);
    if (!f) {
      ++t.refused;
      if (t.refusals.size() < 5 && !t.refusals.count(why)) t.refusals[why] = seed;
      after(false);
      continue;
    }
    t.covered.insert(fg.ops.begin(), fg.ops.end());
    if (f->kind.empty()) {
      after(false);
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
    const std::string flags =
        " --mode C" + (f->policy == FusionPolicy::Default ? "" : std::string(" --fusion ") + policy_name(f->policy)) +
        (o.backend == Backend::Cpu ? "" : std::string(" --backend ") + backend_name(o.backend)) + at_world +
        (o.fast_paths == "proven" ? "" : " --fast-paths " + o.fast_paths);
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
    after(true);
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
          {"timeout_s", o.timeout_s}};
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

// The supervisor of --jobs > 1 or a world size > 1 (see harness/fuzz.h).
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
    int job, rank;
    pid_t pid;
    bool running = true;
  };
  std::vector<Rank> ranks;
  for (int j = 0; j < o.jobs; ++j) {
    const int world = o.worlds[static_cast<size_t>(j) % o.worlds.size()];
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> args = {self,      "_fuzzjob", "--dir",  dir, "--job", std::to_string(j),
                                       "--rank",  std::to_string(r), "--port", std::to_string(port)};
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
      ranks.push_back({j, r, pid});
    }
  }
  auto status_of = [&](int j, int r) {
    std::string s = file_text(dir + "/job" + std::to_string(j) + ".rank" + std::to_string(r) + ".status");
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
  auto lose = [&](int j, int r, const std::string& what) {
    const int world = o.worlds[static_cast<size_t>(j) % o.worlds.size()];
    const std::string where = status_of(j, r);
    std::cerr << "\nfuzz job " << j << " rank " << r << " " << what << " on " << trim_text(where) << "\n";
    nlohmann::json seed = nullptr;  // "graph I (seed S)" or "minimizing graph I (seed S)"
    if (const size_t at = where.find("(seed "); at != std::string::npos)
      seed = std::strtoull(where.c_str() + at + 6, nullptr, 10);
    lost.findings.push_back({{"kind", what.find("silent") != std::string::npos ? "hang" : "crash"},
                             {"detail", "job " + std::to_string(j) + " rank " + std::to_string(r) + " " + what},
                             {"at", trim_text(where)},
                             {"seed", seed},
                             {"world_size", world},
                             {"file", ""},
                             {"replays", false}});
    stop_job(j);
  };
  double last_line = -1;
  const size_t universe = op_universe(o).size();
  for (;;) {
    bool any = false;
    for (Rank& x : ranks) {
      if (!x.running) continue;
      int st = 0;
      pid_t got = waitpid(x.pid, &st, WNOHANG);
      if (got == 0) {
        any = true;
        // a job silent 3 timeouts long: hung (each rank notes each graph and check)
        struct stat sb {};
        const std::string sf = dir + "/job" + std::to_string(x.job) + ".rank" + std::to_string(x.rank) + ".status";
        if (::stat(sf.c_str(), &sb) == 0 && std::time(nullptr) - sb.st_mtime > 3 * o.timeout_s)
          lose(x.job, x.rank, "was silent for " + std::to_string(3 * o.timeout_s) + " s");
        continue;
      }
      x.running = false;
      if (WIFSIGNALED(st)) {
        lose(x.job, x.rank, std::string("was killed by signal ") + std::to_string(WTERMSIG(st)) + " (" +
                                strsignal(WTERMSIG(st)) + ")");
      } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 1) {
        const int code = WEXITSTATUS(st);
        if (code == 2 || code == 125) worst_exit = std::max(worst_exit, code);
        else lose(x.job, x.rank, "exited " + std::to_string(code));
        stop_job(x.job);
      }
    }
    // the line: every job's progress so far
    if (tty || elapsed() - last_line >= 30 || !any) {
      Tally now = lost;
      for (int j = 0; j < o.jobs; ++j) {
        const std::string p = file_text(dir + "/job" + std::to_string(j) + ".progress");
        try {
          if (!p.empty()) add_tally(now, nlohmann::json::parse(p));
        } catch (const std::exception&) {  // being rewritten: the next look
        }
      }
      if (any) {
        if (tty) std::cerr << "\r" << progress_line(now, elapsed(), universe) << std::flush;
        else std::cerr << progress_line(now, elapsed(), universe) << "\n";
        last_line = elapsed();
      }
    }
    if (!any) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  Tally t = lost;
  for (int j = 0; j < o.jobs; ++j) {
    const std::string p = file_text(dir + "/job" + std::to_string(j) + ".json");
    if (p.empty()) continue;  // a job that died: its finding is in `lost`
    add_tally(t, nlohmann::json::parse(p));
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
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
      o, 0, 1, fr, t, [](const std::string&) {},
      [&](bool) {
        if (!tty && elapsed() - last_line < 30) return;
        if (tty) std::cerr << "\r" << progress_line(t, elapsed(), universe) << std::flush;
        else std::cerr << progress_line(t, elapsed(), universe) << "\n";
        last_line = elapsed();
      },
      o.seconds, elapsed);
  return summarize(o, t, elapsed(), tty);
}

int fuzz_job_main(const std::string& dir, int job, int rank, int port) {
  at::set_num_threads(1);  // jobs share the cores; the ranks of a job compute the same bits
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const FuzzOptions o = options_from(nlohmann::json::parse(file_text(dir + "/options.json")));
  const int world = o.worlds[static_cast<size_t>(job) % o.worlds.size()];
  const std::string status = dir + "/job" + std::to_string(job) + ".rank" + std::to_string(rank) + ".status";
  write_atomic(status, "joining the process group\n");
  if (o.backend == Backend::Cuda) cuda_select_device(rank);
  std::unique_ptr<Collectives> coll;
  if (world > 1)
    coll = std::make_unique<Collectives>("127.0.0.1", port, rank, world, o.timeout_s,
                                         o.backend == Backend::Cuda ? "nccl" : "gloo", "job" + std::to_string(job) + "/");
  // FUSEGATE_FAULT=diverge_fusion:R: rank R alone compiles with another
  // fusion rule (what the ranks' agreement must catch)
  if (fault_argument("diverge_fusion") == std::to_string(rank)) fault_enable("refuse_fusion", "reduction");
  FuzzRank fr;
  fr.coll = coll.get();
  fr.rank = rank;
  fr.world = world;
  fr.proofs = fast_path_proofs(o.golden_dir, o.backend, world, true);
  Tally t;
  double last = -1;
  run_job(
      o, job, o.jobs, fr, t,
      [&](const std::string& where) {
        write_atomic(status, where + "\n");
        // FUSEGATE_FAULT=crash:R or hang:R: rank R of every job aborts or
        // stops answering at its first graph (the supervisor must name it)
        if (fault_argument("crash") == std::to_string(rank)) std::abort();
        if (fault_argument("hang") == std::to_string(rank))
          for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));
      },
      [&](bool found) {
        if (rank != 0 || (!found && elapsed() - last < 2)) return;
        write_atomic(dir + "/job" + std::to_string(job) + ".progress", tally_json(t).dump() + "\n");
        last = elapsed();
      },
      o.seconds, elapsed);
  if (rank == 0) {
    write_atomic(dir + "/job" + std::to_string(job) + ".progress", tally_json(t).dump() + "\n");
    write_atomic(dir + "/job" + std::to_string(job) + ".json", tally_json(t).dump() + "\n");
  }
  if (coll) coll->barrier();  // no rank leaves while another may still need the group
  return t.findings.empty() && t.refused == 0 ? 0 : 1;
}

}  // namespace fg
