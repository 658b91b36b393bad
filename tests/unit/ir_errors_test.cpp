// Bad input to the text format, the graph API and the verifier: each a
// clear error naming the thing and its line, never a crash or a graph that
// prints into something else.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

#include "fusion/errors.h"
#include "fusion/ir/graph.h"
#include "fusion/ir/text.h"
#include "tests/unit/ir_fixtures.h"

namespace fg {
namespace {
using namespace testing_ir;

// ------------------------------------------------------------------ errors

TEST(IrTextErrors, UnknownOp) {
  std::string msg = user_error_of([] {
    parse_graph("graph g(%x: f32[4]) {\n  %1 = frob(%x) : f32[4]\n  return %1\n}\n", "m.fg");
  });
  EXPECT_EQ(msg, "m.fg:2:8: error: unknown op 'frob'; `fusegate ops` lists every op");
}

TEST(IrTextErrors, UndefinedValue) {
  std::string msg = user_error_of([] {
    parse_graph("graph g(%x: f32[4]) {\n  %1 = neg(%q) : f32[4]\n  return %1\n}\n", "m.fg");
  });
  EXPECT_EQ(msg, "m.fg:2:12: error: use of undefined value %q");
}

// Graphs the compiler cannot hold are bad input (exit 2) with file:line:col,
// never an internal compiler error.
TEST(IrTextErrors, SelfUseIsAnUndefinedValue) {
  std::string msg = user_error_of([] {
    parse_graph("graph g(%x: f32[4]) {\n  %1 = relu(%1) : f32[4]\n  return %1\n}\n", "m.fg");
  });
  EXPECT_EQ(msg, "m.fg:2:13: error: use of undefined value %1");
}

TEST(IrTextErrors, DimsBelowOneAreRefused) {
  std::string zero = user_error_of([] {
    parse_graph("graph g(%x: f32[0,4]) {\n  %1 = relu(%x) : f32[0,4]\n  return %1\n}\n", "m.fg");
  });
  EXPECT_EQ(zero, "m.fg:1:16: error: dim 0 of f32[0,4] is 0: every dim must be at least 1");
  std::string neg = user_error_of([] {
    parse_graph("graph g(%x: f32[4,4]) {\n  %1 = relu(%x) : f32[4,-4]\n  return %1\n}\n", "m.fg");
  });
  EXPECT_EQ(neg, "m.fg:2:22: error: dim 1 of f32[4,-4] is -4: every dim must be at least 1");
}

TEST(IrTextErrors, ElementCountThatOverflowsIsRefused) {
  std::string msg = user_error_of([] {
    parse_graph("graph g(%x: f32[4000000000,4000000000,4000000000]) {\n  return %x\n}\n", "m.fg");
  });
  EXPECT_EQ(msg, "m.fg:1:16: error: f32[4000000000,4000000000,4000000000] has more than 2^48 elements: beyond what "
                 "fusegate compiles");
}

// The dim of 2^63-1 that once overflowed a signed product in lowering (a
// UBSan finding): refused by the parser now. The sanitize job (ci/sanitize.sh)
// runs this test under UBSan, whose findings abort.
TEST(IrTextErrors, DimOfTwoToThe63MinusOneIsRefused) {
  std::string msg = user_error_of([] {
    parse_graph("graph g(%x: f32[9223372036854775807]) {\n  %1 = neg(%x) : f32[9223372036854775807]\n  return %1\n}\n",
                "m.fg");
  });
  EXPECT_EQ(msg, "m.fg:1:16: error: f32[9223372036854775807] has more than 2^48 elements: beyond what fusegate "
                 "compiles");
  std::string two = user_error_of([] {
    parse_graph("graph g(%x: f32[4611686018427387904,4]) {\n  return %x\n}\n", "m.fg");
  });
  EXPECT_EQ(two, "m.fg:1:16: error: f32[4611686018427387904,4] has more than 2^48 elements: beyond what fusegate "
                 "compiles");
}

TEST(IrTextErrors, CollectiveDimOutOfRangeOrNotZero) {
  std::string far = user_error_of([] {
    parse_graph("graph g(%x: f32[4,4]) {\n  %1 = all_gather(%x) {dim = 7, world = 2} : f32[8,4]\n  return %1\n}\n",
                "m.fg");
  });
  EXPECT_EQ(far, "m.fg:2:8: error: all_gather: dim 7 out of range for rank 2");
  std::string one = user_error_of([] {
    parse_graph(
        "graph g(%x: f32[4,4]) {\n  %1 = reduce_scatter(%x) {dim = 1, world = 2} : f32[2,4]\n  return %1\n}\n",
        "m.fg");
  });
  EXPECT_EQ(one, "m.fg:2:8: error: reduce_scatter: works along dim 0 only, not dim 1");
}

TEST(IrTextErrors, UndefinedOutput) {
  std::string msg = user_error_of([] { parse_graph("graph g(%x: f32[4]) {\n  return %x, %nope\n}\n", "m.fg"); });
  EXPECT_EQ(msg, "m.fg:2:14: error: use of undefined value %nope");
}

TEST(IrTextErrors, UnknownGemmEpilogue) {
  std::string msg = user_error_of([] {
    parse_graph("graph g(%x: f32[2,4], %w: f32[3,4]) {\n  %2 = linear(%x, %w) {epilogue = \"relu\"} : f32[2,3]\n"
                "  return %2\n}\n",
                "m.fg");
  });
  // at the key's column, with the values allowed
  EXPECT_EQ(msg, "m.fg:2:24: error: linear: attribute 'epilogue' must be one of \"gelu_tanh\", got \"relu\"");
}

TEST(IrTextErrors, BadDtype) {
  std::string msg = user_error_of([] { parse_graph("graph g(%x: f33[4]) {\n  return %x\n}\n", "m.fg"); });
  EXPECT_EQ(msg, "m.fg:1:13: error: unknown dtype 'f33'");
}

TEST(IrTextErrors, MissingCloseParen) {
  std::string msg = user_error_of([] {
    parse_graph("graph g(%x: f32[4]) {\n  %1 = neg(%x {a = 1} : f32[4]\n  return %1\n}\n", "model.fg");
  });
  EXPECT_EQ(msg, "model.fg:2:15: error: expected ')' but found '{'");
}

TEST(IrTextErrors, DeclaredTypeDiffersFromInferred) {
  std::string msg = user_error_of([] {
    parse_graph(
        "graph g(%x: bf16[4], %w: bf16[4]) {\n"
        "  %2 = rms_norm(%x, %w) {eps = 1e-06} : bf16[2]\n"
        "  return %2\n"
        "}\n",
        "m.fg");
  });
  EXPECT_EQ(msg, "m.fg:2:41: error: declared type bf16[2] but rms_norm gives bf16[4]");
}

TEST(IrTextErrors, DuplicateNames) {
  std::string msg = user_error_of([] {
    parse_graph("graph g(%x: f32[4]) {\n  %x = neg(%x) : f32[4]\n  return %x\n}\n", "m.fg");
  });
  EXPECT_EQ(msg, "m.fg:2:3: error: redefinition of value %x");

  // A number that is another node's id clashes with that node's default name.
  msg = user_error_of([] {
    parse_graph("graph g(%x: f32[4]) {\n  %2 = neg(%x) : f32[4]\n  %2 = neg(%x) : f32[4]\n  return %2\n}\n", "m.fg");
  });
  EXPECT_EQ(msg, "m.fg:3:3: error: redefinition of value %2");

  msg = user_error_of([] { parse_graph("graph g(%a: f32[4], %a: f32[4]) {\n  return\n}\n", "m.fg"); });
  EXPECT_EQ(msg, "m.fg:1:21: error: redefinition of value %a");
}

TEST(IrTextErrors, BroadcastFailureNamesOpAndShapes) {
  std::string msg = user_error_of([] {
    parse_graph("graph g(%a: f32[2,3], %b: f32[4]) {\n  %2 = mul(%a, %b) : f32[2,3]\n  return %2\n}\n", "m.fg");
  });
  EXPECT_EQ(msg, "m.fg:2:8: error: mul: shapes [2,3] and [4] do not broadcast");
}

TEST(IrTextErrors, FullNeedsValue) {
  std::string msg = user_error_of([] { parse_graph("graph g() {\n  %0 = full() : f32[]\n  return %0\n}\n", "m.fg"); });
  EXPECT_EQ(msg, "m.fg:2:8: error: full: missing attribute 'value', a number: the value (inf, -inf and nan are numbers)");
}

TEST(IrTextErrors, LexicalErrors) {
  std::string msg = user_error_of([] {
    parse_graph("graph g() {\n  %0 = full() {value = \"abc} : f32[]\n  return %0\n}\n", "m.fg");
  });
  EXPECT_EQ(msg, "m.fg:2:24: error: unterminated string");
  msg = user_error_of([] { parse_graph("graph g() {\n  $\n}\n", "m.fg"); });
  EXPECT_EQ(msg, "m.fg:2:3: error: unexpected character '$'");
  msg = user_error_of([] {
    parse_graph("graph g() {\n  %0 = full() {value = 1e} : f32[]\n  return %0\n}\n", "m.fg");
  });
  EXPECT_TRUE(starts_with(msg, "m.fg:2:24: error: malformed number")) << msg;
}

TEST(IrTextErrors, IntegerListRejectsFloats) {
  std::string msg = user_error_of([] {
    parse_graph("graph g(%x: f32[4]) {\n  %1 = reshape(%x) {shape = [2, 2.0]} : f32[2,2]\n  return %1\n}\n", "m.fg");
  });
  EXPECT_EQ(msg, "m.fg:2:33: error: expected an integer but found '2.0'");
}

TEST(IrTextErrors, MissingFile) {
  std::string msg = user_error_of([] { parse_graph_file("/nonexistent/dir/x.fg"); });
  EXPECT_TRUE(starts_with(msg, "cannot read /nonexistent/dir/x.fg: ")) << msg;
}

// ---------------------------------------------------------------- verifier

Graph small_graph() {
  Graph g;
  TensorType t{DType::F32, {4}};
  int x = g.add_input("x", t);
  int a = g.add(Op::Neg, {x});
  int b = g.add(Op::Exp, {a});
  g.outputs = {b};
  return g;
}

TEST(IrVerify, AcceptsWellFormedGraph) { EXPECT_NO_THROW(verify(small_graph())); }

TEST(IrVerify, InputDefinedLaterIsInternalError) {
  Graph g = small_graph();
  g.nodes[1].inputs = {2};  // neg now reads exp, which comes after it
  EXPECT_THROW(verify(g, /*as_user=*/false), InternalError);
  EXPECT_THROW(verify(g, /*as_user=*/true), UserError);
}

TEST(IrVerify, WrongTypeAndMissingOutputAreCaught) {
  Graph g = small_graph();
  g.nodes[2].type = TensorType{DType::F16, {4}};
  EXPECT_THROW(verify(g), InternalError);
  Graph h = small_graph();
  h.outputs = {9};
  EXPECT_THROW(verify(h), InternalError);
}

TEST(GraphApi, UndefinedInputIsAnInternalErrorNotACrash) {
  Graph g;
  TensorType t{DType::F32, {4}};
  g.add_input("x", t);
  EXPECT_THROW(g.add(Op::Relu, {7}), InternalError);
}

TEST(Verify, RejectsNamesThatWouldNotReadBack) {
  Graph g;
  TensorType t{DType::F32, {4}};
  int x = g.add_input("x", t);
  g.add(Op::Relu, {x}, {}, nullptr, "bad-name");
  g.outputs = {1};
  EXPECT_THROW(verify(g, true), UserError);
  Graph h;
  int y = h.add_input("y", t);
  h.add(Op::Relu, {y}, {}, nullptr, "y");
  h.outputs = {1};
  try {
    verify(h, true);
    FAIL() << "duplicate name accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("used twice"), std::string::npos) << e.what();
  }
}

TEST(Verify, FullValueMustBeANumber) {
  Graph g;
  TensorType t{DType::F32, {}};
  g.add(Op::Full, {}, {{"value", std::string("x")}}, &t);
  g.outputs = {0};
  EXPECT_THROW(verify(g, true), UserError);
}

TEST(Ops, ReshapeRejectsNegativeSizesAndUninferableMinusOne) {
  TensorType t{DType::F32, {4, 4}};
  EXPECT_THROW(infer_type(Op::Reshape, {t}, {{"shape", std::vector<int64_t>{-2, -8}}}), UserError);
  TensorType z{DType::F32, {0, 4}};
  EXPECT_THROW(infer_type(Op::Reshape, {z}, {{"shape", std::vector<int64_t>{0, -1}}}), UserError);
  EXPECT_EQ(infer_type(Op::Reshape, {t}, {{"shape", std::vector<int64_t>{2, -1}}}).shape, (Shape{2, 8}));
}

}  // namespace
}  // namespace fg
