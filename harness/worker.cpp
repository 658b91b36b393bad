// One rank: joins the process group, builds its shard of the inputs, runs
// the repro (warm-up, then the measured forwards), and writes its record.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>
#include <xxhash.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "fusion/errors.h"
#include "fusion/fault.h"
#include "fusion/passes/tp_rewrite.h"
#include "harness/digest.h"
#include "harness/environment.h"
#include "harness/forward.h"
#include "harness/ab_stats.h"
#include "harness/golden.h"
#include "harness/json_read.h"
#include "harness/placement.h"
#include "harness/rounds.h"
#include "harness/profile.h"
#include "harness/proofs.h"
#include "harness/run.h"
#include "kernels/collectives/collectives.h"
#include "kernels/cpu/gemm_choice.h"
#include "kernels/cpu/jit.h"
#include "kernels/cpu/runtime.h"
#include "kernels/cuda/gemm_tuning.h"
#include "fusion/fastpaths/catalog.h"
#include "kernels/fastpaths/sources.h"
#include "repros/registry.h"

namespace fg {

namespace {

void progress(const std::string& out_path, const std::string& step) {
  std::ofstream f(out_path + ".progress", std::ios::trunc);
  f << step << "\n";
}

// Touches `<out>.heartbeat` every 100 ms from its own thread, so the
// launcher can tell a rank that stopped answering (stopped, swapped out,
// wedged in the kernel: no heartbeat) from ranks that are only waiting on it
// in a collective (their threads still beat).
class Heartbeat {
 public:
  explicit Heartbeat(std::string path) : path_(std::move(path)) {
    beat();
    thread_ = std::thread([this] {
      while (!stop_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        beat();
      }
    });
  }
  ~Heartbeat() {
    stop_ = true;
    thread_.join();
  }

 private:
  void beat() {
    int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ::futimens(fd, nullptr);  // now
    ::close(fd);
  }
  std::string path_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string hash_text(const std::string& s) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(XXH64(s.data(), s.size(), 0)));
  return buf;
}

void maybe_fault(int rank, const std::string& out_path) {
  // FUSEGATE_FAULT=crash:R or hang:R makes rank R fail on purpose, to test
  // that the launcher stops the run and names the rank
  const std::string me = std::to_string(rank);
  if (fault_argument("crash") == me) std::abort();
  if (fault_argument("hang") == me) {
    progress(out_path, "hanging on purpose (FUSEGATE_FAULT)");
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));
  }
}

// Copies what the probed forward saw into the counted forward's launches.
// Returns "" or why the figures cannot be trusted: the probe lost records,
// the two forwards launched differently, a launch went unobserved, or (cuda)
// a generated kernel did not run as exactly one device kernel of its name.
std::string merge_probed(std::vector<LaunchRecord>* launches, const std::vector<LaunchRecord>& probed, bool cuda,
                         const std::string& incomplete) {
  if (!incomplete.empty()) return incomplete;
  if (probed.size() != launches->size())
    return "the probed forward launched " + std::to_string(probed.size()) + " kernels, the counted one " +
           std::to_string(launches->size());
  for (size_t i = 0; i < probed.size(); ++i) {
    const LaunchRecord& p = probed[i];
    LaunchRecord& l = (*launches)[i];
    if (p.name != l.name) return "launch " + std::to_string(i) + " is " + p.name + " in the probed forward, " + l.name;
    if (!p.probed) return "launch " + p.name + " was not observed";
    bool generated = p.kind == "poi" || p.kind == "red" || p.kind == "per" || p.kind == "tem";
    if (cuda && generated && (p.device_kernels.size() != 1 || p.device_kernels[0] != p.name))
      return "generated kernel " + p.name + " ran as " + std::to_string(p.device_kernels.size()) +
             " device kernels, not as itself: the trace cannot be matched to launches";
    l.probed = true;
    l.aten_ops = p.aten_ops;
    l.device_kernels = p.device_kernels;
  }
  return "";
}

// The per-kernel profile (--profile, harness/profile.h): the device kernels
// of kProfileSteps steps run back to back as the timed ones were, each row
// its kernel's median over the steps, matched in order with the counted
// forward's launches, against the device's measured copy bandwidth and GEMM
// peak.
constexpr int kProfileSteps = 20;

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

nlohmann::json profile_json(const std::vector<LaunchRecord>& launches, const std::vector<DeviceKernel>& ran,
                            int steps, int keep, const std::string& how) {
  double copy_gbps = 0, gemm_tflops = 0;
  cuda_peaks(&copy_gbps, &gemm_tflops);
  std::vector<ProfileLaunch> pl;
  for (const auto& l : launches) pl.push_back({l.name, l.kind, l.bytes, l.flops, l.device_kernels});
  std::string why;
  // the steps run only to bring the device back to its timed state are cut
  // off by the counted forward's kernel count, neither read nor checked
  // (one odd step among thousands would otherwise lose the profile); where
  // the count is unknown, by splitting the whole trace
  size_t per_forward = 0;
  for (const auto& l : launches) per_forward += l.device_kernels.size();
  std::vector<std::vector<DeviceKernel>> split;
  std::string cut_why;
  int read = steps;
  if (keep < steps && per_forward > 0) {
    const std::vector<DeviceKernel> tail = last_kernels_of(ran, per_forward * static_cast<size_t>(keep), &cut_why);
    if (cut_why.empty()) {
      split = split_steps(tail, keep, &why);
      read = keep;
    }
  }
  if (split.empty()) split = split_steps(ran, steps, &why, keep);
  const int per_step = why.empty() ? 1 : read;  // not split: one span of every forward it holds
  if (!cut_why.empty()) why = why.empty() ? cut_why : cut_why + "; " + why;
  nlohmann::json p = profile_json(pl, split, how, cuda_device_name(), copy_gbps, gemm_tflops, per_step);
  if (!why.empty()) p["note"] = p.contains("note") ? why + "; " + p["note"].get<std::string>() : why;
  return p;
}

// `fusegate ab`, one rank: the generic path, the fast path (forced) and the
// fp64 reference on the same inputs; the comparison goes into the record.
int ab_rank(const RunSpec& spec, const Repro& r, Collectives& coll, int rank,
            const std::map<std::string, at::Tensor>& inputs, const std::set<std::string>& replicated,
            const std::string& out_path) {
  const std::string& name = spec.ab_fast_path;
  progress(out_path, "A/B: generic path");
  AtenExecutor gen(&coll, rank, spec.world, spec.fusion, false, spec.backend);
  gen.set_replicated_inputs(replicated);
  gen.set_fast_paths(parse_fast_paths("none"), {});
  // each run gets its own copy: a repro that writes its inputs (copy_) must
  // not hand the next run other values
  auto fresh = [&] {
    std::map<std::string, at::Tensor> c;
    for (const auto& [k, v] : inputs) c[k] = v.clone();
    return c;
  };
  ForwardResult g = forward(r, spec.mode, gen, fresh(), false);
  const size_t generic_launches = gen.launches().size();
  progress(out_path, "A/B: fast path");
  AtenExecutor fast(&coll, rank, spec.world, spec.fusion, false, spec.backend);
  fast.set_replicated_inputs(replicated);
  FastPathProofs forced;
  forced.forced = {name};
  FastPathSelection sel = parse_fast_paths(name);
  fast.set_fast_paths(sel, forced);
  ForwardResult f = forward(r, spec.mode, fast, fresh(), false);
  progress(out_path, "A/B: fp64 reference");
  AtenExecutor ref(&coll, rank, spec.world, spec.fusion, /*upcast_fp64=*/true, spec.backend);
  ForwardResult x = forward(r, Mode::Eager, ref, fresh(), true);

  nlohmann::json j;
  j["rank"] = rank;
  j["fast_paths"] = fast_path_statuses(fast.graphs_run(), sel, forced.forced);
  j["kernel_count_generic"] = static_cast<int>(generic_launches);
  j["kernel_count_fast"] = static_cast<int>(fast.launches().size());
  j["source_hash"] = fast_path_source_hash(name, spec.backend);
  j["ab"] = nlohmann::json::array();
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    std::string out = i < r.outputs.size() ? r.outputs[i] : "out" + std::to_string(i);
    j["ab"].push_back(ab_compare(out, r.replicated_outputs, g.outputs[i], f.outputs[i], x.outputs[i]));
  }
  write_atomic(out_path, j.dump(2) + "\n");
  progress(out_path, "done");
  coll.barrier();
  return 0;
}

// A sharded output whole: every rank's share, gathered in rank order and
// put back block by block.
at::Tensor gather_shards(Collectives& coll, const at::Tensor& local, const Sharding& shard) {
  const int64_t d = shard.dim, w = coll.world();
  // all_gather stacks along dim 0: move the sharded dim there and back
  std::vector<at::Tensor> pieces = coll.all_gather(local.movedim(d, 0).contiguous()).chunk(w, 0);
  std::vector<at::Tensor> parts;
  int64_t at = 0;
  for (int64_t full : shard.block_sizes(local.size(d) * w)) {
    for (const at::Tensor& p : pieces) parts.push_back(p.narrow(0, at, full / w));
    at += full / w;
  }
  return at::cat(parts, 0).movedim(0, d).contiguous();
}

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
std::optional<nlohmann::json> run_golden(const RunSpec& spec) {
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
    std::optional<nlohmann::json> g = run_golden(spec);
    // blessed on this GPU model: one of its environments names it (an
    // environment is added to a golden only where its choices agreed)
    bool this_gpu = false;
    if (const nlohmann::json* envs = g ? field(*g, "environments") : nullptr; envs && envs->is_object())
      for (const auto& [fp, env] : envs->items()) this_gpu = this_gpu || text_of(env, "gpu") == cuda_device_name();
    if (this_gpu) {
      for (const auto& [id, rank] : ranks_by_id(*g)) {
        if (id != 0) continue;
        for (nlohmann::json e : array_of(*rank, "gemm_algos"))
          if (e.is_object() && e.contains("algo")) {
            e["source"] = "golden";
            known.push_back(e);
          }
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
// and it was faster in every round (harness/rounds.h), and every rank
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

// -- residual placement (max-autotune on cuda; harness/placement.h)

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
    std::optional<nlohmann::json> golden;
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
  std::set<std::string> apart = apart_sites(known);
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

// -- GEMM template or library call (max-autotune on cpu; kernels/cpu/gemm_choice.h)

nlohmann::json choice_json(const GemmChoice& c) {
  nlohmann::json e = {{"shape", c.shape}, {"choice", c.choice}, {"source", c.source}};
  if (c.template_us > 0) e["template_us"] = std::round(c.template_us * 10) / 10;
  if (c.library_us > 0) e["library_us"] = std::round(c.library_us * 10) / 10;
  return e;
}

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
  const std::string key = "cpu " + environment(Backend::Cpu).value("fingerprint", std::string());
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
    std::optional<nlohmann::json> golden;
    try {
      golden = run_golden(spec);
    } catch (const UserError&) {
      // a golden that cannot be read decides nothing here: check reports it
      // before it runs, and bless replaces it
    }
    if (golden)
      for (const auto& [id, r] : ranks_by_id(*golden))
        if (id == 0)
          for (const nlohmann::json& e : array_of(*r, "gemm_choices"))
            if (e.is_object()) take(e, "golden");
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

}  // namespace

FastPathProofs fast_path_proofs(const std::string& golden_dir, Backend backend, int world, bool check_gpu) {
  FastPathProofs p;
  if (golden_dir.empty()) return p;
  std::vector<std::string> names;
  for (const auto& f : fast_path_catalog()) names.push_back(f.name);
  const std::string gpu = check_gpu && backend == Backend::Cuda ? cuda_device_name() : "";
  auto states = read_proofs(golden_dir, backend_name(backend), world, names,
                            [&](const std::string& n) { return fast_path_source_hash(n, backend); }, gpu,
                            backend == Backend::Cpu ? jit_compiler_version() : "");
  for (const auto& [name, st] : states) {
    if (!st.invalid.empty()) p.invalid[name] = st.invalid;
    else if (st.present) p.shape_classes[name] = st.shape_classes;
  }
  return p;
}

nlohmann::json fast_path_statuses(const std::vector<const CompiledGraphRt*>& graphs, const FastPathSelection& sel,
                                  const std::set<std::string>& forced) {
  std::map<std::string, std::pair<std::string, std::set<std::string>>> by_name;
  for (const auto& f : fast_path_catalog())
    by_name[f.name].first = sel.asks(f.name) || forced.count(f.name) ? kFastPathNotMatched : kFastPathNotSelected;
  for (const CompiledGraphRt* g : graphs)
    for (const auto& [name, st] : g->prog.fast_paths) {
      auto& [status, classes] = by_name[name];
      if (fast_path_status_order(st.status) < fast_path_status_order(status)) status = st.status;
      classes.insert(st.shape_classes.begin(), st.shape_classes.end());
    }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, st] : by_name)
    out.push_back({{"name", name}, {"status", st.first}, {"shape_classes", st.second}});
  return out;
}

int worker_main(const RunSpec& spec, int rank, int port, const std::string& out_path) {
  at::set_num_threads(1);  // ranks share the cores; one thread keeps results deterministic
  Heartbeat heartbeat(out_path + ".heartbeat");
  progress(out_path, "joining the process group");
  bool cuda = spec.backend == Backend::Cuda;
  if (cuda) cuda_select_device(rank - spec.first_rank());  // before NCCL: one GPU of this node a rank
  Collectives coll(spec.master_addr, port, rank, spec.world, spec.timeout_s, cuda ? "nccl" : "gloo",
                   spec.store_prefix);
  progress(out_path, "joined");
  maybe_fault(rank, out_path);
  // FUSEGATE_FAULT=diverge_fusion:R: rank R alone compiles with another
  // fusion rule, as a rank of another version would (the agreement check
  // before the first collective must catch it)
  if (fault_argument("diverge_fusion") == std::to_string(rank)) fault_enable("refuse_fusion", "reduction");

  auto repros = all_repros(spec.fg_dirs);
  const Repro* r = find_repro(repros, spec.repro);
  if (!r) user_error("unknown repro " + spec.repro);
  const Mode mode = spec.mode;
  const FusionPolicy policy = spec.fusion;

  progress(out_path, "warm-up forward");
  AtenExecutor ex(&coll, rank, spec.world, policy, false, spec.backend);
  std::map<std::string, at::Tensor> inputs;
  const std::vector<InputSpec> specs = r->inputs(spec.world);
  for (const auto& s : specs) inputs[s.name] = make_input(r->name, s, rank, spec.world).to(ex.device());
  ex.set_replicated_inputs(replicated_inputs(specs));
  if (!spec.ab_fast_path.empty()) return ab_rank(spec, *r, coll, rank, inputs, replicated_inputs(specs), out_path);
  FastPathProofs proofs = fast_path_proofs(spec.golden_dir, spec.backend, spec.world, true);
  if (spec.nnodes > 1)
    for (const auto& f : fast_path_catalog())
      if (f.one_host)
        proofs.blocked[f.name] = "needs every rank on one host, and the ranks span " + std::to_string(spec.nnodes) +
                                 " nodes";
  ex.set_fast_paths(spec.fast_paths, proofs);
  // max-autotune on cuda chooses GEMM algorithms by measurement: a forward
  // after the residual placement notes the shapes (and runs cuBLASLt's top-1)
  const bool tune_gemms = spec.backend == Backend::Cuda && policy == FusionPolicy::MaxAutotune;
  // The step the timings time: a forward that is one compiled graph is
  // replayed behind its guards, as a compiled function is called; otherwise
  // through capture. Of a forward just run (its result and graphs); the
  // bool: whether it is one compiled graph.
  auto timed_step = [&](const ForwardResult& fr, const std::vector<const CompiledGraphRt*>& run) {
    const CompiledGraphRt* one = (mode != Mode::Eager && fr.graph_count == 1 && run.size() == 1) ? run[0] : nullptr;
    std::vector<at::Tensor> ordered;
    if (one)
      for (int id : one->prog.captured.input_ids()) ordered.push_back(inputs.at(one->prog.captured.node(id).name));
    std::function<void()> step = [&ex, &r, &inputs, mode, one, ordered] {
      if (one) {
        ex.begin_forward();
        ex.replay(*one, ordered);
      } else {
        forward(*r, mode, ex, inputs, false);
      }
    };
    return std::make_pair(step, one != nullptr);
  };
  ForwardResult warm = forward(*r, mode, ex, inputs, false);
  // max-autotune on cuda: each TP residual hoist kept or left apart, by
  // what the forward measures (harness/placement.h); before the GEMM
  // algorithms, which are chosen for the shapes of the program that runs
  std::optional<nlohmann::json> placement;
  if (cuda && policy == FusionPolicy::MaxAutotune && mode != Mode::Eager) {
    progress(out_path, "choosing residual placement");
    // Each round's 30 timed forwards come after 250 ms of the same forward
    // back to back: timed from a cool start, 30 forwards of seq 2048 fell
    // across the GPU's settling at its power cap, the medians moved 5-10%
    // between processes and a golden kept the add apart where, at the
    // sustained state, the hoist is 1-3% faster (H100, bench/RESULTS.md,
    // tenth step). The count is rank 0's, so every rank runs as many
    // collectives.
    int round_no = 0;
    auto time_forward = [&](const std::set<std::string>& apart, std::string* how) {
      constexpr int kIters = 30;        // forwards a round
      constexpr double kWarmMs = 250;   // untimed, back to back, before them
      ex.set_residuals_apart(apart);
      const ForwardResult fr = forward(*r, mode, ex, inputs, false);  // compiles a placement the first time
      const auto [step, one] = timed_step(fr, ex.graphs_run());
      const bool graph = spec.cuda_graphs && one;
      const int warm_steps = agreed_warm_steps(coll, "residual_placement/warm/" + std::to_string(round_no++), kWarmMs,
                                               step_pace_ms(ex, step, 3, graph));
      std::string note;
      std::vector<double> t = cuda_time(kIters, step, graph, &note, nullptr, 1, warm_steps);
      *how = (graph ? note : "host launches") + "; " + std::to_string(static_cast<int>(kWarmMs)) +
             " ms of untimed forwards before each round";
      return t;
    };
    placement = choose_residual_placement(spec, coll, rank, ex, time_forward);
    if (placement->empty()) placement.reset();
  }
  if (tune_gemms) {
    // the GEMMs of the program that runs: a forward that notes their shapes
    gemm_tuning_start();
    warm = forward(*r, mode, ex, inputs, false);
    progress(out_path, "choosing GEMM algorithms");
    const auto [step, one_graph] = timed_step(warm, ex.graphs_run());
    choose_gemm_algos(spec, coll, rank, ex, step, spec.cuda_graphs && one_graph);
  }
  // max-autotune on cpu: each GEMM template against the library call, by
  // measurement; the graphs compile again with the choice
  std::optional<nlohmann::json> gemm_choices;
  if (spec.backend == Backend::Cpu && policy == FusionPolicy::MaxAutotune && mode != Mode::Eager) {
    progress(out_path, "choosing GEMM templates or library calls");
    gemm_choices = choose_gemm_templates(spec, coll, rank, ex, [&] { forward(*r, mode, ex, inputs, false); });
    forward(*r, mode, ex, inputs, false);  // compiles with the choice: the measured forward is warm
  }
  // FUSEGATE_FAULT=perturb:NODE names a scheduler node of this run's graphs
  // (under FUSEGATE_BISECT limits the graphs may differ: not checked there)
  if (const std::string target = fault_argument("perturb"); !target.empty() && !std::getenv("FUSEGATE_BISECT")) {
    bool found = false;
    for (const CompiledGraphRt* g : ex.graphs_run())
      for (const auto& sn : g->prog.lowered.nodes) found = found || sn.name == target;
    if (!found)
      user_error("FUSEGATE_FAULT=perturb:" + target + ": " + r->name + " has no scheduler node " + target +
                 " in mode " + mode_letter(mode) + " (the ledger's names: fusegate explain " + r->name + ")");
  }
  coll.reset_sequence();
  progress(out_path, "measured forward");
  // one forward through capture: what it launches, graphs and breaks
  ForwardResult res = forward(*r, mode, ex, inputs, false);
  std::vector<LaunchRecord> launches = ex.launches();
  std::vector<const CompiledGraphRt*> graphs_run = ex.graphs_run();
  std::string collectives = coll.sequence();

  // timing (timed_step): the compiled graph replayed behind its guards, or
  // each forward through capture
  const auto [body, one] = timed_step(res, graphs_run);
  std::vector<double> times;
  std::string timing_note = one ? "compiled graph replayed behind its guards" : "capture each forward";
  // warm clocks and caches before timing; --warmup-ms: as many more untimed
  // forwards as fill it at the pace of these, run as the timed ones run (on
  // cuda, replays of its CUDA graph where the timings replay one: before
  // 2026-11-27 the pace was the host launches', and a replayed h4096 forward
  // at world size 2 on two H100 got 1893-4411 forwards of 0.49 ms for 2000
  // ms, 0.9-2.2 s, and was still getting faster through its timings)
  const double pace = step_pace_ms(ex, body, std::min(10, spec.iters), cuda && spec.cuda_graphs && one);
  int warm_steps = 0;
  if (spec.warmup_ms > 0) {
    warm_steps = agreed_warm_steps(coll, "warmup_steps", spec.warmup_ms, pace);
    timing_note += "; after " + std::to_string(warm_steps) + " untimed forwards (--warmup-ms " +
                   std::to_string(spec.warmup_ms) + ")";
  }
  // --profile: the trace starts after the timings, and starting it leaves
  // the device idle a moment: enough for a GPU at its power cap to come
  // off it, so that the traced steps ran at a higher clock than the timed
  // ones (h4096 on the H100: a 0.697 ms span against 0.797 ms timed;
  // bench/RESULTS.md, eleventh step). After --warmup-ms, a quarter of the
  // warm-up (at most about 500 ms of it) runs again under the trace,
  // untimed and unread, before the steps that are read.
  const int profile_steps = std::min(kProfileSteps, std::max(1, spec.iters));
  const int trace_warm_steps = warmup_share(warm_steps, spec.warmup_ms, 4, 500);
  std::vector<DeviceKernel> profiled;
  // after --warmup-ms, the energy of half as many forwards again, run as the
  // timed ones right after them: at the power cap a forward's time is about
  // its energy over the cap, so the record says what each side spent (at
  // most about 1 s of them: about 10 of the energy counter's steps, between
  // which the power is read, kernels/cuda/energy_steps.h)
  EnergyWindow energy;
  energy.steps = warmup_share(warm_steps, spec.warmup_ms, 2, 1000);
  if (cuda) {
    std::string note;
    times = cuda_time(std::max(1, spec.iters), body, spec.cuda_graphs && one, &note,
                      spec.profile.empty() ? nullptr : &profiled, trace_warm_steps + profile_steps, warm_steps,
                      &energy);
    if (spec.cuda_graphs) timing_note += "; " + note;
  } else {
    for (int i = 0; i < warm_steps; ++i) body();
    for (int i = 0; i < std::max(1, spec.iters); ++i) {
      auto t0 = std::chrono::steady_clock::now();
      body();
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }

  // What each launch really runs (device kernels on cuda, dispatched ATen
  // operators on cpu), from one more forward under the probe. It comes after
  // the timed ones: CUPTI's overhead outlives its tracing and would slow them.
  progress(out_path, "probed forward");
  std::string probe_why;
  std::vector<std::string> between;
  {
    std::unique_ptr<LaunchProbe> probe = cuda ? make_device_kernel_probe(&probe_why) : make_aten_op_probe();
    if (probe) {
      ex.set_probe(probe.get());
      forward(*r, mode, ex, inputs, false);
      ex.set_probe(nullptr);
      probe_why = merge_probed(&launches, ex.launches(), cuda, probe->incomplete());
      between = probe->between();
      for (const auto& l : ex.outside_launches())
        for (const auto& k : l.device_kernels) between.push_back(l.name + ": " + k);
    }
  }
  if (cuda && !spec.profile.empty() && rank == 0) {
    progress(out_path, "profile");
    nlohmann::json p = profile_json(
        launches, profiled, trace_warm_steps + profile_steps, profile_steps,
        trace_warm_steps > 0 ? timing_note + "; traced after " + std::to_string(trace_warm_steps) +
                                   " more untimed forwards under the trace"
                             : timing_note);
    p["forward_times_ms"] = times;  // the timed forwards, in the order they ran
    p["repro"] = spec.repro;
    p["mode"] = mode_letter(spec.mode);
    p["fusion"] = policy_name(spec.fusion);
    p["world_size"] = spec.world;
    if (!probe_why.empty())
      p["note"] = "device kernels not counted: " + probe_why +
                  (p.contains("note") ? "; " + p["note"].get<std::string>() : std::string());
    write_atomic(spec.profile, p.dump(2) + "\n");
  }


  nlohmann::json j;
  j["rank"] = rank;
  j["graph_count"] = res.graph_count;
  j["graph_break_count"] = static_cast<int>(res.breaks.size());
  j["breaks"] = nlohmann::json::array();
  for (const auto& b : res.breaks) j["breaks"].push_back({{"reason", b.reason}, {"location", b.loc.str()}});
  // what the repro declares of mode C (harness/compare.h invariant_findings)
  if (mode == Mode::Compiled && !r->expected_breaks.empty()) j["expected_breaks"] = r->expected_breaks;
  if (r->reshaped_inputs && mode != Mode::Eager) {
    // recompiles as a driven invariant: the same forward, same shapes, then
    // a changed sequence length (the record's `recompiles`)
    progress(out_path, "recompile check");
    const int before = ex.recompile_count();
    forward(*r, mode, ex, inputs, false);
    const int same = ex.recompile_count() - before;
    std::map<std::string, at::Tensor> reshaped;
    for (const auto& s : r->reshaped_inputs(spec.world))
      reshaped[s.name] = make_input(r->name, s, rank, spec.world).to(ex.device());
    forward(*r, mode, ex, reshaped, false);
    j["recompiles"] = {{"same_shapes", same},
                       {"changed_shapes", ex.recompile_count() - before - same},
                       {"guard", ex.last_failed_guard()}};
  }
  j["recompile_count"] = ex.recompile_count();
  j["kernel_count"] = static_cast<int>(launches.size());
  nlohmann::json by_kind = {{"poi", 0}, {"red", 0}, {"per", 0}, {"tem", 0}, {"extern", 0}, {"collective", 0},
                            {"fast_path", 0}};
  j["kernels"] = nlohmann::json::array();
  for (const auto& l : launches) {
    by_kind[l.kind] = by_kind[l.kind].get<int>() + 1;
    j["kernels"].push_back({{"name", l.name}, {"kind", l.kind}, {"ops", l.ops}, {"graph", l.graph}});
  }
  j["kernel_count_by_kind"] = by_kind;
  // what really ran: the figure that sees an extern launching 15 kernels
  if (cuda) {
    if (probe_why.empty()) {
      int dev = 0;
      for (size_t i = 0; i < launches.size(); ++i) {
        dev += static_cast<int>(launches[i].device_kernels.size());
        j["kernels"][i]["device_kernels"] = launches[i].device_kernels;
      }
      if (!between.empty()) j["device_kernels_outside_launches"] = between;
      j["device_kernel_count"] = dev + static_cast<int>(between.size());
    } else {
      j["device_kernels_not_counted"] = probe_why;
    }
  } else if (!probe_why.empty()) {
    j["aten_ops_not_counted"] = probe_why;
  } else {
    int calls = 0;
    // externs and collectives: a generated kernel dispatches no ATen
    // operator (its output's allocation is fusegate's, not the kernel's)
    for (size_t i = 0; i < launches.size(); ++i) {
      if (launches[i].aten_ops.empty() || (launches[i].kind != "extern" && launches[i].kind != "collective")) continue;
      j["kernels"][i]["aten_ops"] = launches[i].aten_ops;
      for (const auto& [name, n] : launches[i].aten_ops) calls += n;
    }
    j["aten_op_count"] = calls;
  }
  j["fast_paths"] = fast_path_statuses(graphs_run, spec.fast_paths, {});
  j["ledger"] = nlohmann::json::array();
  std::string decisions;
  int gi = 0;
  for (const CompiledGraphRt* g : graphs_run) {
    for (const auto& e : g->prog.schedule.ledger) {
      j["ledger"].push_back({{"graph", gi},
                             {"nodes", {e.first, e.second}},
                             {"score", {e.score[0], e.score[1], e.score[2], e.score[3]}},
                             {"outcome", e.fused ? "fused" : "rejected"},
                             {"reason", reject_code(e.reason)},
                             {"round", e.round}});
      if (!e.source.empty()) j["ledger"].back()["source"] = e.source;
      decisions += e.first + "|" + e.second + "|" + (e.fused ? "1" : "0") + ";";
    }
    // codegen variants (FUSEGATE_BISECT=codegen_variants): the generated
    // kernels written in chunks of 8, in launch order per graph (cuda only)
    for (const Kernel& k : g->prog.program.kernels) {
      if (!k.chunked) continue;
      std::string nodes;
      LedgerEntry where;  // for its sorted, de-duplicated source lines
      for (int n : k.nodes) {
        const SchedNode& sn = g->prog.lowered.nodes[static_cast<size_t>(n)];
        nodes += (nodes.empty() ? "" : "+") + sn.name;
        where.add_source(sn.lines);
      }
      nlohmann::json v = {{"graph", gi}, {"kernel", k.name}, {"nodes", {nodes}}, {"variant", "chunked"}};
      if (!where.source.empty()) v["source"] = where.source;
      j["codegen_variants"].push_back(v);
    }
    ++gi;
  }
  // GEMM algorithm choices (max-autotune on cuda): made at run time per
  // shape, after the compile, so kept beside the ledger rather than in it
  if (tune_gemms) j["gemm_algos"] = nlohmann::json::parse(gemm_tuning_record());
  if (gemm_choices) j["gemm_choices"] = *gemm_choices;
  if (placement) j["residual_placement"] = *placement;
  std::string graphs;
  for (const auto& h : res.graph_hashes) graphs += h + ";";
  j["hashes"] = {{"graphs", hash_text(graphs)}, {"decisions", hash_text(decisions)}, {"collectives", hash_text(collectives)}};

  j["outputs"] = nlohmann::json::array();
  for (size_t i = 0; i < res.outputs.size(); ++i) {
    std::string name = i < r->outputs.size() ? r->outputs[i] : "out" + std::to_string(i);
    const Sharding shard = i < r->output_shards.size() ? r->output_shards[i] : Sharding{};
    j["outputs"].push_back({{"name", name},
                            {"replicated", r->replicated_outputs && shard.replicated()},
                            {"exact", exact_digest(res.outputs[i])},
                            {"fingerprint", fingerprint(res.outputs[i])}});
    // a shard: the whole output, gathered from every rank, is what compares
    // with world size 1 (every rank gathers, in output order)
    if (r->replicated_outputs && !shard.replicated() && spec.world > 1) {
      at::Tensor whole = gather_shards(coll, res.outputs[i].to(ex.device()), shard).cpu();
      j["outputs"].back()["gathered"] = {
          {"shard", shard.dim}, {"exact", exact_digest(whole)}, {"fingerprint", fingerprint(whole)}};
    }
  }
  if (mode != Mode::Eager) {
    // the references: eager on the same inputs, and the same program in fp64
    progress(out_path, "reference runs");
    AtenExecutor eager_ex(&coll, rank, spec.world, policy, false, spec.backend);
    ForwardResult eager = forward(*r, Mode::Eager, eager_ex, inputs, false);
    AtenExecutor fp64_ex(&coll, rank, spec.world, policy, /*upcast_fp64=*/true, spec.backend);
    ForwardResult fp64 = forward(*r, Mode::Eager, fp64_ex, inputs, true);
    nlohmann::json acc = {{"status", "pass"}, {"outputs", nlohmann::json::array()}};
    for (size_t i = 0; i < res.outputs.size(); ++i) {
      nlohmann::json a = judge_accuracy(j["outputs"][i]["name"], res.outputs[i], eager.outputs[i], fp64.outputs[i]);
      if (!a["pass"].get<bool>()) acc["status"] = "fail";
      acc["outputs"].push_back(a);
    }
    j["accuracy"] = acc;
  }
  std::sort(times.begin(), times.end());
  j["times_ms"] = {{"compile", ex.compile_ms()},
                   {"forward_median", times[times.size() / 2]},
                   {"forward_min", times.front()},
                   {"iters", static_cast<int>(times.size())},
                   {"how", timing_note + (cuda ? "; CUDA events" : "; host clock")}};
  if (cuda && energy.steps > 0) {
    nlohmann::json e = {{"forwards", energy.steps}};
    if (energy.why.empty()) {
      e["ms"] = energy.ms;
      e["mj_per_forward"] = energy.watts * energy.ms / energy.steps;  // W x ms = mJ
      e["watts"] = energy.watts;
      // the span of the counter's steps the power was read over
      e["read_over_ms"] = energy.read_over_ms;
      e["counter_periods"] = energy.counter_periods;
      // a figure the device did not give is left out, never written as 0
      if (energy.power_limit_w > 0) e["power_limit_w"] = energy.power_limit_w;
      if (energy.sm_mhz > 0) e["sm_mhz"] = energy.sm_mhz;
      if (!energy.clock_reasons.empty()) e["clock_reasons"] = energy.clock_reasons;
    } else {
      e["why"] = energy.why;  // never a figure that was not read
    }
    j["times_ms"]["energy"] = e;
  }
  write_atomic(out_path, j.dump(2) + "\n");
  progress(out_path, "done");
  coll.barrier();
  return 0;
}

}  // namespace fg
