// The fuzzer's generator: deterministic, always a valid graph that reads
// back from its text, and over a few hundred seeds every op it knows.
#include <gtest/gtest.h>

#include "fusion/ir/text.h"
#include "harness/tools/fuzz_gen.h"

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

}  // namespace
}  // namespace fg
