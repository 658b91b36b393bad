// Fixtures of the comparison tests: a valid two-rank record (tests change
// one figure of a copy), its golden, and the verdict's findings as text.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "harness/record/compare.h"
#include "harness/record/golden_env.h"
#include "tests/unit/record_fixtures.h"

namespace fg::testing_compare {
using nlohmann::json;

inline const char* const kBless = "fusegate bless tp_block_llama --mode C --world-size 2";

inline json fingerprint(double sum = 1.5, double sumsq = 3.0, double max_abs = 2.0) {
  return {{"dtype", "bf16"},
          {"shape", {2, 64, 256}},
          {"numel", 32768},
          {"sum", sum},
          {"sumsq", sumsq},
          {"max_abs", max_abs},
          {"nan", 0},
          {"inf", 0},
          {"samples", {0.1, -0.2, 1.25}}};
}

inline json rank_record(int r) {
  return {
      {"rank", r},
      {"graph_count", 1},
      {"graph_break_count", 0},
      {"breaks", json::array()},
      {"recompile_count", 0},
      {"kernel_count", 12},
      {"aten_op_count", 40},
      {"kernel_count_by_kind",
       {{"poi", 2}, {"red", 0}, {"per", 2}, {"tem", 0}, {"extern", 6}, {"collective", 2}}},
      {"kernels", json::array({{{"name", "cpu_per_fused__to_copy_add_0"}, {"kind", "per"}},
                               {{"name", "cpu_poi_fused_mul_silu_1"}, {"kind", "poi"}}})},
      {"ledger",
       json::array({{{"nodes", {"buf0", "buf1"}}, {"outcome", "fused"}, {"reason", ""}},
                    {{"nodes", {"buf3", "buf4"}}, {"outcome", "fused"}, {"reason", ""}}})},
      {"outputs", json::array({{{"name", "out"},
                                {"replicated", true},
                                {"exact", "0123456789abcdef"},
                                {"fingerprint", fingerprint()}}})},
      {"accuracy",
       {{"status", "pass"},
        {"outputs", json::array({{{"name", "out"}, {"pass", true}, {"rmse_vs_fp64", 0.001}}})}}},
      {"hashes", {{"graphs", "g1"}, {"decisions", "d1"}, {"collectives", "c1"}}}};
}

// A valid two-rank record; tests change one figure of a copy.
inline json make_record(int world = 2) {
  json ranks = json::array();
  for (int r = 0; r < world; ++r) ranks.push_back(rank_record(r));
  return {{"repro", "tp_block_llama"},
          {"mode", "C"},
          {"world_size", world},
          {"backend", "cpu"},
          {"fusion", "default"},
          {"env", {{"backend", "cpu"}, {"compiler", "g++ 12.2.0"}, {"fingerprint", "9f3c"}}},
          {"ranks", ranks}};
}

// A golden as bless writes it (harness/record/golden_env.h) from a record-shaped
// one, so that a test changes a figure of a copy of the record it runs.
inline json as_golden(const json& g) { return g.contains("env") ? testing_golden::golden_json(g) : g; }

inline Verdict check(const json& run, const json& golden, bool require_exact = false) {
  const json g = as_golden(golden);
  return compare_with_golden(run, &g, "golden/cpu/tp_block_llama/C_w2.json", "tp_block_llama/C_w2", kBless,
                             require_exact);
}

// The first finding of `kind`, or "" (a failed EXPECT then shows all).
inline std::string finding(const Verdict& v, VerdictKind kind) {
  for (const Finding& f : v.findings)
    if (f.kind == kind) return f.message;
  return "";
}

inline std::string all(const Verdict& v) {
  std::string s;
  for (const Finding& f : v.findings)
    s += std::string(verdict_name(f.kind)) + ": " + f.message + "\n";
  return s;
}
}  // namespace fg::testing_compare
