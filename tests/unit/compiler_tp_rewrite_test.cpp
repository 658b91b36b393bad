// The TP rewrite's proof: which values are the same on every rank, and that
// a residual add moves in front of its all-reduce only with that proof.
#include <gtest/gtest.h>

#include "fusion/compile.h"
#include "fusion/ir/text.h"
#include "fusion/passes/tp_rewrite.h"

namespace fg {
namespace {

const char* kBlock = R"(
graph g(%x: bf16[8,64], %w: bf16[64,64], %wo: bf16[64,64]) {
  %3 = linear(%x, %w) : bf16[8,64]
  %4 = relu(%3) : bf16[8,64]
  %5 = linear(%4, %wo) : bf16[8,64]
  %6 = all_reduce(%5) {reduce_op = "sum"} : bf16[8,64]
  %7 = add(%x, %6) : bf16[8,64]
  %8 = exp(%7) : bf16[8,64]
  %9 = reduce_scatter(%8) {dim = 0, world = 2} : bf16[4,64]
  return %8, %9
}
)";

// A fast path's result is replicated as its contract says: the all-reduce +
// norm fast path's when its residual and weight are.
TEST(TpRewrite, AFastPathResultIsReplicatedAsItsContractSays) {
  const char* text = R"(
graph g(%p: bf16[8,64], %x: bf16[8,64], %ln: bf16[64]) {
  %3 = fast_path(%p, %x, %ln) {dtype = "bf16", eps = 1e-06, hidden = 64, name = "allreduce_residual_rmsnorm", shape = [2, 8, 64]} : bf16[2,8,64]
  %4 = slice(%3) {dim = 0, end = 2, start = 1, step = 1} : bf16[1,8,64]
  return %4
}
)";
  Graph g = parse_graph(text, "t.fg");
  EXPECT_TRUE(replicated_nodes(g, {"x", "ln"})[3]);
  EXPECT_TRUE(replicated_nodes(g, {"x", "ln"})[4]);  // a view of it
  EXPECT_FALSE(replicated_nodes(g, {"ln"})[3]);      // a sharded residual
  EXPECT_FALSE(replicated_nodes(g, {"x"})[3]);
}

// The exchange alone stands for the all-reduce it replaced: its sum is the
// same on every rank whatever its input, and the residual hoist puts the
// add on the GEMM that feeds it as it would for the collective.
TEST(TpRewrite, TheAllReduceFastPathIsReplicatedAndTakesTheHoist) {
  const char* text = R"(
graph g(%x: bf16[8,64], %w: bf16[64,64]) {
  %2 = linear(%x, %w) : bf16[8,64]
  %3 = fast_path(%2) {dtype = "bf16", hidden = 64, name = "allreduce_sum", shape = [8, 64]} : bf16[8,64]
  %4 = add(%x, %3) : bf16[8,64]
  return %4
}
)";
  Graph g = parse_graph(text, "t.fg");
  EXPECT_FALSE(replicated_nodes(g, {})[2]);
  EXPECT_TRUE(replicated_nodes(g, {})[3]);  // whatever the ranks fed it
  EXPECT_TRUE(replicated_nodes(g, {"x"})[4]);
  std::vector<LedgerEntry> ledger;
  Graph h = hoist_replicated_residuals(g, {"x"}, &ledger);
  verify(h);
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger[0].reason, Reject::TpResidualHoisted);
  const Node& out = h.node(h.outputs[0]);
  ASSERT_EQ(out.op, Op::FastPath) << print_graph(h);
  EXPECT_EQ(h.node(out.inputs[0]).op, Op::LinearAddRank0) << print_graph(h);
  // another fast path (the q/k norm) is no all-reduce: no hoist through it
  Graph other = parse_graph(R"(
graph g(%x: bf16[8,64], %w: bf16[64,64]) {
  %2 = linear(%x, %w) : bf16[8,64]
  %3 = fast_path(%2) {dtype = "bf16", hidden = 64, name = "causal_attention", shape = [8, 64]} : bf16[8,64]
  %4 = add(%x, %3) : bf16[8,64]
  return %4
}
)", "t.fg");
  ledger.clear();
  EXPECT_EQ(print_graph(hoist_replicated_residuals(other, {"x"}, &ledger)), print_graph(other));
  EXPECT_TRUE(ledger.empty());
}

TEST(TpRewrite, ReplicatedValuesFollowInputsCollectivesAndPointwiseOps) {
  Graph g = parse_graph(kBlock, "t.fg");
  std::vector<bool> rep = replicated_nodes(g, {"x"});
  EXPECT_TRUE(rep[0]);   // x
  EXPECT_FALSE(rep[1]);  // w: sharded
  EXPECT_FALSE(rep[3]);  // a GEMM's result
  EXPECT_FALSE(rep[4]);  // relu of it
  EXPECT_TRUE(rep[6]);   // all_reduce
  EXPECT_TRUE(rep[7]);   // x + all_reduce
  EXPECT_TRUE(rep[8]);   // exp of that
  EXPECT_FALSE(rep[9]);  // each rank's slice
  std::vector<bool> none = replicated_nodes(g, {});
  EXPECT_FALSE(none[0]);
  EXPECT_FALSE(none[7]);
}

TEST(TpRewrite, HoistsOnlyWithAReplicatedAddend) {
  Graph g = parse_graph(kBlock, "t.fg");
  std::vector<LedgerEntry> ledger;
  Graph h = hoist_replicated_residuals(g, {"x"}, &ledger);
  verify(h);
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_TRUE(ledger[0].fused);
  EXPECT_EQ(ledger[0].reason, Reject::TpResidualHoisted);
  int gemm = -1, adds = 0;
  for (const Node& n : h.nodes) {
    if (n.op == Op::LinearAddRank0) gemm = n.id;
    adds += n.op == Op::Add;
  }
  ASSERT_GE(gemm, 0) << print_graph(h);
  EXPECT_EQ(h.node(gemm).inputs[2], 0);  // x is the addend
  EXPECT_EQ(adds, 0) << print_graph(h);
  // exp reads the all-reduce now
  EXPECT_EQ(h.node(h.outputs[0]).op, Op::Exp);
  EXPECT_EQ(h.node(h.node(h.outputs[0]).inputs[0]).op, Op::AllReduce);

  // x sharded: no proof, no rewrite
  ledger.clear();
  Graph k = hoist_replicated_residuals(g, {}, &ledger);
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_FALSE(ledger[0].fused);
  EXPECT_EQ(ledger[0].reason, Reject::TpAddendNotReplicated);
  EXPECT_EQ(print_graph(k), print_graph(g));
}

// An input the graph writes is not replicated: the add would read it after
// the write, the GEMM before it, and the written value may be sharded.
TEST(TpRewrite, AnInputTheGraphWritesIsNoProof) {
  Graph g = parse_graph(R"(
graph g(%x: bf16[8,64], %w: bf16[64,64], %z: bf16[8,64]) {
  %3 = linear(%x, %w) : bf16[8,64]
  %4 = all_reduce(%3) {reduce_op = "sum"} : bf16[8,64]
  %5 = copy_(%x, %z) : bf16[8,64]
  %6 = add(%x, %4) : bf16[8,64]
  return %6
}
)", "t.fg");
  EXPECT_FALSE(replicated_nodes(g, {"x", "z"})[0]);
  std::vector<LedgerEntry> ledger;
  Graph h = hoist_replicated_residuals(g, {"x", "z"}, &ledger);
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger[0].reason, Reject::TpAddendNotReplicated);
  EXPECT_EQ(print_graph(h), print_graph(g));
}

TEST(TpRewrite, RunsOnlyForCudaMaxAutotune) {
  for (Backend backend : {Backend::Cpu, Backend::Cuda})
    for (FusionPolicy p : {FusionPolicy::Default, FusionPolicy::MaxAutotune}) {
      CompileOptions o;
      o.backend = backend;
      o.fusion = p;
      o.replicated_inputs = {"x"};
      CompiledProgram c = compile(parse_graph(kBlock, "t.fg"), o);
      bool hoisted = false;
      for (const Node& n : c.decomposed.nodes) hoisted = hoisted || n.op == Op::LinearAddRank0;
      EXPECT_EQ(hoisted, backend == Backend::Cuda && p == FusionPolicy::MaxAutotune) << backend_name(backend);
    }
}

// A site the run's residual placement leaves apart stays as it is, with a
// ledger entry saying so; the compile keeps the add after the all-reduce
// in a kernel of its own program, and the other sites still hoist.
TEST(TpRewrite, ASiteLeftApartKeepsItsAddAfterTheAllReduce) {
  Graph g = parse_graph(kBlock, "t.fg");
  std::vector<LedgerEntry> first;
  hoist_replicated_residuals(g, {"x"}, &first);
  ASSERT_EQ(first.size(), 1u);
  const std::string site = residual_site(first[0]);
  EXPECT_EQ(site, "%5(linear) + %7(add)");

  std::vector<LedgerEntry> ledger;
  Graph h = hoist_replicated_residuals(g, {"x"}, &ledger, {site});
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_FALSE(ledger[0].fused);
  EXPECT_EQ(ledger[0].reason, Reject::TpResidualApart);
  EXPECT_STREQ(reject_code(ledger[0].reason), "tp_residual_apart");
  EXPECT_EQ(residual_site(ledger[0]), site);  // the same name either way: a table can find it again
  EXPECT_EQ(print_graph(h), print_graph(g));

  // another site's name leaves this one hoisted
  ledger.clear();
  Graph k = hoist_replicated_residuals(g, {"x"}, &ledger, {"%3(linear) + %7(add)"});
  EXPECT_EQ(ledger[0].reason, Reject::TpResidualHoisted);
  EXPECT_NE(print_graph(k), print_graph(g));

  // through compile: cuda max-autotune with the site apart runs the plain
  // GEMM and an add kernel after the all-reduce
  CompileOptions o;
  o.backend = Backend::Cuda;
  o.fusion = FusionPolicy::MaxAutotune;
  o.replicated_inputs = {"x"};
  o.residuals_apart = {site};
  // a generated kernel that adds (the GEMM's own launch, extern_addmm,
  // names "add" too: only generated kernels count)
  auto adds_after = [](const CompiledProgram& p) {
    bool found = false;
    for (const Kernel& kn : p.program.kernels)
      found = found || (kn.generated() && kn.name.find("_add") != std::string::npos);
    return found;
  };
  auto hoists = [](const CompiledProgram& p) {
    bool found = false;
    for (const Node& n : p.decomposed.nodes) found = found || n.op == Op::LinearAddRank0;
    return found;
  };
  CompiledProgram c = compile(g, o);
  EXPECT_FALSE(hoists(c));
  EXPECT_TRUE(adds_after(c)) << print_ledger(c.schedule);
  bool said = false;
  for (const LedgerEntry& e : c.schedule.ledger) said = said || e.reason == Reject::TpResidualApart;
  EXPECT_TRUE(said) << print_ledger(c.schedule);
  // and without the site apart: the hoist, and no kernel adds after it
  o.residuals_apart.clear();
  CompiledProgram h2 = compile(g, o);
  EXPECT_TRUE(hoists(h2));
  EXPECT_FALSE(adds_after(h2)) << print_ledger(h2.schedule);
}

}  // namespace
}  // namespace fg
