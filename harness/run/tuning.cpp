// What a run measures before its timed forwards, and the pace of a step:
// harness/run/tuning.h.


#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <functional>
#include <set>
#include <sstream>

#include "fusion/errors.h"
#include "fusion/fault.h"
#include "fusion/passes/tp_rewrite.h"
#include "harness/record/golden.h"
#include "harness/record/files.h"
#include "harness/record/json_read.h"
#include "harness/run/environment.h"
#include "harness/run/placement.h"
#include "harness/run/rounds.h"
#include "harness/run/run.h"
#include "kernels/collectives/collectives.h"
#include "kernels/cpu/gemm_choice.h"
#include "kernels/cpu/runtime.h"
#include "kernels/cuda/gemm_tuning.h"
#include "harness/run/tuning.h"

namespace fg {

// Runs `step` n times from a drained device and returns its pace (ms a step,
// host clock, the device drained again).
double paced_ms(AtenExecutor& ex, const std::function<void()>& step, int n) {
  ex.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) step();
  ex.synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / std::max(1, n);
}

// The pace of `step` as the timings that follow run it: replays of its
// CUDA graph where `graph` (cuda_time replays one), else its host launches.
// A replayed forward runs about twice as fast as its host launches (h4096 at
// world size 2 on two H100): counted at the launches' pace, a warm-up of
// 250 ms ran about half of it (the main warm-up's lesson of 2026-11-27,
// sixteenth step of issue 17; the placement and GEMM-check rounds had kept
// the launches' pace until the eighteenth).
double step_pace_ms(AtenExecutor& ex, const std::function<void()>& step, int n, bool graph) {
  return graph ? cuda_replay_pace_ms(n, step) : paced_ms(ex, step, n);
}

// How many untimed steps fill `ms` at `pace_ms`: rank 0's count on every
// rank (the steps hold collectives; a rank that ran one more would wait in
// its collective). `key` is unique within the run.
int agreed_warm_steps(Collectives& coll, const std::string& key, double ms, double pace_ms) {
  const int mine = static_cast<int>(std::ceil(ms / std::max(pace_ms, 1e-3)));
  return std::stoi(coll.exchange(key, std::to_string(mine)).at(0));
}

// A share of the agreed warm-up's `warm_steps` forwards (which filled
// `warmup_ms`): 1/`divisor` of them, at most about `at_most_ms` of them;
// from the agreed count alone, so every rank runs as many. 0 without a
// warm-up.
int warmup_share(int warm_steps, int warmup_ms, int divisor, int at_most_ms) {
  if (warmup_ms <= 0) return 0;
  return std::min(warm_steps / divisor, static_cast<int>(static_cast<int64_t>(warm_steps) * at_most_ms / warmup_ms));
}

namespace {
// -- GEMM algorithm choices (max-autotune on cuda; kernels/cuda/gemm_tuning.h)

// The on-disk cache of measured choices: $FUSEGATE_CACHE_DIR, else
// $XDG_CACHE_HOME/fusegate, else ~/.cache/fusegate; gemm_algos.json maps
// "<GPU model>|<cuBLASLt version>" to a table (gemm_choices.json, cpu:
// "cpu <environment fingerprint>" to a table). "" where no folder is known.
std::string gemm_cache_path(const std::string& file = "gemm_algos.json") {
  std::string dir;
  if (const char* d = std::getenv("FUSEGATE_CACHE_DIR"); d && *d) dir = d;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) dir = std::string(x) + "/fusegate";
  else if (const char* h = std::getenv("HOME"); h && *h) dir = std::string(h) + "/.cache/fusegate";
  return dir.empty() ? "" : dir + "/" + file;
}

// The cache's content, or {} (a cache that cannot be read is said on stderr
// and remade: it holds nothing the record does not).
nlohmann::json read_gemm_cache(const std::string& path, const char* what = "GEMM algorithm cache") {
  try {
    std::optional<nlohmann::json> c = read_json_file(path, what, "delete it: it is remade");
    if (c && c->is_object()) return *c;
    if (c) std::cerr << "fusegate: " << path << ": not a JSON object: ignored and remade\n";
  } catch (const UserError& e) {
    std::cerr << "fusegate: " << e.what() << " (ignored: the cache is remade)\n";
  }
  return nlohmann::json::object();
}

// The golden this run is checked against, if there is one (a golden that
// cannot be read throws UserError).
std::optional<record::RunRecord> run_golden(const RunSpec& spec) {
  if (spec.golden_dir.empty()) return std::nullopt;
  return load_golden(golden_path(spec.golden_dir, backend_name(spec.backend), spec.repro, mode_letter(spec.mode),
                                 spec.world, policy_name(spec.fusion), spec.fast_paths.text(), spec.nnodes));
}

// What rank 0 knows before measuring: the golden's choices where the golden
// was blessed on this GPU model (so that a check runs what was blessed),
// then the cache's (`cache`, read once) for this GPU model and cuBLASLt.
std::string known_gemm_algos(const RunSpec& spec, const nlohmann::json& cache, const std::string& cache_key) {
  nlohmann::json known = nlohmann::json::array();
  if (!spec.golden_dir.empty()) {
    // a golden that cannot be read is the check's to report, as it always is
    std::optional<record::RunRecord> g = run_golden(spec);
    // blessed on this GPU model: one of its environments names it (an
    // environment is added to a golden only where its choices agreed)
    bool this_gpu = false;
    if (g && g->environments)
      for (const auto& [fp, env] : *g->environments) {
        auto gpu = env.find("gpu");
        this_gpu = this_gpu || (gpu != env.end() && gpu->second == cuda_device_name());
      }
    if (this_gpu) {
      for (const auto& [id, rank] : record::ranks_by_id(*g)) {
        if (id != 0 || !rank->gemm_algos) continue;
        std::vector<record::GemmAlgo> algos;
        for (record::GemmAlgo e : *rank->gemm_algos)
          if (e.algo) {
            e.source = "golden";
            algos.push_back(std::move(e));
          }
        for (const nlohmann::json& e : record::part_to_json(algos)) known.push_back(e);
      }
    }
  }
  for (nlohmann::json e : array_of(cache, cache_key.c_str()))
    if (e.is_object()) {
      e["source"] = "cache";
      known.push_back(e);  // after the golden's: the first entry of a shape wins
    }
  return known.dump();
}

// Adds rank 0's measured choices to the cache `c` read before and writes it
// to `path` (atomically; a cache that cannot be written is left alone: the
// choices are in the record anyway).
void save_gemm_algos(const std::string& table, const std::string& path, nlohmann::json c,
                     const std::string& cache_key) {
  nlohmann::json t = nlohmann::json::parse(table, nullptr, false);
  if (path.empty() || !t.is_array()) return;
  bool any = false;
  for (const auto& e : t) any = any || e.value("source", "") == "measured";
  if (!any) return;
  nlohmann::json& list = c[cache_key];
  if (!list.is_array()) list = nlohmann::json::array();
  for (const auto& e : t) {
    if (e.value("source", "") != "measured") continue;
    nlohmann::json kept = nlohmann::json::array();
    for (const auto& old : list)
      if (!old.is_object() || old.value("shape", "") != e.value("shape", "")) kept.push_back(old);
    kept.push_back(e);
    list = kept;
  }
  try {
    write_atomic(path, c.dump(1) + "\n");  // makes the folders it needs
  } catch (const std::exception&) {
  }
}

// Each adopted choice other than the top-1, checked in the forward it
// serves: the whole forward timed as the run times it (`fwd`, its CUDA
// graph replayed where `graph`, else its host launches) with the choice and with the
// top-1, in alternating order (ABBA) over kRounds rounds, each round's 30
// timed forwards after kWarmMs of the same forward back to back (the
// sustained state, as the residual placement's rounds: before 2026-11-26
// evening they ran from a drained device and each side's best round was
// kept), each side's median over all its rounds' forwards. Rank 0's times
// decide, as for every measured choice; the choice stays only where its
// forward's median is at least 1% faster (the rule that measured it alone)
// and it was faster in every round (harness/run/rounds.h), and every rank
// settles the same way.
void check_gemm_algos_in_forward(Collectives& coll, AtenExecutor& ex, const std::function<void()>& fwd, bool graph) {
  constexpr int kRounds = 4, kIters = 30;
  constexpr double kWarmMs = 250;
  const std::vector<std::string> shapes = gemm_tuning_unchecked(graph);
  for (size_t i = 0; i < shapes.size(); ++i) {
    // [round][0: top-1, 1: the choice]: each round's timed forwards
    std::vector<std::vector<std::vector<double>>> rounds(kRounds, std::vector<std::vector<double>>(2));
    std::string how;
    bool replayed = graph;  // every round a CUDA graph replay (capture can fail: host launches then)
    for (int round = 0; round < kRounds; ++round)
      for (int j = 0; j < 2; ++j) {
        const bool choice = (round % 2 == 0) == (j == 0);
        const std::string err = gemm_tuning_try(shapes[i], choice);
        if (!err.empty())
          cannot_test("GEMM algorithm choices (max-autotune), the check in the forward: " + err +
                      " (every rank needs rank 0's GPU model and cuBLASLt; or run --fusion default)");
        // the pace of three forwards after one (which may make the new
        // algorithm's plans), as the round runs them (replays of their
        // graph where `graph`): about kWarmMs of them; rank 0's count on
        // every rank
        fwd();
        const int warm = agreed_warm_steps(
            coll, "gemm_forward_warm_" + std::to_string(i) + "_" + std::to_string(round) + "_" + std::to_string(j),
            kWarmMs, step_pace_ms(ex, fwd, 3, graph));
        std::string note;
        std::vector<double> t = cuda_time(kIters, fwd, graph, &note, nullptr, 1, warm);
        rounds[round][choice ? 1 : 0] = std::move(t);
        replayed = replayed && note == "CUDA graph replay";
        how = graph ? note : "host launches";
      }
    const RoundsSummary r0 = rounds_from_json(nlohmann::json::parse(
        coll.exchange("gemm_forward_" + std::to_string(i), rounds_json(summarize_rounds(rounds)).dump()).at(0)));
    const double choice_ms = r0.candidate_ms, top1_ms = r0.default_ms;
    if (coll.rank() == 0)
      std::cerr << "fusegate: GEMM " << shapes[i] << " in the forward (" << (graph ? "CUDA graphs" : "host launches")
                << "): top-1 " << top1_ms << " ms, choice " << choice_ms << " ms, choice faster in "
                << rounds_text(r0) << " rounds: " << (candidate_wins(r0, 0.01) ? "choice" : "top-1") << "\n";
    const std::string err =
        gemm_tuning_settle(shapes[i], candidate_wins(r0, 0.01), choice_ms, top1_ms, r0.candidate_faster, r0.rounds,
                           how + "; median of " + std::to_string(kRounds) + " alternating rounds of " +
                               std::to_string(kIters) + " forwards, each after " +
                               std::to_string(static_cast<int>(kWarmMs)) + " ms of untimed ones, rank 0",
                           replayed);
    if (!err.empty())
      cannot_test("GEMM algorithm choices (max-autotune), the check in the forward: " + err +
                  " (every rank needs rank 0's GPU model and cuBLASLt; or run --fusion default)");
  }
}
}  // namespace
// After the warm-up forward: rank 0 chooses, every rank adopts the same
// table and checks its choices in the forward `fwd`; rank 0 caches the
// settled table.
void choose_gemm_algos(const RunSpec& spec, Collectives& coll, int rank, AtenExecutor& ex,
                       const std::function<void()>& fwd, bool graph) {
  const std::string key = cuda_device_name() + "|" + gemm_tuning_library();
  std::string table, path;
  nlohmann::json cache = nlohmann::json::object();
  if (rank == 0) {
    path = gemm_cache_path();
    if (!path.empty()) cache = read_gemm_cache(path);
    table = gemm_tuning_choose(known_gemm_algos(spec, cache, key));
  }
  const std::vector<std::string> all = coll.exchange("gemm_algos", table);
  const std::string err = gemm_tuning_adopt(all.at(0));
  if (!err.empty())
    cannot_test("GEMM algorithm choices (max-autotune): " + err +
                " (every rank needs rank 0's GPU model and cuBLASLt; or run --fusion default)");
  check_gemm_algos_in_forward(coll, ex, fwd, graph);
  if (rank == 0) save_gemm_algos(gemm_tuning_table(), path, cache, key);
}
namespace {

// -- residual placement (max-autotune on cuda; harness/run/placement.h)

// The hoist sites of the graphs the last forward ran, in order, each once.
std::vector<std::string> residual_sites(const std::vector<const CompiledGraphRt*>& graphs) {
  std::vector<std::string> sites;
  std::set<std::string> seen;
  for (const CompiledGraphRt* g : graphs)
    for (const LedgerEntry& e : g->prog.schedule.ledger)
      if ((e.reason == Reject::TpResidualHoisted || e.reason == Reject::TpResidualApart) &&
          seen.insert(residual_site(e)).second)
        sites.push_back(residual_site(e));
  return sites;
}
}  // namespace
// After the warm-up forward: rank 0 decides each hoist site from what it
// knows (forced, the golden), every rank times the undecided ones in the
// forward (`time_forward(apart)`: the forward compiled with those sites left
// apart, timed as the run times it; rank 0's medians decide), and every rank
// adopts the table: the next forward compiles with it. Returns the table ([]
// when the graphs hoist nothing).
nlohmann::json choose_residual_placement(
    const RunSpec& spec, Collectives& coll, int rank, AtenExecutor& ex,
    const std::function<std::vector<double>(const std::set<std::string>&, std::string*)>& time_forward) {
  constexpr int kRounds = 4;
  const std::vector<std::string> sites = residual_sites(ex.graphs_run());
  if (sites.empty()) return nlohmann::json::array();
  nlohmann::json known = nlohmann::json::array();
  if (rank == 0) {
    std::optional<record::RunRecord> golden;
    std::string name = "the golden";
    try {
      golden = run_golden(spec);
      name = golden_path(spec.golden_dir, backend_name(spec.backend), spec.repro, mode_letter(spec.mode), spec.world,
                         policy_name(spec.fusion), spec.fast_paths.text(), spec.nnodes);
    } catch (const UserError&) {
      // a golden that cannot be read decides nothing here: check reports it
      // before it runs, and bless replaces it
    }
    for (const auto& [site, c] : known_placements(sites, fault_argument("residual_placement"), golden, name))
      known.push_back(placement_json(c));
  }
  known = nlohmann::json::parse(coll.exchange("residual_placement/known", rank == 0 ? known.dump() : "").at(0));
  std::map<std::string, nlohmann::json> table;
  for (const nlohmann::json& e : known) table[text_of(e, "site")] = e;
  std::set<std::string> apart = apart_sites(record::part_from_json<std::vector<record::ResidualPlacement>>(known));
  for (size_t i = 0; i < sites.size(); ++i) {
    const std::string& s = sites[i];
    if (table.count(s)) continue;
    // hoisted and apart in alternating order (ABBA), each side's median
    // over all its rounds' forwards; the other undecided sites as settled
    // so far
    std::set<std::string> with = apart;
    with.insert(s);
    // [round][0: hoisted, 1: apart]: each round's timed forwards
    std::vector<std::vector<std::vector<double>>> rounds(kRounds, std::vector<std::vector<double>>(2));
    std::string how;
    for (int round = 0; round < kRounds; ++round)
      for (int j = 0; j < 2; ++j) {
        const bool hoisted = (round % 2 == 0) == (j == 0);
        rounds[round][hoisted ? 0 : 1] = time_forward(hoisted ? apart : with, &how);
      }
    const RoundsSummary r0 = rounds_from_json(nlohmann::json::parse(
        coll.exchange("residual_placement/" + std::to_string(i), rounds_json(summarize_rounds(rounds)).dump())
            .at(0)));
    PlacementChoice c{s, false, "measured", r0.default_ms, r0.candidate_ms,
                      how + "; median of " + std::to_string(kRounds) + " alternating rounds of 30 forwards, rank 0",
                      r0.candidate_faster, r0.rounds};
    c.apart = apart_wins(r0);
    if (rank == 0)
      std::cerr << "fusegate: " << spec.repro << ": residual placement at " << s << ": hoisted " << c.gemm_ms
                << " ms, apart " << c.apart_ms << " ms, apart faster in " << rounds_text(r0) << " rounds: "
                << (c.apart ? "apart" : "hoisted") << "\n";
    if (c.apart) apart.insert(s);
    table[s] = placement_json(c);
  }
  ex.set_residuals_apart(apart);
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& s : sites) out.push_back(table.at(s));
  return out;
}
namespace {

// -- GEMM template or library call (max-autotune on cpu; kernels/cpu/gemm_choice.h)

nlohmann::json choice_json(const GemmChoice& c) {
  nlohmann::json e = {{"shape", c.shape}, {"choice", c.choice}, {"source", c.source}};
  if (c.template_us > 0) e["template_us"] = std::round(c.template_us * 10) / 10;
  if (c.library_us > 0) e["library_us"] = std::round(c.library_us * 10) / 10;
  return e;
}
}  // namespace
// After the warm-up forward, which compiled every linear as a template:
// rank 0 decides each template kernel's shapes (FUSEGATE_FAULT=gemm_choice:C
// forces C; then the golden's choice, whatever machine blessed it, since the
// golden fixes the program the gate checks; then the cache's for this
// environment; else measured), every rank adopts rank 0's table. Returns
// the table, for the record ([] when the forward ran no template).
nlohmann::json choose_gemm_templates(const RunSpec& spec, Collectives& coll, int rank, AtenExecutor& ex,
                                     const std::function<void()>& one_forward) {
  std::set<std::string> groups;  // one per template kernel: its shapes joined by " + "
  for (const LaunchRecord& l : ex.launches())
    if (!l.gemm.empty()) groups.insert(l.gemm);
  std::map<std::string, GemmChoice> decided;
  const std::string key = "cpu " + environment(Backend::Cpu).at("fingerprint");
  const std::string path = gemm_cache_path("gemm_choices.json");
  nlohmann::json cache = nlohmann::json::object();
  if (rank == 0 && !groups.empty()) {
    const std::string forced = fault_argument("gemm_choice");  // template or library (fusion/fault.cpp)
    // an entry of another form (a hand-edited golden or cache) decides nothing
    auto num = [](const nlohmann::json& e, const char* f) {
      const nlohmann::json* v = field(e, f);
      return v && v->is_number() ? v->get<double>() : 0.0;
    };
    auto take = [&](const nlohmann::json& e, const char* source) {
      const std::string shape = text_of(e, "shape"), choice = text_of(e, "choice");
      if (!groups.count(shape) || decided.count(shape) || (choice != "template" && choice != "library")) return;
      decided[shape] = GemmChoice{shape, choice, source, num(e, "template_us"), num(e, "library_us")};
    };
    for (const std::string& g : groups)
      if (!forced.empty()) decided[g] = GemmChoice{g, forced, "forced", 0, 0};
    std::optional<record::RunRecord> golden;
    try {
      golden = run_golden(spec);
    } catch (const UserError&) {
      // a golden that cannot be read decides nothing here: check reports it
      // before it runs, and bless replaces it
    }
    if (golden)
      for (const auto& [id, r] : record::ranks_by_id(*golden))
        if (id == 0 && r->gemm_choices)
          for (const nlohmann::json& e : record::part_to_json(*r->gemm_choices)) take(e, "golden");
    if (!path.empty()) cache = read_gemm_cache(path, "GEMM template choice cache");
    for (const nlohmann::json& e : array_of(cache, key.c_str()))
      if (e.is_object()) take(e, "cache");
  }
  // the groups still undecided are timed: every rank runs the forwards, then
  // every rank times the library calls at once (the same load on both
  // sides); rank 0's figures count
  std::string undecided;
  for (const std::string& g : groups)
    if (!decided.count(g)) undecided += g + "\n";
  undecided = coll.exchange("gemm_choices/timed", rank == 0 ? undecided : "").at(0);
  if (!undecided.empty()) {
    GemmTimingProbe probe;
    ex.set_probe(&probe);
    for (int i = 0; i < kTimedForwards; ++i) one_forward();
    ex.set_probe(nullptr);
    const std::map<std::string, double> tem = probe.medians();
    std::istringstream in(undecided);
    nlohmann::json measured = nlohmann::json::array();
    for (std::string g; std::getline(in, g);) {
      const double lib = library_gemm_us(g);
      if (rank != 0) continue;
      auto t = tem.find(g);
      if (t == tem.end()) internal_error("GEMM template " + g + " ran in the warm-up forward but not when timed");
      decided[g] = choose_gemm(g, t->second, lib);
      measured.push_back(choice_json(decided[g]));
    }
    // the cache keeps the measured choices of this environment, beside the
    // others it held (written atomically; a cache that cannot be written is
    // left alone: the choices are in the record anyway)
    if (rank == 0 && !path.empty()) {
      std::set<std::string> now;
      for (const nlohmann::json& e : measured) now.insert(text_of(e, "shape"));
      nlohmann::json& list = cache[key];
      if (!list.is_array()) list = nlohmann::json::array();
      for (const nlohmann::json& e : list)
        if (e.is_object() && !now.count(text_of(e, "shape"))) measured.push_back(e);
      list = measured;
      try {
        write_atomic(path, cache.dump(1) + "\n");
      } catch (const std::exception&) {
      }
    }
  }
  nlohmann::json table = nlohmann::json::array();
  for (const auto& [g, c] : decided) table.push_back(choice_json(c));
  table = nlohmann::json::parse(coll.exchange("gemm_choices", rank == 0 ? table.dump() : "").at(0));
  // a shape in a group chosen for the library runs the library call
  // wherever it appears (the library call wins a disagreement, as it wins a tie)
  std::set<std::string> templates, library;
  for (const nlohmann::json& e : table)
    for (const std::string& s : gemm_group_shapes(text_of(e, "shape")))
      (text_of(e, "choice") == "template" ? templates : library).insert(s);
  for (const std::string& s : library) templates.erase(s);
  ex.set_template_gemms(templates);
  return table;
}


}  // namespace fg
