// The verdict of `fusegate ab` over the ranks' figures (harness/tools/ab_stats.h),
// and the commands `ab` and `prove` (harness/tools/ab.cpp). Never "looks okay":
//   - a fast path that computes in the generic path's order (its catalog
//     entry says so) must give identical digests, output by output, rank by
//     rank ("identical digests");
//   - otherwise each output's relative L2 distance to the fp64 reference
//     may exceed the generic path's by at most kAbFactor (with kAbFloor under
//     the generic figure, so an exact generic output does not demand an
//     exact fast one) ("no farther from fp64");
//   - either way, a replicated output must be bit-identical on every rank
//     and hold no NaN or Inf.
#pragma once
#include <string>
#include <vector>

#include "harness/record/record.h"

namespace fg {

constexpr double kAbFactor = 1.25;
constexpr double kAbFloor = 1e-6;

struct AbVerdict {
  bool pass = false;
  std::string rule;                   // the rule applied, in words
  std::vector<std::string> failures;  // one line each, with figures
};

// `ranks`: each rank's record of an ab run, in rank order.
AbVerdict ab_verdict(const std::vector<record::AbRankRecord>& ranks, const std::string& fast_path,
                     bool generic_order);

// The per-output, per-rank table that `ab` prints.
std::string ab_table(const std::vector<record::AbRankRecord>& ranks);

}  // namespace fg
