// Uniform-value constant folding (passes/constant_fold.h): which values
// become one full, which stay, the number each gets in its dtype, and the
// arithmetic no-ops removed after it; casts of casts collapsed.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fusion/compile.h"
#include "fusion/ir/text.h"
#include "fusion/passes/constant_fold.h"
#include "fusion/passes/decompose.h"

namespace fg {
namespace {

Graph fold(const char* text, std::vector<LedgerEntry>* ledger = nullptr) {
  std::vector<LedgerEntry> own;
  Graph g = fold_uniform_constants(parse_graph(text, "fold.fg"), ledger ? ledger : &own);
  verify(g);
  return g;
}

const Node& output(const Graph& g, size_t k) { return g.node(g.outputs.at(k)); }

TEST(ConstantFold, AChainOfConstantsIsOneFullInItsDtype) {
  std::vector<LedgerEntry> ledger;
  // sigmoid(0) + 0.5 = 1.0; then 1.0 / 3 in bf16 is 0.333984375 (the f32
  // quotient rounded to 8 bits of mantissa)
  const Graph g = fold(R"(
graph g(%x: bf16[4]) {
  %a = full() {value = 0.0} : bf16[]
  %s = sigmoid(%a) : bf16[]
  %h = full() {value = 0.5} : bf16[]
  %one = add(%s, %h) : bf16[]
  %three = full() {value = 3.0} : bf16[]
  %q = div(%one, %three) : bf16[]
  %y = mul(%x, %q) : bf16[4]
  return %y, %q
}
)", &ledger);
  const Node& q = output(g, 1);
  EXPECT_EQ(q.op, Op::Full);
  EXPECT_DOUBLE_EQ(attr_float(q.attrs, "value", q.op), 0.333984375);
  // the mul reads that full; %s, %one and the constants only fed folded
  // values: not kept (left for dead code)
  EXPECT_EQ(output(g, 0).op, Op::Mul);
  EXPECT_EQ(output(g, 0).inputs[1], g.outputs[1]);
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger[0].reason, Reject::ConstantFolded);
  EXPECT_NE(ledger[0].second.find("div of constants = full 0.333984375"), std::string::npos) << ledger[0].second;
}

TEST(ConstantFold, RoundsAsEachDtypeHoldsTheNumber) {
  // 1/3 in f16: 0.333251953125; 70000 overflows f16 to inf; 2.9 cast to
  // i64 truncates to 2
  const Graph g = fold(R"(
graph g(%x: f32[2]) {
  %one = full() {value = 1.0} : f16[]
  %three = full() {value = 3.0} : f16[]
  %q = div(%one, %three) : f16[]
  %big = full() {value = 70000.0} : f32[]
  %h = cast(%big) {to = "f16"} : f16[]
  %t = full() {value = 2.9} : f32[]
  %i = cast(%t) {to = "i64"} : i64[]
  return %q, %h, %i
}
)");
  EXPECT_DOUBLE_EQ(attr_float(output(g, 0).attrs, "value", Op::Full), 0.333251953125);
  EXPECT_TRUE(std::isinf(attr_float(output(g, 1).attrs, "value", Op::Full)));
  EXPECT_DOUBLE_EQ(attr_float(output(g, 2).attrs, "value", Op::Full), 2.0);
}

TEST(ConstantFold, NonContiguousViewsAndSharedStorageStay) {
  // the expand is laid out with stride 0: not made a full; the reshape of a
  // contiguous value and its base both kept share one storage: neither is
  const Graph g = fold(R"(
graph g(%x: f32[3,4], %y: f32[2,2]) {
  %c = full() {value = 2.0} : f32[1,4]
  %e = expand(%c) {shape = [3, 4]} : f32[3,4]
  %z = add(%x, %e) : f32[3,4]
  %d = full() {value = 1.5} : f32[4]
  %n = neg(%d) : f32[4]
  %r = reshape(%n) {shape = [2, 2]} : f32[2,2]
  %w = mul(%y, %r) : f32[2,2]
  return %z, %w, %n
}
)");
  EXPECT_EQ(g.node(output(g, 0).inputs[1]).op, Op::Expand);
  EXPECT_EQ(g.node(output(g, 1).inputs[1]).op, Op::Reshape);
  EXPECT_EQ(output(g, 2).op, Op::Neg);
}

TEST(ConstantFold, ArithmeticWithAFoldedZeroOrOneIsItsOperand) {
  std::vector<LedgerEntry> ledger;
  const Graph g = fold(R"(
graph g(%x: f32[4], %b: i64[4]) {
  %z = full() {value = 0.0} : f32[]
  %a = add(%z, %x) : f32[4]
  %s = sub(%a, %z) : f32[4]
  %o = full() {value = 1.0} : f32[]
  %m = mul(%s, %o) : f32[4]
  %v = div(%m, %o) : f32[4]
  %p = add(%b, %z) : f32[4]
  %k = sub(%z, %x) : f32[4]
  return %v, %p, %k
}
)", &ledger);
  // four no-ops removed: the first output is the input itself
  EXPECT_EQ(output(g, 0).op, Op::Input);
  // i64 + an f32 zero is f32: the operand cast, as Inductor inserts a
  // convert_element_type where only the dtype differs
  EXPECT_EQ(output(g, 1).op, Op::Cast);
  EXPECT_EQ(output(g, 1).type.dtype, DType::F32);
  // 0 - x is not x
  EXPECT_EQ(output(g, 2).op, Op::Sub);
  int removed = 0;
  for (const LedgerEntry& e : ledger) removed += e.reason == Reject::NoOpArithmeticRemoved;
  EXPECT_EQ(removed, 5);
}

TEST(ConstantFold, NothingConstantLeavesTheGraphAsItIs) {
  const char* text = R"(
graph g(%x: f32[4]) {
  %h = full() {value = 0.5} : f32[]
  %y = add(%x, %h) : f32[4]
  return %y
}
)";
  std::vector<LedgerEntry> ledger;
  const Graph g = fold(text, &ledger);
  EXPECT_TRUE(ledger.empty());
  EXPECT_EQ(graph_hash(g), graph_hash(parse_graph(text, "fold.fg")));
}

TEST(ConstantFold, OnlyTheCudaBackendFolds) {
  const char* text = R"(
graph g(%x: f32[16,16]) {
  %o = full() {value = 1.0} : f32[]
  %y = mul(%x, %o) : f32[16,16]
  return %y
}
)";
  CompileOptions cuda;
  cuda.backend = Backend::Cuda;
  const CompiledProgram c = compile(parse_graph(text, "fold.fg"), cuda);
  // x * 1 is x: the output is the input, no kernel
  EXPECT_TRUE(c.program.kernels.empty());
  const CompiledProgram p = compile(parse_graph(text, "fold.fg"), CompileOptions{});
  EXPECT_EQ(p.program.kernels.size(), 1u);
}

TEST(CastChains, ACastOfACastBetweenFloatTypesIsOneCast) {
  std::vector<LedgerEntry> ledger;
  const Graph g = collapse_cast_chains(parse_graph(R"(
graph g(%x: f32[4], %i: i32[4]) {
  %h = cast(%x) {to = "f16"} : f16[4]
  %back = cast(%h) {to = "f32"} : f32[4]
  %b = cast(%x) {to = "bf16"} : bf16[4]
  %c = cast(%b) {to = "f16"} : f16[4]
  %d = cast(%c) {to = "f64"} : f64[4]
  %s = cast(%x) {to = "f16"} : f16[4]
  %s32 = cast(%s) {to = "f32"} : f32[4]
  %n = cast(%x) {to = "i32"} : i32[4]
  %nf = cast(%n) {to = "f32"} : f32[4]
  %if = cast(%i) {to = "f16"} : f16[4]
  %iff = cast(%if) {to = "f32"} : f32[4]
  return %back, %d, %s32, %s, %nf, %iff
}
)", "chains.fg"), &ledger);
  verify(g);
  // f32 -> f16 -> f32 is the input itself: the rounding in the middle dropped
  EXPECT_EQ(output(g, 0).op, Op::Input);
  // three casts are one, from the first value
  EXPECT_EQ(output(g, 1).op, Op::Cast);
  EXPECT_EQ(g.node(output(g, 1).inputs[0]).op, Op::Input);
  // an inner cast that is returned (read twice) stays, and so does its reader
  EXPECT_EQ(output(g, 2).op, Op::Cast);
  EXPECT_EQ(g.node(output(g, 2).inputs[0]).type.dtype, DType::F16);
  // through an integer type the values change: kept
  EXPECT_EQ(g.node(output(g, 4).inputs[0]).type.dtype, DType::I32);
  // an integer first value: its two float casts are one
  EXPECT_EQ(g.node(output(g, 5).inputs[0]).type.dtype, DType::I32);
  int collapsed = 0;
  for (const LedgerEntry& e : ledger) collapsed += e.reason == Reject::CastChainCollapsed;
  EXPECT_EQ(collapsed, 4);  // %back, %c, %d, %iff
}

// mean and var are Inductor lowerings that round to bf16 inside
// themselves: no graph node, so a user's cast after them is no chain (a
// fuzz-found bf16 var, cast to f32, must stay rounded as eager rounds it);
// softmax is a decomposition whose casts are graph nodes: a bf16 round trip
// into it collapses
TEST(CastChains, CastsInsideInductorsLoweringsStay) {
  std::vector<LedgerEntry> ledger;
  const Graph d = decompose(parse_graph(R"(
graph g(%x: bf16[4,96], %y: f32[4,96]) {
  %v = var(%x) {correction = 1} : bf16[]
  %vf = cast(%v) {to = "f32"} : f32[]
  %m = mean(%x) {dims = [1]} : bf16[4]
  %mf = cast(%m) {to = "f32"} : f32[4]
  %b = cast(%y) {to = "bf16"} : bf16[4,96]
  %s = softmax(%b) {dim = -1} : bf16[4,96]
  return %vf, %mf, %s
}
)", "lowerings.fg"));
  const Graph g = collapse_cast_chains(d, &ledger);
  verify(g);
  // the var's and the mean's rounding to bf16 stays before the user's cast
  EXPECT_EQ(g.node(output(g, 0).inputs[0]).type.dtype, DType::BF16);
  EXPECT_EQ(g.node(output(g, 1).inputs[0]).type.dtype, DType::BF16);
  int collapsed = 0;
  for (const LedgerEntry& e : ledger) collapsed += e.reason == Reject::CastChainCollapsed;
  EXPECT_EQ(collapsed, 1);  // %y to bf16, then the softmax's cast to f32
}

}  // namespace
}  // namespace fg
