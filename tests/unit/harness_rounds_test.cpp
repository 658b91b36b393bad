// The verdict of alternating timing rounds (harness/run/rounds.h).
#include "harness/run/rounds.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fg;

namespace {
using Times = std::vector<std::vector<std::vector<double>>>;
}

TEST(Rounds, MediansOverAllForwardsAndRoundsWon) {
  // round 1: the candidate slower (its median 1.05 against 1.0)
  const Times t = {{{1.0, 1.0, 1.0}, {0.9, 0.9, 0.95}}, {{1.0, 1.0, 1.0}, {1.05, 1.05, 1.1}},
                   {{1.0, 1.1, 1.0}, {0.9, 0.9, 0.9}}};
  const RoundsSummary s = summarize_rounds(t);
  EXPECT_EQ(s.rounds, 3);
  EXPECT_EQ(s.candidate_faster, 2);
  EXPECT_DOUBLE_EQ(s.default_ms, 1.0);
  EXPECT_DOUBLE_EQ(s.candidate_ms, 0.9);  // 9 forwards: 0.9 x5, 0.95, 1.05 x2, 1.1
  EXPECT_EQ(rounds_text(s), "2 of 3");
  // 10% faster by the median, yet it lost a round: the default stays
  EXPECT_FALSE(candidate_wins(s, 0.01));
}

TEST(Rounds, TheCandidateWinsOnlyBeyondTheMarginAndInEveryRound) {
  const Times every = {{{1.0, 1.0}, {0.97, 0.97}}, {{1.0, 1.0}, {0.98, 0.98}}};
  const RoundsSummary s = summarize_rounds(every);
  EXPECT_EQ(s.candidate_faster, 2);
  EXPECT_TRUE(candidate_wins(s, 0.01));    // 3% by the median
  EXPECT_FALSE(candidate_wins(s, 0.05));   // not 5%
  // ties are not wins
  EXPECT_EQ(summarize_rounds({{{1.0}, {1.0}}}).candidate_faster, 0);
}

TEST(Rounds, NothingTimedIsNoWin) {
  EXPECT_FALSE(candidate_wins(summarize_rounds({}), 0.0));
  // a round with a side untimed is not counted
  const RoundsSummary s = summarize_rounds({{{1.0}, {}}, {{1.0}, {0.5}}});
  EXPECT_EQ(s.rounds, 1);
  EXPECT_TRUE(candidate_wins(s, 0.01));
  EXPECT_FALSE(candidate_wins(RoundsSummary{std::nan(""), 0.5, 1, 1}, 0.01));
  EXPECT_FALSE(candidate_wins(RoundsSummary{1.0, 0.0, 1, 1}, 0.01));
}

TEST(Rounds, RankZerosSummaryTravelsWhole) {
  const RoundsSummary s{0.2371, 0.2362, 3, 4};
  const RoundsSummary back = rounds_from_json(nlohmann::json::parse(rounds_json(s).dump()));
  EXPECT_DOUBLE_EQ(back.default_ms, 0.2371);
  EXPECT_DOUBLE_EQ(back.candidate_ms, 0.2362);
  EXPECT_EQ(back.candidate_faster, 3);
  EXPECT_EQ(back.rounds, 4);
  EXPECT_ANY_THROW(rounds_from_json(nlohmann::json::array({1.0, "x"})));
}
