// schedule: groups scheduler nodes into fused kernels (see the essay at the
// top of schedule.cpp) and records every decision in a ledger
// (passes/fusion_ledger.h). Whether a pair may fuse and what it scores is
// decided in passes/fusion_cost.h; this pass walks candidates and merges.
//
// Before: lowered nodes with reads, writes and dependencies. After: groups in
// a valid execution order; each generated group has one iteration space
// (numel, rnumel); extern and collective nodes are groups of one.
#pragma once
#include <string>
#include <vector>

#include "fusion/passes/fusion_cost.h"
#include "fusion/passes/fusion_ledger.h"
#include "fusion/passes/lower.h"

namespace fg {

enum class FusionPolicy { Default, MaxAutotune, None };
const char* policy_name(FusionPolicy p);  // parse_fusion (fusion/options.h) reads it back

struct FusedGroup {
  std::vector<int> nodes;  // scheduler node ids, in execution order
  int64_t numel = 0, rnumel = 1;
  bool generated = false;  // pointwise/reduction code (vs one extern/collective)
};

struct Schedule {
  std::vector<FusedGroup> groups;  // execution order
  std::vector<LedgerEntry> ledger;
};

// The numbers the decisions use are `config`'s (passes/fusion_cost.h); the
// first form uses the default FusionConfig, Inductor's.
// The scheduler writes one thing into `g`: the loop order its reorder round
// gives a pointwise node (SchedNode::loop_order; cuda only).
Schedule schedule(LoweredGraph& g, FusionPolicy policy);
Schedule schedule(LoweredGraph& g, FusionPolicy policy, const FusionConfig& config);

// Index of every access of node `n` expressed in the variables of a kernel
// over (numel, rnumel): x in [0, numel), r in [0, rnumel). False if the node
// cannot be placed in such a kernel.
struct Access {
  int buffer;
  IndexP index;
  bool write;
  int64_t bytes;
};
bool kernel_accesses(const LoweredGraph& g, const SchedNode& n, int64_t numel, int64_t rnumel,
                     std::vector<Access>* out);
// The substitution of node `n`'s body variables for such a kernel.
std::map<std::string, IndexP> kernel_var_map(const SchedNode& n, int64_t numel, int64_t rnumel);
// Is the node's work inside the reduction loop (r) or once per x?
bool runs_inner(const SchedNode& n, int64_t numel, int64_t rnumel);

}  // namespace fg
