// What bless writes and shows: the plan over an existing golden (a new
// environment added only where everything else agrees) and the unified diff.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "harness/record/diff.h"
#include "harness/record/golden_env.h"
#include "tests/unit/golden_fixtures.h"

namespace fg {
namespace {
using nlohmann::json;
using namespace testing_golden;

// How bless writes over a golden: a new golden, the same state in a new
// environment (its digests added, nothing else touched), the same state
// again (nothing written), and a new state (the golden replaced, the other
// environments' digests dropped, with what moved).
TEST(PlanBless, AddsAnEnvironmentOnlyWhereEverythingElseAgrees) {
  json a = valid_record();
  const json rec = [] {
    json r = {{"repro", "x"}, {"mode", "C"}, {"world_size", 2}, {"backend", "cpu"}, {"fusion", "default"},
              {"fast_paths", "proven"}, {"env", {{"backend", "cpu"}, {"compiler", "g++ 12"}}},
              {"ranks", json::array({rank_record(0), rank_record(1)})}};
    for (auto& k : r["ranks"]) k["outputs"][0]["fingerprint"] = {{"dtype", "bf16"}, {"shape", {2, 4}}, {"numel", 8},
                                                                 {"sum", 1.0}, {"sumsq", 2.0}, {"max_abs", 1.0},
                                                                 {"nan", 0}, {"inf", 0}};
    return r;
  }();
  JsonBlessPlan p = plan_bless_json(nullptr, golden_json(rec));
  EXPECT_EQ(p.kind, BlessPlan::Created);
  const json first = p.golden;
  EXPECT_EQ(plan_bless_json(&first, golden_json(rec)).kind, BlessPlan::Unchanged);
  // another environment, its own digests, rounding noise in a fingerprint
  json other = rec;
  other["env"]["compiler"] = "g++ 13";
  for (auto& k : other["ranks"]) {
    k["outputs"][0]["exact"] = "fedcba9876543210";
    k["outputs"][0]["fingerprint"]["sum"] = 1.0001;
  }
  p = plan_bless_json(&first, golden_json(other));
  ASSERT_EQ(p.kind, BlessPlan::Added);
  EXPECT_EQ(p.golden["environments"].size(), 2u);
  // nothing else changed: the first environment's fingerprints are kept
  EXPECT_EQ(p.golden["ranks"][0]["outputs"][0]["fingerprint"]["sum"], 1.0);
  EXPECT_TRUE(same_state(record::from_json(p.golden), record::from_json(first)));
  const std::string fp = environment_fingerprint(other["env"].get<record::Environment>());
  EXPECT_EQ(p.golden["ranks"][1]["outputs"][0]["exact"][fp], "fedcba9876543210");
  const json both = p.golden;
  // a new state: replaced, the other environment dropped, what moved said
  json more = rec;
  for (auto& k : more["ranks"]) k["kernel_count"] = 13;
  p = plan_bless_json(&both, golden_json(more));
  EXPECT_EQ(p.kind, BlessPlan::Replaced);
  EXPECT_EQ(p.dropped, 1);
  EXPECT_EQ(p.golden["environments"].size(), 1u);
  EXPECT_NE(p.why.find("/ranks/0/kernel_count 12 -> 13"), std::string::npos) << p.why;
  // the same environment with other digests: the others are stale
  json moved = rec;
  moved["ranks"][0]["outputs"][0]["exact"] = "1111111111111111";
  p = plan_bless_json(&both, golden_json(moved));
  EXPECT_EQ(p.kind, BlessPlan::Replaced);
  EXPECT_EQ(p.dropped, 1);
  EXPECT_NE(p.why.find("this environment's exact digests changed"), std::string::npos) << p.why;
  // a new environment whose output drifted past tolerance: a new state
  json far = other;
  far["env"]["compiler"] = "g++ 14";
  far["ranks"][0]["outputs"][0]["fingerprint"]["sum"] = 5.0;
  p = plan_bless_json(&both, golden_json(far));
  EXPECT_EQ(p.kind, BlessPlan::Replaced);
  EXPECT_NE(p.why.find("rank 0 output out: fingerprint outside tolerance"), std::string::npos) << p.why;
  // environments recorded under another key (an older fusegate's fields)
  // can never be matched again: dropped where the state is kept, and said
  json legacy = first;
  legacy["environments"]["0123456789abcdef"] = {{"backend", "cpu"}, {"isa", "x86_64+avx2"}};
  for (auto& k : legacy["ranks"]) k["outputs"][0]["exact"]["0123456789abcdef"] = "aaaaaaaaaaaaaaaa";
  p = plan_bless_json(&legacy, golden_json(rec));
  EXPECT_EQ(p.kind, BlessPlan::Pruned);
  EXPECT_EQ(p.unmatchable, 1);
  EXPECT_EQ(p.golden, first);
  p = plan_bless_json(&legacy, golden_json(other));
  EXPECT_EQ(p.kind, BlessPlan::Added);
  EXPECT_EQ(p.unmatchable, 1);
  EXPECT_EQ(p.golden, both);
  // a library's kernel names inside a launch and how a GEMM algorithm was
  // timed belong to the environment: another cuBLAS with the same counts
  // and algorithms is the same state; another algorithm is not
  json cuda = rec;
  for (auto& k : cuda["ranks"]) {
    k["kernels"][0]["device_kernels"] = {"nvjet_sm90_tst_128x256"};
    k["gemm_algos"] = {{{"shape", "bf16 m128"}, {"algo", "a1"}, {"source", "measured"}, {"us", 3.5}}};
  }
  const json cuda_first = golden_json(cuda);
  json lib = cuda;
  lib["env"]["compiler"] = "g++ 13";
  for (auto& k : lib["ranks"]) {
    k["kernels"][0]["device_kernels"] = {"nvjet_sm90_tst_256x128"};
    k["gemm_algos"][0]["source"] = "golden";
    k["gemm_algos"][0]["us"] = 3.1;
  }
  EXPECT_EQ(plan_bless_json(&cuda_first, golden_json(lib)).kind, BlessPlan::Added);
  for (auto& k : lib["ranks"]) k["gemm_algos"][0]["algo"] = "a2";
  EXPECT_EQ(plan_bless_json(&cuda_first, golden_json(lib)).kind, BlessPlan::Replaced);
  for (auto& k : lib["ranks"]) {
    k["gemm_algos"][0]["algo"] = "a1";
    k["kernels"][0]["device_kernels"] = {"nvjet_a", "nvjet_b"};
  }
  EXPECT_EQ(plan_bless_json(&cuda_first, golden_json(lib)).kind, BlessPlan::Replaced);
  (void)a;
}

std::string numbered(int n, int changed = -1, int changed2 = -1) {
  std::string s;
  for (int i = 1; i <= n; ++i)
    s += (i == changed || i == changed2 ? "LINE" : "line") + std::to_string(i) + "\n";
  return s;
}

// Another machine whose LibTorch makes more views inside an extern (a bf16
// bmm on a CPU without AVX-512) is the same state: bless adds its
// environment; another operator that works is a new state.
TEST(PlanBless, MoreViewsInAnExternAreTheSameState) {
  auto rec = [](const std::string& cpu, const json& ops, long long count) {
    json r = {{"repro", "x"}, {"mode", "C"}, {"world_size", 1}, {"backend", "cpu"}, {"fusion", "default"},
              {"fast_paths", "proven"}, {"env", {{"backend", "cpu"}, {"cpu", cpu}}},
              {"ranks", json::array({rank_record(0)})}};
    r["ranks"][0]["kernels"].push_back({{"name", "extern_bmm"}, {"kind", "extern"}, {"aten_ops", ops}});
    r["ranks"][0]["aten_op_count"] = count;
    r["ranks"][0]["outputs"][0]["fingerprint"] = {{"dtype", "bf16"}, {"shape", {2, 4}}, {"numel", 8}, {"sum", 1.0},
                                                  {"sumsq", 2.0}, {"max_abs", 1.0}, {"nan", 0}, {"inf", 0}};
    return r;
  };
  const json intel = rec("xeon", {{"aten::bmm", 1}, {"aten::as_strided", 2}}, 3);
  const json first = plan_bless_json(nullptr, golden_json(intel)).golden;
  const json amd = rec("epyc", {{"aten::bmm", 1}, {"aten::as_strided", 14}, {"aten::select", 12}}, 27);
  JsonBlessPlan p = plan_bless_json(&first, golden_json(amd));
  ASSERT_EQ(p.kind, BlessPlan::Added) << p.why;
  EXPECT_EQ(p.golden["ranks"][0]["aten_op_count"], 3);  // the golden's own kept
  const json more = rec("epyc", {{"aten::bmm", 1}, {"aten::mm", 4}, {"aten::as_strided", 2}}, 7);
  p = plan_bless_json(&first, golden_json(more));
  EXPECT_EQ(p.kind, BlessPlan::Replaced);
}

TEST(UnifiedDiff, EqualTextsGiveEmptyDiff) {
  EXPECT_EQ(unified_diff(numbered(5), numbered(5), "a", "b"), "");
}

TEST(UnifiedDiff, ChangedLineShowsHunkWithThreeLinesOfContext) {
  std::string d = unified_diff(numbered(10), numbered(10, 5), "golden/C_w2.json", "run");
  EXPECT_EQ(d,
            "--- golden/C_w2.json\n+++ run\n@@ -2,7 +2,7 @@\n line2\n line3\n line4\n"
            "-line5\n+LINE5\n line6\n line7\n line8\n");
}

TEST(UnifiedDiff, DistantChangesMakeTwoHunksNearOnesOne) {
  std::string far = unified_diff(numbered(30), numbered(30, 3, 25), "a", "b");
  EXPECT_NE(far.find("@@ -1,6 +1,6 @@"), std::string::npos) << far;
  EXPECT_NE(far.find("@@ -22,7 +22,7 @@"), std::string::npos) << far;
  std::string near = unified_diff(numbered(30), numbered(30, 3, 10), "a", "b");
  EXPECT_EQ(std::count(near.begin(), near.end(), '@'), 4) << near;
}

TEST(UnifiedDiff, MissingFinalNewlineIsMarked) {
  std::string d = unified_diff("a\nb", "a\nb\nc\n", "a", "b");
  EXPECT_NE(d.find("-b\n\\ No newline at end of file\n+b\n+c\n"), std::string::npos) << d;
}

TEST(UnifiedDiff, InsertIntoEmptyFile) {
  EXPECT_EQ(unified_diff("", "x\n", "a", "b"), "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+x\n");
}

// Applies a diff produced above; the strongest check that hunks, ranges and
// context are right is that the diff rebuilds the new text.
std::string apply_diff(const std::string& old_text, const std::string& diff) {
  std::vector<std::string> old_lines;
  std::stringstream os(old_text);
  for (std::string l; std::getline(os, l);) old_lines.push_back(l);
  std::vector<std::string> out;
  size_t next_old = 0;
  std::stringstream ds(diff);
  std::string l;
  std::getline(ds, l);
  std::getline(ds, l);
  while (std::getline(ds, l)) {
    if (l.rfind("@@ -", 0) == 0) {
      size_t start = std::stoul(l.substr(4));
      size_t count = std::stoul(l.substr(l.find(',') + 1));
      size_t first = count == 0 ? start : start - 1;
      while (next_old < first) out.push_back(old_lines[next_old++]);
    } else if (l[0] == ' ') {
      EXPECT_EQ(old_lines.at(next_old), l.substr(1));
      out.push_back(old_lines[next_old++]);
    } else if (l[0] == '-') {
      EXPECT_EQ(old_lines.at(next_old), l.substr(1));
      ++next_old;
    } else if (l[0] == '+') {
      out.push_back(l.substr(1));
    }
  }
  while (next_old < old_lines.size()) out.push_back(old_lines[next_old++]);
  std::string s;
  for (const auto& x : out) s += x + "\n";
  return s;
}

TEST(UnifiedDiff, DiffRebuildsTheNewText) {
  unsigned seed = 12345;
  auto rnd = [&]() { return (seed = seed * 1103515245u + 12345u) >> 16; };
  for (int round = 0; round < 50; ++round) {
    std::string a, b;
    int n = 5 + rnd() % 60;
    for (int i = 0; i < n; ++i) {
      std::string line = "v" + std::to_string(rnd() % 7) + "\n";
      a += line;
      switch (rnd() % 6) {
        case 0: break;                                         // dropped
        case 1: b += "new" + std::to_string(i) + "\n"; break;  // replaced
        case 2: b += line + "ins\n"; break;                    // added after
        default: b += line;
      }
    }
    std::string d = unified_diff(a, b, "a", "b");
    if (a == b) {
      EXPECT_EQ(d, "");
      continue;
    }
    EXPECT_EQ(apply_diff(a, d), b) << d;
  }
}

}  // namespace
}  // namespace fg
