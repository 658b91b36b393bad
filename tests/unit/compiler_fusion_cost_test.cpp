// The cost model apart from the scheduler: FusionConfig carries Inductor's
// numbers, the scheduler takes them from there, and the ledger's reasons
// quote the numbers the decision used.
#include <gtest/gtest.h>

#include <string>

#include "fusion/ir/text.h"
#include "fusion/passes/decompose.h"
#include "fusion/passes/fusion_cost.h"
#include "fusion/passes/schedule.h"

namespace fg {
namespace {

// Five outputs read the same input: horizontal siblings that all fuse under
// Inductor's limits.
const char* kSiblings = R"(
graph wide(%x: f32[16,16]) {
  %c0 = full() {value = 0.0} : f32[]
  %o0 = mul(%x, %c0) : f32[16,16]
  %c1 = full() {value = 1.0} : f32[]
  %o1 = mul(%x, %c1) : f32[16,16]
  %c2 = full() {value = 2.0} : f32[]
  %o2 = mul(%x, %c2) : f32[16,16]
  %c3 = full() {value = 3.0} : f32[]
  %o3 = mul(%x, %c3) : f32[16,16]
  %c4 = full() {value = 4.0} : f32[]
  %o4 = mul(%x, %c4) : f32[16,16]
  return %o0, %o1, %o2, %o3, %o4
}
)";

Schedule schedule_text(const std::string& text, const FusionConfig& c) {
  LoweredGraph g = lower(decompose(parse_graph(text, "test.fg")));
  return schedule(g, FusionPolicy::Default, c);
}

int rejections(const Schedule& s, Reject r) {
  int n = 0;
  for (const auto& e : s.ledger) n += !e.fused && e.reason == r;
  return n;
}

TEST(FusionCost, DefaultsAreInductors) {
  FusionConfig c;
  EXPECT_EQ(c.max_fusion_buffer_group_pairwise_attempts, 64);
  EXPECT_EQ(c.max_fusion_size, 64);
  EXPECT_EQ(c.score_fusion_memory_threshold, 10);
  EXPECT_FALSE(c.epilogue_fusion_first);
  EXPECT_EQ(c.fuse_nodes_rounds, 10);
  EXPECT_EQ(c.horizontal_distance_limit, 64);
  EXPECT_EQ(c.memory_score_ratio, 16);
  EXPECT_EQ(c.peak_memory_overhead_ratio, 32);
  EXPECT_EQ(c.bytes_threshold_multiplier.num, 11);
  EXPECT_EQ(c.bytes_threshold_multiplier.den, 10);
}

TEST(FusionCost, MemoryAloneDecidesAboveTheRatio) {
  FusionConfig c;
  // node type favours a; b's memory is 16x a's: not more, so the tuple decides
  Score a{2, 1, 100, -1}, b{2, 0, 1600, -1};
  EXPECT_TRUE(score_greater(a, b, c));
  // just above 16x, memory alone decides
  b[2] = 1601;
  EXPECT_TRUE(score_greater(b, a, c));
  // a smaller ratio moves the same pair to memory
  c.memory_score_ratio = 4;
  b[2] = 500;
  EXPECT_TRUE(score_greater(b, a, c));
}

TEST(FusionCost, TemplateScoreComesFirst) {
  FusionConfig c;
  EXPECT_TRUE(score_greater({2, 0, 0, -100}, {1, 1, 1 << 20, -1}, c));
}

TEST(FusionCost, SiblingsFuseUnderTheDefaultSizeLimit) {
  Schedule s = schedule_text(kSiblings, FusionConfig{});
  EXPECT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(rejections(s, Reject::TooManyNodes), 0);
}

TEST(FusionCost, MaxFusionSizeComesFromTheConfig) {
  FusionConfig c;
  c.max_fusion_size = 2;
  Schedule s = schedule_text(kSiblings, c);
  // five nodes in groups of at most two
  EXPECT_EQ(s.groups.size(), 3u);
  for (const auto& g : s.groups) EXPECT_LE(g.nodes.size(), 2u);
  EXPECT_GT(rejections(s, Reject::TooManyNodes), 0);
  EXPECT_EQ(reject_reason(Reject::TooManyNodes, c), "fused node would exceed 2 nodes");
}

TEST(FusionCost, HorizontalThresholdsComeFromTheConfig) {
  FusionConfig c;
  // the siblings share 16x16 f32 reads of x: 1024 bytes a pair
  c.score_fusion_memory_threshold = 1025;
  Schedule s = schedule_text(kSiblings, c);
  EXPECT_EQ(s.groups.size(), 5u);
  EXPECT_GT(rejections(s, Reject::HorizontalTooSmall), 0);
  c = FusionConfig{};
  c.horizontal_distance_limit = 0;
  s = schedule_text(kSiblings, c);
  EXPECT_EQ(s.groups.size(), 5u);
  EXPECT_GT(rejections(s, Reject::HorizontalTooFar), 0);
}

TEST(FusionCost, PairwiseAttemptsBoundTheCandidates) {
  FusionConfig c;
  c.max_fusion_buffer_group_pairwise_attempts = 0;
  Schedule s = schedule_text(kSiblings, c);
  EXPECT_EQ(s.groups.size(), 5u);
  EXPECT_TRUE(s.ledger.empty());
}

// The ledger prints these; the snapshot (tests/snapshot) pins them in
// context, this pins the numbers they quote by default.
TEST(FusionCost, ReasonsQuoteTheDefaults) {
  EXPECT_EQ(reject_reason(Reject::TooManyNodes), "fused node would exceed 64 nodes");
  EXPECT_EQ(reject_reason(Reject::HorizontalTooFar), "horizontal fusion: nodes too far apart (> 64)");
  EXPECT_EQ(reject_reason(Reject::HorizontalTooSmall), "horizontal fusion: fewer than 10 shared bytes");
  EXPECT_EQ(reject_reason(Reject::PeakMemory),
            "fusion could raise peak memory (single-use inputs it keeps alive > 32x the bytes saved)");
  EXPECT_NE(reject_reason(Reject::TemplatePrologue).find("reading <= 1.1x what it writes"), std::string::npos);
  EXPECT_EQ(reject_reason(Reject::None), "");
  EXPECT_STREQ(reject_code(Reject::TooManyNodes), "too_many_nodes");
}

// An indirect store fuses with the sort that gives its positions, and with
// nothing else: not with a pointwise node that reads its source, even once
// the store's group begins with the sort.
TEST(FusionCost, AnIndirectStoreFusesOnlyWithSortsAndOtherIndirectStores) {
  LoweredGraph g = lower(decompose(parse_graph(R"(
graph g(%w: f32[129], %v: f32[129], %s: f32[129]) {
  %p = argsort(%w) {dim = 0} : i64[129]
  %sc = scatter(%v, %p, %s) {dim = 0} : f32[129]
  %e = exp(%s) : f32[129]
  return %sc, %e
}
)", "test.fg")));
  Schedule s = schedule(g, FusionPolicy::Default, FusionConfig{});
  int with_scatter = 0;
  for (const FusedGroup& gr : s.groups) {
    bool scatter = false, other = false, sort = false;
    for (int n : gr.nodes) {
      const SchedNode& sn = g.nodes[static_cast<size_t>(n)];
      scatter = scatter || sn.is_scatter();
      sort = sort || sn.is_sort();
      other = other || (!sn.is_scatter() && !sn.is_sort());
    }
    if (!scatter) continue;
    ++with_scatter;
    EXPECT_TRUE(sort) << "the argsort runs in the scatter's kernel";
    EXPECT_FALSE(other) << "a pointwise node joined the indirect store's kernel";
  }
  EXPECT_EQ(with_scatter, 1);
  EXPECT_GE(rejections(s, Reject::IndirectStore), 1);
}

}  // namespace
}  // namespace fg
