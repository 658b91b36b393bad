// fusegate fuzz: differential fuzzing of the compiler. Random graphs
// (harness/fuzz_gen.h) run compiled under each fusion policy against eager
// and the fp64 reference, in this process; a mismatch, a crash, a compile
// error or a graph break is a finding, shrunk to the smallest .fg that still
// shows it and written with the command that replays it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/options.h"

namespace fg {

struct FuzzOptions {
  double seconds = 60;   // stop after this long ...
  int64_t graphs = 0;    // ... or after this many graphs (0: no limit)
  uint64_t seed = 1;     // graph i comes from seed + i
  Backend backend = Backend::Cpu;
  std::vector<FusionPolicy> policies{FusionPolicy::Default};
  int max_ops = 12;
  std::string findings_dir = "fuzz-findings";
  std::string json_out;  // the summary as JSON (bench records)
  int max_findings = 1;  // stop after this many (each is minimized)
};

// What one graph showed; kind empty: nothing.
struct FuzzFinding {
  std::string kind;    // mismatch | crash | compile error | graph break
  FusionPolicy policy = FusionPolicy::Default;
  std::string detail;  // the output and its figures, or the message
  bool operator==(const FuzzFinding& o) const { return kind == o.kind && policy == o.policy; }
};

// Runs `g` (named `name`: its inputs are seeded by it, as `fusegate run
// NAME` seeds them) eager, in fp64 and compiled under each policy.
// nullopt: eager itself refused the graph (not the compiler's fault).
std::optional<FuzzFinding> fuzz_check(const Graph& g, const std::string& name, const FuzzOptions& o,
                                      std::string* eager_error = nullptr);

// The smallest graph found that still shows `f` (same kind, same policy):
// outputs dropped, nodes replaced by one of their operands or by a new
// input, until no step keeps the finding.
Graph minimize(const Graph& g, const FuzzFinding& f, const FuzzOptions& o, int* checks);

// The name a graph's finding file and repro take: "f" and 12 hex digits of
// its text's hash.
std::string fuzz_name(const Graph& g);

int cmd_fuzz(const FuzzOptions& o);

}  // namespace fg
