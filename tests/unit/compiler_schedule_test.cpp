// Kernel counts of small graphs: the fusion decisions users predict.
#include <gtest/gtest.h>

#include "fusion/compile.h"
#include "fusion/ir/text.h"

namespace fg {
namespace {

CompiledProgram compile_text(const std::string& text, FusionPolicy p = FusionPolicy::Default) {
  CompileOptions o;
  o.fusion = p;
  return compile(parse_graph(text, "test.fg"), o);
}

int generated(const CompiledProgram& c) {
  int n = 0;
  for (const auto& k : c.program.kernels) n += k.generated();
  return n;
}

std::string dump(const CompiledProgram& c) {
  return print_lowered(c.lowered) + print_ledger(c.schedule) + print_schedule(c.lowered, c.schedule, c.program) +
         c.program.module_source;
}

TEST(Schedule, PointwiseChainIsOneKernel) {
  auto c = compile_text(R"(
graph g(%x: f32[64,32], %y: f32[64,32]) {
  %2 = add(%x, %y) : f32[64,32]
  %3 = relu(%2) : f32[64,32]
  %4 = full() {value = 0.5} : f32[]
  %5 = mul(%3, %4) : f32[64,32]
  %6 = full() {value = 1.0} : f32[]
  %7 = add(%5, %6) : f32[64,32]
  return %7
}
)");
  EXPECT_EQ(generated(c), 1) << dump(c);
  EXPECT_EQ(c.program.kernels.size(), 1u) << dump(c);
  EXPECT_EQ(c.program.kernels[0].kind, "poi");
  EXPECT_EQ(c.program.kernels[0].name, "cpu_poi_fused_add_mul_relu_0");
}

TEST(Schedule, RmsNormIsOnePersistentReduction) {
  auto c = compile_text(R"(
graph g(%x: bf16[2,64,256], %w: bf16[256]) {
  %2 = rms_norm(%x, %w) {eps = 1e-06} : bf16[2,64,256]
  return %2
}
)");
  ASSERT_EQ(c.program.kernels.size(), 1u) << dump(c);
  EXPECT_EQ(c.program.kernels[0].kind, "per") << dump(c);
  EXPECT_EQ(c.program.kernels[0].name, "cpu_per_fused__to_copy_add_mean_mul_pow_rsqrt_0") << dump(c);
}

// Each scheduler node and ledger entry names the repro lines of the graph
// nodes it covers: a value realized for a GEMM keeps its producers' lines,
// not the GEMM's.
TEST(Schedule, NodesAndDecisionsKeepTheirSourceLines) {
  auto c = compile_text(R"(
graph g(%x: f32[8,16], %w: f32[32,16]) {
  %2 = relu(%x) : f32[8,16]
  %3 = neg(%2) : f32[8,16]
  %4 = linear(%3, %w) : f32[8,32]
  %5 = sigmoid(%4) : f32[8,32]
  %6 = sum(%5) {dims = [1], keepdim = 0} : f32[8]
  return %5, %6
}
)");
  ASSERT_EQ(c.lowered.nodes.size(), 4u) << dump(c);
  EXPECT_EQ(c.lowered.nodes[0].lines, (std::vector<std::string>{"test.fg:3", "test.fg:4"})) << dump(c);
  EXPECT_EQ(c.lowered.nodes[1].lines, (std::vector<std::string>{"test.fg:5"})) << dump(c);
  // the sum inlines the sigmoid it reads; the returned sigmoid is its own node
  EXPECT_EQ(c.lowered.nodes[2].lines, (std::vector<std::string>{"test.fg:6", "test.fg:7"})) << dump(c);
  EXPECT_EQ(c.lowered.nodes[3].lines, (std::vector<std::string>{"test.fg:6"})) << dump(c);
  bool found = false;
  for (const auto& e : c.schedule.ledger)
    if (e.fused && e.reason == Reject::None) {
      found = true;
      EXPECT_EQ(e.source, (std::vector<std::string>{"test.fg:6", "test.fg:7"})) << dump(c);
    }
  EXPECT_TRUE(found) << dump(c);
}

TEST(Schedule, LinearIsExternAndNotFused) {
  auto c = compile_text(R"(
graph g(%x: f32[8,16], %w: f32[32,16]) {
  %2 = relu(%x) : f32[8,16]
  %3 = linear(%2, %w) : f32[8,32]
  %4 = relu(%3) : f32[8,32]
  return %4
}
)");
  ASSERT_EQ(c.program.kernels.size(), 3u) << dump(c);
  EXPECT_EQ(c.program.kernels[1].kind, "extern");
}

TEST(Schedule, SoftmaxFusesIntoOneKernel) {
  auto c = compile_text(R"(
graph g(%x: f32[16,128]) {
  %1 = softmax(%x) {dim = -1} : f32[16,128]
  return %1
}
)");
  EXPECT_EQ(generated(c), 1) << dump(c);
}

TEST(Schedule, TransposedReadDoesNotFuseVertically) {
  auto c = compile_text(R"(
graph g(%x: f32[32,32]) {
  %1 = sum(%x) {dims = [1], keepdim = 1} : f32[32,1]
  %2 = transpose(%1) {dim0 = 0, dim1 = 1} : f32[1,32]
  %3 = add(%x, %2) : f32[32,32]
  return %3
}
)");
  // the reduction output is read along the other axis: both fit one kernel
  // only if the read index matches, which it does not
  EXPECT_EQ(generated(c), 2) << dump(c);
  bool saw = false;
  for (const auto& e : c.schedule.ledger) saw = saw || e.reason == Reject::MemoryDepsMismatch || e.reason == Reject::NumelMismatch;
  EXPECT_TRUE(saw) << dump(c);
}

TEST(Schedule, PolicyNoneKeepsOneKernelPerNode) {
  auto c = compile_text(R"(
graph g(%x: bf16[2,64,256], %w: bf16[256]) {
  %2 = rms_norm(%x, %w) {eps = 1e-06} : bf16[2,64,256]
  return %2
}
)", FusionPolicy::None);
  EXPECT_EQ(generated(c), 2) << dump(c);
}

// The ledger's source list: each location once, by file and then line as a
// number, however many nodes bring them and in whatever order (one sort of
// the union: a node covering a long inlined chain brings thousands).
TEST(Ledger, SourcesAreEachOnceByFileThenLineNumber) {
  LedgerEntry e;
  e.add_source(std::vector<std::string>{"b.fg:17", "a.fg:9", "b.fg:9"});
  e.add_source(SourceLoc{"a.fg", 10, "f"});
  e.add_source(std::vector<std::string>{"b.fg:9", "a.fg:9", "not a location"});
  e.add_source(SourceLoc{});  // unknown: nothing added
  EXPECT_EQ(e.source, (std::vector<std::string>{"a.fg:9", "a.fg:10 (f)", "b.fg:9", "b.fg:17", "not a location"}));
  std::vector<std::string> many;
  for (int line = 3000; line >= 1; --line) many.push_back("c.fg:" + std::to_string(line));
  e.add_source(many);
  e.add_source(many);
  ASSERT_EQ(e.source.size(), 3005u);
  EXPECT_EQ(e.source[4], "c.fg:1");
  EXPECT_EQ(e.source.back(), "not a location");
  EXPECT_EQ(e.source[3003], "c.fg:3000");  // 3000 after 999: by number
}

}  // namespace
}  // namespace fg
