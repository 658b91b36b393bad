// Where the comparisons of harness/record/ put their findings: one rank's
// findings, each prefixed with the rank, and the bless command a message
// may offer. Private to harness/record/compare.cpp, compare_tables.cpp and
// invariants.cpp.
#pragma once
#include <string>
#include <vector>

#include "harness/record/compare.h"

namespace fg::detail {

struct Ctx {
  std::string rank;  // "rank 0"
  std::string bless;
  std::vector<Finding>* out;
  void add(VerdictKind k, const std::string& msg) { out->push_back({k, rank + ": " + msg}); }
  std::string bless_hint() const { return bless.empty() ? "" : "; bless with: " + bless; }
};

// The run's tables of choices against the golden's (compare_tables.cpp):
// GEMM algorithms (cuda max-autotune), GEMM template choices (cpu
// max-autotune), residual placement. Informative: said once, for the first
// rank, as every rank runs rank 0's table.
void compare_tables(Ctx& c, const record::RankRecord& run, const record::RankRecord& gold);

}  // namespace fg::detail
