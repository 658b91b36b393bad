#include "harness/tools/ab.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "harness/record/json_read.h"

namespace fg {

using nlohmann::json;

namespace {

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

double dbl(const json& o, const char* key) {
  const json* v = field(o, key);
  return v && v->is_number() ? v->get<double>() : std::nan("");
}

}  // namespace

AbVerdict ab_verdict(const json& record, const std::string& fast_path, bool generic_order) {
  AbVerdict v;
  v.rule = generic_order
               ? "identical digests: " + fast_path + " computes every output in the generic path's order"
               : "no farther from fp64: rel_l2(fast, fp64) <= " + num(kAbFactor) + " x max(rel_l2(generic, fp64), " +
                     num(kAbFloor) + ") for every output on every rank";
  std::map<std::string, std::pair<int, std::string>> first_digest;  // replicated output -> (rank, fast digest)
  int outputs = 0;
  for (const auto& [rank, r] : ranks_by_id(record)) {
    const json* ab = field(*r, "ab");
    if (!ab || !ab->is_array()) {
      v.failures.push_back("rank " + std::to_string(rank) + ": no A/B figures in its record");
      continue;
    }
    for (const json& o : *ab) {
      ++outputs;
      const std::string where = text_of(o, "name") + " on rank " + std::to_string(rank);
      const double fast = dbl(o, "rel_l2_fast"), gen = dbl(o, "rel_l2_generic");
      const json* nf = field(o, "nonfinite_fast");
      if (nf && nf->is_number_integer() && nf->get<long long>() > 0)
        v.failures.push_back(where + ": the fast path wrote " + std::to_string(nf->get<long long>()) + " NaN/Inf values");
      if (generic_order) {
        const json* same = field(o, "identical");
        if (!same || !same->is_boolean() || !same->get<bool>())
          v.failures.push_back(where + ": digests differ from the generic path's (" + text_of(o, "differing") + " of " +
                               text_of(o, "numel") + " elements; max |fast - generic| " +
                               num(dbl(o, "max_abs_fast_vs_generic")) + "; rel L2 vs fp64: generic " + num(gen) +
                               ", fast " + num(fast) + ")");
      } else if (!(fast <= kAbFactor * std::max(gen, kAbFloor))) {
        v.failures.push_back(where + ": rel L2 vs fp64 " + num(fast) + " is over " + num(kAbFactor) +
                             " x the generic path's " + num(gen) + " (max |fast - fp64| " + num(dbl(o, "max_abs_fast")) +
                             ", generic " + num(dbl(o, "max_abs_generic")) + ")");
      }
      const json* rep = field(o, "replicated");
      if (rep && rep->is_boolean() && rep->get<bool>()) {
        auto it = first_digest.find(text_of(o, "name"));
        if (it == first_digest.end())
          first_digest[text_of(o, "name")] = {rank, text_of(o, "exact_fast")};
        else if (it->second.second != text_of(o, "exact_fast"))
          v.failures.push_back(where + ": a replicated output differs from rank " + std::to_string(it->second.first) +
                               "'s under the fast path");
      }
    }
  }
  if (outputs == 0) v.failures.push_back("no outputs were compared");
  v.pass = v.failures.empty();
  return v;
}

std::string ab_table(const json& record) {
  std::string t = "  output        rank  identical  max|fast-generic|  rel_l2 generic  rel_l2 fast  "
                  "ulps fast vs fp64 (0/1/2/3-4/5-8/9-16/17-64/>64)\n";
  for (const auto& [rank, r] : ranks_by_id(record)) {
    const json* ab = field(*r, "ab");
    if (!ab || !ab->is_array()) continue;
    for (const json& o : *ab) {
      char line[256];
      std::string hist;
      if (const json* h = field(o, "ulps_fast_vs_fp64"))
        for (const char* b : {"0", "1", "2", "3-4", "5-8", "9-16", "17-64", ">64"})
          hist += (hist.empty() ? "" : "/") + text_of(*h, b);
      const json* same = field(o, "identical");
      std::snprintf(line, sizeof line, "  %-13s %4d  %-9s  %17s  %14s  %11s  %s\n", text_of(o, "name").c_str(), static_cast<int>(rank),
                    same && same->is_boolean() && same->get<bool>() ? "yes" : "no",
                    num(dbl(o, "max_abs_fast_vs_generic")).c_str(), num(dbl(o, "rel_l2_generic")).c_str(),
                    num(dbl(o, "rel_l2_fast")).c_str(), hist.c_str());
      t += line;
    }
  }
  return t;
}

}  // namespace fg
