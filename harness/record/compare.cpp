#include "harness/record/compare.h"
#include "harness/record/finding_sink.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "fusion/ir/types.h"
#include "harness/record/golden_env.h"
#include "harness/record/json_read.h"

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


namespace {

using detail::Ctx;

// -- counts ------------------------------------------------------------------

std::string moved_kinds(const json& run_rank, const json& gold_rank) {
  const json* a = field(gold_rank, "kernel_count_by_kind");
  const json* b = field(run_rank, "kernel_count_by_kind");
  if (!a || !b || !a->is_object() || !b->is_object()) return "";
  std::vector<std::string> kinds = {"poi", "red", "per", "tem", "extern", "collective"};
  for (const json* obj : {a, b})
    for (auto it = obj->begin(); it != obj->end(); ++it)
      if (std::find(kinds.begin(), kinds.end(), it.key()) == kinds.end()) kinds.push_back(it.key());
  std::vector<std::string> moved;
  for (const std::string& k : kinds) {
    long long x = 0, y = 0;
    if (const json* v = field(*a, k.c_str()); v && v->is_number_integer()) x = v->get<long long>();
    if (const json* v = field(*b, k.c_str()); v && v->is_number_integer()) y = v->get<long long>();
    if (x != y) moved.push_back(k + " " + std::to_string(x) + " -> " + std::to_string(y));
  }
  return join(moved, ", ");
}

void compare_counts(Ctx& c, const json& run, const json& gold) {
  struct Figure {
    const char* key;
    const char* noun;
    const char* worse;
  };
  static const Figure figures[] = {
      {"graph_count", "graphs", "the block no longer compiles as one region"},
      {"graph_break_count", "graph breaks", "capture got worse"},
      {"recompile_count", "recompiles", "a guard fails on a later call"},
      {"kernel_count", "kernels", "fusion got worse"},
      {"device_kernel_count", "device kernels",
       "more kernels really run on the device, whatever fusegate launched"},
      {"aten_op_count", "ATen operator calls in externs",
       "externs are carried out with more ATen calls"},
  };
  for (const Figure& f : figures) {
    const json* a = field(gold, f.key);
    const json* b = field(run, f.key);
    if (!a || !b || !a->is_number_integer() || !b->is_number_integer()) continue;
    long long x = a->get<long long>(), y = b->get<long long>();
    std::string kinds = std::string(f.key) == "kernel_count" ? moved_kinds(run, gold) : "";
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
void check_real_figures(Ctx& c, const json& run, const json& gold, const std::string& backend) {
  const bool cuda = backend == "cuda";
  const char* key = cuda ? "device_kernel_count" : "aten_op_count";
  const char* not_counted = cuda ? "device_kernels_not_counted" : "aten_ops_not_counted";
  if (!field(gold, key))
    c.add(VerdictKind::Fail, std::string("the golden has no ") + key +
                                 " (blessed before fusegate counted what really runs, or where it could not): it "
                                 "cannot vouch for this run; re-bless it" + c.bless_hint());
  if (!field(run, key)) {
    std::string why = text_of(run, not_counted);
    c.add(VerdictKind::CannotTest,
          std::string("the run did not count ") + key + (why.empty() ? "" : ": " + why) +
              (cuda ? "; run where CUPTI can trace (no profiler such as nsys or ncu attached to the process)" : ""));
  }
}

// Launch by launch (matched by name, occurrences in order): the device
// kernels and ATen calls each one ran, where they differ from the golden.
// A launch that runs more device kernels, or dispatches another set of ATen
// operators, fails even when the totals balance out.
void compare_real_work(Ctx& c, const json& run, const json& gold) {
  std::map<std::string, std::vector<const json*>> golden;
  for (const json& k : array_of(gold, "kernels")) golden[text_of(k, "name")].push_back(&k);
  std::map<std::string, size_t> seen;
  for (const json& k : array_of(run, "kernels")) {
    std::string name = text_of(k, "name");
    size_t n = seen[name]++;
    auto it = golden.find(name);
    if (it == golden.end() || n >= it->second.size()) continue;  // a changed launch list shows elsewhere
    const json& g = *it->second[n];
    const json* gd = field(g, "device_kernels");
    const json* rd = field(k, "device_kernels");
    if (gd && rd && gd->is_array() && rd->is_array() && gd->size() != rd->size()) {
      std::vector<std::string> names;
      for (const json& x : *rd) names.push_back(text_of(&x));
      std::string msg = "launch " + name + " ran " + std::to_string(rd->size()) + " device kernels (the golden " +
                        std::to_string(gd->size()) + "): " + join_capped(names);
      c.add(rd->size() > gd->size() ? VerdictKind::Fail : VerdictKind::Improved,
            msg + (rd->size() > gd->size() ? "" : c.bless_hint()));
    }
    const json* ga = field(g, "aten_ops");
    const json* ra = field(k, "aten_ops");
    json empty = json::object();
    const json& A = ga && ga->is_object() ? *ga : empty;
    const json& B = ra && ra->is_object() ? *ra : empty;
    if (A == B || (!ga && !ra)) continue;
    std::vector<std::string> diff;
    json keys = json::object();
    for (auto x = A.begin(); x != A.end(); ++x) keys[x.key()] = true;
    for (auto x = B.begin(); x != B.end(); ++x) keys[x.key()] = true;
    for (auto x = keys.begin(); x != keys.end(); ++x) {
      const json* u = field(A, x.key().c_str());
      const json* v = field(B, x.key().c_str());
      long long p = u && u->is_number_integer() ? u->get<long long>() : 0;
      long long q = v && v->is_number_integer() ? v->get<long long>() : 0;
      if (p != q) diff.push_back(x.key() + " " + std::to_string(p) + " -> " + std::to_string(q));
    }
    c.add(VerdictKind::Fail, "extern " + name + " dispatches other ATen operators than the golden (" +
                                 join_capped(diff) + "): LibTorch carries it out differently" + c.bless_hint());
  }
}

// -- graph breaks ------------------------------------------------------------

void compare_breaks(Ctx& c, const json& run, const json& gold) {
  using Key = std::pair<std::string, std::string>;  // reason, location
  std::map<Key, int> golden;
  for (const json& b : array_of(gold, "breaks"))
    ++golden[{text_of(b, "reason"), text_of(b, "location")}];
  std::vector<Key> fresh;
  for (const json& b : array_of(run, "breaks")) {
    Key k{text_of(b, "reason"), text_of(b, "location")};
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

void compare_kernel_names(Ctx& c, const json& run, const json& gold) {
  std::map<std::string, int> delta;
  for (const json& k : array_of(gold, "kernels")) --delta[text_of(k, "name")];
  for (const json& k : array_of(run, "kernels")) ++delta[text_of(k, "name")];
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
void compare_hashes(Ctx& c, const json& run, const json& gold) {
  const json* r = field(run, "hashes");
  const json* g = field(gold, "hashes");
  if (!r || !g || !r->is_object() || !g->is_object()) return;
  const std::string rc = text_of(*r, "collectives"), gc = text_of(*g, "collectives");
  if (!gc.empty() && !rc.empty() && rc != gc)
    c.add(VerdictKind::Fail, "collective sequence changed (hash " + gc + " -> " + rc +
                                 "): the ranks issue other collectives, sizes or order than when the golden was "
                                 "blessed; bless if intended" +
                                 (c.bless.empty() ? "" : " with: " + c.bless));
  for (const char* k : {"graphs", "decisions"}) {
    const std::string a = text_of(*g, k), b = text_of(*r, k);
    if (!a.empty() && !b.empty() && a != b)
      c.add(VerdictKind::Pass, std::string(k) + " hash " + a + " -> " + b +
                                   (std::string(k) == "graphs" ? " (the captured graphs changed)"
                                                               : " (fusion decisions changed)"));
  }
}

// -- GEMM algorithms (max-autotune on cuda) ----------------------------------

// Each shape's cuBLASLt algorithm against the golden's: informative, as the
// digests and counts judge what a change does; said so that a drifted digest
// has its likely cause beside it (the golden's choice was not taken: another
// GPU model, or a cuBLASLt that refuses it). Neither side recorded any:
// nothing to say.
void compare_gemm_algos(Ctx& c, const json& run, const json& gold) {
  const json& g = array_of(gold, "gemm_algos");
  const json& r = array_of(run, "gemm_algos");
  if (g.empty()) return;
  if (r.empty()) {
    c.add(VerdictKind::Pass, "no GEMM algorithm choices in the run (the golden has " + std::to_string(g.size()) +
                                 "): its GEMMs ran cuBLASLt's top-1");
    return;
  }
  std::map<std::string, const json*> ran;
  for (const json& e : r) ran[text_of(e, "shape")] = &e;
  auto config = [](const json& e) {
    const std::string cfg = text_of(e, "config");
    return cfg.empty() ? "algo " + text_of(e, "algo").substr(0, 16) + "..." : cfg;
  };
  std::vector<std::string> changed;
  for (const json& e : g) {
    const std::string shape = text_of(e, "shape");
    auto it = ran.find(shape);
    if (it == ran.end()) {
      changed.push_back(shape + ": not run (the golden chose " + config(e) + ")");
      continue;
    }
    const json& now = *it->second;
    if (text_of(now, "algo") == text_of(e, "algo")) continue;
    const std::string why = text_of(now, "why");
    changed.push_back(shape + ": " + config(e) + " -> " + config(now) + " (" + text_of(now, "source") +
                      (why.empty() ? "" : ": " + why) + ")");
  }
  if (!changed.empty())
    c.add(VerdictKind::Pass, "GEMM algorithms differ from the golden's: " + join_capped(changed, 4));
}

// A run's table of choices against the golden's (`key` names an entry,
// `value` its choice): each entry whose choice differs, the golden's
// entries the run lacks (`missing(entry)` says what the golden had), and
// the run's entries the golden lacks, except those `unchanged(entry)`
// accepts.
std::vector<std::string> choice_changes(const json& g, const json& r, const char* key, const char* value,
                                        const std::function<std::string(const json&)>& missing,
                                        const std::function<bool(const json&)>& unchanged) {
  std::map<std::string, const json*> ran;
  for (const json& e : r) ran[text_of(e, key)] = &e;
  std::vector<std::string> changed;
  std::set<std::string> golden_keys;
  for (const json& e : g) {
    const std::string k = text_of(e, key);
    golden_keys.insert(k);
    auto it = ran.find(k);
    if (it == ran.end())
      changed.push_back(k + ": " + missing(e));
    else if (text_of(*it->second, value) != text_of(e, value))
      changed.push_back(k + ": " + text_of(e, value) + " -> " + text_of(*it->second, value) + " (" +
                        text_of(*it->second, "source") + ")");
  }
  for (const json& e : r)
    if (!golden_keys.count(text_of(e, key)) && !unchanged(e))
      changed.push_back(text_of(e, key) + ": not in the golden, " + text_of(e, value) + " (" + text_of(e, "source") +
                        ")");
  return changed;
}

// Each shape's template-or-library choice (cpu max-autotune) against the
// golden's: informative, as the counts and digests judge what the choice
// does (a template that became a library call moves the kernel count, and
// the check says that as a count); said so that the count's finding has
// its cause beside it. A run takes the golden's choices first, so they
// differ only for a shape the golden lacks or a forced choice.
void compare_gemm_choices(Ctx& c, const json& run, const json& gold) {
  const std::vector<std::string> changed = choice_changes(
      array_of(gold, "gemm_choices"), array_of(run, "gemm_choices"), "shape", "choice",
      [](const json& e) { return "not run (the golden chose the " + text_of(e, "choice") + ")"; },
      [](const json&) { return false; });
  if (!changed.empty())
    c.add(VerdictKind::Pass, "GEMM template choices differ from the golden's: " + join_capped(changed, 4));
}

// Each TP residual hoist site's placement (cuda max-autotune) against the
// golden's: informative, as compare_gemm_choices is. A site that moved
// changes the ledger (tp_residual_hoisted / tp_residual_apart), the kernels
// and the digests, and those fail the check; this says why beside them. A
// run takes the golden's table first, so they differ only for a site the
// golden lacks or a forced placement.
void compare_residual_placement(Ctx& c, const json& run, const json& gold) {
  // a golden without the table predates the choice: its program hoisted
  // every site, so a site the run keeps hoisted is no change
  const bool predates = field(gold, "residual_placement") == nullptr;
  const std::vector<std::string> changed = choice_changes(
      array_of(gold, "residual_placement"), array_of(run, "residual_placement"), "site", "placement",
      [](const json& e) { return "not in this run (the golden placed it " + text_of(e, "placement") + ")"; },
      [predates](const json& e) { return predates && text_of(e, "placement") == "gemm"; });
  if (!changed.empty())
    c.add(VerdictKind::Pass, "residual placement differs from the golden's: " + join_capped(changed, 4));
}

// -- fusion ledger -----------------------------------------------------------

std::string nodes_key(const json& entry) {
  const json* n = field(entry, "nodes");
  if (!n || !n->is_array()) return text_of(n);
  std::vector<std::string> names;
  for (const json& x : *n) names.push_back(text_of(&x));
  return join(names, "+");
}

std::string decision(const json& entry) {
  std::string outcome = text_of(entry, "outcome"), reason = text_of(entry, "reason");
  return reason.empty() ? outcome : outcome + " (" + reason + ")";
}

}  // namespace

std::string ledger_source_text(const json& entry) {
  const json* src = field(entry, "source");
  if (!src || !src->is_array()) return "";
  // "file:line (fn)" -> runs of lines per (file, fn), in the record's order
  struct Run {
    std::string file, fn;
    std::vector<long> lines;
  };
  std::vector<Run> runs;
  for (const json& x : *src) {
    SourceLoc l;
    if (!x.is_string() || !SourceLoc::parse(x.get<std::string>(), &l)) continue;
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

std::string ledger_entry_text(const json& entry, bool with_source) {
  std::string score;
  if (const json* sc = field(entry, "score"))
    if (sc->is_array())
      for (const auto& x : *sc) score += (score.empty() ? "" : ", ") + x.dump();
  const std::string at = with_source ? ledger_source_text(entry) : "";
  return nodes_key(entry) + (score.empty() ? "" : " score (" + score + ")") + (at.empty() ? "" : " at " + at);
}

namespace {

// A fusion-rule change shows here as a readable diff of decisions, even when
// the kernel count did not move.
void compare_ledger(Ctx& c, const json& run, const json& gold) {
  const json* a = field(gold, "ledger");
  const json* b = field(run, "ledger");
  if (!a || !b || !a->is_array() || !b->is_array()) return;
  // The same pair may be considered more than once; match occurrences in order.
  std::map<std::string, std::vector<const json*>> golden;
  for (const json& e : *a) golden[nodes_key(e)].push_back(&e);
  std::map<std::string, size_t> seen;
  std::vector<std::string> lines;
  for (const json& e : *b) {
    std::string key = nodes_key(e);
    size_t n = seen[key]++;
    auto it = golden.find(key);
    if (it == golden.end() || n >= it->second.size()) {
      lines.push_back(ledger_entry_text(e) + ": new candidate, " + decision(e));
      continue;
    }
    const json& g = *it->second[n];
    if (text_of(g, "outcome") != text_of(e, "outcome") ||
        text_of(g, "reason") != text_of(e, "reason"))
      lines.push_back(ledger_entry_text(e) + ": " + decision(g) + " -> " + decision(e));
  }
  for (auto& [key, entries] : golden)
    for (size_t n = seen[key]; n < entries.size(); ++n)
      lines.push_back(ledger_entry_text(*entries[n]) + ": no longer a candidate (was " + decision(*entries[n]) + ")");
  if (!lines.empty())
    c.add(VerdictKind::Pass, "fusion decisions changed:\n  " + join(lines, "\n  "));
}

// -- fast paths --------------------------------------------------------------

// A fast path that ran when the golden was blessed and does not now (its
// proof was invalidated, removed, or no longer covers the run) fails; one
// that runs now and did not then is an improvement to bless. A golden
// blessed before fast paths existed records none: nothing to compare.
void compare_fast_paths(Ctx& c, const json& run, const json& gold) {
  const json* a = field(gold, "fast_paths");
  const json* b = field(run, "fast_paths");
  if (!a || !a->is_array()) return;
  std::map<std::string, std::string> then, now;
  for (const json& f : *a) then[text_of(f, "name")] = text_of(f, "status");
  if (b && b->is_array())
    for (const json& f : *b) now[text_of(f, "name")] = text_of(f, "status");
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
void compare_outputs(Ctx& c, const json& run, const json& gold, const std::string& env) {
  auto golden = outputs_by_name(gold);
  auto actual = outputs_by_name(run);
  for (auto& [name, g] : golden) {
    auto it = actual.find(name);
    if (it == actual.end()) {
      c.add(VerdictKind::Fail, "output " + name + " is missing from the run (the golden has it)");
      continue;
    }
    const json& r = *it->second;
    const json* gf = field(*g, "fingerprint");
    const json* rf = field(r, "fingerprint");
    std::string why;
    // Golden first, so that "why" reads in the same direction as "a -> b".
    bool close = gf && rf && fingerprints_close(*gf, *rf, &why);
    if (!gf || !rf) why = "no fingerprint on " + std::string(gf ? "the run" : "the golden");
    const json* gx = field(*g, "exact");
    const json* ge = gx && !env.empty() ? field(*gx, env.c_str()) : nullptr;
    const json* re = field(r, "exact");
    if (ge && re) {
      std::string note;
      if (gf && rf)
        note = close ? " (fingerprints are within tolerance: rounding changed)"
                     : " (fingerprint drifted too: " + why + ")";
      if (text_of(ge) != text_of(re))
        c.add(VerdictKind::Fail,
              "output " + name + ": exact digest " + text_of(ge) + " -> " + text_of(re) + note);
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

bool header_matches(std::vector<Finding>* out, const json& run, const json& gold,
                    const std::string& file, const std::string& bless) {
  bool ok = true;
  for (const char* key : {"repro", "mode", "world_size", "backend", "fusion", "fast_paths", "nodes"}) {
    const json* a = field(gold, key);
    const json* b = field(run, key);
    if (!a || !b || *a == *b) continue;
    if ((std::string(key) == "fusion" || std::string(key) == "fast_paths") && text_of(run, "mode") == "A") continue;
    out->push_back({VerdictKind::Fail, "golden file " + file + " holds " + key + " " + text_of(a) +
                                           " but the run has " + text_of(b) +
                                           "; restore it from git or re-bless" +
                                           (bless.empty() ? "" : " with: " + bless)});
    ok = false;
  }
  return ok;
}

}  // namespace

Verdict compare_with_golden(const json& run, const json* golden, const std::string& golden_file,
                            const std::string& check_id, const std::string& bless_command, bool require_exact) {
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
  if (!run_ranks.empty())
    if (const json* fps = field(*run_ranks.begin()->second, "fast_paths"); fps && fps->is_array())
      for (const json& f : *fps)
        if (text_of(f, "status").rfind("blocked", 0) == 0)
          out.push_back({VerdictKind::Pass, "fast path " + text_of(f, "name") + " " + text_of(f, "status") +
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
    const json* envs = field(*golden, "environments");
    const json* re = field(run, "env");
    const std::string rfp = re ? environment_fingerprint(*re) : "";
    const bool same_env = re && envs && envs->is_object() && envs->contains(rfp);
    if (!same_env) {
      // say so, naming what differs: a verdict that skipped the exact
      // digests must not read as one that compared them
      const size_t n = envs && envs->is_object() ? envs->size() : 0;
      const std::string diff = re ? nearest_environment_difference(*golden, *re) : "the run records no environment";
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
      if (g != gold_ranks.end() && id == run_ranks.begin()->first) {
        compare_gemm_algos(c, *r, *g->second);
        compare_gemm_choices(c, *r, *g->second);
        compare_residual_placement(c, *r, *g->second);
      }
      if (g == gold_ranks.end()) {
        c.add(VerdictKind::Fail, "not in the golden file");
        continue;
      }
      compare_counts(c, *r, *g->second);
      check_real_figures(c, *r, *g->second, text_of(run, "backend"));
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
