// The verifiers between passes: a lowered graph and a schedule as the
// compiler makes them pass; each broken invariant fails, naming the pass.
#include <gtest/gtest.h>

#include "fusion/compile.h"
#include "fusion/errors.h"
#include "fusion/ir/text.h"
#include "fusion/passes/verify_lowered.h"

namespace fg {
namespace {

// Norm, GEMM, residual add: a generated kernel, an extern, a generated kernel.
const char* kBlock = R"(
graph g(%x: f32[8,64], %w: f32[64], %m: f32[32,64]) {
  %3 = rms_norm(%x, %w) {eps = 1e-06} : f32[8,64]
  %4 = linear(%3, %m) : f32[8,32]
  %5 = relu(%4) : f32[8,32]
  return %5
}
)";

CompiledProgram compiled() {
  CompileOptions o;
  return compile(parse_graph(kBlock, "v.fg"), o);
}

// The message of the InternalError `f` throws, or "" when it throws none.
template <class F>
std::string failure(F f) {
  try {
    f();
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

TEST(Verify, CompilerOutputPasses) {
  CompiledProgram c = compiled();
  ASSERT_GE(c.schedule.groups.size(), 3u);
  EXPECT_EQ(failure([&] { verify_lowered(c.lowered, "lower"); }), "");
  EXPECT_EQ(failure([&] { verify_schedule(c.lowered, c.schedule, "schedule"); }), "");
}

// A .fg whose numeric labels have gaps (as a minimized fuzz finding's do)
// keeps them as names; decompose adds unnamed nodes, printed by their ids,
// and one of those met a kept label (%4): explain's verifier failed with
// "name %4 is used twice". The newcomer now takes another name.
TEST(Verify, GappedLabelsAndNodesAPassAddsDoNotClash) {
  const char* text = R"(graph gaps(%x0: bf16[15], %w1: bf16[15], %w2: f32[15]) {
  %1 = gelu(%x0) {approximate = "tanh"} : bf16[15]
  %3 = rms_norm(%1, %w1) {eps = 1e-06} : bf16[15]
  %4 = cast(%3) {to = "f32"} : f32[15]
  %8 = softmax(%4) {dim = 0} : f32[15]
  %10 = rms_norm(%8, %w2) {eps = 1e-06} : f32[15]
  return %10
})";
  CompiledProgram c = compile(parse_graph(text, "gaps.fg"), CompileOptions{});
  EXPECT_EQ(failure([&] { verify(c.captured, false); }), "");
  EXPECT_EQ(failure([&] { verify(c.decomposed, false); }), "");
  EXPECT_NE(print_graph(c.decomposed).find("%_4 = "), std::string::npos) << print_graph(c.decomposed);
  EXPECT_EQ(failure([&] { verify_lowered(c.lowered, "lower"); }), "");
}

TEST(Verify, ReadBeforeWriteNamesThePassAndTheBuffer) {
  CompiledProgram c = compiled();
  LoweredGraph g = c.lowered;
  // the last node's output becomes an input of the first
  int late = g.nodes.back().out_buffer;
  g.nodes.front().reads.insert(late);
  std::string m = failure([&] { verify_lowered(g, "lower"); });
  EXPECT_NE(m.find("verify after lower"), std::string::npos) << m;
  EXPECT_NE(m.find("reads " + g.buffers[static_cast<size_t>(late)].name + " before any node writes it"),
            std::string::npos)
      << m;
}

TEST(Verify, DependencyOnALaterNodeFails) {
  CompiledProgram c = compiled();
  LoweredGraph g = c.lowered;
  g.nodes.front().deps.insert(static_cast<int>(g.nodes.size()) - 1);
  EXPECT_NE(failure([&] { verify_lowered(g, "lower"); }).find("which does not run before it"), std::string::npos);
}

TEST(Verify, KernelsOutOfOrderFail) {
  CompiledProgram c = compiled();
  Schedule s = c.schedule;
  std::swap(s.groups.front(), s.groups.back());
  std::string m = failure([&] { verify_schedule(c.lowered, s, "schedule"); });
  EXPECT_NE(m.find("verify after schedule"), std::string::npos) << m;
  EXPECT_TRUE(m.find("before it is written") != std::string::npos || m.find("which it depends on") != std::string::npos)
      << m;
}

TEST(Verify, NodeInNoGroupFails) {
  CompiledProgram c = compiled();
  Schedule s = c.schedule;
  s.groups.pop_back();
  EXPECT_NE(failure([&] { verify_schedule(c.lowered, s, "schedule"); }).find("is in no group"), std::string::npos);
}

TEST(Verify, NodeInTwoGroupsFails) {
  CompiledProgram c = compiled();
  Schedule s = c.schedule;
  s.groups.back().nodes.push_back(s.groups.front().nodes.front());
  EXPECT_NE(failure([&] { verify_schedule(c.lowered, s, "schedule"); }).find("is in groups"), std::string::npos);
}

TEST(Verify, LedgerThatDisagreesWithTheGroupsFails) {
  CompiledProgram c = compiled();
  Schedule s = c.schedule;
  LedgerEntry e;
  e.first = c.lowered.nodes.front().name;
  e.second = c.lowered.nodes.back().name;
  e.fused = true;
  s.ledger.push_back(e);
  std::string m = failure([&] { verify_schedule(c.lowered, s, "schedule"); });
  EXPECT_NE(m.find("the ledger says " + e.first + " and " + e.second + " fused"), std::string::npos) << m;
}

}  // namespace
}  // namespace fg
