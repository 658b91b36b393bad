// The residual placement's decisions before and after measuring
// (harness/run/placement.h): what a forced placement and a golden decide, the
// rule that keeps the hoist unless the add apart is clearly faster, and the
// table's form.
#include <gtest/gtest.h>

#include "fusion/errors.h"
#include "harness/run/placement.h"

namespace fg {
namespace {

using json = nlohmann::json;

const std::vector<std::string> kSites = {"%30(linear) + %32(add)", "%50(linear) + %52(add)"};

// A golden whose rank 0 holds `table` (nullptr: no table), read into the
// record's types as load_golden reads it.
record::RunRecord golden_with(const json* table) {
  json g = {{"ranks", json::array({{{"rank", 1}}, {{"rank", 0}}})}};
  if (table) {
    g["ranks"][1]["residual_placement"] = *table;
    g["ranks"][0]["residual_placement"] = json::array();  // rank 0's table counts, wherever it is in the list
  }
  return record::from_json(g);
}

TEST(ResidualPlacement, ForcedDecidesEverySite) {
  for (const char* forced : {"gemm", "apart"}) {
    const json table = json::array({{{"site", kSites[0]}, {"placement", "gemm"}}});
    auto known = known_placements(kSites, forced, golden_with(&table), "g.json");
    ASSERT_EQ(known.size(), 2u);
    for (const auto& [site, c] : known) {
      EXPECT_EQ(c.apart, std::string(forced) == "apart") << site;
      EXPECT_EQ(c.source, "forced");
    }
  }
}

TEST(ResidualPlacement, NoGoldenLeavesEverySiteToMeasure) {
  EXPECT_TRUE(known_placements(kSites, "", std::nullopt, "g.json").empty());
}

// A golden blessed before the choice existed decides nothing: the run
// measures, as it would after any compiler change, and the check judges the
// program it chose against the golden's.
TEST(ResidualPlacement, AGoldenWithoutATableDecidesNothing) {
  EXPECT_TRUE(known_placements(kSites, "", golden_with(nullptr), "g.json").empty());
}

TEST(ResidualPlacement, TheGoldensTableDecidesItsSitesOnly) {
  const json table = json::array({{{"site", kSites[0]}, {"placement", "apart"}},
                                  {{"site", "%9(linear) + %11(add)"}, {"placement", "gemm"}}});
  auto known = known_placements(kSites, "", golden_with(&table), "g.json");
  ASSERT_EQ(known.size(), 1u);  // kSites[1]: not in the table, measured
  EXPECT_TRUE(known.at(kSites[0]).apart);
  EXPECT_EQ(known.at(kSites[0]).source, "golden");
}

TEST(ResidualPlacement, AMalformedGoldenTableNamesTheGolden) {
  auto message = [](const json& table) {
    try {
      known_placements(kSites, "", golden_with(&table), "golden/cuda/x/C_w1.max-autotune.json");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  // a table of another form never reaches the choice: the golden's types refuse it (load_golden: exit 2 at its line)
  try {
    golden_with(&static_cast<const json&>(json::object()));
    ADD_FAILURE() << "a residual_placement that is not a list was read";
  } catch (const record::RecordError& e) {
    EXPECT_NE(e.path.find("residual_placement"), std::string::npos) << e.what();
  }
  const std::string bad = message(json::array({{{"site", kSites[0]}, {"placement", "later"}}}));
  EXPECT_NE(bad.find("golden/cuda/x/C_w1.max-autotune.json: the residual_placement entry"), std::string::npos) << bad;
  EXPECT_NE(bad.find("bless the golden again"), std::string::npos) << bad;
}

// The hoist is the compiler's default: the add stays apart only when its
// forward's median was faster by more than 0.5% and it won every round.
TEST(ResidualPlacement, ApartWinsOnlyBeyondTheSpreadAndInEveryRound) {
  auto s = [](double gemm, double apart, int faster, int rounds) { return RoundsSummary{gemm, apart, faster, rounds}; };
  EXPECT_TRUE(apart_wins(s(0.2150, 0.2120, 4, 4)));   // 1.4% faster, every round
  EXPECT_FALSE(apart_wins(s(0.2150, 0.2120, 3, 4)));  // 1.4% faster, but not in one round
  EXPECT_FALSE(apart_wins(s(0.2150, 0.2145, 4, 4)));  // 0.2%: within the spread
  EXPECT_FALSE(apart_wins(s(0.2150, 0.2150, 4, 4)));
  EXPECT_FALSE(apart_wins(s(0.2150, 0.2300, 0, 4)));
  EXPECT_FALSE(apart_wins(s(0.2150, 0.0, 4, 4)));     // no timing is no win
  EXPECT_FALSE(apart_wins(s(std::nan(""), 0.1, 4, 4)));
  EXPECT_FALSE(apart_wins(s(0.2150, 0.2120, 0, 0)));  // no round timed
}

TEST(ResidualPlacement, TableEntriesAndTheSitesTheyLeaveApart) {
  PlacementChoice m{kSites[0], true, "measured", 0.21504, 0.21203, "CUDA graph replay", 4, 4};
  const json e = placement_json(m);
  EXPECT_EQ(e["site"], kSites[0]);
  EXPECT_EQ(e["placement"], "apart");
  EXPECT_EQ(e["source"], "measured");
  EXPECT_DOUBLE_EQ(e["gemm_ms"].get<double>(), 0.215);
  EXPECT_DOUBLE_EQ(e["apart_ms"].get<double>(), 0.212);
  EXPECT_EQ(e["how"], "CUDA graph replay");
  EXPECT_EQ(e["apart_faster_rounds"], "4 of 4");
  const json g = placement_json(PlacementChoice{kSites[1], false, "golden"});
  EXPECT_EQ(g["placement"], "gemm");
  EXPECT_FALSE(g.contains("gemm_ms"));  // not measured: no timings
  EXPECT_FALSE(g.contains("apart_faster_rounds"));
  EXPECT_EQ(apart_sites(record::part_from_json<std::vector<record::ResidualPlacement>>(json::array({e, g}))),
            std::set<std::string>{kSites[0]});
  EXPECT_TRUE(apart_sites({}).empty());
}

}  // namespace
}  // namespace fg
