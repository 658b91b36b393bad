// Fast paths in the compiler: which sites match, which run (a proof covering
// the world size and shape class, or forced), why the others do not, the
// priority between two that match the same nodes, and what the graph looks
// like after the substitution.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "fusion/codegen/cpp_printer.h"
#include "fusion/codegen/cuda_printer.h"
#include "fusion/errors.h"
#include "kernels/fastpaths/sources.h"
#include "tests/unit/fast_path_fixtures.h"

namespace fg {
namespace {
using namespace testing_fast_paths;

TEST(FastPaths, CatalogListsTheEightWithTheTpAwareOneFirst) {
  EXPECT_EQ(fast_path_names(),
            "allreduce_residual, allreduce_residual_rmsnorm, allreduce_sum, causal_attention, gate_up_swiglu, "
            "qkv_rmsnorm_local, qkv_rmsnorm_tp, rmsnorm_gate_up_swiglu");
  // an all-reduce that a norm reads goes to the fused exchange + norm, one
  // that a residual add reads to the exchange + add, the rest to the
  // exchange alone
  EXPECT_GT(find_fast_path("allreduce_residual_rmsnorm")->priority, find_fast_path("allreduce_residual")->priority);
  EXPECT_GT(find_fast_path("allreduce_residual")->priority, find_fast_path("allreduce_sum")->priority);
  EXPECT_FALSE(find_fast_path("allreduce_residual")->replicated_always);
  EXPECT_EQ(find_fast_path("allreduce_residual")->replicated_given, std::vector<int>{1});
  EXPECT_TRUE(find_fast_path("allreduce_sum")->replicated_always);
  EXPECT_FALSE(find_fast_path("allreduce_residual_rmsnorm")->replicated_always);
  ASSERT_NE(find_fast_path("qkv_rmsnorm_tp"), nullptr);
  EXPECT_GT(find_fast_path("qkv_rmsnorm_tp")->priority, find_fast_path("qkv_rmsnorm_local")->priority);
  EXPECT_TRUE(find_fast_path("qkv_rmsnorm_local")->generic_order(Backend::Cpu));
  EXPECT_FALSE(find_fast_path("qkv_rmsnorm_local")->generic_order(Backend::Cuda));
  EXPECT_FALSE(find_fast_path("qkv_rmsnorm_tp")->generic_order(Backend::Cpu));
  EXPECT_EQ(find_fast_path("no_such"), nullptr);
  // where the MLP's norm also ends an all-reduce + residual, the exchange
  // fast path takes it; elsewhere the folded norm outranks the plain kernel
  EXPECT_GT(find_fast_path("allreduce_residual_rmsnorm")->priority,
            find_fast_path("rmsnorm_gate_up_swiglu")->priority);
  EXPECT_GT(find_fast_path("rmsnorm_gate_up_swiglu")->priority, find_fast_path("gate_up_swiglu")->priority);
}

TEST(FastPaths, NoneSelectedLeavesTheGraphAlone) {
  Applied r = apply(parse_fast_paths("none"), {});
  EXPECT_EQ(count(r.out, Op::FastPath), 0);
  for (const auto& [n, st] : r.status) EXPECT_EQ(st.status, kFastPathNotSelected) << n;
  EXPECT_TRUE(r.ledger.empty());
}

TEST(FastPaths, WithoutAProofEveryMatchIsBlockedAndLedgered) {
  Applied r = apply(parse_fast_paths("proven"), {});
  EXPECT_EQ(count(r.out, Op::FastPath), 0);
  EXPECT_EQ(r.status["qkv_rmsnorm_tp"].status, kFastPathUnproven);
  EXPECT_EQ(r.status["qkv_rmsnorm_local"].status, kFastPathUnproven);
  EXPECT_EQ(r.status["allreduce_residual_rmsnorm"].status, kFastPathUnproven);
  EXPECT_EQ(r.status["qkv_rmsnorm_tp"].shape_classes, std::vector<std::string>{kQk});
  EXPECT_EQ(r.status["allreduce_residual_rmsnorm"].shape_classes, std::vector<std::string>{"bf16,hidden=64,vec=8"});
  const LedgerEntry* e = entry(r, "qkv_rmsnorm_tp");
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->fused);
  EXPECT_EQ(std::string(reject_code(e->reason)), "fast_path_unproven");
}

// "can fuse is not should fuse": on one cuda rank the all-reduce fast path
// has no exchange to save and was measured slower than the generic path, so
// the cost model refuses it there, and the ledger says so; at world size 2,
// on the cpu backend, and when forced (ab, prove) it runs.
TEST(FastPaths, CostModelRefusesTheExchangeFastPathOnOneCudaRank) {
  const FastPathProofs p = proven({{"allreduce_residual_rmsnorm", "bf16,hidden=64,vec=8"}});
  const FastPathSelection sel = parse_fast_paths("proven");
  Applied one = apply(sel, p, {Backend::Cuda, 1});
  expect_refused(one, "allreduce_residual_rmsnorm", "not used: cost model", "fast_path_cost_model");
  ASSERT_NE(entry(one, "allreduce_residual_rmsnorm"), nullptr);
  EXPECT_NE(reject_reason(entry(one, "allreduce_residual_rmsnorm")->reason).find("cost model"), std::string::npos);
  // the cost model's refusal comes before the proof: it would not run here
  // whatever a proof says, so it reads "not used", not "blocked"
  Applied unproven = apply(sel, {}, {Backend::Cuda, 1});
  EXPECT_EQ(unproven.status["allreduce_residual_rmsnorm"].status.rfind("not used: cost model", 0), 0u);
  Applied unproven2 = apply(sel, {}, {Backend::Cuda, 2});
  EXPECT_EQ(unproven2.status["allreduce_residual_rmsnorm"].status, kFastPathUnproven);
  for (const FastPathTarget t : {FastPathTarget{Backend::Cuda, 2}, FastPathTarget{Backend::Cpu, 1},
                                 FastPathTarget{Backend::Cuda, 0}}) {
    Applied r = apply(sel, p, t);
    EXPECT_EQ(r.status["allreduce_residual_rmsnorm"].status, kFastPathUsed) << t.world_size;
    EXPECT_EQ(count(r.out, Op::FastPath), 1) << t.world_size;
  }
  FastPathProofs forced;
  forced.forced = {"allreduce_residual_rmsnorm"};
  Applied f = apply(parse_fast_paths("allreduce_residual_rmsnorm"), forced, {Backend::Cuda, 1});
  EXPECT_EQ(f.status["allreduce_residual_rmsnorm"].status, kFastPathUsed);
}

TEST(FastPaths, AProofForAnotherShapeClassDoesNotCover) {
  Applied r = apply(parse_fast_paths("proven"),
                    proven({{"qkv_rmsnorm_tp", "bf16,norm_dim=128,divisor=128,sumsq=all_reduced,vec=8"},
                            // the local kernel proven where the graph divides by its width, without an
                            // all-reduce: not this site, which divides by 128 over 64 columns
                            {"qkv_rmsnorm_local", "bf16,norm_dim=64,divisor=64,sumsq=local,vec=8"}}));
  // each names what its proof covers: "unproven under TP" says no proof is there
  EXPECT_EQ(r.status["qkv_rmsnorm_tp"].status,
            std::string(kFastPathOtherShapeClass) + " (its proof covers bf16,norm_dim=128,divisor=128,sumsq=all_reduced,vec=8)");
  EXPECT_EQ(r.status["qkv_rmsnorm_local"].status,
            std::string(kFastPathOtherShapeClass) + " (its proof covers bf16,norm_dim=64,divisor=64,sumsq=local,vec=8)");
  bool unproven = false;
  for (const LedgerEntry& e : r.ledger) unproven = unproven || e.reason == Reject::FastPathUnproven;
  EXPECT_TRUE(unproven);
}

TEST(FastPaths, AnInvalidatedProofBlocksWithItsReason) {
  FastPathProofs p = proven({{"qkv_rmsnorm_tp", kQk}});
  p.invalid["qkv_rmsnorm_tp"] = "source changed";
  Applied r = apply(parse_fast_paths("proven"), p);
  EXPECT_EQ(r.status["qkv_rmsnorm_tp"].status, "blocked: proof invalidated (source changed)");
  EXPECT_EQ(std::string(reject_code(entry(r, "qkv_rmsnorm_tp")->reason)), "fast_path_proof_invalidated");
  EXPECT_EQ(count(r.out, Op::FastPath), 0);
}

TEST(FastPaths, ProvenPathsReplaceTheirNodesAndTheTpAwareOneWinsThePriority) {
  Applied r = apply(parse_fast_paths("all"), proven({{"qkv_rmsnorm_tp", kQk},
                                                  {"qkv_rmsnorm_local", kQk},
                                                  {"allreduce_residual_rmsnorm", "bf16,hidden=64,vec=8"}}));
  EXPECT_EQ(r.status["qkv_rmsnorm_tp"].status, kFastPathUsed);
  EXPECT_EQ(r.status["qkv_rmsnorm_local"].status, "not used: lower priority than qkv_rmsnorm_tp");
  EXPECT_EQ(r.status["allreduce_residual_rmsnorm"].status, kFastPathUsed);
  EXPECT_EQ(std::string(reject_code(entry(r, "qkv_rmsnorm_local")->reason)), "fast_path_lower_priority");
  // qkv_rmsnorm_tp: sumsq, one all-reduce of [8,2], apply; the residual path: one node
  EXPECT_EQ(count(r.out, Op::FastPath), 3);
  EXPECT_EQ(count(r.out, Op::AllReduce), 1);
  int small = 0;
  for (const auto& n : r.out.nodes)
    if (n.op == Op::AllReduce) small += n.type.shape == Shape{8, 2};
  EXPECT_EQ(small, 1);
  // the q/k norms, the O all-reduce and the RMSNorm's chain are gone
  EXPECT_EQ(count(r.out, Op::Rsqrt), 0);
  EXPECT_EQ(count(r.out, Op::Sum), 0);
  // outputs keep their types
  ASSERT_EQ(r.out.outputs.size(), 2u);
  EXPECT_EQ(r.out.node(r.out.outputs[0]).type.str(), "bf16[8,64]");
  EXPECT_EQ(r.out.node(r.out.outputs[1]).type.str(), "bf16[8,64]");
}

TEST(FastPaths, ANamedSelectionRunsOnlyThoseAndReportsTheRestAsNotSelected) {
  Applied r = apply(parse_fast_paths("qkv_rmsnorm_local"), proven({{"qkv_rmsnorm_local", kQk}}));
  EXPECT_EQ(r.status["qkv_rmsnorm_local"].status, kFastPathUsed);
  EXPECT_EQ(r.status["qkv_rmsnorm_tp"].status, kFastPathNotSelected);
  EXPECT_EQ(count(r.out, Op::FastPath), 1);
  EXPECT_EQ(count(r.out, Op::AllReduce), 1);  // the local kernel drops the norm's all-reduces: that is its bug under TP
}

TEST(FastPaths, ForcedRunsWithoutAProof) {
  FastPathProofs p;
  p.forced = {"allreduce_residual_rmsnorm"};
  Applied r = apply(parse_fast_paths("allreduce_residual_rmsnorm"), p);
  EXPECT_EQ(r.status["allreduce_residual_rmsnorm"].status, kFastPathUsed);
}

TEST(FastPaths, APatternThatIsAbsentIsNotMatched) {
  const char* plain = R"(
graph g(%x: bf16[8,64], %w: bf16[64,64]) {
  %2 = linear(%x, %w) : bf16[8,64]
  %3 = relu(%2) : bf16[8,64]
  return %3
}
)";
  CompileOptions o;
  o.fast_paths = parse_fast_paths("all");
  CompiledProgram c = compile(parse_graph(plain, "t.fg"), o);
  for (const auto& [n, st] : c.fast_paths) EXPECT_EQ(st.status, kFastPathNotMatched) << n;
}

TEST(FastPaths, AFastPathLaunchesAsItsOwnKind) {
  CompileOptions o;
  o.fast_paths = parse_fast_paths("allreduce_residual_rmsnorm");
  o.proofs.forced = {"allreduce_residual_rmsnorm"};
  CompiledProgram c = compile(parse_graph(kBlock, "t.fg"), o);
  int fast = 0;
  for (const auto& k : c.program.kernels)
    if (k.kind == "fast_path") {
      ++fast;
      EXPECT_EQ(k.name, "fastpath_allreduce_residual_rmsnorm");
    }
  EXPECT_EQ(fast, 1);
}

TEST(FastPaths, UnknownNamesAreBadInput) {
  EXPECT_THROW(parse_fast_paths("qkv_rmsnorm_tpp"), UserError);
  EXPECT_THROW(parse_fast_paths(","), UserError);
  EXPECT_EQ(parse_fast_paths("qkv_rmsnorm_tp,allreduce_residual_rmsnorm,qkv_rmsnorm_tp").text(),
            "allreduce_residual_rmsnorm,qkv_rmsnorm_tp");
}

// What runs is the file in the tree: editing it changes the hash a proof
// records (kernels/fastpaths/sources.h). Two fast paths of one kernel
// template run one file, so an edit of it moves both hashes.
TEST(FastPaths, TheSourceThatRunsIsTheFileInTheTree) {
  for (const auto& f : fast_path_catalog()) {
    const std::string file = f.file();
    std::ifstream in(std::string(FUSEGATE_SOURCE_DIR) + "/kernels/fastpaths/host/" + file + ".cpp");
    ASSERT_TRUE(in) << f.name;
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(fast_path_source(f.name, Backend::Cpu), host_kernel_prelude() + ss.str()) << f.name;
    std::ifstream cu(std::string(FUSEGATE_SOURCE_DIR) + "/kernels/fastpaths/cuda/" + file + ".cu");
    ASSERT_TRUE(cu) << f.name;
    std::stringstream cs;
    cs << cu.rdbuf();
    EXPECT_EQ(fast_path_source(f.name, Backend::Cuda), cuda_kernel_prelude() + cs.str()) << f.name;
    EXPECT_EQ(fast_path_source_hash(f.name, Backend::Cpu).size(), 16u);
  }
  EXPECT_NE(fast_path_source_hash("qkv_rmsnorm_tp", Backend::Cpu),
            fast_path_source_hash("qkv_rmsnorm_local", Backend::Cpu));
  for (Backend b : {Backend::Cpu, Backend::Cuda})
    EXPECT_EQ(fast_path_source_hash("rmsnorm_gate_up_swiglu", b), fast_path_source_hash("gate_up_swiglu", b));
}

}  // namespace
}  // namespace fg
