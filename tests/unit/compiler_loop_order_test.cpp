// Loop ordering after fusion (passes/loop_order.h): a node's deps in its own
// loops, the test that two deps differ only in loop order, the order that
// makes them meet, and the scheduler's last round that applies it (cuda).
#include <gtest/gtest.h>

#include <string>

#include "fusion/ir/text.h"
#include "fusion/passes/decompose.h"
#include "fusion/passes/fusion_cost.h"
#include "fusion/passes/loop_order.h"
#include "fusion/passes/schedule.h"

namespace fg {
namespace {

LoopDep dep(std::vector<int64_t> strides, std::vector<int64_t> sizes, int64_t offset = 0) {
  LoopDep d;
  d.strides = std::move(strides);
  d.sizes = std::move(sizes);
  d.offset = offset;
  return d;
}

SchedNode pointwise(Shape shape) {
  SchedNode n;
  n.kind = SNKind::Pointwise;
  n.shape = std::move(shape);
  return n;
}

// a cumsum over dim 0 and the pointwise code after it (fuzz seed 446)
const char* kScanThenPointwise = R"(
graph scan_then_pointwise(%x: f32[31,512]) {
  %n = neg(%x) : f32[31,512]
  %c = cumsum(%n) {dim = 0} : f32[31,512]
  %s = sin(%c) : f32[31,512]
  %m = minimum(%s, %n) : f32[31,512]
  return %m
}
)";

TEST(LoopOrder, DepsAreStridesOfTheNodesOwnLoops) {
  LoweredGraph g = lower(decompose(parse_graph(kScanThenPointwise, "t.fg")));
  ASSERT_EQ(g.nodes.size(), 2u);
  // the scan: its kept dim (512 columns) then its scanned dim (31 rows)
  const SchedNode& scan = g.nodes[0];
  ASSERT_TRUE(scan.is_scan());
  auto sd = loop_deps(scan);
  const LoopDep& w = sd.at(scan.out_buffer).at(0);
  EXPECT_EQ(w.strides, (std::vector<int64_t>{1, 512}));
  EXPECT_EQ(w.sizes, (std::vector<int64_t>{512, 31}));
  // the pointwise node: rows then columns
  const SchedNode& pw = g.nodes[1];
  auto pd = loop_deps(pw);
  const LoopDep& r = pd.at(scan.out_buffer).at(0);
  EXPECT_EQ(r.strides, (std::vector<int64_t>{512, 1}));
  EXPECT_TRUE(same_up_to_loop_order(r, w));
  auto order = loop_order_to_match(pw, r, w);
  ASSERT_TRUE(order.has_value());
  EXPECT_EQ(*order, (std::vector<int>{1, 0}));
}

TEST(LoopOrder, SameOnlyWhereTheLoopsMergeAlike) {
  EXPECT_TRUE(same_up_to_loop_order(dep({512, 1}, {31, 512}), dep({1, 512}, {512, 31})));
  // another offset, another place
  EXPECT_FALSE(same_up_to_loop_order(dep({512, 1}, {31, 512}, 7), dep({1, 512}, {512, 31})));
  // a column stride that skips elements
  EXPECT_FALSE(same_up_to_loop_order(dep({1024, 1}, {31, 512}), dep({1, 512}, {512, 31})));
  LoopDep divided = dep({512, 1}, {31, 512});
  divided.linear = false;
  EXPECT_FALSE(same_up_to_loop_order(divided, dep({1, 512}, {512, 31})));
  LoopDep gathered = dep({512, 1}, {31, 512});
  gathered.indirect_coefs = {17};
  EXPECT_FALSE(same_up_to_loop_order(gathered, dep({1, 512}, {512, 31})));
}

TEST(LoopOrder, UndecidableOrdersAreRefused) {
  const SchedNode n = pointwise({31, 512});
  // a loop the access does not use (a broadcast read)
  EXPECT_FALSE(loop_order_to_match(n, dep({0, 1}, {31, 512}), dep({1, 0}, {512, 31})).has_value());
  // two loops of one stride
  const SchedNode m = pointwise({4, 4});
  EXPECT_FALSE(loop_order_to_match(m, dep({1, 1}, {4, 4}), dep({1, 1}, {4, 4})).has_value());
  // strides that differ as sets
  EXPECT_FALSE(loop_order_to_match(n, dep({512, 1}, {31, 512}), dep({1, 31}, {512, 31})).has_value());
  // loop counts apart
  EXPECT_FALSE(loop_order_to_match(n, dep({512, 1}, {31, 512}), dep({1}, {15872})).has_value());
  // an indirect variable stands for the loop the access does not use, as
  // Inductor counts the symbols of an index
  LoopDep a = dep({0, 1}, {31, 512}), b = dep({1, 0}, {512, 31});
  a.indirect_coefs = b.indirect_coefs = {1};
  auto order = loop_order_to_match(n, a, b);
  ASSERT_TRUE(order.has_value());
  EXPECT_EQ(*order, (std::vector<int>{1, 0}));
}

TEST(LoopOrder, UnitDimsRunOutermost) {
  const SchedNode n = pointwise({1, 31, 512});
  auto order = loop_order_to_match(n, dep({512, 1}, {31, 512}), dep({1, 512}, {512, 31}));
  ASSERT_TRUE(order.has_value());
  EXPECT_EQ(*order, (std::vector<int>{0, 2, 1}));
}

TEST(LoopOrder, TheLastRoundFusesTheScanWithItsReader) {
  FusionConfig on;
  on.loop_ordering_after_fusion = true;
  LoweredGraph g = lower(decompose(parse_graph(kScanThenPointwise, "t.fg")));
  Schedule s = schedule(g, FusionPolicy::Default, on);
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(s.groups[0].nodes.size(), 2u);
  EXPECT_EQ(g.nodes[1].loop_order, (std::vector<int>{1, 0}));
  int reordered = 0, refused = 0;
  for (const auto& e : s.ledger) {
    reordered += e.fused && e.reason == Reject::LoopsReordered;
    refused += !e.fused && e.reason == Reject::MemoryDepsMismatch;
  }
  EXPECT_EQ(reordered, 1);
  EXPECT_EQ(refused, 1);  // the first round, before the reorder
  // off (the host backend): two kernels, the loops as they were
  LoweredGraph h = lower(decompose(parse_graph(kScanThenPointwise, "t.fg")));
  Schedule t = schedule(h, FusionPolicy::Default, FusionConfig{});
  EXPECT_EQ(t.groups.size(), 2u);
  EXPECT_TRUE(h.nodes[1].loop_order.empty());
}

TEST(LoopOrder, ReorderedLoopsNameTheSameElements) {
  // the reordered node reads the scan's buffer where the scan wrote it, in
  // the scan's (column, row) kernel: x over 512 columns, r over 31 rows
  FusionConfig on;
  on.loop_ordering_after_fusion = true;
  LoweredGraph g = lower(decompose(parse_graph(kScanThenPointwise, "t.fg")));
  schedule(g, FusionPolicy::Default, on);
  std::vector<Access> scan, reader;
  ASSERT_TRUE(kernel_accesses(g, g.nodes[0], 512, 31, &scan));
  ASSERT_TRUE(kernel_accesses(g, g.nodes[1], 512, 31, &reader));
  std::string wrote, read;
  for (const auto& a : scan)
    if (a.write) wrote = a.index->key;
  for (const auto& a : reader)
    if (!a.write && a.buffer == g.nodes[0].out_buffer) read = a.index->key;
  EXPECT_FALSE(wrote.empty());
  EXPECT_EQ(read, wrote);
}

}  // namespace
}  // namespace fg
