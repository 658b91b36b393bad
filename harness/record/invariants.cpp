// What a run must hold whatever its golden says (harness/record/compare.h:
// invariant_findings, cross_rank_findings).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fusion/ir/types.h"
#include "harness/record/compare.h"
#include "harness/record/finding_sink.h"
#include "harness/record/json_read.h"
#include "harness/record/record.h"

namespace fg {
using nlohmann::json;

namespace {

using detail::Ctx;
using namespace record;

// A repro that drives recompiles (RECORD.md `recompiles`): the same shapes
// again must not recompile, a changed sequence length exactly once.
void check_recompiles(Ctx& c, const RankRecord& run) {
  if (!run.recompiles) return;
  const Recompiles& rc = *run.recompiles;
  if (!rc.same_shapes || !rc.changed_shapes) {
    c.add(VerdictKind::Fail, "recompiles: the record lacks same_shapes or changed_shapes");
    return;
  }
  const long long same = *rc.same_shapes, changed = *rc.changed_shapes;
  if (same != 0)
    c.add(VerdictKind::Fail, "calling the forward again with the same shapes recompiled " + std::to_string(same) +
                                 " time(s) (guards that do not hold: expected 0)");
  // each graph of the forward compiles once more (one, without breaks)
  const long long want = run.graph_count.value_or(1);
  if (changed != want)
    c.add(VerdictKind::Fail, "a changed sequence length recompiled " + std::to_string(changed) +
                                 " time(s), expected exactly " + std::to_string(want) + " (once per graph)" +
                                 (changed == 0 ? " (a stale graph ran on new shapes: a guard is missing)" : "") +
                                 "; guard: " + rc.guard.value_or(""));
}

// A figure as the accuracy message shows it (NaN was stored as null).
std::string figure(const std::optional<double>& x) { return std::isnan(*x) ? "null" : fmt(*x); }

void check_accuracy(Ctx& c, const RankRecord& run) {
  if (!run.accuracy) return;
  const std::string status = run.accuracy->status.value_or("");
  if (status == "pass") return;
  std::vector<std::string> bad;
  for (const AccuracyOutput& o : run.accuracy->outputs) {
    if (o.pass.value_or(false)) continue;
    // the figures in the order of their names
    std::vector<std::string> figs;
    if (o.allclose_eager) figs.push_back(std::string("allclose_eager ") + (*o.allclose_eager ? "true" : "false"));
    if (o.eager_rmse_vs_fp64) figs.push_back("eager_rmse_vs_fp64 " + figure(o.eager_rmse_vs_fp64));
    if (o.max_abs_vs_eager) figs.push_back("max_abs_vs_eager " + figure(o.max_abs_vs_eager));
    if (o.rmse_vs_fp64) figs.push_back("rmse_vs_fp64 " + figure(o.rmse_vs_fp64));
    bad.push_back(o.name + " (" + join(figs, ", ") + ")");
  }
  c.add(VerdictKind::Fail, "accuracy " + (status.empty() ? "missing status" : status) +
                               (bad.empty() ? "" : ": " + join(bad, "; ")));
}

// Mode C: one graph, no break and no recompile, unless the repro declares
// what it expects (`expected_breaks` in each rank's record: each break's reason
// starts with one declared reason, each declared reason used once; the
// `recompiles` rules where it drives recompiles). A golden that recorded a
// violation does not excuse it.
void check_mode_c(Ctx& c, const RankRecord& rank, const std::vector<std::string>& declared) {
  // each break matched to a declared reason it starts with, as many as can
  // be (a matching, not first come: "data" must not take the break that
  // only "data-dependent control flow" could have taken)
  const std::vector<Break>& breaks = rank.breaks;
  std::vector<int> owner(declared.size(), -1);  // declared reason -> the break it took
  std::function<bool(size_t, std::vector<bool>&)> take = [&](size_t bi, std::vector<bool>& seen) {
    const std::string& reason = breaks[bi].reason;
    for (size_t d = 0; d < declared.size(); ++d) {
      if (seen[d] || reason.rfind(declared[d], 0) != 0) continue;
      seen[d] = true;
      if (owner[d] < 0 || take(static_cast<size_t>(owner[d]), seen)) {
        owner[d] = static_cast<int>(bi);
        return true;
      }
    }
    return false;
  };
  std::vector<bool> matched_break(breaks.size(), false);
  for (size_t bi = 0; bi < breaks.size(); ++bi) {
    std::vector<bool> seen(declared.size(), false);
    take(bi, seen);
  }
  for (int b : owner)
    if (b >= 0) matched_break[static_cast<size_t>(b)] = true;
  std::vector<bool> used(declared.size());
  for (size_t d = 0; d < declared.size(); ++d) used[d] = owner[d] >= 0;
  for (size_t bi = 0; bi < breaks.size(); ++bi) {
    const Break& b = breaks[bi];
    const bool matched = matched_break[bi];
    // what to declare: the reason up to its details in parentheses
    const std::string head = b.reason.substr(0, b.reason.find('('));
    const std::string declare = head.substr(0, head.find_last_not_of(' ') + 1);
    if (!matched)
      c.add(VerdictKind::Fail, "graph break in mode C that the repro does not declare: " + b.reason + " at " +
                                   b.location +
                                   " (mode C compiles the block as one graph: remove the break, or declare it, "
                                   "in a .fg as `expect break \"" + declare + "\"`)");
  }
  for (size_t i = 0; i < declared.size(); ++i)
    if (!used[i])
      c.add(VerdictKind::Fail, "the repro declares a graph break \"" + declared[i] +
                                   "\" that did not happen: update its declaration");
  if (rank.graph_count && rank.graph_break_count) {
    const long long g = *rank.graph_count, n = *rank.graph_break_count;
    if (declared.empty() && g != 1)
      c.add(VerdictKind::Fail, "graph_count " + std::to_string(g) +
                                   " in mode C, where the block compiles as one graph (graph_count 1)");
    else if (g > n + 1)
      c.add(VerdictKind::Fail, "graph_count " + std::to_string(g) + " with " + std::to_string(n) +
                                   " break(s): more graphs than its breaks make");
  }
  if (!rank.recompiles && rank.recompile_count && *rank.recompile_count != 0)
    c.add(VerdictKind::Fail, "recompile_count " + std::to_string(*rank.recompile_count) +
                                 " in mode C: a graph compiled again (a guard failed on a later call; "
                                 "FUSEGATE_LOGS=recompiles says which)");
}

}  // namespace

std::vector<Finding> invariant_findings(const record::RunRecord& run) {
  std::vector<Finding> out;
  const bool mode_c = run.mode.value_or("") == "C";
  for (auto& [id, r] : record::ranks_by_id(run)) {
    Ctx c{"rank " + std::to_string(id), "", &out};
    check_accuracy(c, *r);
    check_recompiles(c, *r);
    if (mode_c) check_mode_c(c, *r, r->expected_breaks.value_or(std::vector<std::string>{}));
  }
  for (Finding& f : cross_rank_findings(run)) out.push_back(std::move(f));
  return out;
}

std::vector<Finding> cross_rank_findings(const record::RunRecord& run) {
  using namespace record;
  std::vector<Finding> out;
  auto ranks = ranks_by_id(run);
  if (ranks.size() < 2) return out;
  auto first = ranks.begin();
  std::string ref = std::to_string(first->first);
  auto ref_outputs = outputs_by_name(*first->second);
  for (auto it = std::next(first); it != ranks.end(); ++it) {
    std::string id = std::to_string(it->first);
    auto outs = outputs_by_name(*it->second);
    for (auto& [name, o] : ref_outputs) {
      if (!o->replicated.value_or(false)) continue;
      auto other = outs.find(name);
      const std::string mine = o->exact.value_or("");
      const std::string theirs = other == outs.end() ? "(absent)" : other->second->exact.value_or("");
      if (mine != theirs)
        out.push_back({VerdictKind::Fail, "output " + name + " is replicated but rank " + id +
                                              " differs from rank " + ref + " (exact " + mine +
                                              " vs " + theirs + ")"});
    }
    const auto& ha = first->second->hashes;
    const auto& hb = it->second->hashes;
    if (!ha || !hb) continue;
    struct Which {
      std::optional<std::string> Hashes::*hash;
      const char* name;
    };
    std::vector<std::string> which;
    for (const Which& w : {Which{&Hashes::collectives, "collectives"}, Which{&Hashes::decisions, "decisions"},
                           Which{&Hashes::graphs, "graphs"}})
      if ((*ha).*w.hash != (*hb).*w.hash) which.push_back(w.name);
    if (which.empty()) continue;
    out.push_back({VerdictKind::Fail, "rank " + id + " compiled different " + join(which, "/") +
                                          " than rank " + ref + " (NCCL would hang)"});
  }
  return out;
}

}  // namespace fg
