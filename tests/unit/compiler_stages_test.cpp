// The compiler's stages as bisect sees them (fusion/bisect.h): each rewrite
// decompose makes and each op lowered into generated code is one
// application, listed in graph order with its graph value, rule and repro
// line; a composite op left whole is lowered as a library call.
#include <gtest/gtest.h>

#include <string>

#include "fusion/compile.h"
#include "fusion/ir/text.h"
#include "fusion/passes/decompose.h"

namespace fg {
namespace {

const char* kNormThenSilu = R"(
graph g(%x: f32[4,32], %w: f32[32]) {
  %h = rms_norm(%x, %w) {eps = 1e-06} : f32[4,32]
  %a = silu(%h) : f32[4,32]
  %m = mean(%a) {dims = [1]} : f32[4]
  return %m
}
)";

TEST(Stages, DecompositionsAreListedInGraphOrder) {
  const Graph g = parse_graph(kNormThenSilu, "stages.fg");
  std::vector<StageApplication> applied;
  const Graph d = decompose(g, &applied);
  ASSERT_EQ(applied.size(), 2u);
  EXPECT_EQ(applied[0].stage, "decompositions");
  EXPECT_EQ(applied[0].rule, "rms_norm");
  EXPECT_EQ(applied[0].node, "%h");
  ASSERT_EQ(applied[0].lines.size(), 1u);
  EXPECT_EQ(applied[0].lines[0].rfind("stages.fg:3", 0), 0u) << applied[0].lines[0];
  EXPECT_EQ(applied[1].rule, "mean");
  EXPECT_EQ(applied[1].node, "%m");
  // silu is no composite: it passes through, and is no application
  EXPECT_TRUE(decomposes(Op::RmsNorm) && decomposes(Op::Softmax) && !decomposes(Op::Silu) && !decomposes(Op::Sum));
  for (const Node& n : d.nodes) EXPECT_FALSE(decomposes(n.op)) << op_name(n.op);
}

TEST(Stages, LoweringsAreTheOpsInGeneratedCode) {
  CompileOptions o;
  const CompiledProgram c = compile(parse_graph(kNormThenSilu, "stages.fg"), o);
  EXPECT_EQ(c.decompositions.size(), 2u);
  // every pointwise and reduction op of the decomposed graph, in its order
  size_t ops = 0;
  for (const Node& n : c.decomposed.nodes) {
    const FusionKind k = fusion_kind(n.op);
    ops += k == FusionKind::Pointwise || k == FusionKind::Reduction;
  }
  ASSERT_EQ(c.lowered.lowerings.size(), ops);
  bool silu = false, sum = false;
  for (const StageApplication& a : c.lowered.lowerings) {
    EXPECT_EQ(a.stage, "lowerings");
    silu = silu || a.rule == "pointwise silu";
    sum = sum || a.rule == "reduction sum";
    EXPECT_FALSE(a.lines.empty()) << a.rule << " at " << a.node;
  }
  EXPECT_TRUE(silu && sum);
  // no library call: each op is generated code
  for (const auto& k : c.program.kernels) EXPECT_TRUE(k.generated()) << k.name;
}

}  // namespace
}  // namespace fg
