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

// The flags that replay a finding with `fusegate run --graph` (and
// bisect): its policy where one policy showed it (null: a job that died,
// under all of them), the backend, world size and fast paths of the run.
std::string replay_flags(const FuzzOptions& o, const FusionPolicy* policy, int world);

// A finding of graph `index` (seed `seed`) made small and written, by rank
// 0, as a .fg with its replay and bisect commands (fuzz: under the
// findings folder, named by its hash; minify: to o.minify_out); every rank
// of the job calls it (the minimizer's checks run in lock step). `who`
// starts each line it prints. Returns the finding's entry in the summary.
nlohmann::json write_finding(const FuzzOptions& o, FuzzRank& fr, const Graph& g, const FuzzFinding& f, int64_t index,
                             uint64_t seed, const std::string& who);

}  // namespace fg
