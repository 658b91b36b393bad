// The .fg text format: what it parses and prints, and the round trip
// of every construct (attributes, locations, layouts, blocks, breaks).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
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

// Every attribute kind, named and numbered refs, and the ops the brief lists.
const char* kBlock =
    "graph block(%x: bf16[2,4,8,16], %w: bf16[16,16], %bias: bf16[16]) {\n"
    "  %3 = full() {value = 1e-06} : f32[]\n"
    "  %4 = full() {value = 2.0} : bf16[]\n"
    "  %5 = add(%x, %bias) : bf16[2,4,8,16]\n"
    "  %6 = mul(%5, %4) : bf16[2,4,8,16]\n"
    "  %7 = cast(%6) {to = \"f32\"} : f32[2,4,8,16]\n"
    "  %8 = sum(%7) {dims = [-1], keepdim = 1} : f32[2,4,8,1]\n"
    "  %9 = sum(%7) {dims = []} : f32[]\n"
    "  %10 = reshape(%6) {shape = [2, 4, 128]} : bf16[2,4,128]\n"
    "  %11 = permute(%6) {dims = [0, 2, 1, 3]} : bf16[2,8,4,16]\n"
    "  %12 = slice(%11) {dim = 1, end = 6, start = 2, step = 2} : bf16[2,2,4,16]\n"
    "  %13 = linear(%6, %w, %bias) : bf16[2,4,8,16]\n"
    "  %attn = sdpa(%13, %13, %13) {causal = 0} : bf16[2,4,8,16]\n"
    "  %15 = all_reduce(%attn) {reduce_op = \"sum\"} : bf16[2,4,8,16]\n"
    "  %16 = lt(%7, %3) : bool[2,4,8,16]\n"
    "  %17 = where(%16, %7, %3) : f32[2,4,8,16]\n"
    "  %18 = full() {value = -1.5e+20} : f64[]\n"
    "  %19 = full() {value = -inf} : f32[]\n"
    "  return %15, %17, %8, %9, %10, %12, %18, %19\n"
    "}\n";

TEST(IrText, RoundTripsPrinterForm) {
  Graph g = parse_graph(kBlock, "block.fg");
  EXPECT_EQ(print_graph(g), kBlock);
}

TEST(IrText, ParsedGraphHasExpectedStructure) {
  Graph g = parse_graph(kBlock, "block.fg");
  EXPECT_EQ(g.name, "block");
  ASSERT_EQ(g.nodes.size(), 20u);
  EXPECT_EQ(g.input_ids(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(g.nodes[0].name, "x");
  EXPECT_EQ(g.nodes[3].name, "");  // "%3" at id 3 is just its number
  EXPECT_EQ(g.nodes[14].name, "attn");
  EXPECT_EQ(g.nodes[14].op, Op::Sdpa);
  EXPECT_EQ(g.outputs, (std::vector<int>{15, 17, 8, 9, 10, 12, 18, 19}));

  // 1e-06 and 2.0 are doubles, keepdim = 1 is an integer.
  EXPECT_EQ(std::get<double>(g.nodes[3].attrs.at("value")), 1e-06);
  EXPECT_EQ(std::get<double>(g.nodes[4].attrs.at("value")), 2.0);
  EXPECT_EQ(std::get<int64_t>(g.nodes[8].attrs.at("keepdim")), 1);
  EXPECT_EQ(std::get<std::vector<int64_t>>(g.nodes[8].attrs.at("dims")), (std::vector<int64_t>{-1}));
  EXPECT_TRUE(std::get<std::vector<int64_t>>(g.nodes[9].attrs.at("dims")).empty());
  EXPECT_EQ(std::get<double>(g.nodes[19].attrs.at("value")), -std::numeric_limits<double>::infinity());

  // Broadcasting and the rank-0 operand rules gave the declared types.
  EXPECT_EQ(g.nodes[5].type.str(), "bf16[2,4,8,16]");
  EXPECT_EQ(g.nodes[16].type.dtype, DType::Bool);
  EXPECT_EQ(g.nodes[17].inputs, (std::vector<int>{16, 7, 3}));
  EXPECT_NO_THROW(verify(g));
}

TEST(IrText, SourceLocationsNameFileAndLine) {
  Graph g = parse_graph(kBlock, "block.fg");
  EXPECT_EQ(g.nodes[0].loc.file, "block.fg");
  EXPECT_EQ(g.nodes[0].loc.line, 1);  // inputs: the header line
  EXPECT_EQ(g.nodes[3].loc.line, 2);
  EXPECT_EQ(g.nodes[14].loc.line, 13);
  EXPECT_EQ(g.nodes[14].loc.str(), "block.fg:13");
}

TEST(IrText, ParsePrintReproducesBuiltGraph) {
  Graph g;
  g.name = "built";
  TensorType xt{DType::BF16, {2, 3, 8}};
  TensorType wt{DType::BF16, {8}};
  TensorType st{DType::F32, {}};
  int x = g.add_input("x", xt);
  int w = g.add_input("w", wt);
  int eps = g.add(Op::Full, {}, {{"value", 1e-06}}, &st);
  int n = g.add(Op::RmsNorm, {x, w}, {{"eps", 1e-06}}, nullptr, "normed");
  int c = g.add(Op::Cast, {n}, {{"to", std::string("f32")}});
  int a = g.add(Op::Add, {c, eps});
  int r = g.add(Op::Sum, {a}, {{"dims", std::vector<int64_t>{0, 2}}, {"keepdim", int64_t{0}}});
  int t = g.add(Op::Transpose, {a}, {{"dim0", int64_t{0}}, {"dim1", int64_t{-1}}});
  g.outputs = {r, t, n};

  Graph p = parse_graph(print_graph(g), "built.fg");
  EXPECT_EQ(p.name, g.name);
  EXPECT_EQ(p.outputs, g.outputs);
  ASSERT_EQ(p.nodes.size(), g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    SCOPED_TRACE("node " + std::to_string(i));
    EXPECT_EQ(p.nodes[i].id, g.nodes[i].id);
    EXPECT_EQ(p.nodes[i].op, g.nodes[i].op);
    EXPECT_EQ(p.nodes[i].inputs, g.nodes[i].inputs);
    EXPECT_EQ(p.nodes[i].attrs, g.nodes[i].attrs);
    EXPECT_EQ(p.nodes[i].type, g.nodes[i].type);
    EXPECT_EQ(p.nodes[i].name, g.nodes[i].name);
  }
  EXPECT_EQ(graph_hash(p), graph_hash(g));
}

TEST(IrText, CommentsAndWhitespaceAreIgnored) {
  const char* messy =
      "# a leading comment\n"
      "\n"
      "graph   g ( %x :f32[ 2 , 3 ] ,%y: f32[3] )   # header\n"
      "{\n"
      "\t%s=sum( %x ){dims=[ 1 ],keepdim=1}:f32[2,1]   # trailing\n"
      "  # a whole-line comment\n"
      "  return %s ,%x\n"
      "}   \n"
      "# the end\n";
  Graph g = parse_graph(messy, "messy.fg");
  EXPECT_EQ(print_graph(g),
            "graph g(%x: f32[2,3], %y: f32[3]) {\n"
            "  %s = sum(%x) {dims = [1], keepdim = 1} : f32[2,1]\n"
            "  return %s, %x\n"
            "}\n");
  EXPECT_EQ(g.nodes[2].loc.line, 5);
}

TEST(IrText, StringEscapesRoundTrip) {
  // fast_path takes whatever attributes its matcher writes: a string with
  // each escape the lexer knows
  const char* text =
      "graph g(%x: f32[4]) {\n"
      "  %y = fast_path(%x) {dtype = \"f32\", name = \"a\\\"b\\\\c\", note = \"t\\tn\\n\", shape = [4]} : f32[4]\n"
      "  return %y\n"
      "}\n";
  Graph g = parse_graph(text, "esc.fg");
  EXPECT_EQ(std::get<std::string>(g.nodes[1].attrs.at("name")), "a\"b\\c");
  EXPECT_EQ(std::get<std::string>(g.nodes[1].attrs.at("note")), "t\tn\n");
  EXPECT_EQ(print_graph(g), text);
}

TEST(IrText, EmptyReturnAndNoInputs) {
  const char* text =
      "graph g() {\n"
      "  %0 = full() {value = 0.5} : f32[4]\n"
      "  return\n"
      "}\n";
  Graph g = parse_graph(text);
  EXPECT_TRUE(g.outputs.empty());
  EXPECT_TRUE(g.input_ids().empty());
  EXPECT_EQ(print_graph(g), text);
}

TEST(IrText, MultipleGraphsInOneFile) {
  std::string a =
      "graph first(%x: f32[4]) {\n"
      "  %1 = neg(%x) : f32[4]\n"
      "  return %1\n"
      "}\n";
  std::string b =
      "graph second(%x: f16[2]) {\n"
      "  %y = exp(%x) : f16[2]\n"
      "  return %y\n"
      "}\n";
  std::string text = a + "\n" + b;
  auto gs = parse_graphs(text, "two.fg");
  ASSERT_EQ(gs.size(), 2u);
  EXPECT_EQ(gs[0].name, "first");
  EXPECT_EQ(gs[1].name, "second");
  // Value names are scoped to their graph: %x is defined in both.
  EXPECT_EQ(gs[1].nodes[0].type.dtype, DType::F16);
  EXPECT_EQ(gs[1].nodes[1].loc.line, 7);
  EXPECT_EQ(print_graph(gs[0]) + "\n" + print_graph(gs[1]), text);

  std::string msg = user_error_of([&] { parse_graph(text, "two.fg"); });
  EXPECT_TRUE(starts_with(msg, "two.fg:6:1: error: ")) << msg;
}

TEST(IrText, NoGraphIsAnError) {
  std::string msg = user_error_of([] { parse_graphs("# only a comment\n", "e.fg"); });
  EXPECT_EQ(msg, "e.fg:2:1: error: expected 'graph' but found end of input");
}

TEST(IrText, NumberedRefOtherThanIdBecomesName) {
  const char* text =
      "graph g(%7: f32[2]) {\n"
      "  %1 = neg(%7) : f32[2]\n"
      "  return %1\n"
      "}\n";
  Graph g = parse_graph(text);
  EXPECT_EQ(g.nodes[0].name, "7");
  EXPECT_EQ(g.nodes[1].name, "");
  EXPECT_EQ(g.nodes[1].inputs, (std::vector<int>{0}));
  EXPECT_EQ(print_graph(g), text);
}

TEST(IrText, IntegerAndDoubleAttrsStayDistinct) {
  const char* text =
      "graph g() {\n"
      "  %0 = full() {value = 2} : i64[]\n"
      "  %1 = full() {value = 2.0} : f32[]\n"
      "  return %0, %1\n"
      "}\n";
  Graph g = parse_graph(text);
  EXPECT_TRUE(std::holds_alternative<int64_t>(g.nodes[0].attrs.at("value")));
  EXPECT_TRUE(std::holds_alternative<double>(g.nodes[1].attrs.at("value")));
  EXPECT_EQ(print_graph(g), text);
}

TEST(IrText, ParsesFileWithPathInErrorsAndLocs) {
  std::string path = testing::TempDir() + "ir_text_test_file.fg";
  {
    std::ofstream out(path);
    out << "graph g(%x: f32[4]) {\n  %1 = neg(%x) : f32[4]\n  return %1\n}\n";
  }
  auto gs = parse_graph_file(path);
  ASSERT_EQ(gs.size(), 1u);
  EXPECT_EQ(gs[0].nodes[1].loc.file, path);
  EXPECT_EQ(gs[0].nodes[1].loc.line, 2);
  {
    std::ofstream out(path);
    out << "graph g(%x: f32[4]) {\n  %1 = neg(%x) : f32[5]\n  return %1\n}\n";
  }
  std::string msg = user_error_of([&] { parse_graph_file(path); });
  EXPECT_TRUE(starts_with(msg, path + ":2:18: error: declared type f32[5]")) << msg;
  std::remove(path.c_str());
}

// ------------------------------------------------------------ format_double

TEST(IrText, FormatDouble) {
  EXPECT_EQ(format_double(2.0), "2.0");
  EXPECT_EQ(format_double(-3.0), "-3.0");
  EXPECT_EQ(format_double(0.0), "0.0");
  EXPECT_EQ(format_double(1e-06), "1e-06");
  EXPECT_EQ(format_double(0.5), "0.5");
  EXPECT_EQ(format_double(0.1), "0.1");
  EXPECT_EQ(format_double(1e20), "1e+20");
  EXPECT_EQ(format_double(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(format_double(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(format_double(std::nan("")), "nan");
}

TEST(IrText, FormatDoubleReadsBackExactly) {
  const double vals[] = {1.0 / 3.0, -2.5e-300, 123456789.125, 6.02214076e23, 5e-324, 0.30000000000000004};
  for (double v : vals) {
    std::string s = format_double(v);
    EXPECT_NE(s.find_first_of(".e"), std::string::npos) << s;
    EXPECT_EQ(std::strtod(s.c_str(), nullptr), v) << s;
  }
}

TEST(IrText, NanAndInfAttributesRoundTrip) {
  const char* text =
      "graph g() {\n"
      "  %0 = full() {value = nan} : f32[]\n"
      "  %1 = full() {value = inf} : f32[]\n"
      "  return %0, %1\n"
      "}\n";
  Graph g = parse_graph(text);
  EXPECT_TRUE(std::isnan(std::get<double>(g.nodes[0].attrs.at("value"))));
  EXPECT_EQ(print_graph(g), text);
}

// Records keep locations as text; SourceLoc::parse reads them back.
TEST(SourceLocText, ParseIsTheInverseOfStr) {
  for (const SourceLoc& l : {SourceLoc{"repros/x.cpp", 42, "forward"}, SourceLoc{"my dir/y.fg", 9, ""},
                             SourceLoc{"a:b.cpp", 3, "ns::f"}}) {
    SourceLoc back;
    ASSERT_TRUE(SourceLoc::parse(l.str(), &back)) << l.str();
    EXPECT_EQ(back.file, l.file);
    EXPECT_EQ(back.line, l.line);
    EXPECT_EQ(back.function, l.function);
  }
  SourceLoc x;
  EXPECT_FALSE(SourceLoc::parse("<unknown>", &x));
  EXPECT_FALSE(SourceLoc::parse("x.cpp:12a", &x));
}

// Layouts and inits on inputs, layouts on outputs: they print back as written.
const char* kLaidOut =
    "graph tp(%x: bf16[2,16,64], %w_qkv: bf16[96,64] {blocks = [64, 16, 16], init = \"fan_in\", shard = 0}, "
    "%w_o: bf16[64,64] {shard = 1, std = 0.02}, %pos: i64[16] {init = \"arange\"}, %g: bf16[64] {init = \"ones\"}) {\n"
    "  %5 = linear(%x, %w_qkv) : bf16[2,16,96]\n"
    "  %6 = slice(%5) {blocks = [64, 16, 16], dim = -1, index = 1} : bf16[2,16,16]\n"
    "  return %5 {shard = 2, blocks = [64, 16, 16]}, %6 {shard = 2}\n"
    "}\n";

TEST(IrText, LayoutsAndInitsRoundTrip) {
  Graph g = parse_graph(kLaidOut, "tp.fg");
  const Node& w = g.node(1);
  EXPECT_EQ(std::get<int64_t>(w.attrs.at("shard")), 0);
  EXPECT_EQ(std::get<std::vector<int64_t>>(w.attrs.at("blocks")), (std::vector<int64_t>{64, 16, 16}));
  ASSERT_EQ(g.output_attrs.size(), 2u);
  EXPECT_EQ(std::get<int64_t>(g.output_attrs[1].at("shard")), 2);
  // attributes print in key order; a second print is the same text
  const std::string printed = print_graph(g);
  EXPECT_NE(printed.find("%5 {blocks = [64, 16, 16], shard = 2}, %6 {shard = 2}"), std::string::npos) << printed;
  EXPECT_EQ(print_graph(parse_graph(printed, "tp.fg")), printed);
  EXPECT_EQ(g.node(6).type.shape, (Shape{2, 16, 16}));  // block 1 of the full q|k|v
}

TEST(IrText, LayoutMistakesNameTheInputAndTheRule) {
  auto err = [](const std::string& header) {
    return user_error_of([&] { parse_graph("graph t(" + header + ") {\n  return %x\n}\n", "t.fg"); });
  };
  EXPECT_NE(err("%x: bf16[8,4] {shard = 2}").find("input %x: shard dim 2 is out of range for bf16[8,4]"),
            std::string::npos);
  EXPECT_NE(err("%x: bf16[8,4] {shard = 0, blocks = [4, 2]}").find("blocks [4,2] must add up to dim 0 of bf16[8,4]"),
            std::string::npos);
  EXPECT_NE(err("%x: bf16[8,4] {blocks = [8]}").find("blocks need a shard dim"), std::string::npos);
  EXPECT_NE(err("%x: bf16[8,4] {sharded = 0}").find("unknown attribute 'sharded'"), std::string::npos);
  EXPECT_NE(err("%x: bf16[8,4] {init = \"ones\", std = 2.0}").find("'std' belongs to init \"normal\", not \"ones\""),
            std::string::npos);
  EXPECT_NE(err("%x: bf16[8,4] {init = \"kaiming\"}").find("attribute 'init' must be one of \"normal\", \"uniform\", \"ones\", \"zeros\", \"arange\", \"fan_in\", got \"kaiming\""), std::string::npos);
  EXPECT_NE(err("%x: i64[8] {init = \"normal\"}").find("needs a floating input"), std::string::npos);
  EXPECT_NE(err("%x: bf16[8] {low = 1.0, high = 0.5}").find("uniform needs low < high"), std::string::npos);
  EXPECT_NE(err("%x: bf16[8] {shard = \"0\"}").find("input %x: attribute 'shard' must be an integer, got \"0\""), std::string::npos);
  EXPECT_NE(err("%x: bf16[8,4] {dim_order = [1, 1]}").find("dim_order [1,1] must order every dim of bf16[8,4] once"),
            std::string::npos);
  // an output takes a layout only, and the error names it with its line
  const std::string out = user_error_of([] {
    parse_graph("graph t(%x: bf16[8]) {\n  %1 = neg(%x) : bf16[8]\n  return %1 {init = \"ones\"}\n}\n", "t.fg");
  });
  EXPECT_TRUE(starts_with(out, "t.fg:3:")) << out;
  EXPECT_NE(out.find("output %1: unknown attribute 'init'"), std::string::npos) << out;
}

TEST(Ops, SliceByBlocksTakesThisRanksShareOfEachBlock) {
  const Attrs a{{"dim", int64_t{0}}, {"blocks", std::vector<int64_t>{64, 16, 16}}, {"index", int64_t{1}}};
  // world 1: the whole of block 1; world 2 and 4: a half and a quarter of each block
  SliceBounds w1 = slice_bounds(a, {96}), w2 = slice_bounds(a, {48}), w4 = slice_bounds(a, {24});
  EXPECT_EQ(std::make_pair(w1.start, w1.end), std::make_pair(int64_t{64}, int64_t{80}));
  EXPECT_EQ(std::make_pair(w2.start, w2.end), std::make_pair(int64_t{32}, int64_t{40}));
  EXPECT_EQ(std::make_pair(w4.start, w4.end), std::make_pair(int64_t{16}, int64_t{20}));
  // a size that is no even share of the blocks, or blocks a share cuts unevenly
  EXPECT_NE(user_error_of([&] { slice_bounds(a, {50}); }).find("is no even share of blocks"), std::string::npos);
  EXPECT_NE(user_error_of([&] { slice_bounds(a, {3}); }).find("do not split into 32 equal shares"), std::string::npos);
  Attrs both = a;
  both["start"] = int64_t{0};
  EXPECT_NE(user_error_of([&] { slice_bounds(both, {96}); }).find("either blocks/index or start/end/step"),
            std::string::npos);
  Attrs bad = a;
  bad["index"] = int64_t{3};
  EXPECT_NE(user_error_of([&] { slice_bounds(bad, {96}); }).find("index 3 is not one of the 3 blocks"),
            std::string::npos);
}

// A branch on a value and a disabled region: blocks that print as written.
const char* kBlocks =
    "graph blocks(%x: f32[8,16]) {\n"
    "  %a = sin(%x) : f32[8,16]\n"
    "  %s = sum(%a) : f32[]\n"
    "  %zero = full() {value = 0.0} : f32[]\n"
    "  %p = gt(%s, %zero) : bool[]\n"
    "  %r = if(%p) : f32[8,16] {\n"
    "    %c = cos(%a) : f32[8,16]\n"
    "    yield %c\n"
    "  } else {\n"
    "    %e = exp(%a) : f32[8,16]\n"
    "    %n = neg(%e) : f32[8,16]\n"
    "    yield %n\n"
    "  }\n"
    "  disabled \"log_stats\" {\n"
    "    %m = amax(%r) {dims = [1], keepdim = 1} : f32[8,1]\n"
    "  }\n"
    "  %o = add(%r, %m) : f32[8,16]\n"
    "  return %o\n"
    "}\n";

TEST(IrText, BranchesAndDisabledRegionsRoundTrip) {
  Graph g = parse_graph(kBlocks, "blocks.fg");
  EXPECT_EQ(print_graph(g), kBlocks);
  // the arms come before the if that picks one, the if reads both yields
  const Node& iff = g.node(g.node(g.node(g.outputs[0]).inputs[0]).id);
  ASSERT_EQ(iff.op, Op::If);
  EXPECT_EQ(g.ref(iff.inputs[1]), "%c");
  EXPECT_EQ(g.ref(iff.inputs[2]), "%n");
}

TEST(IrText, BlockMistakesAreNamed) {
  auto err = [](const std::string& body) {
    return user_error_of([&] { parse_graph("graph t(%x: f32[4], %p: bool[]) {\n" + body + "}\n", "t.fg"); });
  };
  // an arm's values are seen by nothing outside it
  EXPECT_NE(err("  %r = if(%p) : f32[4] {\n    %c = neg(%x) : f32[4]\n    yield %c\n  } else {\n    yield %c\n  }\n"
                "  return %r\n").find("use of undefined value %c"), std::string::npos);
  EXPECT_NE(err("  %r = if(%p) : f32[4] {\n    yield %x\n  } else {\n    yield %x\n  }\n  %y = neg(%r) : f32[4]\n"
                "  %z = if(%p) : f32[4] {\n    %w = if(%p) : f32[4] {\n")
                .find("an if inside an if or a disabled region is not supported"), std::string::npos);
  EXPECT_NE(err("  %s = sum(%x) : f32[]\n  %r = if(%p) : f32[4] {\n    yield %x\n  } else {\n    yield %s\n  }\n"
                "  return %r\n").find("its arms yield f32[4] and f32[]: they must agree"), std::string::npos);
  EXPECT_NE(err("  %r = if(%x) : f32[4] {\n    yield %x\n  } else {\n    yield %x\n  }\n  return %r\n")
                .find("needs a one-element condition"), std::string::npos);
  EXPECT_NE(err("  %r = neg(%x) {@if = 0} : f32[4]\n  return %r\n").find("unexpected character '@'"), std::string::npos);
}

// `expect break "REASON"`: the breaks a repro declares, first in the body
// as printed, kept through a round trip; a statement of the graph, never
// of a block.
TEST(IrText, ExpectedBreaksRoundTripAndAreNamedWhenWrong) {
  const std::string text =
      "graph t(%x: f32[4]) {\n  expect break \"host callback print\"\n  expect break \"data-dependent\"\n"
      "  %y = neg(%x) : f32[4]\n  return %y\n}\n";
  Graph g = parse_graph(text, "t.fg");
  EXPECT_EQ(g.expected_breaks, (std::vector<std::string>{"host callback print", "data-dependent"}));
  EXPECT_EQ(print_graph(g), text);
  // anywhere before the return, printed first
  Graph later = parse_graph("graph t(%x: f32[4]) {\n  %y = neg(%x) : f32[4]\n  expect break \"x\"\n  return %y\n}\n");
  EXPECT_EQ(print_graph(later), "graph t(%x: f32[4]) {\n  expect break \"x\"\n  %y = neg(%x) : f32[4]\n  return %y\n}\n");
  auto err = [](const std::string& body) {
    return user_error_of([&] { parse_graph("graph t(%x: f32[4]) {\n" + body + "  return %x\n}\n", "t.fg"); });
  };
  EXPECT_NE(err("  expect recompile \"x\"\n").find("t.fg:2:10: error: expected 'break' after 'expect'"), std::string::npos)
      << err("  expect recompile \"x\"\n");
  EXPECT_NE(err("  expect break 3\n").find("the break's reason, a string"), std::string::npos);
  EXPECT_NE(err("  expect break \"\"\n").find("an empty one matches any break"), std::string::npos);
  EXPECT_NE(err("  disabled \"d\" {\n    expect break \"x\"\n  }\n").find("expected a statement"),
            std::string::npos) << err("  disabled \"d\" {\n    expect break \"x\"\n  }\n");
}

}  // namespace
}  // namespace fg
