// Proofs of fast paths (harness/record/proofs.h): loading with named errors, what a
// proof covers, what invalidates it; the A/B verdict's rules
// (harness/tools/ab.h); fast path statuses against a golden (harness/record/compare.h);
// golden names of non-default fast path selections.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fusion/errors.h"
#include "harness/tools/ab.h"
#include "harness/record/compare.h"
#include "tests/unit/record_fixtures.h"
#include "harness/record/golden.h"
#include "harness/record/files.h"
#include "harness/record/proofs.h"

namespace fg {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

json out_of(int rank) {
  return {{"name", "out"}, {"rank", rank}, {"identical", true}, {"rel_l2_fast", 0.003}, {"rel_l2_generic", 0.003}};
}

json valid_proof() {
  return {{"schema", kProofSchema},
          {"fast_path", "qkv_rmsnorm_tp"},
          {"backend", "cpu"},
          {"world_sizes", {1, 2}},
          {"shape_classes", {"bf16,norm_dim=256,vec=8", "bf16,norm_dim=128,vec=8"}},
          {"cases",
           {{{"repro", "tp_block_wan"}, {"world_size", 1}, {"shape_class", "bf16,norm_dim=256,vec=8"},
             {"verdict", "pass"}, {"rule", "r"}, {"outputs", {out_of(0)}}},
            {{"repro", "tp_block_wan"}, {"world_size", 2}, {"shape_class", "bf16,norm_dim=128,vec=8"},
             {"verdict", "pass"}, {"rule", "r"}, {"outputs", {out_of(0), out_of(1)}}}}},
          {"env", {{"backend", "cpu"}}},
          {"source_hash", "00000000000000aa"}};
}

class ProofDir : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("fusegate_proofs_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_ / "proofs" / "cpu");
  }
  void TearDown() override { remove_tree(root_.string()); }
  std::string write(const std::string& text, const std::string& name = "qkv_rmsnorm_tp") {
    std::string p = proof_path(root_.string(), "cpu", name);
    std::ofstream(p) << text;
    return p;
  }
  std::string error_of(const std::string& text) {
    std::string p = write(text);
    try {
      load_proof(p, "cpu", "qkv_rmsnorm_tp");
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  }
  fs::path root_;
};

TEST_F(ProofDir, AValidProofLoadsAndAnAbsentOneIsNotAnError) {
  std::string p = write(valid_proof().dump(2));
  EXPECT_TRUE(load_proof(p, "cpu", "qkv_rmsnorm_tp").has_value());
  EXPECT_FALSE(load_proof(proof_path(root_.string(), "cpu", "qkv_rmsnorm_local"), "cpu", "qkv_rmsnorm_local"));
  EXPECT_EQ(p, (root_ / "proofs" / "cpu" / "qkv_rmsnorm_tp.json").string());
}

TEST_F(ProofDir, MalformedProofsAreNamedWithWhatIsWrong) {
  std::string msg = error_of("{\n  \"schema\": ,\n}");
  EXPECT_NE(msg.find("qkv_rmsnorm_tp.json:2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("corrupted proof"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fusegate prove --fast-path qkv_rmsnorm_tp"), std::string::npos) << msg;

  json j = valid_proof();
  j.erase("source_hash");
  EXPECT_NE(error_of(j.dump()).find("missing key 'source_hash'"), std::string::npos);
  j = valid_proof();
  j["fast_path"] = "qkv_rmsnorm_local";
  EXPECT_NE(error_of(j.dump()).find("it proves 'qkv_rmsnorm_local'"), std::string::npos);
  j = valid_proof();
  j["backend"] = "cuda";
  EXPECT_NE(error_of(j.dump()).find("its folder says 'cpu'"), std::string::npos);
  j = valid_proof();
  j["cases"][1]["world_size"] = 4;
  EXPECT_NE(error_of(j.dump()).find("which 'world_sizes' does not list"), std::string::npos);
  j = valid_proof();
  j["cases"][0]["verdict"] = "fail";
  EXPECT_NE(error_of(j.dump()).find("a proof holds only passes"), std::string::npos);
  j = valid_proof();
  j["world_sizes"] = {1, 2, 4};
  EXPECT_NE(error_of(j.dump()).find("world size 4 is listed but no case ran at it"), std::string::npos);
  j = valid_proof();
  j["cases"][1]["outputs"] = json::array();
  EXPECT_NE(error_of(j.dump()).find("cases[1] compared no outputs"), std::string::npos);
  j = valid_proof();
  j["cases"][1]["outputs"] = {out_of(0)};
  EXPECT_NE(error_of(j.dump()).find("holds outputs of 1 ranks"), std::string::npos);
  j = valid_proof();
  j["cases"][0]["rule"] = "identical digests: f";
  j["cases"][0]["outputs"][0]["identical"] = false;
  EXPECT_NE(error_of(j.dump()).find("not identical"), std::string::npos);
  j = valid_proof();
  j["schema"] = 99;
  EXPECT_NE(error_of(j.dump()).find("schema 99"), std::string::npos);
  EXPECT_NE(error_of(std::string(200, '[') + std::string(200, ']')).find("nests deeper than 64"), std::string::npos);
}

TEST_F(ProofDir, AProofCoversItsWorldSizesAndShapeClassesOnly) {
  write(valid_proof().dump());
  auto same = [](const std::string&) { return std::string("00000000000000aa"); };
  auto at2 = read_proofs(root_.string(), "cpu", 2, {"qkv_rmsnorm_tp", "qkv_rmsnorm_local"}, same, "");
  EXPECT_TRUE(at2["qkv_rmsnorm_tp"].present);
  EXPECT_EQ(at2["qkv_rmsnorm_tp"].invalid, "");
  EXPECT_EQ(at2["qkv_rmsnorm_tp"].shape_classes, std::set<std::string>{"bf16,norm_dim=128,vec=8"});
  EXPECT_FALSE(at2["qkv_rmsnorm_local"].present);
  auto at4 = read_proofs(root_.string(), "cpu", 4, {"qkv_rmsnorm_tp"}, same, "");
  EXPECT_TRUE(at4["qkv_rmsnorm_tp"].shape_classes.empty());
}

TEST_F(ProofDir, AnEditedSourceInvalidatesTheProof) {
  write(valid_proof().dump());
  auto edited = [](const std::string&) { return std::string("00000000000000bb"); };
  auto st = read_proofs(root_.string(), "cpu", 1, {"qkv_rmsnorm_tp"}, edited, "");
  EXPECT_EQ(st["qkv_rmsnorm_tp"].invalid, "source changed");
}

TEST_F(ProofDir, ACpuProofHoldsForItsHostCompilerOnly) {
  json j = valid_proof();
  j["env"]["compiler"] = "c++ 12.2.0";
  write(j.dump());
  auto same = [](const std::string&) { return std::string("00000000000000aa"); };
  EXPECT_EQ(read_proofs(root_.string(), "cpu", 1, {"qkv_rmsnorm_tp"}, same, "", "c++ 12.2.0")["qkv_rmsnorm_tp"].invalid, "");
  EXPECT_EQ(read_proofs(root_.string(), "cpu", 1, {"qkv_rmsnorm_tp"}, same, "", "c++ 13.1.0")["qkv_rmsnorm_tp"].invalid,
            "compiler changed: proved with c++ 12.2.0, this is c++ 13.1.0");
}

TEST_F(ProofDir, ACudaProofHoldsForItsGpuModelOnly) {
  json j = valid_proof();
  j["backend"] = "cuda";
  j["env"]["gpu"] = "NVIDIA H200";
  const std::string h200 = proof_path(root_.string(), "cuda", "qkv_rmsnorm_tp", "NVIDIA H200");
  EXPECT_EQ(h200, (root_ / "proofs" / "cuda" / "NVIDIA_H200" / "qkv_rmsnorm_tp.json").string());
  fs::create_directories(fs::path(h200).parent_path());
  std::ofstream(h200) << j.dump();
  auto same = [](const std::string&) { return std::string("00000000000000aa"); };
  EXPECT_EQ(read_proofs(root_.string(), "cuda", 1, {"qkv_rmsnorm_tp"}, same, "NVIDIA H200")["qkv_rmsnorm_tp"].invalid, "");
  EXPECT_EQ(read_proofs(root_.string(), "cuda", 1, {"qkv_rmsnorm_tp"}, same, "NVIDIA H100 80GB HBM3")["qkv_rmsnorm_tp"].invalid,
            "GPU changed: proved on NVIDIA H200, this is NVIDIA H100 80GB HBM3");
  // no device (explain): any model's proof whose source holds
  EXPECT_EQ(read_proofs(root_.string(), "cuda", 1, {"qkv_rmsnorm_tp"}, same, "")["qkv_rmsnorm_tp"].shape_classes.size(),
            1u);
  j["env"].erase("gpu");
  std::ofstream(h200) << j.dump();
  EXPECT_THROW(read_proofs(root_.string(), "cuda", 1, {"qkv_rmsnorm_tp"}, same, "NVIDIA H200"), UserError);
}

// Proving on one GPU model leaves another's proof alone: each reads its own.
TEST_F(ProofDir, ProofsOfTwoGpuModelsLiveSideBySide) {
  auto write_for = [&](const std::string& gpu, int world) {
    json j = valid_proof();
    j["backend"] = "cuda";
    j["env"]["gpu"] = gpu;
    j["world_sizes"] = {world};
    for (auto& c : j["cases"]) c["world_size"] = world;
    for (auto& c : j["cases"])
      for (auto& o : c["outputs"]) o["rank"] = 0;
    const std::string p = proof_path(root_.string(), "cuda", "qkv_rmsnorm_tp", gpu);
    fs::create_directories(fs::path(p).parent_path());
    std::ofstream(p) << j.dump();
  };
  write_for("NVIDIA H100 80GB HBM3", 1);
  write_for("NVIDIA H200", 1);
  EXPECT_EQ(proof_paths(root_.string(), "cuda", "qkv_rmsnorm_tp").size(), 2u);
  auto same = [](const std::string&) { return std::string("00000000000000aa"); };
  for (const char* gpu : {"NVIDIA H100 80GB HBM3", "NVIDIA H200"}) {
    auto st = read_proofs(root_.string(), "cuda", 1, {"qkv_rmsnorm_tp"}, same, gpu)["qkv_rmsnorm_tp"];
    EXPECT_EQ(st.invalid, "") << gpu;
    EXPECT_FALSE(st.shape_classes.empty()) << gpu;
  }
  // no device (explain): one model's proof current but proved at world
  // size 1 only, the other's stale and proved at world size 2. At world
  // size 2 the fast path is unproven (the stale file lends no shape class),
  // not invalidated; with both stale it is invalidated.
  auto edited = [](const std::string&) { return std::string("00000000000000bb"); };
  {
    write_for("NVIDIA H200", 2);
    json h200 = json::parse(std::ifstream(proof_path(root_.string(), "cuda", "qkv_rmsnorm_tp", "NVIDIA H200")));
    h200["source_hash"] = "00000000000000cc";
    for (auto& c : h200["cases"]) {  // world size 2: each output on both ranks
      json both = json::array();
      for (auto o : c["outputs"]) {
        both.push_back(o);
        o["rank"] = 1;
        both.push_back(o);
      }
      c["outputs"] = both;
    }
    std::ofstream(proof_path(root_.string(), "cuda", "qkv_rmsnorm_tp", "NVIDIA H200")) << h200.dump();
    auto at2 = read_proofs(root_.string(), "cuda", 2, {"qkv_rmsnorm_tp"}, same, "")["qkv_rmsnorm_tp"];
    EXPECT_TRUE(at2.present);
    EXPECT_EQ(at2.invalid, "");
    EXPECT_TRUE(at2.shape_classes.empty());
    auto at1 = read_proofs(root_.string(), "cuda", 1, {"qkv_rmsnorm_tp"}, same, "")["qkv_rmsnorm_tp"];
    EXPECT_EQ(at1.invalid, "");
    EXPECT_FALSE(at1.shape_classes.empty());
    EXPECT_EQ(read_proofs(root_.string(), "cuda", 1, {"qkv_rmsnorm_tp"}, edited, "")["qkv_rmsnorm_tp"].invalid,
              "source changed");
  }
  // a proof in another model's folder is malformed, named as such
  json j = valid_proof();
  j["backend"] = "cuda";
  j["env"]["gpu"] = "NVIDIA H200";
  std::ofstream(proof_path(root_.string(), "cuda", "qkv_rmsnorm_tp", "NVIDIA H100 80GB HBM3")) << j.dump();
  try {
    read_proofs(root_.string(), "cuda", 1, {"qkv_rmsnorm_tp"}, same, "NVIDIA H100 80GB HBM3");
    ADD_FAILURE() << "a proof in the wrong GPU folder was read";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("belong in the folder NVIDIA_H200, not NVIDIA_H100_80GB_HBM3"),
              std::string::npos)
        << e.what();
  }
}

// -- the A/B verdict ---------------------------------------------------------

json ab_output(bool identical, double gen, double fast, const std::string& digest = "d0") {
  return {{"name", "out"}, {"replicated", true}, {"identical", identical}, {"differing", identical ? 0 : 7},
          {"numel", 100}, {"rel_l2_generic", gen}, {"rel_l2_fast", fast}, {"max_abs_fast_vs_generic", 0.5},
          {"max_abs_fast", 0.6}, {"max_abs_generic", 0.1}, {"exact_fast", digest}, {"nonfinite_fast", 0}};
}

json ab_record(std::vector<json> outs) {
  json ranks = json::array();
  for (size_t i = 0; i < outs.size(); ++i) ranks.push_back({{"rank", i}, {"ab", json::array({outs[i]})}});
  return {{"ranks", ranks}};
}

TEST(AbVerdict, GenericOrderDemandsIdenticalDigests) {
  EXPECT_TRUE(ab_verdict(ab_record({ab_output(true, 0.003, 0.003)}), "f", true).pass);
  AbVerdict v = ab_verdict(ab_record({ab_output(false, 0.003, 0.003)}), "f", true);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.rule.find("identical digests"), std::string::npos);
  ASSERT_EQ(v.failures.size(), 1u);
  EXPECT_NE(v.failures[0].find("digests differ from the generic path's (7 of 100 elements"), std::string::npos)
      << v.failures[0];
}

TEST(AbVerdict, OtherwiseTheFastPathMayBeNoFartherFromFp64ThanTheStatedFactor) {
  EXPECT_TRUE(ab_verdict(ab_record({ab_output(false, 0.004, 0.004 * kAbFactor)}), "f", false).pass);
  AbVerdict v = ab_verdict(ab_record({ab_output(false, 0.004, 0.0185)}), "f", false);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.rule.find("1.25 x"), std::string::npos) << v.rule;
  EXPECT_NE(v.failures[0].find("0.0185 is over 1.25 x the generic path's 0.004"), std::string::npos) << v.failures[0];
  // an exact generic output does not demand an exact fast one below the floor
  EXPECT_TRUE(ab_verdict(ab_record({ab_output(false, 0.0, kAbFloor)}), "f", false).pass);
}

TEST(AbVerdict, AReplicatedOutputMustAgreeAcrossRanksAndBeFinite) {
  AbVerdict v = ab_verdict(ab_record({ab_output(true, 0.003, 0.003, "d0"), ab_output(true, 0.003, 0.003, "d1")}), "f",
                           true);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.failures[0].find("differs from rank 0's"), std::string::npos);
  json nan = ab_output(true, 0.003, 0.003);
  nan["nonfinite_fast"] = 3;
  EXPECT_FALSE(ab_verdict(ab_record({nan}), "f", true).pass);
  EXPECT_FALSE(ab_verdict(json{{"ranks", json::array()}}, "f", true).pass);  // nothing compared is no pass
}

// -- statuses against the golden ---------------------------------------------

json record_with(const std::string& status) {
  json r = {{"rank", 0}, {"fast_paths", {{{"name", "allreduce_residual_rmsnorm"}, {"status", status}}}}};
  return {{"repro", "x"}, {"mode", "C"}, {"world_size", 2}, {"backend", "cpu"}, {"fusion", "default"},
          {"ranks", json::array({r})}};
}

TEST(FastPathStatus, AFastPathThatNoLongerRunsFailsAndANewOneIsAnImprovement) {
  json used = record_with("used");
  Verdict v = compare_with_golden(record_with("blocked: proof invalidated (source changed)"), &used, "g.json",
                                  "x/C/w2", "bless");
  EXPECT_EQ(v.kind, VerdictKind::Fail);
  bool said = false;
  for (const auto& f : v.findings)
    said = said || f.message.find("fast path allreduce_residual_rmsnorm ran when the golden was blessed; now: "
                                  "blocked: proof invalidated (source changed)") != std::string::npos;
  EXPECT_TRUE(said);
  // the other figures of these minimal records are not what this test is about
  auto fast_findings = [](const Verdict& v) {
    std::vector<Finding> r;
    for (const auto& f : v.findings)
      if (f.message.find("fast path") != std::string::npos) r.push_back(f);
    return r;
  };
  json gold = record_with("blocked: unproven under TP");
  auto better = fast_findings(compare_with_golden(record_with("used"), &gold, "g.json", "x/C/w2", "bless"));
  ASSERT_EQ(better.size(), 1u);
  EXPECT_EQ(better[0].kind, VerdictKind::Improved);
  EXPECT_NE(better[0].message.find("runs now (was: blocked: unproven under TP)"), std::string::npos);
  // a golden blessed before fast paths existed records none
  json old = record_with("used");
  old["ranks"][0].erase("fast_paths");
  EXPECT_TRUE(fast_findings(compare_with_golden(record_with("used"), &old, "g.json", "x/C/w2", "bless")).empty());
}

TEST(FastPathStatus, ANonDefaultSelectionHasItsOwnGoldenAndBlessCommand) {
  EXPECT_EQ(golden_path("golden", "cpu", "r", "C", 2, "default", "none"), "golden/cpu/r/C_w2.fp-none.json");
  EXPECT_EQ(golden_path("golden", "cpu", "r", "C", 2, "max-autotune", "a,b"), "golden/cpu/r/C_w2.max-autotune.fp-a+b.json");
  EXPECT_EQ(golden_path("golden", "cpu", "r", "A", 2, "default", "none"), "golden/cpu/r/A_w2.json");
  EXPECT_EQ(golden_path("golden", "cpu", "r", "C", 2, "default"), "golden/cpu/r/C_w2.json");
  EXPECT_EQ(bless_command("r", "C", 2, "cpu", "default", "none"),
            "fusegate bless r --mode C --world-size 2 --fast-paths none");
}

}  // namespace
}  // namespace fg
