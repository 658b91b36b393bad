// FUSEGATE_BISECT values (fusion/bisect.h): what they limit, and bad ones
// refused by name.
#include <gtest/gtest.h>

#include "fusion/bisect.h"
#include "fusion/errors.h"

namespace fg {
namespace {

TEST(Bisect, LimitsParseBySubsystem) {
  BisectLimits l = parse_bisect("decisions:3,fast_paths:0");
  EXPECT_EQ(l.decisions, 3);
  EXPECT_EQ(l.fast_paths, 0);
  EXPECT_EQ(l.tp_rewrite, -1);
  EXPECT_TRUE(l.any());
  EXPECT_FALSE(parse_bisect("").any());
  EXPECT_EQ(bisect_limit(l, "decisions"), 3);
  EXPECT_EQ(bisect_limit(l, "gemm_epilogue"), -1);
  // the stages in pipeline order: what bisect switches on one by one
  EXPECT_EQ(bisect_subsystems(), (std::vector<std::string>{"decompositions", "fast_paths", "gemm_epilogue", "tp_rewrite",
                                                            "lowerings", "decisions", "codegen_variants"}));
  BisectLimits v = parse_bisect("codegen_variants:2");
  EXPECT_EQ(bisect_limit(v, "codegen_variants"), 2);
  EXPECT_TRUE(v.any());
  BisectLimits s = parse_bisect("decompositions:0,lowerings:5");
  EXPECT_EQ(bisect_limit(s, "decompositions"), 0);
  EXPECT_EQ(bisect_limit(s, "lowerings"), 5);
  EXPECT_EQ(bisect_limit(s, "decisions"), -1);
  EXPECT_TRUE(s.any());
}

TEST(Bisect, GraphLimitsOverTheOthers) {
  // every graph at 0, graph 0 unlimited, graph 2 at 3, whatever the order
  const std::string text = "decisions@2:3,decisions:0,decisions@0:all,lowerings:5";
  EXPECT_EQ(parse_bisect(text, 0).decisions, -1);
  EXPECT_EQ(parse_bisect(text, 1).decisions, 0);
  EXPECT_EQ(parse_bisect(text, 2).decisions, 3);
  EXPECT_EQ(parse_bisect(text, 7).decisions, 0);
  EXPECT_EQ(parse_bisect(text, 2).lowerings, 5);
  // a graph's limit alone leaves the others unlimited
  EXPECT_EQ(parse_bisect("codegen_variants@1:0", 0).codegen_variants, -1);
  EXPECT_EQ(parse_bisect("codegen_variants@1:0", 1).codegen_variants, 0);
  EXPECT_FALSE(parse_bisect("decisions:all", 0).any());
}

TEST(Bisect, BadValuesAreNamed) {
  for (const char* bad : {"decisions", "decisions:", "decisions:-1", "decisions:x", "fusion:2", "lowering:1", "decompositions:-2",
                          "decisions@:1", "decisions@x:1", "decisions@-1:2", "fusion@0:1", "decisions@0:"}) {
    try {
      parse_bisect(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace fg
