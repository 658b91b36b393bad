#include "harness/tools/ab.h"

#include <cmath>
#include <cstdio>
#include <map>

namespace fg {

namespace {

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

// A figure, NaN where the record has none.
double dbl(const std::optional<double>& v) { return v ? *v : std::nan(""); }

std::string count(const std::optional<long long>& v) { return v ? std::to_string(*v) : ""; }

}  // namespace

AbVerdict ab_verdict(const std::vector<record::AbRankRecord>& ranks, const std::string& fast_path,
                     bool generic_order) {
  AbVerdict v;
  v.rule = generic_order
               ? "identical digests: " + fast_path + " computes every output in the generic path's order"
               : "no farther from fp64: rel_l2(fast, fp64) <= " + num(kAbFactor) + " x max(rel_l2(generic, fp64), " +
                     num(kAbFloor) + ") for every output on every rank";
  std::map<std::string, std::pair<long long, std::string>> first_digest;  // replicated output -> (rank, fast digest)
  int outputs = 0;
  for (const record::AbRankRecord& r : ranks) {
    const long long rank = r.rank.value_or(-1);
    if (!r.ab) {
      v.failures.push_back("rank " + std::to_string(rank) + ": no A/B figures in its record");
      continue;
    }
    for (const record::AbOutput& o : *r.ab) {
      ++outputs;
      const std::string where = o.name + " on rank " + std::to_string(rank);
      const double fast = dbl(o.rel_l2_fast), gen = dbl(o.rel_l2_generic);
      if (o.nonfinite_fast.value_or(0) > 0)
        v.failures.push_back(where + ": the fast path wrote " + std::to_string(*o.nonfinite_fast) + " NaN/Inf values");
      if (generic_order) {
        if (!o.identical.value_or(false))
          v.failures.push_back(where + ": digests differ from the generic path's (" + count(o.differing) + " of " +
                               count(o.numel) + " elements; max |fast - generic| " +
                               num(dbl(o.max_abs_fast_vs_generic)) + "; rel L2 vs fp64: generic " + num(gen) +
                               ", fast " + num(fast) + ")");
      } else if (!(fast <= kAbFactor * std::max(gen, kAbFloor))) {
        v.failures.push_back(where + ": rel L2 vs fp64 " + num(fast) + " is over " + num(kAbFactor) +
                             " x the generic path's " + num(gen) + " (max |fast - fp64| " + num(dbl(o.max_abs_fast)) +
                             ", generic " + num(dbl(o.max_abs_generic)) + ")");
      }
      if (o.replicated.value_or(false)) {
        const std::string digest = o.exact_fast.value_or("");
        auto it = first_digest.find(o.name);
        if (it == first_digest.end())
          first_digest[o.name] = {rank, digest};
        else if (it->second.second != digest)
          v.failures.push_back(where + ": a replicated output differs from rank " + std::to_string(it->second.first) +
                               "'s under the fast path");
      }
    }
  }
  if (outputs == 0) v.failures.push_back("no outputs were compared");
  v.pass = v.failures.empty();
  return v;
}

std::string ab_table(const std::vector<record::AbRankRecord>& ranks) {
  std::string t = "  output        rank  identical  max|fast-generic|  rel_l2 generic  rel_l2 fast  "
                  "ulps fast vs fp64 (0/1/2/3-4/5-8/9-16/17-64/>64)\n";
  for (const record::AbRankRecord& r : ranks) {
    if (!r.ab) continue;
    for (const record::AbOutput& o : *r.ab) {
      char line[256];
      std::string hist;
      if (o.ulps_fast_vs_fp64)
        for (const char* b : {"0", "1", "2", "3-4", "5-8", "9-16", "17-64", ">64"}) {
          auto it = o.ulps_fast_vs_fp64->find(b);
          hist += (hist.empty() ? "" : "/") + (it == o.ulps_fast_vs_fp64->end() ? "" : std::to_string(it->second));
        }
      std::snprintf(line, sizeof line, "  %-13s %4d  %-9s  %17s  %14s  %11s  %s\n", o.name.c_str(),
                    static_cast<int>(r.rank.value_or(-1)), o.identical.value_or(false) ? "yes" : "no",
                    num(dbl(o.max_abs_fast_vs_generic)).c_str(), num(dbl(o.rel_l2_generic)).c_str(),
                    num(dbl(o.rel_l2_fast)).c_str(), hist.c_str());
      t += line;
    }
  }
  return t;
}

}  // namespace fg
