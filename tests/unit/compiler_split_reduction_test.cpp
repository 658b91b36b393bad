// Split reductions: where Inductor runs a reduction as two kernels on a GPU
// (few outputs, many elements), fusegate's cuda backend does too; the cpu
// backend, like Inductor's C++ one, never splits.
#include <gtest/gtest.h>

#include <algorithm>

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
// check walks groups, so it is refused and the program compiles. (A `var`
// now splits as a Welford reduction, its squares beside its sums: the
// variances are written out here, as the two-pass sums they were.)
TEST(SplitReduction, FusionAcrossTwoSplitVariancesMakesNoCycle) {
  const char* text = R"(
graph fuzz(%x1: bf16[129,2]) {
  %x = cast(%x1) {to = "f32"} : f32[129,2]
  %n = full() {value = 129} : f32[]
  %m1 = mean(%x) {dims = [-2], keepdim = 1} : f32[1,2]
  %d1 = sub(%x, %m1) : f32[129,2]
  %q1 = mul(%d1, %d1) : f32[129,2]
  %s1 = sum(%q1) {dims = [-2]} : f32[2]
  %v1 = div(%s1, %n) : f32[2]
  %m2 = mean(%x) {dims = [-2], keepdim = 1} : f32[1,2]
  %d2 = sub(%x, %m2) : f32[129,2]
  %q2 = mul(%d2, %d2) : f32[129,2]
  %s2 = sum(%q2) {dims = [-2], keepdim = 1} : f32[1,2]
  %v2 = div(%s2, %n) : f32[1,2]
  %o1 = cast(%v1) {to = "bf16"} : bf16[2]
  %o2 = cast(%v2) {to = "bf16"} : bf16[1,2]
  return %o1, %o2
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

// A variance split on cuda is a Welford reduction split as Inductor splits
// one (WelfordReduction.create_multilayer): each block's squares about its
// own mean in the kernel of the block sums, the blocks combined in the
// kernel of the mean; a sum of squares written out is two split sums.
TEST(SplitReduction, VarianceSplitsAsWelfordInTwoKernels) {
  // seed 46 of the parity graphs: Inductor 2 kernels (torch 2.11, H200)
  CompiledProgram v = compile_for(R"(
graph g(%x: f32[8,5,2,129]) {
  %1 = var(%x) {correction = 0, dims = [-3, 3, 0, 2]} : f32[]
  return %1
}
)", Backend::Cuda);
  auto r = reductions(v);
  ASSERT_EQ(r.size(), 4u) << print_lowered(v.lowered);
  EXPECT_EQ(v.program.kernels.size(), 2u) << print_lowered(v.lowered);
  // the squares' first kernel (after the mean's two) reads the block sums,
  // over the same blocks
  EXPECT_EQ(r[2]->numel(), r[0]->numel());
  EXPECT_EQ(r[2]->rnumel(), r[0]->rnumel());
  EXPECT_EQ(std::count(r[2]->reads.begin(), r[2]->reads.end(), r[0]->out_buffer), 1) << print_lowered(v.lowered);
  // a layer norm's variance too: its statistics in two kernels, the
  // normalization a third
  CompiledProgram ln = compile_for(R"(
graph g(%x: bf16[2,65536], %w: bf16[65536], %b: bf16[65536]) {
  %3 = layer_norm(%x, %w, %b) {eps = 1e-5} : bf16[2,65536]
  return %3
}
)", Backend::Cuda);
  EXPECT_EQ(ln.program.kernels.size(), 3u) << print_lowered(ln.lowered);
  // the same squares written out: two sums split on their own, four kernels
  CompiledProgram two = compile_for(R"(
graph g(%x: f32[8,5,2,129]) {
  %n = full() {value = 10320} : f32[]
  %m = mean(%x) {keepdim = 1} : f32[1,1,1,1]
  %d = sub(%x, %m) : f32[8,5,2,129]
  %q = mul(%d, %d) : f32[8,5,2,129]
  %s = sum(%q) : f32[]
  %v = div(%s, %n) : f32[]
  return %v
}
)", Backend::Cuda);
  EXPECT_EQ(two.program.kernels.size(), 4u) << print_lowered(two.lowered);
  // cpu: one reduction kernel, mean and squares in two loops
  EXPECT_EQ(compile_for(R"(
graph g(%x: f32[8,5,2,129]) {
  %1 = var(%x) {correction = 0} : f32[]
  return %1
}
)", Backend::Cpu).program.kernels.size(), 1u);
}

}  // namespace
}  // namespace fg
