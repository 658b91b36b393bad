#include "harness/run/rounds.h"

#include <algorithm>
#include <cmath>

namespace fg {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

RoundsSummary summarize_rounds(const std::vector<std::vector<std::vector<double>>>& times) {
  RoundsSummary s;
  std::vector<double> all[2];
  for (const auto& round : times) {
    if (round.size() != 2 || round[0].empty() || round[1].empty()) continue;
    ++s.rounds;
    if (median_of(round[1]) < median_of(round[0])) ++s.candidate_faster;
    for (int k = 0; k < 2; ++k) all[k].insert(all[k].end(), round[k].begin(), round[k].end());
  }
  s.default_ms = median_of(all[0]);
  s.candidate_ms = median_of(all[1]);
  return s;
}

bool candidate_wins(const RoundsSummary& s, double margin) {
  return std::isfinite(s.default_ms) && std::isfinite(s.candidate_ms) && s.default_ms > 0 && s.candidate_ms > 0 &&
         s.candidate_ms < (1.0 - margin) * s.default_ms && s.rounds > 0 && s.candidate_faster == s.rounds;
}

nlohmann::json rounds_json(const RoundsSummary& s) {
  return nlohmann::json::array({s.default_ms, s.candidate_ms, s.candidate_faster, s.rounds});
}

RoundsSummary rounds_from_json(const nlohmann::json& j) {
  RoundsSummary s;
  s.default_ms = j.at(0).get<double>();
  s.candidate_ms = j.at(1).get<double>();
  s.candidate_faster = j.at(2).get<int>();
  s.rounds = j.at(3).get<int>();
  return s;
}

std::string rounds_text(const RoundsSummary& s) {
  return std::to_string(s.candidate_faster) + " of " + std::to_string(s.rounds);
}

}  // namespace fg
