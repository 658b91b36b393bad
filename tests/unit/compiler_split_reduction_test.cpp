// Split reductions: where Inductor runs a reduction as two kernels on a GPU
// (few outputs, many elements), fusegate's cuda backend does too; the cpu
// backend, like Inductor's C++ one, never splits.
#include <gtest/gtest.h>

#include "fusion/compile.h"
#include "fusion/ir/text.h"

namespace fg {
namespace {

CompiledProgram compile_for(const std::string& text, Backend b) {
  CompileOptions o;
  o.backend = b;
  return compile(parse_graph(text, "test.fg"), o);
}

std::vector<const SchedNode*> reductions(const CompiledProgram& c) {
  std::vector<const SchedNode*> r;
  for (const auto& n : c.lowered.nodes)
    if (n.is_reduction()) r.push_back(&n);
  return r;
}

SplitReductions on() {
  SplitReductions s;
  s.enabled = true;
  return s;
}

TEST(SplitReduction, InductorsCountsOfSplits) {
  // a full reduction over 65536: blocks of 32 a thread, 256 threads: 8
  EXPECT_EQ(reduction_splits(1, 65536, true, on()), 8);
  // 8192 elements or fewer, or 2 x 132 outputs or more: not split
  EXPECT_EQ(reduction_splits(1, 8192, true, on()), 1);
  EXPECT_EQ(reduction_splits(264, 1 << 20, true, on()), 1);
  EXPECT_GT(reduction_splits(263, 1 << 20, true, on()), 1);
  // an outer reduction: over few elements, or with many outputs, not split
  EXPECT_EQ(reduction_splits(16, 32, false, on()), 1);
  EXPECT_EQ(reduction_splits(132 * 64, 4096, false, on()), 1);
  EXPECT_GT(reduction_splits(16, 1 << 16, false, on()), 1);
  // off (the cpu backend): never
  EXPECT_EQ(reduction_splits(1, 1 << 20, true, SplitReductions{}), 1);
}

TEST(SplitReduction, FullSumIsTwoKernelsOnCudaOneOnCpu) {
  const char* g = R"(
graph g(%a: f32[256,256]) {
  %1 = sum(%a) : f32[]
  return %1
}
)";
  CompiledProgram cuda = compile_for(g, Backend::Cuda);
  auto r = reductions(cuda);
  ASSERT_EQ(r.size(), 2u) << print_lowered(cuda.lowered);
  EXPECT_EQ(std::make_pair(r[0]->numel(), r[0]->rnumel()), std::make_pair(int64_t{8}, int64_t{8192}));
  EXPECT_EQ(std::make_pair(r[1]->numel(), r[1]->rnumel()), std::make_pair(int64_t{1}, int64_t{8}));
  ASSERT_EQ(cuda.program.kernels.size(), 2u);
  EXPECT_EQ(cuda.program.kernels[0].name, "cuda_red_fused_sum_0");
  EXPECT_EQ(cuda.program.kernels[1].name, "cuda_per_fused_sum_1");
  EXPECT_EQ(reductions(compile_for(g, Backend::Cpu)).size(), 1u);
}

TEST(SplitReduction, UnevenBlocksReadTheIdentityPastTheEnd) {
  // 12289 (prime) elements in 2 blocks of 6145: the second block's tail
  // is masked to the identity (0 for sum, -inf for max), and a bf16 sum
  // keeps its partial sums in f32
  CompiledProgram c = compile_for(R"(
graph g(%a: bf16[12289], %b: f32[12289]) {
  %2 = sum(%a) : bf16[]
  %3 = amax(%b) : f32[]
  return %2, %3
}
)", Backend::Cuda);
  auto r = reductions(c);
  ASSERT_EQ(r.size(), 4u) << print_lowered(c.lowered);
  EXPECT_EQ(r[0]->rnumel(), 6145);
  EXPECT_NE(r[0]->body->key.find("where(lt("), std::string::npos) << r[0]->body->key;
  EXPECT_NE(r[2]->body->key.find("const(f32, -inf)"), std::string::npos) << r[2]->body->key;
  EXPECT_EQ(c.lowered.buffers[static_cast<size_t>(r[0]->out_buffer)].dtype, DType::F32);
  EXPECT_EQ(c.lowered.buffers[static_cast<size_t>(r[1]->out_buffer)].dtype, DType::BF16);
}

TEST(SplitReduction, RowsOfAnActivationAreNotSplit) {
  // norms over rows: thousands of outputs, never split
  CompiledProgram c = compile_for(R"(
graph g(%x: bf16[2,512,2048], %w: bf16[2048]) {
  %2 = rms_norm(%x, %w) {eps = 1e-06} : bf16[2,512,2048]
  return %2
}
)", Backend::Cuda);
  EXPECT_EQ(reductions(c).size(), 1u);
  EXPECT_EQ(c.program.kernels.size(), 1u);
}

}  // namespace
}  // namespace fg

namespace fg {
namespace {

// Found by the fuzzer on an H100 (graph seed 20261943): two variances over
// the same input, each split in two on cuda, offered a horizontal fusion of
// the first's partial sums with the second's partial squares. With the
// second's partial sums already fused to the first's squares, that closes a
// cycle through a group entered at one node and left at another; the cycle
// check walks groups, so it is refused and the program compiles.
TEST(SplitReduction, FusionAcrossTwoSplitVariancesMakesNoCycle) {
  const char* text = R"(
graph fuzz(%x1: bf16[129,2]) {
  %1 = var(%x1) {correction = 0, dims = [-2]} : bf16[2]
  %2 = var(%x1) {correction = 0, dims = [-2], keepdim = 1} : bf16[1,2]
  return %1, %2
}
)";
  CompiledProgram c;
  ASSERT_NO_THROW(c = compile_for(text, Backend::Cuda));
  bool refused = false, fused = false;
  for (const auto& e : c.schedule.ledger) {
    if (e.first == "buf1" && e.second == "buf7") refused = refused || (!e.fused && e.reason == Reject::IntermediateNodes);
    if (e.first == "buf3" && e.second == "buf5") fused = fused || e.fused;
  }
  EXPECT_TRUE(fused) << print_ledger(c.schedule);
  EXPECT_TRUE(refused) << print_ledger(c.schedule);
  EXPECT_EQ(c.program.kernels.size(), 7u);
}

}  // namespace
}  // namespace fg
