#include "harness/record/compare.h"
#include "harness/record/finding_sink.h"

#include <algorithm>
#include <map>
#include <set>

#include "fusion/ir/types.h"
#include "harness/record/golden_env.h"
#include "harness/record/json_read.h"
#include "harness/record/record.h"

namespace fg {
using nlohmann::json;

const char* verdict_name(VerdictKind k) {
  switch (k) {
    case VerdictKind::Pass: return "PASS";
    case VerdictKind::Fail: return "FAIL";
    case VerdictKind::Improved: return "IMPROVED";
    case VerdictKind::Missing: return "MISSING";
    case VerdictKind::CannotTest: return "CANNOT_TEST";
    case VerdictKind::Flaky: return "FLAKY";
  }
  return "UNKNOWN";
}

VerdictKind overall_kind(const std::vector<Finding>& findings) {
  auto any = [&](VerdictKind k) {
    return std::any_of(findings.begin(), findings.end(),
                       [&](const Finding& f) { return f.kind == k; });
  };
  if (any(VerdictKind::Fail)) return VerdictKind::Fail;
  if (any(VerdictKind::CannotTest)) return VerdictKind::CannotTest;
  if (any(VerdictKind::Improved)) return VerdictKind::Improved;
  return VerdictKind::Pass;
}


bool aten_metadata_op(const std::string& op) {
  static const std::set<std::string> views = {
      "aten::as_strided", "aten::select",       "aten::slice",     "aten::view",          "aten::_unsafe_view",
      "aten::_reshape_alias", "aten::expand",   "aten::expand_as", "aten::transpose",     "aten::t",
      "aten::permute",    "aten::unsqueeze",    "aten::squeeze",   "aten::alias",         "aten::resolve_conj",
      "aten::resolve_neg", "aten::conj",        "aten::_conj",     "aten::_neg_view",     "aten::detach",
      "aten::narrow",     "aten::diagonal",     "aten::unfold",    "aten::split",         "aten::split_with_sizes",
      "aten::unbind",     "aten::chunk",        "aten::view_as",   "aten::movedim",       "aten::numpy_T"};
  return views.count(op) > 0;
}

std::optional<long long> aten_work_count(const record::RankRecord& r) {
  bool listed = false;
  long long n = 0;
  for (const record::Launch& k : r.kernels)
    if (k.aten_ops) {
      listed = true;
      for (const auto& [op, calls] : *k.aten_ops)
        if (!aten_metadata_op(op)) n += calls;
    }
  if (!listed) return r.aten_op_count;
  return n;
}

namespace {

using detail::Ctx;
using namespace record;

// A header field as a message shows it.
std::string text(const std::optional<std::string>& v) { return v.value_or(""); }
std::string text(const std::optional<long long>& v) { return v ? std::to_string(*v) : ""; }

// -- counts ------------------------------------------------------------------

std::string moved_kinds(const RankRecord& run, const RankRecord& gold) {
  if (!gold.kernel_count_by_kind || !run.kernel_count_by_kind) return "";
  const auto& a = *gold.kernel_count_by_kind;
  const auto& b = *run.kernel_count_by_kind;
  std::vector<std::string> kinds = {"poi", "red", "per", "tem", "extern", "collective"};
  for (const auto* m : {&a, &b})
    for (const auto& [k, n] : *m)
      if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  std::vector<std::string> moved;
  for (const std::string& k : kinds) {
    auto x = a.count(k) ? a.at(k) : 0LL, y = b.count(k) ? b.at(k) : 0LL;
    if (x != y) moved.push_back(k + " " + std::to_string(x) + " -> " + std::to_string(y));
  }
  return join(moved, ", ");
}

void compare_counts(Ctx& c, const RankRecord& run, const RankRecord& gold) {
  struct Figure {
    std::optional<long long> RankRecord::*count;
    const char* key;  // as the record names it, for the message
    const char* noun;
    const char* worse;
  };
  static const Figure figures[] = {
      {&RankRecord::graph_count, "graph_count", "graphs", "the block no longer compiles as one region"},
      {&RankRecord::graph_break_count, "graph_break_count", "graph breaks", "capture got worse"},
      {&RankRecord::recompile_count, "recompile_count", "recompiles", "a guard fails on a later call"},
      {&RankRecord::kernel_count, "kernel_count", "kernels", "fusion got worse"},
      {&RankRecord::device_kernel_count, "device_kernel_count", "device kernels",
       "more kernels really run on the device, whatever fusegate launched"},
      {&RankRecord::aten_op_count, "aten_op_count", "ATen operator calls that do work in externs",
       "externs are carried out with more ATen calls (views and conjugate bits not counted)"},
  };
  for (const Figure& f : figures) {
    const bool aten = f.count == &RankRecord::aten_op_count;
    const auto a = aten ? aten_work_count(gold) : gold.*f.count;
    const auto b = aten ? aten_work_count(run) : run.*f.count;
    if (!a || !b) continue;
    long long x = *a, y = *b;
    std::string kinds = f.count == &RankRecord::kernel_count ? moved_kinds(run, gold) : "";
    std::string moved = kinds.empty() ? "" : "; by kind: " + kinds;
    std::string head = std::string(f.key) + " " + std::to_string(x) + " -> " + std::to_string(y);
    if (y > x)
      c.add(VerdictKind::Fail,
            head + " (more " + f.noun + " than the golden: " + f.worse + ")" + moved);
    else if (y < x)
      c.add(VerdictKind::Improved,
            head + " (fewer " + f.noun + " than the golden" + moved + ")" + c.bless_hint());
    else if (!kinds.empty())
      c.add(VerdictKind::Pass, "kernel kinds moved at equal kernel_count: " + kinds);
  }
}

// -- what really ran -----------------------------------------------------------

// The figure of what really ran on this backend (device kernels on cuda,
// dispatched ATen calls on cpu) is never skipped in silence: a golden without
// it cannot vouch for any run (re-bless it), and a run that could not count
// it cannot be tested (it says why).
void check_real_figures(Ctx& c, const RankRecord& run, const RankRecord& gold, const std::string& backend) {
  const bool cuda = backend == "cuda";
  const char* key = cuda ? "device_kernel_count" : "aten_op_count";
  const auto count = cuda ? &RankRecord::device_kernel_count : &RankRecord::aten_op_count;
  const auto not_counted = cuda ? &RankRecord::device_kernels_not_counted : &RankRecord::aten_ops_not_counted;
  if (!(gold.*count))
    c.add(VerdictKind::Fail, std::string("the golden has no ") + key +
                                 " (blessed before fusegate counted what really runs, or where it could not): it "
                                 "cannot vouch for this run; re-bless it" + c.bless_hint());
  if (!(run.*count)) {
    std::string why = (run.*not_counted).value_or("");
    c.add(VerdictKind::CannotTest,
          std::string("the run did not count ") + key + (why.empty() ? "" : ": " + why) +
              (cuda ? "; run where CUPTI can trace (no profiler such as nsys or ncu attached to the process)" : ""));
  }
}

// Launch by launch (matched by name, occurrences in order): the device
// kernels and ATen calls each one ran, where they differ from the golden.
// A launch that runs more device kernels, or dispatches another set of ATen
// operators, fails even when the totals balance out.
void compare_real_work(Ctx& c, const RankRecord& run, const RankRecord& gold) {
  std::map<std::string, std::vector<const Launch*>> golden;
  for (const Launch& k : gold.kernels) golden[k.name].push_back(&k);
  std::map<std::string, size_t> seen;
  for (const Launch& k : run.kernels) {
    const std::string& name = k.name;
    size_t n = seen[name]++;
    auto it = golden.find(name);
    if (it == golden.end() || n >= it->second.size()) continue;  // a changed launch list shows elsewhere
    const Launch& g = *it->second[n];
    if (g.device_kernels && k.device_kernels && g.device_kernels->size() != k.device_kernels->size()) {
      const size_t rn = k.device_kernels->size(), gn = g.device_kernels->size();
      std::string msg = "launch " + name + " ran " + std::to_string(rn) + " device kernels (the golden " +
                        std::to_string(gn) + "): " + join_capped(*k.device_kernels);
      c.add(rn > gn ? VerdictKind::Fail : VerdictKind::Improved, msg + (rn > gn ? "" : c.bless_hint()));
    }
    if (!g.aten_ops && !k.aten_ops) continue;
    // the operators that do work (aten_metadata_op: views alone differ by machine)
    auto work = [](const std::optional<std::map<std::string, long long>>& m) {
      std::map<std::string, long long> w;
      if (m)
        for (const auto& [op, n] : *m)
          if (!aten_metadata_op(op)) w[op] = n;
      return w;
    };
    const auto A = work(g.aten_ops), B = work(k.aten_ops);
    if (A == B) continue;
    std::set<std::string> keys;
    for (const auto& [op, n] : A) keys.insert(op);
    for (const auto& [op, n] : B) keys.insert(op);
    std::vector<std::string> diff;
    for (const std::string& op : keys) {
      long long p = A.count(op) ? A.at(op) : 0, q = B.count(op) ? B.at(op) : 0;
      if (p != q) diff.push_back(op + " " + std::to_string(p) + " -> " + std::to_string(q));
    }
    c.add(VerdictKind::Fail, "extern " + name + " dispatches other ATen operators than the golden (" +
                                 join_capped(diff) + "): LibTorch carries it out differently" + c.bless_hint());
  }
}

// -- graph breaks ------------------------------------------------------------

void compare_breaks(Ctx& c, const RankRecord& run, const RankRecord& gold) {
  using Key = std::pair<std::string, std::string>;  // reason, location
  std::map<Key, int> golden;
  for (const Break& b : gold.breaks) ++golden[{b.reason, b.location}];
  std::vector<Key> fresh;
  for (const Break& b : run.breaks) {
    Key k{b.reason, b.location};
    auto it = golden.find(k);
    if (it != golden.end() && it->second > 0)
      --it->second;
    else
      fresh.push_back(k);
  }
  std::vector<Key> gone;
  for (auto& [k, n] : golden) gone.insert(gone.end(), n, k);
  for (const Key& k : fresh) {
    // A break with the same reason that vanished elsewhere is most likely the
    // same break moved (an edit above it shifted its line): say where it was.
    auto was =
        std::find_if(gone.begin(), gone.end(), [&](const Key& g) { return g.first == k.first; });
    std::string note;
    if (was != gone.end()) {
      note = " (the golden has it at " + was->second + ")";
      gone.erase(was);
    }
    c.add(VerdictKind::Fail, "new graph break: " + k.first + " at " + k.second + note);
  }
  for (const Key& k : gone)
    c.add(VerdictKind::Pass, "graph break gone: " + k.first + " at " + k.second);
}

// -- kernels -----------------------------------------------------------------

void compare_kernel_names(Ctx& c, const RankRecord& run, const RankRecord& gold) {
  std::map<std::string, int> delta;
  for (const Launch& k : gold.kernels) --delta[k.name];
  for (const Launch& k : run.kernels) ++delta[k.name];
  std::vector<std::string> added, removed;
  for (auto& [name, d] : delta) {
    for (int i = 0; i < d; ++i) added.push_back(name);
    for (int i = 0; i < -d; ++i) removed.push_back(name);
  }
  if (added.empty() && removed.empty()) return;
  std::vector<std::string> parts;
  if (!added.empty()) parts.push_back("added " + join_capped(added));
  if (!removed.empty()) parts.push_back("removed " + join_capped(removed));
  c.add(VerdictKind::Pass, "kernels changed: " + join(parts, "; "));
}

// The three hashes against the golden's: a changed collective sequence
// (kinds, sizes, order) fails, as ranks of two versions would then wait on
// different collectives; a changed graph or decision hash is a note (the
// counts, the ledger diff and the digests say whether it matters).
void compare_hashes(Ctx& c, const RankRecord& run, const RankRecord& gold) {
  if (!run.hashes || !gold.hashes) return;
  const Hashes& r = *run.hashes;
  const Hashes& g = *gold.hashes;
  const std::string rc = r.collectives.value_or(""), gc = g.collectives.value_or("");
  if (!gc.empty() && !rc.empty() && rc != gc)
    c.add(VerdictKind::Fail, "collective sequence changed (hash " + gc + " -> " + rc +
                                 "): the ranks issue other collectives, sizes or order than when the golden was "
                                 "blessed; bless if intended" +
                                 (c.bless.empty() ? "" : " with: " + c.bless));
  struct Which {
    std::optional<std::string> Hashes::*hash;
    const char* name;
    const char* what;
  };
  for (const Which& w : {Which{&Hashes::graphs, "graphs", " (the captured graphs changed)"},
                         Which{&Hashes::decisions, "decisions", " (fusion decisions changed)"}}) {
    const std::string a = (g.*w.hash).value_or(""), b = (r.*w.hash).value_or("");
    if (!a.empty() && !b.empty() && a != b)
      c.add(VerdictKind::Pass, std::string(w.name) + " hash " + a + " -> " + b + w.what);
  }
}

// -- fusion ledger -----------------------------------------------------------

std::string nodes_key(const LedgerEntry& entry) { return join(entry.nodes, "+"); }

std::string decision(const LedgerEntry& entry) {
  const std::string reason = entry.reason.value_or("");
  return reason.empty() ? entry.outcome : entry.outcome + " (" + reason + ")";
}

}  // namespace

std::string ledger_source_text(const record::LedgerEntry& entry) {
  if (!entry.source) return "";
  // "file:line (fn)" -> runs of lines per (file, fn), in the record's order
  struct Run {
    std::string file, fn;
    std::vector<long> lines;
  };
  std::vector<Run> runs;
  for (const std::string& x : *entry.source) {
    SourceLoc l;
    if (!SourceLoc::parse(x, &l)) continue;
    if (runs.empty() || runs.back().file != l.file || runs.back().fn != l.function)
      runs.push_back({l.file, l.function, {}});
    runs.back().lines.push_back(l.line);
  }
  std::string out;
  for (const Run& r : runs) {
    std::string lines;
    for (size_t i = 0; i < r.lines.size();) {
      size_t j = i;
      while (j + 1 < r.lines.size() && r.lines[j + 1] == r.lines[j] + 1) ++j;
      lines += (lines.empty() ? "" : ",") + std::to_string(r.lines[i]) +
               (j > i ? "-" + std::to_string(r.lines[j]) : "");
      i = j + 1;
    }
    out += (out.empty() ? "" : "; ") + r.file + ":" + lines + (r.fn.empty() ? "" : " (" + r.fn + ")");
  }
  return out;
}

std::string ledger_entry_text(const record::LedgerEntry& entry, bool with_source) {
  std::string score;
  if (entry.score)
    for (long long x : *entry.score) score += (score.empty() ? "" : ", ") + std::to_string(x);
  const std::string at = with_source ? ledger_source_text(entry) : "";
  return nodes_key(entry) + (score.empty() ? "" : " score (" + score + ")") + (at.empty() ? "" : " at " + at);
}

namespace {

using namespace record;

// A fusion-rule change shows here as a readable diff of decisions, even when
// the kernel count did not move.
void compare_ledger(Ctx& c, const RankRecord& run, const RankRecord& gold) {
  if (!gold.ledger || !run.ledger) return;
  // The same pair may be considered more than once; match occurrences in order.
  std::map<std::string, std::vector<const LedgerEntry*>> golden;
  for (const LedgerEntry& e : *gold.ledger) golden[nodes_key(e)].push_back(&e);
  std::map<std::string, size_t> seen;
  std::vector<std::string> lines;
  // how many of each kind: "new candidate", "fused -> rejected", ...
  std::map<std::string, size_t> kinds;
  for (const LedgerEntry& e : *run.ledger) {
    std::string key = nodes_key(e);
    size_t n = seen[key]++;
    auto it = golden.find(key);
    if (it == golden.end() || n >= it->second.size()) {
      lines.push_back(ledger_entry_text(e) + ": new candidate, " + decision(e));
      ++kinds["new candidate"];
      continue;
    }
    const LedgerEntry& g = *it->second[n];
    if (g.outcome != e.outcome || g.reason.value_or("") != e.reason.value_or("")) {
      lines.push_back(ledger_entry_text(e) + ": " + decision(g) + " -> " + decision(e));
      ++kinds[g.outcome + " -> " + e.outcome];
    }
  }
  for (auto& [key, entries] : golden)
    for (size_t n = seen[key]; n < entries.size(); ++n) {
      lines.push_back(ledger_entry_text(*entries[n]) + ": no longer a candidate (was " + decision(*entries[n]) + ")");
      ++kinds["no longer a candidate"];
    }
  if (lines.empty()) return;
  std::vector<std::string> counts;
  for (const auto& [k, n] : kinds) counts.push_back(std::to_string(n) + " " + k);
  c.add(VerdictKind::Pass, "fusion decisions changed (" + std::to_string(lines.size()) + ": " + join(counts, ", ") +
                               "):\n  " + join(lines, "\n  "));
}

// -- fast paths --------------------------------------------------------------

// A fast path that ran when the golden was blessed and does not now (its
// proof was invalidated, removed, or no longer covers the run) fails; one
// that runs now and did not then is an improvement to bless. A golden
// blessed before fast paths existed records none: nothing to compare.
void compare_fast_paths(Ctx& c, const RankRecord& run, const RankRecord& gold) {
  if (!gold.fast_paths) return;
  std::map<std::string, std::string> then, now;
  for (const FastPathStatus& f : *gold.fast_paths) then[f.name] = f.status;
  if (run.fast_paths)
    for (const FastPathStatus& f : *run.fast_paths) now[f.name] = f.status;
  for (const auto& [name, was] : then) {
    auto it = now.find(name);
    const std::string is = it == now.end() ? "missing from the run's record" : it->second;
    if (was == "used" && is != "used")
      c.add(VerdictKind::Fail, "fast path " + name + " ran when the golden was blessed; now: " + is);
    else if (was != "used" && is == "used")
      c.add(VerdictKind::Improved, "fast path " + name + " runs now (was: " + was + ")" + c.bless_hint());
  }
  for (const auto& [name, is] : now)
    if (!then.count(name) && is == "used")
      c.add(VerdictKind::Improved, "fast path " + name + " runs now (the golden does not know it)" + c.bless_hint());
}

// -- outputs -----------------------------------------------------------------

// `env`: the run's environment fingerprint where the golden holds its exact
// digests, else "" (fingerprints only).
void compare_outputs(Ctx& c, const RankRecord& run, const RankRecord& gold, const std::string& env) {
  auto golden = outputs_by_name(gold);
  auto actual = outputs_by_name(run);
  for (auto& [name, g] : golden) {
    auto it = actual.find(name);
    if (it == actual.end()) {
      c.add(VerdictKind::Fail, "output " + name + " is missing from the run (the golden has it)");
      continue;
    }
    const OutputDigest& r = *it->second;
    const auto& gf = g->fingerprint;
    const auto& rf = r.fingerprint;
    std::string why;
    // Golden first, so that "why" reads in the same direction as "a -> b".
    bool close = gf && rf && fingerprints_close(*gf, *rf, &why);
    if (!gf || !rf) why = "no fingerprint on " + std::string(gf ? "the run" : "the golden");
    const std::string* ge = nullptr;
    if (!env.empty() && g->exact_by_environment)
      if (auto e = g->exact_by_environment->find(env); e != g->exact_by_environment->end()) ge = &e->second;
    if (ge && r.exact) {
      std::string note;
      if (gf && rf)
        note = close ? " (fingerprints are within tolerance: rounding changed)"
                     : " (fingerprint drifted too: " + why + ")";
      if (*ge != *r.exact)
        c.add(VerdictKind::Fail, "output " + name + ": exact digest " + *ge + " -> " + *r.exact + note);
      continue;
    }
    // Another compiler, LibTorch or ISA rounds differently: only the
    // fingerprints are comparable.
    if (!close)
      c.add(VerdictKind::Fail, "output " + name + ": fingerprint outside tolerance: " + why);
  }
  for (auto& [name, r] : actual)
    if (!golden.count(name))
      c.add(VerdictKind::Fail,
            "output " + name + " is not in the golden; if the repro gained it on purpose, bless" +
                (c.bless.empty() ? "" : " with: " + c.bless));
}

bool header_matches(std::vector<Finding>* out, const RunRecord& run, const RunRecord& gold,
                    const std::string& file, const std::string& bless) {
  bool ok = true;
  auto differs = [&](const char* key, const auto& a, const auto& b) {
    if (!a || !b || *a == *b) return;
    out->push_back({VerdictKind::Fail, "golden file " + file + " holds " + key + " " + text(a) +
                                           " but the run has " + text(b) + "; restore it from git or re-bless" +
                                           (bless.empty() ? "" : " with: " + bless)});
    ok = false;
  };
  // eager (mode A) has no fusion policy nor fast paths
  const bool eager = run.mode.value_or("") == "A";
  differs("repro", gold.repro, run.repro);
  differs("mode", gold.mode, run.mode);
  differs("world_size", gold.world_size, run.world_size);
  differs("backend", gold.backend, run.backend);
  if (!eager) differs("fusion", gold.fusion, run.fusion);
  if (!eager) differs("fast_paths", gold.fast_paths, run.fast_paths);
  differs("nodes", gold.nodes, run.nodes);
  return ok;
}

}  // namespace

Verdict compare_with_golden(const record::RunRecord& run, const record::RunRecord* golden,
                            const std::string& golden_file, const std::string& check_id,
                            const std::string& bless_command, bool require_exact) {
  using namespace record;
  Verdict v;
  v.check_id = check_id;
  v.bless_command = bless_command;
  std::vector<Finding>& out = v.findings;
  auto run_ranks = ranks_by_id(run);
  if (run_ranks.empty()) {
    out.push_back(
        {VerdictKind::CannotTest, "run record has no ranks: the run did not finish; see its log"});
    v.kind = VerdictKind::CannotTest;
    return v;
  }
  for (Finding& f : invariant_findings(run)) out.push_back(std::move(f));
  // a fast path asked for and blocked is said, once (every rank compiled the same graphs)
  if (const auto& fps = run_ranks.begin()->second->fast_paths)
    for (const FastPathStatus& f : *fps)
      if (f.status.rfind("blocked", 0) == 0)
        out.push_back({VerdictKind::Pass, "fast path " + f.name + " " + f.status +
                                              " (the generic path ran in its place)"});

  if (!golden) {
    out.push_back({VerdictKind::Missing,
                   "no golden file " + golden_file + "; create it with: " + bless_command});
    VerdictKind k = overall_kind(out);
    v.kind = k == VerdictKind::Pass || k == VerdictKind::Improved ? VerdictKind::Missing : k;
    return v;
  }

  if (header_matches(&out, run, *golden, golden_file, bless_command)) {
    auto gold_ranks = ranks_by_id(*golden);
    if (gold_ranks.size() != run_ranks.size())
      out.push_back({VerdictKind::Fail, "rank count " + std::to_string(gold_ranks.size()) + " -> " +
                                            std::to_string(run_ranks.size()) + " (the golden has " +
                                            std::to_string(gold_ranks.size()) + " ranks, the run " +
                                            std::to_string(run_ranks.size()) + ")"});
    // the exact digests of this environment, if the golden holds them
    const auto& envs = golden->environments;
    const std::string rfp = run.env ? environment_fingerprint(*run.env) : "";
    const bool same_env = run.env && envs && envs->count(rfp);
    if (!same_env) {
      // say so, naming what differs: a verdict that skipped the exact
      // digests must not read as one that compared them
      const size_t n = envs ? envs->size() : 0;
      const std::string diff = !run.env ? "the run records no environment"
                               : envs    ? nearest_environment_difference(*envs, *run.env)
                                         : std::string();
      const std::string what = "this environment is not among the golden's " + std::to_string(n) + " (" +
                               (n > 1 ? "nearest: " : "") + diff + ")";
      if (require_exact)
        out.push_back({VerdictKind::Fail, "exact digests required (--exact), and " + what +
                                              ": bless here to add its digests" +
                                              (bless_command.empty() ? "" : " with: " + bless_command)});
      else
        out.push_back({VerdictKind::Pass, "exact digests not compared: " + what +
                                              "; outputs were checked by fingerprint within tolerance only (bless "
                                              "here to add this environment's digests)"});
    }
    for (auto& [id, r] : run_ranks) {
      Ctx c{"rank " + std::to_string(id), bless_command, &out};
      auto g = gold_ranks.find(id);
      // every rank runs rank 0's table: said once
      if (g != gold_ranks.end() && id == run_ranks.begin()->first) detail::compare_tables(c, *r, *g->second);
      if (g == gold_ranks.end()) {
        c.add(VerdictKind::Fail, "not in the golden file");
        continue;
      }
      compare_counts(c, *r, *g->second);
      check_real_figures(c, *r, *g->second, run.backend.value_or(""));
      compare_real_work(c, *r, *g->second);
      compare_breaks(c, *r, *g->second);
      compare_kernel_names(c, *r, *g->second);
      compare_ledger(c, *r, *g->second);
      compare_hashes(c, *r, *g->second);
      compare_fast_paths(c, *r, *g->second);
      compare_outputs(c, *r, *g->second, same_env ? rfp : std::string());
    }
  }
  v.kind = overall_kind(out);
  return v;
}

}  // namespace fg
