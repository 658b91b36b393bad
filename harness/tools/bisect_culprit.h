// What fusegate bisect names (harness/tools/bisect.cpp): the applications
// of a subsystem a run's record lists, in order, and the culprit's
// description: its stage and rule, its repro lines and the kernel that
// holds it.
#pragma once
#include <string>
#include <vector>

#include "harness/cli/commands.h"
#include "harness/record/record.h"
#include "harness/run/run.h"

namespace fg {

// One application of a subsystem: a ledger entry, a kernel written in
// another variant (codegen_variants, not a fusion decision: RECORD.md), or a
// decomposition or lowering.
struct Application {
  const record::LedgerEntry* entry = nullptr;
  const record::CodegenVariant* variant = nullptr;
  const record::StageApplication* stage = nullptr;
  long long graph() const;
  std::vector<std::string> nodes() const;
  std::vector<std::string> source() const;  // its repro source lines, "file:line (fn)"
  nlohmann::json to_json() const;
};

// The applications of `subsystem` the first rank's record lists as made, in
// graph order and, inside a graph, in the order the limits count them;
// `graph` >= 0: that graph's only.
std::vector<Application> applications(const record::RunRecord& rec, const std::string& subsystem, long long graph = -1);
// The application of `subsystem` in `graph` that the run's limit held back
// (the next one it would have made), if the record names it; `graph` < 0:
// in any graph.
std::optional<Application> held_back(const record::RunRecord& rec, const std::string& subsystem, long long graph);

std::string describe(const Application& a);
// The rule of a stage an application is one use of: what bisect names
// beside the stage.
std::string rule_of(const Application& a, const std::string& subsystem);
// The text of the culprit's repro lines.
std::string source_excerpt(const Application& a, const std::string& golden_dir, const std::vector<std::string>& fg_dirs);
// The kernel that holds the culprit's nodes and its source, from `explain`
// run under the bad limits `env`.
std::string culprit_kernel(const RunSpec& spec, const std::string& env, const Application& entry);

}  // namespace fg
