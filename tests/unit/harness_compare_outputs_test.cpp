// Verdicts of a run against its golden on what it computed: exact digests
// per environment, fingerprints within tolerance, accuracy, and outputs
// across ranks and across world sizes.
#include <gtest/gtest.h>

#include "harness/record/compare.h"
#include "tests/unit/compare_fixtures.h"

namespace fg {
namespace {
using nlohmann::json;
using namespace testing_compare;

TEST(CompareWithGolden, ExactDigestMismatchInSameEnvFails) {
  json run = make_record();
  run["ranks"][0]["outputs"][0]["exact"] = "abcd";
  run["ranks"][1]["outputs"][0]["exact"] = "abcd";
  Verdict v = check(run, make_record());
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  EXPECT_NE(finding(v, VerdictKind::Fail)
                .find("rank 0: output out: exact digest 0123456789abcdef -> abcd"),
            std::string::npos)
      << all(v);
}

TEST(CompareWithGolden, OtherEnvComparesFingerprintsWithinTolerance) {
  json run = make_record();
  run["env"]["aten_capability"] = "AVX512";
  for (auto& r : run["ranks"]) {
    r["outputs"][0]["exact"] = "ffffffffffffffff";
    r["outputs"][0]["fingerprint"]["sum"] = 1.5001;  // bf16 rounding noise
    r["outputs"][0]["fingerprint"]["sumsq"] = 3.001;
  }
  Verdict v = check(run, make_record());
  EXPECT_EQ(v.kind, VerdictKind::Pass) << all(v);
  // green, and saying that the digests were not compared, and why
  std::string f = finding(v, VerdictKind::Pass);
  EXPECT_NE(f.find("exact digests not compared: this environment is not among the golden's 1 (aten_capability "
                   "(none) -> AVX512)"),
            std::string::npos)
      << all(v);
  run["env"]["compiler"] = "g++ 13.1.0";
  f = finding(check(run, make_record()), VerdictKind::Pass);
  EXPECT_NE(f.find("compiler g++ 12.2.0 -> g++ 13.1.0"), std::string::npos) << f;
  // the same environment says nothing
  EXPECT_TRUE(check(make_record(), make_record()).findings.empty());
  // a job that must compare exactly fails, and says how to add this environment
  v = check(run, make_record(), /*require_exact=*/true);
  EXPECT_EQ(v.kind, VerdictKind::Fail) << all(v);
  EXPECT_NE(finding(v, VerdictKind::Fail).find("exact digests required (--exact)"), std::string::npos) << all(v);
  EXPECT_NE(finding(v, VerdictKind::Fail).find("with: " + std::string(kBless)), std::string::npos) << all(v);
}

// A golden of two environments: each run is compared exactly against its
// own environment's digests, and a digest of the other one decides nothing.
TEST(CompareWithGolden, EachEnvironmentOfAGoldenComparesItsOwnDigests) {
  json a = make_record(), b = make_record();
  b["env"]["compiler"] = "g++ 13.1.0";
  for (auto& r : b["ranks"]) r["outputs"][0]["exact"] = "bbbbbbbbbbbbbbbb";
  using namespace testing_golden;
  JsonBlessPlan plan = plan_bless_json(nullptr, golden_json(a));
  plan = plan_bless_json(&plan.golden, golden_json(b));
  ASSERT_EQ(plan.kind, BlessPlan::Added);
  const json golden = plan.golden;
  EXPECT_EQ(golden["environments"].size(), 2u);
  EXPECT_TRUE(check(a, golden, true).findings.empty()) << all(check(a, golden, true));
  EXPECT_TRUE(check(b, golden, true).findings.empty()) << all(check(b, golden, true));
  // b's digest in a's environment is a changed digest
  json wrong = a;
  for (auto& r : wrong["ranks"]) r["outputs"][0]["exact"] = "bbbbbbbbbbbbbbbb";
  Verdict v = check(wrong, golden);
  EXPECT_EQ(v.kind, VerdictKind::Fail) << all(v);
  EXPECT_NE(all(v).find("exact digest 0123456789abcdef -> bbbbbbbbbbbbbbbb"), std::string::npos) << all(v);
  // a third environment: fingerprints, naming the nearest of the two
  json c = b;
  c["env"]["backend"] = "cpu2";  // one field from b, two from a
  v = check(c, golden);
  EXPECT_EQ(v.kind, VerdictKind::Pass) << all(v);
  EXPECT_NE(all(v).find("not among the golden's 2 (nearest: backend cpu -> cpu2)"), std::string::npos) << all(v);
}

TEST(CompareWithGolden, OtherEnvFarFingerprintFailsWithFigures) {
  json run = make_record();
  run["env"]["aten_capability"] = "AVX512";
  run["ranks"][0]["outputs"][0]["fingerprint"]["sumsq"] = 6.0;
  Verdict v = check(run, make_record());
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  std::string f = finding(v, VerdictKind::Fail);
  EXPECT_NE(f.find("rank 0: output out: fingerprint outside tolerance: rms"), std::string::npos)
      << f;
  EXPECT_NE(f.find("vs"), std::string::npos) << f;
}

TEST(CompareWithGolden, MissingOutputFails) {
  json run = make_record();
  run["ranks"][1]["outputs"] = json::array();
  Verdict v = check(run, make_record());
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  EXPECT_NE(all(v).find("rank 1: output out is missing from the run"), std::string::npos) << all(v);
}

TEST(CompareWithGolden, AccuracyFailureNamesOutputAndFigures) {
  json run = make_record();
  run["ranks"][0]["accuracy"] = {{"status", "fail"},
                                 {"outputs", json::array({{{"name", "out"},
                                                           {"pass", false},
                                                           {"rmse_vs_fp64", 0.5},
                                                           {"eager_rmse_vs_fp64", 0.001}}})}};
  Verdict v = check(run, make_record());
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  std::string f = finding(v, VerdictKind::Fail);
  EXPECT_NE(f.find("rank 0: accuracy fail: out ("), std::string::npos) << f;
  EXPECT_NE(f.find("rmse_vs_fp64 0.5"), std::string::npos) << f;
  EXPECT_NE(f.find("eager_rmse_vs_fp64 0.001"), std::string::npos) << f;
}

TEST(CompareWithGolden, ReplicatedOutputDifferingAcrossRanksFails) {
  json run = make_record();
  json golden = make_record();
  run["ranks"][1]["outputs"][0]["exact"] = "fedcba9876543210";
  golden["ranks"][1]["outputs"][0]["exact"] = "fedcba9876543210";  // golden is not the point
  Verdict v = check(run, golden);
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  EXPECT_NE(
      finding(v, VerdictKind::Fail).find("output out is replicated but rank 1 differs from rank 0"),
      std::string::npos)
      << all(v);
}

TEST(CompareWithGolden, ShardedOutputMayDifferAcrossRanks) {
  json run = make_record();
  for (auto& r : run["ranks"]) r["outputs"][0]["replicated"] = false;
  run["ranks"][1]["outputs"][0]["exact"] = "fedcba9876543210";
  EXPECT_TRUE(cross_rank_findings(run).empty());
}

TEST(CompareWithGolden, HashesDifferingAcrossRanksFail) {
  json run = make_record();
  run["ranks"][1]["hashes"]["decisions"] = "d2";
  Verdict v = check(run, make_record());
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  EXPECT_NE(finding(v, VerdictKind::Fail)
                .find("rank 1 compiled different decisions than rank 0 (NCCL would hang)"),
            std::string::npos)
      << all(v);
}

TEST(CompareWithGolden, NoGoldenStillRunsCrossRankChecks) {
  json run = make_record();
  run["ranks"][1]["hashes"]["graphs"] = "g2";
  Verdict v = compare_with_golden(run, nullptr, "g.json", "x/C_w2", kBless);
  EXPECT_EQ(v.kind, VerdictKind::Fail) << all(v);
}

TEST(FingerprintsClose, IdenticalAreClose) {
  std::string why = "stale";
  EXPECT_TRUE(fingerprints_close(fingerprint(), fingerprint(), &why));
  EXPECT_EQ(why, "");
}

TEST(FingerprintsClose, ToleranceFollowsDtype) {
  json a = fingerprint(), b = fingerprint();
  b["sumsq"] = 3.0 * 1.003 * 1.003;                // rms 0.3% higher
  EXPECT_TRUE(fingerprints_close(a, b, nullptr));  // bf16, whole output: 1.6e-2 / 4
  a["dtype"] = b["dtype"] = "f32";
  std::string why;
  EXPECT_FALSE(fingerprints_close(a, b, &why));
  EXPECT_EQ(why.rfind("rms ", 0), 0u) << why;
}

// A whole output scaled by 5% (an audit's edit of a golden) fails in bf16,
// where each sample alone may stray 4 x 1.6e-2: the rms and mean of a large
// output are held to rtol / 4. A small output keeps the per-element slack.
TEST(FingerprintsClose, AWholeOutputThatDriftedFailsInBf16) {
  json a = fingerprint();
  json b = fingerprint(1.5 * 1.05, 3.0 * 1.05 * 1.05, 2.0 * 1.05);
  b["samples"] = {0.1 * 1.05, -0.2 * 1.05, 1.25 * 1.05};
  std::string why;
  EXPECT_FALSE(fingerprints_close(a, b, &why));
  EXPECT_EQ(why.rfind("rms ", 0), 0u) << why;
  json c = fingerprint(), d = fingerprint();
  d["sumsq"] = 3.0 * 1.02 * 1.02;  // rms 2% higher: over rtol / 4
  EXPECT_FALSE(fingerprints_close(c, d, nullptr));
  c["numel"] = d["numel"] = 512;   // a small output: 4 x rtol
  c["shape"] = d["shape"] = {2, 256};
  EXPECT_TRUE(fingerprints_close(c, d, &why)) << why;
  json e = fingerprint(), f = fingerprint();  // f16 keeps 4 x rtol (rtol / 4: half its ulp)
  e["dtype"] = f["dtype"] = "f16";
  f["sumsq"] = 3.0 * 1.003 * 1.003;
  EXPECT_TRUE(fingerprints_close(e, f, &why)) << why;
}

TEST(FingerprintsClose, IntegersAreExact) {
  json a = fingerprint(), b = fingerprint();
  a["dtype"] = b["dtype"] = "i64";
  b["sum"] = 1.5000001;
  std::string why;
  EXPECT_FALSE(fingerprints_close(a, b, &why));
  EXPECT_EQ(why.rfind("mean ", 0), 0u) << why;
}

TEST(FingerprintsClose, StructuralFiguresMustMatch) {
  std::string why;
  json b = fingerprint();
  b["nan"] = 1;
  EXPECT_FALSE(fingerprints_close(fingerprint(), b, &why));
  EXPECT_EQ(why, "nan 0 vs 1");
  b = fingerprint();
  b["shape"] = {2, 64, 128};
  EXPECT_FALSE(fingerprints_close(fingerprint(), b, &why));
  EXPECT_EQ(why, "shape [2,64,256] vs [2,64,128]");
  b = fingerprint();
  b["dtype"] = "f16";
  EXPECT_FALSE(fingerprints_close(fingerprint(), b, &why));
  EXPECT_EQ(why, "dtype bf16 vs f16");
}

TEST(FingerprintsClose, FarSampleNamesItsIndexAndValues) {
  json b = fingerprint();
  b["samples"][2] = 1.5;
  std::string why;
  EXPECT_FALSE(fingerprints_close(fingerprint(), b, &why));
  EXPECT_EQ(why.rfind("samples[2] 1.25 vs 1.5", 0), 0u) << why;
}

TEST(FingerprintsClose, NullSumsFromNanDataMatch) {
  json a = fingerprint(), b = fingerprint();
  for (json* f : {&a, &b}) {
    (*f)["nan"] = 3;
    (*f)["sum"] = nullptr;
    (*f)["sumsq"] = nullptr;
  }
  std::string why;
  EXPECT_TRUE(fingerprints_close(a, b, &why)) << why;
}

TEST(CompareAcrossWorlds, CloseOutputsPass) {
  json other = make_record(2);
  other["ranks"][0]["outputs"][0]["fingerprint"]["sum"] = 1.5002;
  Verdict v = compare_across_worlds(make_record(1), other, "tp_block_llama/C_w1_vs_w2");
  EXPECT_EQ(v.kind, VerdictKind::Pass) << all(v);
  EXPECT_EQ(v.check_id, "tp_block_llama/C_w1_vs_w2");
}

TEST(CompareAcrossWorlds, DriftFails) {
  json other = make_record(2);
  other["ranks"][0]["outputs"][0]["fingerprint"]["max_abs"] = 3.0;
  Verdict v = compare_across_worlds(make_record(1), other, "x");
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  EXPECT_NE(all(v).find("output out: world 2 rank 0 drifts from world 1: max_abs 2 vs 3"),
            std::string::npos)
      << all(v);
}

TEST(CompareAcrossWorlds, MissingOutputFailsShardIsOnlyNoted) {
  json base = make_record(1);
  base["ranks"][0]["outputs"].push_back({{"name", "shard"}, {"fingerprint", fingerprint()}});
  json other = make_record(2);
  other["ranks"][0]["outputs"].push_back(
      {{"name", "shard"}, {"replicated", false}, {"fingerprint", fingerprint(0.7)}});
  EXPECT_EQ(compare_across_worlds(base, other, "x").kind, VerdictKind::Pass);
  other["ranks"][0]["outputs"].erase(0);
  Verdict v = compare_across_worlds(base, other, "x");
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  EXPECT_NE(all(v).find("output out is missing at world 2"), std::string::npos) << all(v);
}

}  // namespace
}  // namespace fg
