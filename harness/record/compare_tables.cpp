// The run's tables of choices against the golden's (harness/record/finding_sink.h:
// compare_tables): each says why beside the findings of the counts, the
// ledger and the digests, and none fails a check on its own.
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/record/finding_sink.h"
#include "harness/record/json_read.h"
#include "harness/record/record.h"

namespace fg::detail {
namespace {

using namespace record;

// -- GEMM algorithms (max-autotune on cuda) ----------------------------------

// Each shape's cuBLASLt algorithm against the golden's: informative, as the
// digests and counts judge what a change does; said so that a drifted digest
// has its likely cause beside it (the golden's choice was not taken: another
// GPU model, or a cuBLASLt that refuses it). Neither side recorded any:
// nothing to say.
void compare_gemm_algos(Ctx& c, const RankRecord& run, const RankRecord& gold) {
  const std::vector<GemmAlgo> none;
  const auto& g = gold.gemm_algos ? *gold.gemm_algos : none;
  const auto& r = run.gemm_algos ? *run.gemm_algos : none;
  if (g.empty()) return;
  if (r.empty()) {
    c.add(VerdictKind::Pass, "no GEMM algorithm choices in the run (the golden has " + std::to_string(g.size()) +
                                 "): its GEMMs ran cuBLASLt's top-1");
    return;
  }
  std::map<std::string, const GemmAlgo*> ran;
  for (const GemmAlgo& e : r) ran[e.shape] = &e;
  auto config = [](const GemmAlgo& e) {
    const std::string cfg = e.config.value_or("");
    return cfg.empty() ? "algo " + e.algo.value_or("").substr(0, 16) + "..." : cfg;
  };
  std::vector<std::string> changed;
  for (const GemmAlgo& e : g) {
    auto it = ran.find(e.shape);
    if (it == ran.end()) {
      changed.push_back(e.shape + ": not run (the golden chose " + config(e) + ")");
      continue;
    }
    const GemmAlgo& now = *it->second;
    if (now.algo.value_or("") == e.algo.value_or("")) continue;
    const std::string why = now.why.value_or("");
    changed.push_back(e.shape + ": " + config(e) + " -> " + config(now) + " (" + now.source +
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
template <class E>
std::vector<std::string> choice_changes(const std::optional<std::vector<E>>& golden,
                                        const std::optional<std::vector<E>>& run, std::string E::*key,
                                        std::string E::*value,
                                        const std::function<std::string(const E&)>& missing,
                                        const std::function<bool(const E&)>& unchanged) {
  const std::vector<E> none;
  const auto& g = golden ? *golden : none;
  const auto& r = run ? *run : none;
  std::map<std::string, const E*> ran;
  for (const E& e : r) ran[e.*key] = &e;
  std::vector<std::string> changed;
  std::set<std::string> golden_keys;
  for (const E& e : g) {
    const std::string& k = e.*key;
    golden_keys.insert(k);
    auto it = ran.find(k);
    if (it == ran.end())
      changed.push_back(k + ": " + missing(e));
    else if (it->second->*value != e.*value)
      changed.push_back(k + ": " + e.*value + " -> " + it->second->*value + " (" +
                        it->second->source.value_or("") + ")");
  }
  for (const E& e : r)
    if (!golden_keys.count(e.*key) && !unchanged(e))
      changed.push_back(e.*key + ": not in the golden, " + e.*value + " (" + e.source.value_or("") + ")");
  return changed;
}

// Each shape's template-or-library choice (cpu max-autotune) against the
// golden's: informative, as the counts and digests judge what the choice
// does (a template that became a library call moves the kernel count, and
// the check says that as a count); said so that the count's finding has
// its cause beside it. A run takes the golden's choices first, so they
// differ only for a shape the golden lacks or a forced choice.
void compare_gemm_choices(Ctx& c, const RankRecord& run, const RankRecord& gold) {
  const std::vector<std::string> changed = choice_changes<GemmChoice>(
      gold.gemm_choices, run.gemm_choices, &GemmChoice::shape, &GemmChoice::choice,
      [](const GemmChoice& e) { return "not run (the golden chose the " + e.choice + ")"; },
      [](const GemmChoice&) { return false; });
  if (!changed.empty())
    c.add(VerdictKind::Pass, "GEMM template choices differ from the golden's: " + join_capped(changed, 4));
}

// Each TP residual hoist site's placement (cuda max-autotune) against the
// golden's: informative, as compare_gemm_choices is. A site that moved
// changes the ledger (tp_residual_hoisted / tp_residual_apart), the kernels
// and the digests, and those fail the check; this says why beside them. A
// run takes the golden's table first, so they differ only for a site the
// golden lacks or a forced placement.
void compare_residual_placement(Ctx& c, const RankRecord& run, const RankRecord& gold) {
  // a golden without the table predates the choice: its program hoisted
  // every site, so a site the run keeps hoisted is no change
  const bool predates = !gold.residual_placement;
  const std::vector<std::string> changed = choice_changes<ResidualPlacement>(
      gold.residual_placement, run.residual_placement, &ResidualPlacement::site, &ResidualPlacement::placement,
      [](const ResidualPlacement& e) { return "not in this run (the golden placed it " + e.placement + ")"; },
      [predates](const ResidualPlacement& e) { return predates && e.placement == "gemm"; });
  if (!changed.empty())
    c.add(VerdictKind::Pass, "residual placement differs from the golden's: " + join_capped(changed, 4));
}

}  // namespace

void compare_tables(Ctx& c, const RankRecord& run, const RankRecord& gold) {
  compare_gemm_algos(c, run, gold);
  compare_gemm_choices(c, run, gold);
  compare_residual_placement(c, run, gold);
}

}  // namespace fg::detail
