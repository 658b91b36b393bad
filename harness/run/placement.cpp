#include "harness/run/placement.h"

#include <cmath>

#include "fusion/errors.h"

namespace fg {

std::map<std::string, PlacementChoice> known_placements(const std::vector<std::string>& sites,
                                                        const std::string& forced,
                                                        const std::optional<record::RunRecord>& golden,
                                                        const std::string& golden_name) {
  std::map<std::string, PlacementChoice> out;
  if (forced == "gemm" || forced == "apart") {
    for (const std::string& s : sites) out[s] = PlacementChoice{s, forced == "apart", "forced"};
    return out;
  }
  if (!golden) return out;
  const std::vector<record::ResidualPlacement>* table = placement_table(*golden);
  if (!table) return out;  // blessed before the choice: measured, as a compiler change is
  std::map<std::string, bool> apart;
  for (const record::ResidualPlacement& e : *table) {
    const std::string &site = e.site, &where = e.placement;
    if (site.empty() || (where != "gemm" && where != "apart"))
      user_error(golden_name + ": the residual_placement entry " +
                 nlohmann::json{{"site", site}, {"placement", where}}.dump() + " needs a \"site\" and a \"placement\" of \"gemm\" or \"apart\" (bless the golden again, or "
                 "restore it from git)");
    apart[site] = where == "apart";
  }
  // a site the golden's table lacks (a changed graph) is measured
  for (const std::string& s : sites) {
    auto it = apart.find(s);
    if (it != apart.end()) out[s] = PlacementChoice{s, it->second, "golden"};
  }
  return out;
}

bool apart_wins(const RoundsSummary& hoisted_vs_apart) { return candidate_wins(hoisted_vs_apart, 0.005); }

nlohmann::json placement_json(const PlacementChoice& c) {
  nlohmann::json e = {{"site", c.site}, {"placement", c.apart ? "apart" : "gemm"}, {"source", c.source}};
  auto ms = [](double v) { return std::round(v * 1e4) / 1e4; };
  if (c.gemm_ms > 0) e["gemm_ms"] = ms(c.gemm_ms);
  if (c.apart_ms > 0) e["apart_ms"] = ms(c.apart_ms);
  if (c.rounds > 0) e["apart_faster_rounds"] = std::to_string(c.apart_faster) + " of " + std::to_string(c.rounds);
  if (!c.how.empty()) e["how"] = c.how;
  return e;
}

const std::vector<record::ResidualPlacement>* placement_table(const record::RunRecord& rec) {
  for (const auto& [id, rank] : record::ranks_by_id(rec))
    if (id == 0) return rank->residual_placement ? &*rank->residual_placement : nullptr;
  return nullptr;
}

std::set<std::string> apart_sites(const std::vector<record::ResidualPlacement>& table) {
  std::set<std::string> out;
  for (const record::ResidualPlacement& e : table)
    if (e.placement == "apart") out.insert(e.site);
  return out;
}

}  // namespace fg
