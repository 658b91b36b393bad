// The fuzzer's generator: deterministic, always a valid graph that reads
// back from its text, and over a few hundred seeds every op it knows.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>

#include "fusion/ir/text.h"
#include "fusion/errors.h"
#include "harness/tools/fuzz_gen.h"
#include "harness/tools/fuzz_mutate.h"

namespace fg {
namespace {

TEST(FuzzGen, TheSameSeedGivesTheSameGraph) {
  FuzzGenOptions o;
  EXPECT_EQ(print_graph(generate_graph(42, o).graph), print_graph(generate_graph(42, o).graph));
  EXPECT_NE(print_graph(generate_graph(42, o).graph), print_graph(generate_graph(43, o).graph));
}

TEST(FuzzGen, EveryGraphVerifiesAndReadsBackFromItsText) {
  FuzzGenOptions o;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    FuzzGraph f = generate_graph(seed, o);
    ASSERT_NO_THROW(verify(f.graph, true)) << "seed " << seed;
    const std::string text = print_graph(f.graph);
    Graph back = parse_graph(text, "fuzz.fg");
    EXPECT_EQ(print_graph(back), text) << "seed " << seed;
    EXPECT_FALSE(f.graph.outputs.empty()) << "seed " << seed;
    for (int out : f.graph.outputs) EXPECT_TRUE(is_floating(f.graph.node(out).type.dtype)) << "seed " << seed;
  }
}

TEST(FuzzGen, ThreeHundredSeedsCoverEveryOpItKnows) {
  for (int world : {1, 2}) {
    FuzzGenOptions o;
    o.world = world;
    std::set<std::string> seen;
    for (uint64_t seed = 1; seed <= 300; ++seed) {
      FuzzGraph f = generate_graph(seed, o);
      seen.insert(f.ops.begin(), f.ops.end());
    }
    for (const auto& op : fuzz_op_universe(world)) EXPECT_TRUE(seen.count(op)) << op << " at world " << world;
    EXPECT_EQ(seen.count("all_reduce"), world > 1 ? 1u : 0u);
  }
}

TEST(FuzzGen, WithoutHalfNoValueIsF16) {
  FuzzGenOptions o;
  o.half = false;
  int f16 = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed)
    for (const Node& n : generate_graph(seed, o).graph.nodes) f16 += n.type.dtype == DType::F16;
  EXPECT_EQ(f16, 0);
  o.half = true;
  for (uint64_t seed = 1; seed <= 200; ++seed)
    for (const Node& n : generate_graph(seed, o).graph.nodes) f16 += n.type.dtype == DType::F16;
  EXPECT_GT(f16, 0);
}

// Every value the op table allows for a choice is generated, and the
// choice left absent too (its default).
TEST(FuzzGen, ChoicesComeFromTheOpTable) {
  for (int world : {1, 2}) {
    FuzzGenOptions o;
    o.world = world;
    std::map<std::string, std::set<std::string>> seen;  // op.attr -> values ("" absent)
    for (uint64_t seed = 1; seed <= 300; ++seed)
      for (const Node& n : generate_graph(seed, o).graph.nodes)
        for (const AttrSpec& a : op_spec(n.op).attrs)
          if (a.kind == AttrKind::Choice && n.op != Op::Input)
            seen[std::string(op_name(n.op)) + "." + a.name].insert(
                n.attrs.count(a.name) ? std::get<std::string>(n.attrs.at(a.name)) : "");
    ASSERT_TRUE(seen.count("gelu.approximate"));
    for (const auto& [key, values] : seen) {
      const Op op = *[&] {
        for (int i = 0; i < kOpCount; ++i)
          if (key.rfind(std::string(op_name(static_cast<Op>(i))) + ".", 0) == 0) return std::optional<Op>(static_cast<Op>(i));
        return std::optional<Op>();
      }();
      for (const AttrSpec& a : op_spec(op).attrs)
        if (key == std::string(op_name(op)) + "." + a.name) {
          EXPECT_TRUE(values.count("")) << key << " never absent at world " << world;
          for (const auto& c : a.choices) EXPECT_TRUE(values.count(c)) << key << " never " << c << " at world " << world;
        }
    }
  }
}

// Each mistake the mutator puts into a generated graph is refused by the
// parser at its line, as the user's mistake (UserError), never an internal
// error; every kind is tried on many graphs.
TEST(FuzzMutate, EveryMistakeIsRefusedAtItsLine) {
  FuzzGenOptions o;
  std::map<std::string, int> tried;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    const Graph g = generate_graph(seed, o).graph;
    for (const std::string& kind : mutation_kinds()) {
      const std::optional<Mutant> m = mutate(g, kind, seed);
      if (!m) continue;
      ++tried[kind];
      try {
        parse_graph(m->text, "mutant.fg");
        ADD_FAILURE() << kind << " (seed " << seed << ") was accepted:\n" << m->text;
      } catch (const UserError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("mutant.fg:" + std::to_string(m->line) + ":"), std::string::npos)
            << kind << " (seed " << seed << ") not at line " << m->line << ": " << what << "\n" << m->text;
        EXPECT_NE(what.find(m->expect), std::string::npos) << kind << ": " << what;
      } catch (const std::exception& e) {
        ADD_FAILURE() << kind << " (seed " << seed << ") gave " << e.what();
      }
    }
  }
  for (const std::string& kind : mutation_kinds()) EXPECT_GE(tried[kind], 10) << kind;
}

}  // namespace
}  // namespace fg
