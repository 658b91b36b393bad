// Where the comparisons of harness/record/ put their findings: one rank's
// findings, each prefixed with the rank, and the bless command a message
// may offer. Private to harness/record/compare.cpp and invariants.cpp.
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

}  // namespace fg::detail
