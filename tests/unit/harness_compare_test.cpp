// Verdicts of a run against its golden on what was compiled and launched:
// kernels, graphs, breaks, recompiles, the ledger and its choices.
#include <gtest/gtest.h>

#include "harness/record/compare.h"
#include "tests/unit/compare_fixtures.h"

namespace fg {
namespace {
using nlohmann::json;
using namespace testing_compare;

TEST(VerdictName, AllKinds) {
  EXPECT_STREQ(verdict_name(VerdictKind::Pass), "PASS");
  EXPECT_STREQ(verdict_name(VerdictKind::Fail), "FAIL");
  EXPECT_STREQ(verdict_name(VerdictKind::Improved), "IMPROVED");
  EXPECT_STREQ(verdict_name(VerdictKind::Missing), "MISSING");
  EXPECT_STREQ(verdict_name(VerdictKind::CannotTest), "CANNOT_TEST");
}

TEST(OverallKind, FailBeatsCannotTestBeatsImproved) {
  using K = VerdictKind;
  EXPECT_EQ(overall_kind({}), K::Pass);
  EXPECT_EQ(overall_kind({{K::Pass, "note"}, {K::Improved, "x"}}), K::Improved);
  EXPECT_EQ(overall_kind({{K::Improved, "x"}, {K::CannotTest, "y"}}), K::CannotTest);
  EXPECT_EQ(overall_kind({{K::CannotTest, "y"}, {K::Fail, "z"}}), K::Fail);
}

TEST(CompareWithGolden, EqualRecordsPass) {
  Verdict v = check(make_record(), make_record());
  EXPECT_EQ(v.kind, VerdictKind::Pass) << all(v);
  EXPECT_TRUE(v.findings.empty()) << all(v);
  EXPECT_EQ(v.check_id, "tp_block_llama/C_w2");
  EXPECT_EQ(v.bless_command, kBless);
}

TEST(CompareWithGolden, MoreKernelsFailAndNameTheKindThatMoved) {
  json run = make_record();
  run["ranks"][0]["kernel_count"] = 13;
  run["ranks"][0]["kernel_count_by_kind"]["poi"] = 3;
  Verdict v = check(run, make_record());
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  std::string f = finding(v, VerdictKind::Fail);
  EXPECT_NE(
      f.find("rank 0: kernel_count 12 -> 13 (more kernels than the golden: fusion got worse)"),
      std::string::npos)
      << all(v);
  EXPECT_NE(f.find("poi 2 -> 3"), std::string::npos) << f;
}

TEST(CompareWithGolden, FewerKernelsAreImprovedWithBlessCommand) {
  json run = make_record();
  run["ranks"][1]["kernel_count"] = 11;
  Verdict v = check(run, make_record());
  EXPECT_EQ(v.kind, VerdictKind::Improved) << all(v);
  std::string f = finding(v, VerdictKind::Improved);
  EXPECT_NE(f.find("rank 1: kernel_count 12 -> 11 (fewer kernels"), std::string::npos) << f;
  EXPECT_NE(f.find(std::string("bless with: ") + kBless), std::string::npos) << f;
}

// A cuda rank record: the attention extern ran one device kernel.
json cuda_rank(int attention_kernels) {
  json r = rank_record(0);
  json names = json::array();
  for (int i = 0; i < attention_kernels; ++i) names.push_back("k" + std::to_string(i));
  r["kernels"] = json::array({{{"name", "cuda_per_fused__to_copy_add_0"}, {"kind", "per"}, {"device_kernels", {"fg"}}},
                              {{"name", "extern_scaled_dot_product_attention"},
                               {"kind", "extern"},
                               {"device_kernels", names}}});
  r["device_kernel_count"] = 1 + attention_kernels;
  r.erase("aten_op_count");
  return r;
}

// A cuda record of one rank.
json one_rank(const json& rank) {
  json rec = make_record(1);
  rec["backend"] = "cuda";
  rec["ranks"] = json::array({rank});
  return rec;
}

TEST(CompareWithGolden, AnExternLaunchingMoreDeviceKernelsFailsNamingIt) {
  // the launch count is equal; only the device kernels that really ran grew
  Verdict v = check(one_rank(cuda_rank(15)), one_rank(cuda_rank(1)));
  EXPECT_EQ(v.kind, VerdictKind::Fail) << all(v);
  std::string s = all(v);
  EXPECT_NE(s.find("device_kernel_count 2 -> 16 (more device kernels than the golden"), std::string::npos) << s;
  EXPECT_NE(s.find("launch extern_scaled_dot_product_attention ran 15 device kernels (the golden 1)"),
            std::string::npos)
      << s;
}

TEST(CompareWithGolden, FewerDeviceKernelsAreImproved) {
  Verdict v = check(one_rank(cuda_rank(1)), one_rank(cuda_rank(3)));
  EXPECT_EQ(v.kind, VerdictKind::Improved) << all(v);
}

TEST(CompareWithGolden, GoldenWithoutDeviceKernelCountCannotVouchForTheRun) {
  json gold = one_rank(cuda_rank(1));
  gold["ranks"][0].erase("device_kernel_count");
  Verdict v = check(one_rank(cuda_rank(1)), gold);
  EXPECT_EQ(v.kind, VerdictKind::Fail) << all(v);
  EXPECT_NE(finding(v, VerdictKind::Fail).find("the golden has no device_kernel_count"), std::string::npos) << all(v);
}

TEST(CompareWithGolden, RunThatCouldNotCountDeviceKernelsCannotBeTested) {
  json run = one_rank(cuda_rank(1));
  run["ranks"][0].erase("device_kernel_count");
  run["ranks"][0]["device_kernels_not_counted"] = "CUPTI_ERROR_NOT_INITIALIZED";
  Verdict v = check(run, one_rank(cuda_rank(1)));
  EXPECT_EQ(v.kind, VerdictKind::CannotTest) << all(v);
  EXPECT_NE(finding(v, VerdictKind::CannotTest).find("CUPTI_ERROR_NOT_INITIALIZED"), std::string::npos) << all(v);
}

TEST(CompareWithGolden, ExternDispatchingOtherAtenOpsFailsAtEqualCount) {
  json gold = make_record(1);
  gold["ranks"] = json::array({rank_record(0)});
  gold["ranks"][0]["kernels"].push_back(
      {{"name", "extern_scaled_dot_product_attention"}, {"kind", "extern"},
       {"aten_ops", {{"aten::bmm", 2}, {"aten::softmax", 1}}}});
  gold["ranks"][0]["aten_op_count"] = 3;
  json run = gold;
  run["ranks"][0]["kernels"][2]["aten_ops"] = {{"aten::scaled_dot_product_attention", 1},
                                               {"aten::_scaled_dot_product_flash_attention_for_cpu", 2}};
  Verdict v = check(run, gold);
  EXPECT_EQ(v.kind, VerdictKind::Fail) << all(v);
  std::string f = finding(v, VerdictKind::Fail);
  EXPECT_NE(f.find("extern extern_scaled_dot_product_attention dispatches other ATen operators"), std::string::npos)
      << all(v);
  EXPECT_NE(f.find("aten::bmm 2 -> 0"), std::string::npos) << f;
}

TEST(CompareWithGolden, AnExternMakingMoreViewsIsTheSameWork) {
  // a bf16 bmm on a CPU without AVX-512 walks its batches through select
  // and as_strided (an AMD EPYC with AVX2, against a golden of a Xeon with
  // AVX-512): the same work, no regression; another operator that works is
  json gold = make_record(1);
  gold["ranks"] = json::array({rank_record(0)});
  gold["ranks"][0]["kernels"].push_back({{"name", "extern_bmm"}, {"kind", "extern"},
                                         {"aten_ops", {{"aten::bmm", 1}, {"aten::as_strided", 2},
                                                       {"aten::resolve_conj", 2}}}});
  gold["ranks"][0]["aten_op_count"] = 5;
  json run = gold;
  run["ranks"][0]["kernels"][2]["aten_ops"] = {
      {"aten::bmm", 1}, {"aten::as_strided", 14}, {"aten::resolve_conj", 10}, {"aten::select", 12}};
  run["ranks"][0]["aten_op_count"] = 37;
  Verdict v = check(run, gold);
  EXPECT_EQ(v.kind, VerdictKind::Pass) << all(v);
  run["ranks"][0]["kernels"][2]["aten_ops"]["aten::mm"] = 4;
  run["ranks"][0]["aten_op_count"] = 41;
  v = check(run, gold);
  EXPECT_EQ(v.kind, VerdictKind::Fail) << all(v);
  const std::string f = finding(v, VerdictKind::Fail);
  EXPECT_NE(f.find("aten_op_count 1 -> 5 (more ATen operator calls that do work"), std::string::npos) << f;
  EXPECT_NE(all(v).find("extern extern_bmm dispatches other ATen operators than the golden (aten::mm 0 -> 4)"),
            std::string::npos)
      << all(v);
  EXPECT_EQ(all(v).find("aten::select"), std::string::npos) << all(v);
  EXPECT_TRUE(aten_metadata_op("aten::as_strided") && aten_metadata_op("aten::select"));
  EXPECT_FALSE(aten_metadata_op("aten::bmm") || aten_metadata_op("aten::copy_") || aten_metadata_op("aten::clone"));
}

TEST(CompareWithGolden, CpuGoldenWithoutAtenOpCountFailsEvenIfTheRunLacksItToo) {
  json gold = make_record();
  json run = make_record();
  for (auto* rec : {&gold, &run})
    for (auto& r : (*rec)["ranks"]) r.erase("aten_op_count");
  run["ranks"][0]["aten_ops_not_counted"] = "the probed forward launched 11 kernels, the counted one 12";
  Verdict v = check(run, gold);
  EXPECT_EQ(v.kind, VerdictKind::Fail) << all(v);
  EXPECT_NE(finding(v, VerdictKind::Fail).find("the golden has no aten_op_count"), std::string::npos) << all(v);
  EXPECT_NE(all(v).find("the probed forward launched 11 kernels"), std::string::npos) << all(v);
}

TEST(CompareWithGolden, MoreAtenCallsInExternsFail) {
  json gold = make_record();
  json run = gold;
  run["ranks"][1]["aten_op_count"] = 55;
  Verdict v = check(run, gold);
  EXPECT_EQ(v.kind, VerdictKind::Fail) << all(v);
  EXPECT_NE(finding(v, VerdictKind::Fail).find("rank 1: aten_op_count 40 -> 55"), std::string::npos) << all(v);
}

TEST(CompareWithGolden, MoreGraphsFail) {
  json run = make_record();
  run["ranks"][0]["graph_count"] = 2;
  Verdict v = check(run, make_record());
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  EXPECT_NE(all(v).find("graph_count 1 -> 2"), std::string::npos) << all(v);
}

TEST(CompareWithGolden, NewGraphBreakFailsNamingReasonAndLocation) {
  json run = make_record();
  run["ranks"][0]["graph_break_count"] = 1;
  run["ranks"][0]["breaks"] = {
      {{"reason", "host sync: item()"}, {"location", "repros/tp_block_llama.cpp:57 (attention)"}}};
  Verdict v = check(run, make_record());
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  EXPECT_NE(
      all(v).find(
          "rank 0: new graph break: host sync: item() at repros/tp_block_llama.cpp:57 (attention)"),
      std::string::npos)
      << all(v);
}

TEST(CompareWithGolden, MovedGraphBreakAtEqualCountFailsAndSaysWhereItWas) {
  json golden = make_record();
  golden["ranks"][0]["graph_break_count"] = 1;
  golden["ranks"][0]["breaks"] = {{{"reason", "print"}, {"location", "r.cpp:10 (f)"}}};
  json run = golden;
  run["ranks"][0]["breaks"][0]["location"] = "r.cpp:12 (f)";
  Verdict v = check(run, golden);
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  EXPECT_NE(all(v).find("new graph break: print at r.cpp:12 (f) (the golden has it at r.cpp:10 (f))"),
            std::string::npos)
      << all(v);
}

TEST(CompareWithGolden, RenamedKernelAtEqualCountIsInformative) {
  json run = make_record();
  run["ranks"][0]["kernels"][1]["name"] = "cpu_poi_fused_mul_sigmoid_1";
  Verdict v = check(run, make_record());
  EXPECT_EQ(v.kind, VerdictKind::Pass) << all(v);
  std::string f = finding(v, VerdictKind::Pass);
  EXPECT_NE(f.find("added cpu_poi_fused_mul_sigmoid_1"), std::string::npos) << f;
  EXPECT_NE(f.find("removed cpu_poi_fused_mul_silu_1"), std::string::npos) << f;
}

TEST(CompareWithGolden, LedgerChangeShowsReadableDecisionLines) {
  json run = make_record();
  run["ranks"][0]["ledger"][1]["outcome"] = "rejected";
  run["ranks"][0]["ledger"][1]["reason"] = "memory deps did not match";
  Verdict v = check(run, make_record());
  EXPECT_EQ(v.kind, VerdictKind::Pass) << all(v);
  std::string f = finding(v, VerdictKind::Pass);
  EXPECT_NE(f.find("buf3+buf4: fused -> rejected (memory deps did not match)"), std::string::npos)
      << f;
  EXPECT_EQ(f.find("buf0+buf1"), std::string::npos) << f;
  // the first line counts them by kind
  EXPECT_NE(f.find("fusion decisions changed (1: 1 fused -> rejected):"), std::string::npos) << f;
}

// GEMM algorithm choices (max-autotune on cuda) are informative: a change is
// said, with the run's reason, so a drifted digest has its likely cause
// beside it; it never changes the verdict by itself.
TEST(CompareWithGolden, ChangedGemmAlgorithmIsSaidWithItsReason) {
  json gold = make_record();
  const json qkv = {{"shape", "bf16 m1024 n6144 k2048"}, {"algo", std::string(128, 'a')},
                    {"config", "algo 66 tile 31"}, {"source", "measured"}};
  const json up = {{"shape", "bf16 m1024 n8192 k2048 batch2"}, {"algo", std::string(128, 'b')},
                   {"config", "algo 66 tile 184"}, {"source", "measured"}};
  for (auto& r : gold["ranks"]) r["gemm_algos"] = json::array({qkv, up});
  json run = gold;
  Verdict same = check(run, gold);
  EXPECT_EQ(same.kind, VerdictKind::Pass) << all(same);
  EXPECT_EQ(all(same).find("GEMM"), std::string::npos) << all(same);

  for (auto& r : run["ranks"]) {
    r["gemm_algos"][1]["algo"] = std::string(128, 'c');
    r["gemm_algos"][1]["config"] = "algo 66 tile 24";
    r["gemm_algos"][1]["source"] = "measured";
    r["gemm_algos"][1]["why"] = "the recorded choice algo 66 tile 184 no longer runs: cuBLASLt refuses it here";
  }
  Verdict v = check(run, gold);
  EXPECT_EQ(v.kind, VerdictKind::Pass) << all(v);
  const std::string f = all(v);
  EXPECT_NE(f.find("rank 0: GEMM algorithms differ from the golden's: bf16 m1024 n8192 k2048 batch2: algo 66 tile 184 "
                   "-> algo 66 tile 24 (measured: the recorded choice"),
            std::string::npos)
      << f;
  EXPECT_EQ(f.find("rank 1: GEMM"), std::string::npos) << f;  // said once
  EXPECT_EQ(f.find("m1024 n6144"), std::string::npos) << f;   // unchanged shapes are not listed

  for (auto& r : run["ranks"]) r.erase("gemm_algos");
  Verdict none = check(run, gold);
  EXPECT_NE(all(none).find("no GEMM algorithm choices in the run (the golden has 2)"), std::string::npos)
      << all(none);
}

TEST(CompareWithGolden, ChangedGemmTemplateChoiceIsSaidOnce) {
  json gold = make_record();
  const json up = {{"shape", "bf16 m128 n1024 k256"}, {"choice", "library"}, {"source", "measured"},
                   {"template_us", 7520.2}, {"library_us", 145.6}};
  const json o = {{"shape", "bf16 m128 n256 k256"}, {"choice", "template"}, {"source", "measured"}};
  for (auto& r : gold["ranks"]) r["gemm_choices"] = json::array({up, o});
  json run = gold;
  for (auto& r : run["ranks"])
    for (auto& e : r["gemm_choices"]) e["source"] = "golden";
  Verdict same = check(run, gold);
  EXPECT_EQ(same.kind, VerdictKind::Pass) << all(same);
  EXPECT_EQ(all(same).find("template choices"), std::string::npos) << all(same);

  for (auto& r : run["ranks"]) {
    r["gemm_choices"][1]["choice"] = "library";
    r["gemm_choices"][1]["source"] = "forced";
    r["gemm_choices"].push_back({{"shape", "bf16 m64 n64 k64"}, {"choice", "template"}, {"source", "cache"}});
  }
  Verdict v = check(run, gold);
  EXPECT_EQ(v.kind, VerdictKind::Pass) << all(v);  // informative: the counts judge the change
  const std::string f = all(v);
  EXPECT_NE(f.find("rank 0: GEMM template choices differ from the golden's: bf16 m128 n256 k256: template -> "
                   "library (forced), bf16 m64 n64 k64: not in the golden, template (cache)"),
            std::string::npos)
      << f;
  EXPECT_EQ(f.find("rank 1: GEMM template"), std::string::npos) << f;  // said once
  EXPECT_EQ(f.find("n1024"), std::string::npos) << f;                  // unchanged shapes are not listed

  for (auto& r : run["ranks"]) r["gemm_choices"].erase(0);
  EXPECT_NE(all(check(run, gold)).find("bf16 m128 n1024 k256: not run (the golden chose the library)"),
            std::string::npos);
}

// A site placed otherwise than the golden placed it is said once, beside
// the ledger, count and digest findings that judge it; a golden without a
// table predates the choice (its program hoisted every site), so a run that
// hoists them all says nothing.
TEST(CompareWithGolden, ChangedResidualPlacementIsSaidOnce) {
  json gold = make_record();
  const json o = {{"site", "%30(linear) + %32(add)"}, {"placement", "apart"}};
  const json d = {{"site", "%50(linear) + %52(add)"}, {"placement", "gemm"}};
  for (auto& r : gold["ranks"]) r["residual_placement"] = json::array({o, d});
  json run = gold;
  for (auto& r : run["ranks"])
    for (auto& e : r["residual_placement"]) e["source"] = "golden";
  Verdict same = check(run, gold);
  EXPECT_EQ(same.kind, VerdictKind::Pass) << all(same);
  EXPECT_EQ(all(same).find("residual placement"), std::string::npos) << all(same);

  for (auto& r : run["ranks"]) {
    r["residual_placement"][0]["placement"] = "gemm";
    r["residual_placement"][0]["source"] = "forced";
  }
  const std::string f = all(check(run, gold));
  EXPECT_NE(f.find("rank 0: residual placement differs from the golden's: %30(linear) + %32(add): apart -> gemm "
                   "(forced)"),
            std::string::npos)
      << f;
  EXPECT_EQ(f.find("rank 1: residual placement"), std::string::npos) << f;  // said once
  EXPECT_EQ(f.find("%50"), std::string::npos) << f;                         // unchanged sites are not listed

  json old = make_record();  // no table: blessed before the choice
  json hoisting = old;
  for (auto& r : hoisting["ranks"])
    r["residual_placement"] = json::array({{{"site", "%50(linear) + %52(add)"}, {"placement", "gemm"},
                                            {"source", "golden"}}});
  EXPECT_EQ(all(check(hoisting, old)).find("residual placement"), std::string::npos) << all(check(hoisting, old));
  for (auto& r : hoisting["ranks"]) {
    r["residual_placement"][0]["placement"] = "apart";
    r["residual_placement"][0]["source"] = "forced";
  }
  EXPECT_NE(all(check(hoisting, old)).find("%50(linear) + %52(add): not in the golden, apart (forced)"),
            std::string::npos)
      << all(check(hoisting, old));
}

TEST(CompareWithGolden, LedgerAbsentOnOneSideIsNotCompared) {
  json run = make_record();
  run["ranks"][0].erase("ledger");
  EXPECT_TRUE(check(run, make_record()).findings.empty());
}

// Mode C holds one graph, no break and no recompile on its own: a golden
// that recorded a violation does not excuse it.
TEST(Invariants, ModeCFailsAnUndeclaredBreakEvenAgainstAGoldenThatHasIt) {
  json run = make_record();
  for (auto& r : run["ranks"]) {
    r["graph_count"] = 2;
    r["graph_break_count"] = 1;
    r["breaks"] = {{{"reason", "host callback print"}, {"location", "x.fg:7"}}};
  }
  Verdict v = check(run, run);
  EXPECT_EQ(v.kind, VerdictKind::Fail) << all(v);
  EXPECT_NE(all(v).find("graph break in mode C that the repro does not declare: host callback print at x.fg:7"),
            std::string::npos)
      << all(v);
  EXPECT_NE(all(v).find("graph_count 2 in mode C"), std::string::npos) << all(v);
  // declared (by the start of its reason): the same run holds
  json declared = run;
  for (auto& r : declared["ranks"]) r["expected_breaks"] = {"host callback"};
  EXPECT_TRUE(invariant_findings(declared).empty());
  // a declared break that did not happen is a stale declaration
  json none = make_record();
  for (auto& r : none["ranks"]) r["expected_breaks"] = {"host callback"};
  EXPECT_NE(all(check(none, none)).find("declares a graph break \"host callback\" that did not happen"),
            std::string::npos);
  // more graphs than the breaks make
  for (auto& r : declared["ranks"]) r["graph_count"] = 3;
  EXPECT_FALSE(invariant_findings(declared).empty());
  // each break matched to a reason it starts with, as a matching: the
  // shorter declaration does not take the break only the longer one fits
  json two = make_record();
  for (auto& r : two["ranks"]) {
    r["graph_count"] = 3;
    r["graph_break_count"] = 2;
    r["breaks"] = {{{"reason", "data-dependent control flow (branch)"}, {"location", "x.fg:3"}},
                   {{"reason", "data movement print"}, {"location", "x.fg:5"}}};
    r["expected_breaks"] = {"data", "data-dependent control flow"};
  }
  EXPECT_TRUE(invariant_findings(two).empty()) << all(check(two, two));
  // mode B breaks at every collective: not judged here
  json b = run;
  b["mode"] = "B";
  EXPECT_TRUE(invariant_findings(b).empty());
}

TEST(Invariants, ModeCFailsARecompileUnlessTheReproDrivesThem) {
  json run = make_record();
  run["ranks"][1]["recompile_count"] = 1;
  EXPECT_NE(all(check(run, run)).find("rank 1: recompile_count 1 in mode C"), std::string::npos);
  for (auto& r : run["ranks"]) r["recompiles"] = {{"same_shapes", 0}, {"changed_shapes", 1}, {"guard", "x"}};
  EXPECT_TRUE(invariant_findings(run).empty()) << all(check(run, run));
}

TEST(CompareWithGolden, DrivenRecompilesMustBeZeroThenOne) {
  json run = make_record();
  for (auto& r : run["ranks"]) r["recompiles"] = {{"same_shapes", 0}, {"changed_shapes", 1}, {"guard", "input x: a -> b"}};
  EXPECT_EQ(check(run, run).kind, VerdictKind::Pass) << all(check(run, run));
  json again = run;
  again["ranks"][0]["recompiles"]["same_shapes"] = 1;
  Verdict v = check(again, run);
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  EXPECT_NE(all(v).find("with the same shapes recompiled 1 time(s)"), std::string::npos) << all(v);
  json stale = run;
  stale["ranks"][0]["recompiles"]["changed_shapes"] = 0;
  v = check(stale, run);
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  EXPECT_NE(all(v).find("a stale graph ran on new shapes"), std::string::npos) << all(v);
  // without a golden too: a run-only invariant
  EXPECT_EQ(compare_with_golden(stale, nullptr, "g.json", "x", "").kind, VerdictKind::Fail);
}

TEST(CompareWithGolden, HashesAgainstTheGolden) {
  json run = make_record();
  for (auto& r : run["ranks"]) r["hashes"]["collectives"] = "c2";
  Verdict v = check(run, make_record());
  EXPECT_EQ(v.kind, VerdictKind::Fail) << all(v);
  EXPECT_NE(finding(v, VerdictKind::Fail).find("rank 0: collective sequence changed (hash c1 -> c2)"),
            std::string::npos)
      << all(v);
  run = make_record();
  for (auto& r : run["ranks"]) r["hashes"]["graphs"] = "g2";
  v = check(run, make_record());
  EXPECT_EQ(v.kind, VerdictKind::Pass) << all(v);
  EXPECT_NE(finding(v, VerdictKind::Pass).find("graphs hash g1 -> g2 (the captured graphs changed)"),
            std::string::npos)
      << all(v);
}

TEST(CompareWithGolden, RankCountMismatchFails) {
  json golden = make_record(2);
  golden["ranks"].erase(1);
  Verdict v = check(make_record(2), golden);
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  EXPECT_NE(all(v).find("rank count 1 -> 2"), std::string::npos) << all(v);
  EXPECT_NE(all(v).find("rank 1: not in the golden file"), std::string::npos) << all(v);
}

TEST(CompareWithGolden, GoldenOfAnotherWorldSizeFails) {
  Verdict v = check(make_record(2), make_record(1));
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  EXPECT_NE(all(v).find("holds world_size 1 but the run has 2"), std::string::npos) << all(v);
}

TEST(CompareWithGolden, NoGoldenIsMissingWithBlessCommand) {
  Verdict v =
      compare_with_golden(make_record(), nullptr, "golden/cpu/x/C_w2.json", "x/C_w2", kBless);
  EXPECT_EQ(v.kind, VerdictKind::Missing);
  std::string f = finding(v, VerdictKind::Missing);
  EXPECT_NE(f.find("golden/cpu/x/C_w2.json"), std::string::npos) << f;
  EXPECT_NE(f.find(kBless), std::string::npos) << f;
}

TEST(CompareWithGolden, RunWithoutRanksCannotBeTested) {
  json golden = make_record();
  Verdict v = compare_with_golden(json::object(), &golden, "g.json", "x/C_w2", kBless);
  EXPECT_EQ(v.kind, VerdictKind::CannotTest);
}

TEST(CompareWithGolden, GoldenOfAnotherModeFails) {
  json golden = make_record();
  golden["mode"] = "B";
  Verdict v = check(make_record(), golden);
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  EXPECT_NE(all(v).find("holds mode B but the run has C"), std::string::npos) << all(v);
}

TEST(LedgerText, SourceLinesAsRangesPerFunction) {
  json e = {{"nodes", {"buf2", "buf4"}},
            {"score", {2, 0, 66048, -1}},
            {"source", {"repros/x.cpp:17 (norm)", "repros/x.cpp:18 (norm)", "repros/x.cpp:20 (norm)",
                        "repros/x.cpp:31 (mlp)", "repros/fg/y.fg:3"}}};
  EXPECT_EQ(ledger_source_text(e), "repros/x.cpp:17-18,20 (norm); repros/x.cpp:31 (mlp); repros/fg/y.fg:3");
  EXPECT_EQ(ledger_entry_text(e),
            "buf2+buf4 score (2, 0, 66048, -1) at repros/x.cpp:17-18,20 (norm); repros/x.cpp:31 (mlp); repros/fg/y.fg:3");
  EXPECT_EQ(ledger_entry_text(e, false), "buf2+buf4 score (2, 0, 66048, -1)");
  e.erase("source");
  EXPECT_EQ(ledger_source_text(e), "");
  EXPECT_EQ(ledger_entry_text(e), "buf2+buf4 score (2, 0, 66048, -1)");
}

}  // namespace
}  // namespace fg
