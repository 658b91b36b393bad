// What a run must hold whatever its golden says (harness/record/compare.h:
// invariant_findings, cross_rank_findings).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fusion/ir/types.h"
#include "harness/record/compare.h"
#include "harness/record/finding_sink.h"
#include "harness/record/json_read.h"

namespace fg {
using nlohmann::json;

namespace {

using detail::Ctx;

// A repro that drives recompiles (RECORD.md `recompiles`): the same shapes
// again must not recompile, a changed sequence length exactly once.
void check_recompiles(Ctx& c, const json& run) {
  const json* rc = field(run, "recompiles");
  if (!rc) return;
  const json* same = field(*rc, "same_shapes");
  const json* changed = field(*rc, "changed_shapes");
  if (!same || !same->is_number_integer() || !changed || !changed->is_number_integer()) {
    c.add(VerdictKind::Fail, "recompiles: the record lacks same_shapes or changed_shapes");
    return;
  }
  if (same->get<int>() != 0)
    c.add(VerdictKind::Fail, "calling the forward again with the same shapes recompiled " + same->dump() +
                                 " time(s) (guards that do not hold: expected 0)");
  // each graph of the forward compiles once more (one, without breaks)
  const json* graphs = field(run, "graph_count");
  const int want = graphs && graphs->is_number_integer() ? graphs->get<int>() : 1;
  if (changed->get<int>() != want)
    c.add(VerdictKind::Fail, "a changed sequence length recompiled " + changed->dump() +
                                 " time(s), expected exactly " + std::to_string(want) + " (once per graph)" +
                                 (changed->get<int>() == 0 ? " (a stale graph ran on new shapes: a guard is missing)"
                                                           : "") +
                                 "; guard: " + text_of(*rc, "guard"));
}

void check_accuracy(Ctx& c, const json& run) {
  const json* acc = field(run, "accuracy");
  if (!acc || !acc->is_object()) return;
  std::string status = text_of(*acc, "status");
  if (status == "pass") return;
  std::vector<std::string> bad;
  for (const json& o : array_of(*acc, "outputs")) {
    const json* pass = field(o, "pass");
    if (pass && pass->is_boolean() && pass->get<bool>()) continue;
    std::vector<std::string> figs;
    for (auto it = o.begin(); it != o.end(); ++it)
      if (it.key() != "name" && it.key() != "pass")
        figs.push_back(it.key() + " " + (it->is_number() ? fmt(it->get<double>()) : text_of(&*it)));
    bad.push_back(text_of(o, "name") + " (" + join(figs, ", ") + ")");
  }
  c.add(VerdictKind::Fail, "accuracy " + (status.empty() ? "missing status" : status) +
                               (bad.empty() ? "" : ": " + join(bad, "; ")));
}

// Mode C: one graph, no break and no recompile, unless the repro declares
// what it expects (`expected_breaks` in each rank's record: each break's reason
// starts with one declared reason, each declared reason used once; the
// `recompiles` rules where it drives recompiles). A golden that recorded a
// violation does not excuse it.
void check_mode_c(Ctx& c, const json& rank, const std::vector<std::string>& declared) {
  // each break matched to a declared reason it starts with, as many as can
  // be (a matching, not first come: "data" must not take the break that
  // only "data-dependent control flow" could have taken)
  const json& breaks = array_of(rank, "breaks");
  std::vector<int> owner(declared.size(), -1);  // declared reason -> the break it took
  std::function<bool(size_t, std::vector<bool>&)> take = [&](size_t bi, std::vector<bool>& seen) {
    const std::string reason = text_of(breaks[bi], "reason");
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
    const json& b = breaks[bi];
    const std::string reason = text_of(b, "reason");
    const bool matched = matched_break[bi];
    // what to declare: the reason up to its details in parentheses
    const std::string head = reason.substr(0, reason.find('('));
    const std::string declare = head.substr(0, head.find_last_not_of(' ') + 1);
    if (!matched)
      c.add(VerdictKind::Fail, "graph break in mode C that the repro does not declare: " + reason + " at " +
                                   text_of(b, "location") +
                                   " (mode C compiles the block as one graph: remove the break, or declare it, "
                                   "in a .fg as `expect break \"" + declare + "\"`)");
  }
  for (size_t i = 0; i < declared.size(); ++i)
    if (!used[i])
      c.add(VerdictKind::Fail, "the repro declares a graph break \"" + declared[i] +
                                   "\" that did not happen: update its declaration");
  const json* graphs = field(rank, "graph_count");
  const json* nbreaks = field(rank, "graph_break_count");
  if (graphs && nbreaks && graphs->is_number_integer() && nbreaks->is_number_integer()) {
    const long long g = graphs->get<long long>(), n = nbreaks->get<long long>();
    if (declared.empty() && g != 1)
      c.add(VerdictKind::Fail, "graph_count " + std::to_string(g) +
                                   " in mode C, where the block compiles as one graph (graph_count 1)");
    else if (g > n + 1)
      c.add(VerdictKind::Fail, "graph_count " + std::to_string(g) + " with " + std::to_string(n) +
                                   " break(s): more graphs than its breaks make");
  }
  const json* rc = field(rank, "recompile_count");
  if (!field(rank, "recompiles") && rc && rc->is_number_integer() && rc->get<long long>() != 0)
    c.add(VerdictKind::Fail, "recompile_count " + rc->dump() +
                                 " in mode C: a graph compiled again (a guard failed on a later call; "
                                 "FUSEGATE_LOGS=recompiles says which)");
}

}  // namespace

std::vector<Finding> invariant_findings(const json& run) {
  std::vector<Finding> out;
  const bool mode_c = text_of(run, "mode") == "C";
  for (auto& [id, r] : ranks_by_id(run)) {
    Ctx c{"rank " + std::to_string(id), "", &out};
    check_accuracy(c, *r);
    check_recompiles(c, *r);
    std::vector<std::string> declared;
    for (const json& d : array_of(*r, "expected_breaks")) declared.push_back(text_of(&d));
    if (mode_c) check_mode_c(c, *r, declared);
  }
  for (Finding& f : cross_rank_findings(run)) out.push_back(std::move(f));
  return out;
}

std::vector<Finding> cross_rank_findings(const json& run) {
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
      const json* rep = field(*o, "replicated");
      if (!rep || !rep->is_boolean() || !rep->get<bool>()) continue;
      auto other = outs.find(name);
      std::string mine = text_of(*o, "exact");
      std::string theirs = other == outs.end() ? "(absent)" : text_of(*other->second, "exact");
      if (mine != theirs)
        out.push_back({VerdictKind::Fail, "output " + name + " is replicated but rank " + id +
                                              " differs from rank " + ref + " (exact " + mine +
                                              " vs " + theirs + ")"});
    }
    const json* ha = field(*first->second, "hashes");
    const json* hb = field(*it->second, "hashes");
    if (!ha || !hb || *ha == *hb) continue;
    std::vector<std::string> which;
    if (ha->is_object() && hb->is_object()) {
      json keys = json::object();
      for (auto k = ha->begin(); k != ha->end(); ++k) keys[k.key()] = true;
      for (auto k = hb->begin(); k != hb->end(); ++k) keys[k.key()] = true;
      for (auto k = keys.begin(); k != keys.end(); ++k)
        if (text_of(*ha, k.key().c_str()) != text_of(*hb, k.key().c_str()))
          which.push_back(k.key());
    }
    if (which.empty()) which.push_back("graphs/decisions/collectives");
    out.push_back({VerdictKind::Fail, "rank " + id + " compiled different " + join(which, "/") +
                                          " than rank " + ref + " (NCCL would hang)"});
  }
  return out;
}

}  // namespace fg
