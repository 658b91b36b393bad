// What the parts of `fusegate fuzz` share (harness/tools/fuzz.cpp, the loop;
// fuzz_check.cpp, one graph judged; fuzz_minimize.cpp, a finding made small).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fusion/ir/graph.h"
#include "harness/tools/fuzz.h"

namespace fg {

// The nodes of `g` that are not inputs.
int op_nodes(const Graph& g);

// Every rank's verdict, exchanged: each rank goes on with the same one.
std::vector<nlohmann::json> exchange_verdicts(FuzzRank& fr, const nlohmann::json& mine);

}  // namespace fg
