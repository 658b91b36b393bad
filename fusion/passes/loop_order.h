// Loop ordering after fusion (cuda): a pointwise node whose loops run in
// another order than a node it could fuse with reads or writes their shared
// buffer at another index in a shared kernel, so the two share no data and
// stay apart. Inductor (config.loop_ordering_after_fusion, on for GPUs)
// gives the scheduler one more round after fusion settles, in which a pair
// sharing less than score_fusion_memory_threshold bytes whose accesses to a
// common buffer differ only in loop order gets the pointwise side's loops
// reordered to the other side's order; the pair then shares that buffer and
// fuses as any other (a cumsum over dim 0 and the pointwise code after it;
// an amax over dim 0 and the subtraction that reads it).
//
// The pieces here are pure: a node's accesses in its own loop variables (its
// "deps", as Inductor's MemoryDep over the node's loops), the test that two
// deps differ only in loop order, and the order that makes one match the
// other. The scheduler (passes/schedule.cpp) decides when to ask and writes
// the order into SchedNode::loop_order.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "fusion/passes/lower.h"

namespace fg {

// One access of a node in its own loops: the loops of size > 1 in the order
// they run (a reduction's kept dims, then its reduced dims), each loop's
// stride in the access and its size. Loops after the last one the access
// uses are dropped, as Inductor drops them. `linear` is false where the
// index is not a sum of loop variables times constants (a view's division).
// An index read through another tensor (gather, index_select) keeps the
// coefficients of its indirect variables in `indirect_coefs` (sorted, one
// for each variable), as Inductor's index holds them as symbols of their
// own. A clamp (a cat piece's bound) is its argument here: Inductor masks,
// it does not clamp.
struct LoopDep {
  std::vector<int64_t> strides, sizes;
  int64_t offset = 0;
  bool linear = true;
  std::vector<int64_t> indirect_coefs;
  int64_t numel() const;
};

// The node's deps on each buffer: its write where it writes the buffer, else
// each distinct read of it.
std::map<int, std::vector<LoopDep>> loop_deps(const SchedNode& n);

// One of a node's memory dependencies as Inductor's scheduler compares them
// on a GPU: with loop ordering after fusion its nodes' dependencies are not
// normalized and their loops are merged only when the kernel is written,
// so an access is its strides over the node's loops (size-1 loops left
// out, and the loops after the last one it uses, as Inductor's
// canonicalize drops them) with those loops' sizes: a LoopDep. Two nodes
// share an access only where their deps are equal: a [64, 2] node and a
// [128] node reading one buffer in order share nothing; a row sum over
// [64, 128] reading y[i] and a pointwise node over [64] reading y[i] do.
struct OwnDep {
  int buffer = -1;
  LoopDep dep;
  bool operator==(const OwnDep& o) const {
    return buffer == o.buffer && dep.strides == o.dep.strides && dep.sizes == o.dep.sizes &&
           dep.offset == o.dep.offset && dep.indirect_coefs == o.dep.indirect_coefs;
  }
};
// Nothing where an access is not a sum of loop variables times constants
// (then no such comparison is made), or for nodes other than pointwise and
// reduction nodes.
std::optional<std::vector<OwnDep>> own_loop_deps(const SchedNode& n);

// Whether the two deps are one access in another loop order: loops sorted
// by decreasing stride and merged where contiguous, then equal (Inductor's
// normalize_with_stride_order).
bool same_up_to_loop_order(const LoopDep& a, const LoopDep& b);

// The loop order for pointwise node `n` (dims of its shape, outermost first)
// under which `self` (n's dep) runs its loops in the order of `other`'s, or
// nothing where it cannot be decided: loops the access does not use (more
// than its indirect variables make up for, as Inductor counts symbols), a
// loop count that differs, two loops of one stride, strides that differ as
// sets (Inductor's decide_loop_order_to_match).
std::optional<std::vector<int>> loop_order_to_match(const SchedNode& n, const LoopDep& self, const LoopDep& other);

// The loop order, for every node of group `self` (pointwise nodes of one
// shape and one loop order), under which the group meets group `other`:
// of the buffers both access whose deps differ only in loop order, the
// largest decides (Inductor's shared_data_after_reordering_loop). Nothing
// where no such buffer exists, where its deps count their loops apart, or
// where loop_order_to_match cannot decide.
std::optional<std::vector<int>> loop_order_to_meet(const LoweredGraph& g, const std::vector<int>& self,
                                                   const std::vector<int>& other);

}  // namespace fg
