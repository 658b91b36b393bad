// fusegate bisect: the one fusion decision (or rewrite, or fast path site)
// that turns a repro's outputs wrong. Good and bad are the run's accuracy
// check (every output of every rank against its fp64 run). The search, in
// runs:
//   1. as configured: good -> nothing to bisect (exit 0);
//   2. every switchable subsystem off (FUSEGATE_BISECT=...:0): bad -> no
//      subsystem is to blame (capture, lowering, an extern or a collective);
//   3. subsystems switched on one by one in pipeline order (those the full
//      run applied at all): the first whose enabling turns good into bad;
//   4. a binary search over its applications, in ledger order: the first k
//      that is bad names the k-th application as the culprit.
// At most subsystems + ceil(log2(applications)) + 2 runs. Every rank reads
// the same FUSEGATE_BISECT (fusion/bisect.h); nothing is written but --json.
#include <stdlib.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "fusion/bisect.h"
#include "fusion/errors.h"
#include "fusion/fault.h"
#include "harness/cli/commands.h"
#include "harness/record/compare.h"
#include "harness/record/golden.h"
#include "harness/record/files.h"
#include "harness/record/json_read.h"
#include "harness/run/run.h"

namespace fg {

using nlohmann::json;

namespace {

// One application of a subsystem: a ledger entry, or a kernel written in
// another variant (codegen_variants, not a fusion decision: RECORD.md).
struct Application {
  const record::LedgerEntry* entry = nullptr;
  const record::CodegenVariant* variant = nullptr;
  const record::StageApplication* stage = nullptr;  // a decomposition or a lowering
  std::vector<std::string> nodes() const {
    return entry ? entry->nodes : variant ? variant->nodes : std::vector<std::string>{stage->node};
  }
  // its repro source lines, "file:line (fn)"
  std::vector<std::string> source() const {
    const auto& s = entry ? entry->source : variant ? variant->source : stage->source;
    return s ? *s : std::vector<std::string>{};
  }
  json to_json() const {
    return entry ? record::part_to_json(*entry) : variant ? record::part_to_json(*variant) : record::part_to_json(*stage);
  }
};

// The ledger reason of one application of each subsystem.
bool applies(const record::LedgerEntry& e, const std::string& subsystem) {
  const std::string reason = e.reason.value_or("");
  if (e.outcome != "fused") return false;
  if (subsystem == "fast_paths") return reason == "fast_path_used";
  if (subsystem == "gemm_epilogue") return reason == "gemm_epilogue";
  if (subsystem == "tp_rewrite") return reason == "tp_residual_hoisted";
  if (subsystem == "decisions") return reason.empty();
  return false;
}

std::vector<Application> applications(const record::RunRecord& rec, const std::string& subsystem) {
  std::vector<Application> out;
  auto ranks = record::ranks_by_id(rec);
  if (ranks.empty()) return out;
  const record::RankRecord& r = *ranks.begin()->second;
  if (subsystem == "codegen_variants") {
    if (r.codegen_variants)
      for (const record::CodegenVariant& v : *r.codegen_variants) out.push_back({nullptr, &v});
    return out;
  }
  if (subsystem == "decompositions" || subsystem == "lowerings") {
    if (r.stage_applications)
      for (const record::StageApplication& a : *r.stage_applications)
        if (a.stage == subsystem) out.push_back({nullptr, nullptr, &a});
    return out;
  }
  if (r.ledger)
    for (const record::LedgerEntry& e : *r.ledger)
      if (applies(e, subsystem)) out.push_back({&e, nullptr});
  return out;
}

std::string nodes_text(const Application& a) { return join(a.nodes(), "+"); }

std::string number_text(const std::optional<long long>& n) { return n ? std::to_string(*n) : ""; }
// a figure as the record writes it ("null" for NaN), "" when absent
std::string figure_text(const std::optional<double>& x) { return x ? json(*x).dump() : ""; }

std::string limits_text(const std::map<std::string, long long>& limits) {
  std::string s;
  for (const auto& sub : bisect_subsystems()) {
    auto it = limits.find(sub);
    if (it != limits.end()) s += (s.empty() ? "" : ",") + sub + ":" + std::to_string(it->second);
  }
  return s;
}

std::string describe(const Application& a) {
  record::LedgerEntry at_of;
  at_of.source = a.source();
  const std::string at = ledger_source_text(at_of);
  if (a.stage)
    return (a.stage->stage == "decompositions" ? "the decomposition of " + a.stage->rule + " at "
                                               : "the " + a.stage->rule + " lowered into generated code at ") +
           a.stage->node + " (graph " + number_text(a.stage->graph) + ")" + (at.empty() ? "" : "\n  repro source: " + at);
  if (a.variant)
    return "kernel " + a.variant->kernel + " (nodes " + nodes_text(a) + ", graph " + number_text(a.variant->graph) +
           ") written " + (a.variant->variant == "chunked" ? "in chunks of 8 (16-byte vector loads and stores)"
                           : a.variant->variant == "simd" ? "with its loop marked for vectorization (omp simd)"
                                                          : a.variant->variant) +
           (at.empty() ? "" : "\n  repro source: " + at);
  const record::LedgerEntry& e = *a.entry;
  return ledger_entry_text(e, false) + " (graph " + number_text(e.graph) + ", round " + number_text(e.round) +
         (e.reason.value_or("").empty() ? "" : ", " + *e.reason) + ")" + (at.empty() ? "" : "\n  repro source: " + at);
}

// The rule of a stage an application is one use of: what bisect names
// beside the stage.
std::string rule_of(const Application& a, const std::string& subsystem) {
  if (a.stage) return a.stage->rule;
  if (a.variant) return a.variant->variant == "simd" ? "vectorized loops (omp simd)" : "kernels written in chunks of 8";
  if (subsystem == "fast_paths")
    for (const std::string& n : a.nodes())
      if (n.rfind("fast_path ", 0) == 0) return "fast path " + n.substr(10);
  if (subsystem == "gemm_epilogue") return "GELU folded into its GEMM";
  if (subsystem == "tp_rewrite") return "residual add hoisted onto rank 0's GEMM";
  return "fusion decision";
}

// The text of the culprit's repro lines, read where the record's paths lead:
// as written (absolute, or relative to here), else beside the golden
// directory (C++ repros are named from the project root: "repros/x.cpp").
std::string source_excerpt(const Application& a, const std::string& golden_dir, const std::vector<std::string>& fg_dirs) {
  std::string out;
  int shown = 0;
  for (const std::string& x : a.source()) {
    SourceLoc l;
    if (shown == 8 || !SourceLoc::parse(x, &l)) continue;
    const std::string& file = l.file;
    const long want = l.line;
    std::filesystem::path path = file;
    if (!std::filesystem::exists(path)) path = std::filesystem::path(golden_dir).parent_path() / file;
    // a .fg repro of a --repro-dir is named "<folder>/x.fg"
    // (or, for `--graph FILE.fg`, the file itself: its folder's parent)
    for (const auto& d : fg_dirs) {
      const std::filesystem::path dir =
          std::filesystem::path(d).extension() == ".fg" ? std::filesystem::path(d).parent_path() : std::filesystem::path(d);
      if (!std::filesystem::exists(path)) path = dir.parent_path() / file;
    }
    std::ifstream in(path);
    std::string text;
    for (long n = 1; in && std::getline(in, text); ++n)
      if (n == want) {
        out += "    " + file + ":" + std::to_string(want) + " | " + text.substr(text.find_first_not_of(' ') == std::string::npos ? 0 : text.find_first_not_of(' ')) + "\n";
        ++shown;
        break;
      }
  }
  return out;
}

// The kernel that holds the culprit's nodes and its source, from `explain`
// run under the bad limits.
std::string culprit_kernel(const RunSpec& spec, const std::string& env, const Application& entry) {
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string cmd = "FUSEGATE_BISECT='" + env + "' '" + self + "' explain " + spec.repro + " --mode " +
                    mode_letter(spec.mode) + " --world-size " + std::to_string(spec.world) + " --backend " +
                    backend_name(spec.backend) + " --fusion " + policy_name(spec.fusion) + " --fast-paths " +
                    spec.fast_paths.text() + " --golden-dir '" + spec.golden_dir + "'";
  for (const auto& d : spec.fg_dirs) cmd += " --repro-dir '" + d + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen((cmd + " 2>/dev/null").c_str(), "r"), pclose);
  if (!p) return "";
  std::string text;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p.get())) text += buf.data();
  // the culprit's nodes as the ledger names them: scheduler groups
  // ("buf2+buf4") for fusion decisions, "fast_path NAME" for a fast path
  std::set<std::string> names;
  std::string fast;
  for (const std::string& t : entry.nodes()) {
    if (t.rfind("fast_path ", 0) == 0) fast = "fastpath_" + t.substr(10);
    std::stringstream ss(t);
    std::string part;
    while (std::getline(ss, part, '+'))
      if (part.rfind("buf", 0) == 0 || part.rfind("op", 0) == 0) names.insert(part);
  }
  std::istringstream in(text);
  std::string line, kernel;
  while (std::getline(in, line)) {
    const size_t at = line.find("nodes:");
    if (at == std::string::npos) continue;
    const std::string head = line.substr(line.find_first_not_of(' '));
    std::set<std::string> in_kernel;
    std::stringstream ss(line.substr(at + 6));
    std::string nm;
    while (ss >> nm) in_kernel.insert(nm);
    bool all = !names.empty();
    for (const auto& x : names) all = all && in_kernel.count(x);
    if (all || (!fast.empty() && head.rfind(fast, 0) == 0)) {
      kernel = line;
      break;
    }
  }
  if (kernel.empty()) return "";
  std::string name = kernel.substr(kernel.find_first_not_of(' '));
  name = name.substr(0, name.find(' '));
  std::string out = "  kernel: " + kernel.substr(kernel.find_first_not_of(' ')) + "\n";
  const size_t at = text.find("// " + name + ":");
  if (at != std::string::npos) {
    size_t end = text.find("\n\n", at);
    out += "  its source:\n" + text.substr(at, end == std::string::npos ? std::string::npos : end - at) + "\n";
  }
  return out;
}

}  // namespace

int cmd_bisect(const RunSpec& base, const std::string& json_out) {
  if (base.mode == Mode::Eager) user_error("bisect searches compiled graphs: use --mode B or C");
  validate_spec(base);
  const auto& subs = bisect_subsystems();
  int step = 0;
  std::map<std::string, size_t> counts;
  json steps = json::array();
  auto run = [&](const std::map<std::string, long long>& limits, int bound, record::RunRecord* record) -> int {
    const std::string env = limits_text(limits);
    if (env.empty()) unsetenv("FUSEGATE_BISECT");
    else setenv("FUSEGATE_BISECT", env.c_str(), 1);
    RunOutcome o = launch(base);
    unsetenv("FUSEGATE_BISECT");
    ++step;
    // bad input inside a rank (a fault naming no node) is bad input of the
    // bisection, never a commit to skip
    if (o.exit_code == 2) user_error(o.message);
    if (o.exit_code != 0) {
      std::cout << "step " << step << " of at most " << bound << ": FUSEGATE_BISECT=" << (env.empty() ? "(none)" : env)
                << ": cannot test (" << o.message << ")\n";
      return -1;
    }
    bool good = true;
    std::string why;
    for (const auto& [rank, r] : record::ranks_by_id(o.record)) {
      if (r->accuracy && r->accuracy->status.value_or("") != "pass") {
        good = false;
        if (why.empty())
          for (const record::AccuracyOutput& a : r->accuracy->outputs)
            if (!a.pass.value_or(true))
              why = "rank " + std::to_string(rank) + " output " + a.name + ": rmse vs fp64 " +
                    figure_text(a.rmse_vs_fp64) + ", eager's " + figure_text(a.eager_rmse_vs_fp64);
      }
    }
    std::cout << "step " << step << " of at most " << bound << ": FUSEGATE_BISECT=" << (env.empty() ? "(none)" : env)
              << ": " << (good ? "good" : "bad (" + why + ")") << "\n"
              << std::flush;
    steps.push_back({{"limits", env}, {"verdict", good ? "good" : "bad"}});
    if (record) *record = o.record;
    return good ? 0 : 1;
  };

  // 1. as configured
  record::RunRecord full;
  int bound = static_cast<int>(subs.size()) + 2;
  int v = run({}, bound, &full);
  if (v < 0) return 125;
  if (v == 0) {
    // outputs right: a kernel-count or invariant regression against the
    // golden is not a search; the decisions that changed are the answer
    const std::string gpath = golden_path(base.golden_dir, backend_name(base.backend), base.repro,
                                          mode_letter(base.mode), base.world, policy_name(base.fusion),
                                          base.fast_paths.text());
    if (std::optional<record::RunRecord> golden = load_golden(gpath)) {
      Verdict gv = compare_with_golden(full, &*golden, gpath, base.repro, "");
      std::vector<std::string> lines;
      bool regressed = false;
      for (const Finding& f : gv.findings) {
        if (f.kind == VerdictKind::Fail) regressed = true;
        if (f.kind == VerdictKind::Fail || f.message.find("fusion decisions changed") != std::string::npos)
          lines.push_back(f.message);
      }
      if (regressed) {
        std::cout << "fusegate bisect: " << base.repro << "'s outputs pass their accuracy check, but the run "
                  << "regressed against " << gpath << ": not a search; what changed:\n";
        for (std::string l : lines) {
          for (size_t at = l.find('\n'); at != std::string::npos; at = l.find('\n', at + 1)) l.insert(at + 1, "  ");
          std::cout << "  " << l << "\n";
        }
        if (!json_out.empty())
          write_atomic(json_out, dump_record({{"result", "regression against the golden"},
                                              {"golden", gpath},
                                              {"findings", lines},
                                              {"steps", steps}}));
        return 1;
      }
    }
    std::cout << "fusegate bisect: " << base.repro << " is good as configured (every output passes its accuracy "
              << "check" << (std::filesystem::exists(gpath) ? ", and the run matches its golden" : "")
              << "): nothing to bisect\n";
    if (!json_out.empty()) write_atomic(json_out, dump_record({{"result", "nothing to bisect"}, {"steps", steps}}));
    return 0;
  }
  // FUSEGATE_BISECT limits count per graph, while the applications below are
  // counted over all of them: with graph breaks the search would name the
  // wrong application. Say so rather than answer wrong.
  for (const auto& [rank, r] : record::ranks_by_id(full))
    if (r->graph_count.value_or(1) > 1) {
      std::cout << "fusegate bisect: " << base.repro << " runs as " << *r->graph_count
                << " graphs (graph breaks: fusegate explain " << base.repro
                << " names them); bisect limits count per graph, so it searches one graph only: cannot test. "
                   "Remove the breaks, or bisect by hand with FUSEGATE_BISECT (fusion/bisect.h)\n";
      if (!json_out.empty())
        write_atomic(json_out, dump_record({{"result", "cannot test: several graphs"}, {"steps", steps}}));
      return 125;
    }
  for (const auto& s : subs) counts[s] = applications(full, s).size();
  size_t biggest = 1;
  for (const auto& [s, n] : counts) biggest = std::max(biggest, n);
  int applied = 0;
  for (const auto& [s, n] : counts) applied += n > 0 ? 1 : 0;
  bound = 2 + applied + static_cast<int>(std::ceil(std::log2(static_cast<double>(biggest))));

  // 2. everything off
  // (a subsystem the full run never applied needs no limit: the replay
  // commands name only those that matter)
  std::map<std::string, long long> off;
  for (const auto& s : subs)
    if (counts[s] > 0) off[s] = 0;
  v = run(off, bound, nullptr);
  if (v < 0) return 125;
  if (v == 1) {
    std::cout << "fusegate bisect: bad with every switchable subsystem off (FUSEGATE_BISECT=" << limits_text(off)
              << (off.count("lowerings") ? ": every op a library call" : "")
              << "): no decomposition, lowering, fusion decision, rewrite or fast path is to blame; look at "
                 "capture, the library calls (GEMMs, attention, ATen) and the collectives (fusegate explain "
              << base.repro << ")\n";
    if (!json_out.empty())
      write_atomic(json_out, dump_record({{"result", "bad with every subsystem off"}, {"steps", steps}}));
    return 1;
  }

  // 3. the first subsystem whose enabling turns good into bad
  std::string culprit_sub;
  std::map<std::string, long long> limits = off;
  record::RunRecord bad_record;  // the run at the smallest bad count known so far
  for (const auto& s : subs) {
    if (counts[s] == 0) continue;
    limits.erase(s);  // on, unlimited
    if (limits.empty()) {
      // every applied subsystem on: the run as configured, known bad
      bad_record = full;
      culprit_sub = s;
      break;
    }
    v = run(limits, bound, &bad_record);
    if (v < 0) return 125;
    if (v == 1) {
      culprit_sub = s;
      break;
    }
  }
  if (culprit_sub.empty()) {
    std::cout << "fusegate bisect: bad as configured but good with every subsystem switched on in turn: the result "
                 "is not reproducible (cannot test)\n";
    return 125;
  }

  // 4. the first application that is bad
  size_t lo = 1, hi = counts[culprit_sub];
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    limits[culprit_sub] = static_cast<long long>(mid);
    record::RunRecord rec;
    v = run(limits, bound, &rec);
    if (v < 0) return 125;
    if (v == 1) {
      hi = mid;
      bad_record = rec;
    } else {
      lo = mid + 1;
    }
  }
  const size_t k = lo;
  limits[culprit_sub] = static_cast<long long>(k);
  const std::string bad_env = limits_text(limits);
  limits[culprit_sub] = static_cast<long long>(k - 1);
  const std::string good_env = limits_text(limits);
  std::vector<Application> apps = applications(bad_record, culprit_sub);
  if (apps.size() < k) {
    std::cout << "fusegate bisect: the bad run made " << apps.size() << " applications of " << culprit_sub
              << ", not " << k << " (cannot test)\n";
    return 125;
  }
  const Application& entry = apps[k - 1];
  std::string flags = " --mode " + std::string(mode_letter(base.mode)) + " --world-size " + std::to_string(base.world);
  if (base.backend != Backend::Cpu) flags += " --backend " + std::string(backend_name(base.backend));
  if (base.fusion != FusionPolicy::Default) flags += " --fusion " + std::string(policy_name(base.fusion));
  if (!base.fast_paths.is_default()) flags += " --fast-paths " + base.fast_paths.text();
  // the folders a repro came from (a fuzz finding's, a --repro-dir), all but
  // the shipped one
  for (const auto& d : base.fg_dirs)
    if (std::filesystem::path(d).lexically_normal().string().find("repros/fg") == std::string::npos)
      flags += " --repro-dir '" + d + "'";
  std::cout << "\nfusegate bisect: " << base.repro << ": the culprit is application " << k << " of "
            << counts[culprit_sub] << " of " << culprit_sub << " (" << step << " runs)\n"
            << "  stage: " << culprit_sub << "; rule: " << rule_of(entry, culprit_sub) << "\n"
            << "  " << describe(entry) << "\n";
  std::cout << source_excerpt(entry, base.golden_dir, base.fg_dirs);
  std::cout << culprit_kernel(base, bad_env, entry);
  const std::string env = replay_env(false);  // FUSEGATE_FAULT and the like, as this search saw them
  std::cout << "  replay, good: " << env << "FUSEGATE_BISECT=" << good_env << " fusegate run " << base.repro << flags
            << "\n"
            << "  replay, bad:  " << env << "FUSEGATE_BISECT=" << bad_env << " fusegate run " << base.repro << flags
            << "\n";
  if (!json_out.empty())
    write_atomic(json_out, dump_record({{"result", "culprit"},
                                        {"subsystem", culprit_sub},
                                        {"application", k},
                                        {"applications", counts[culprit_sub]},
                                        {"entry", entry.to_json()},
                                        {"good", good_env},
                                        {"bad", bad_env},
                                        {"runs", step},
                                        {"steps", steps}}));
  return 1;
}

}  // namespace fg
