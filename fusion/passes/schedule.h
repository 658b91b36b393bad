// schedule: groups scheduler nodes into fused kernels (see the essay at the
// top of schedule.cpp) and records every decision in a ledger.
//
// Before: lowered nodes with reads, writes and dependencies. After: groups in
// a valid execution order; each generated group has one iteration space
// (numel, rnumel); extern and collective nodes are groups of one.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "fusion/passes/lower.h"

namespace fg {

enum class FusionPolicy { Default, MaxAutotune, None };
const char* policy_name(FusionPolicy p);
bool parse_policy(const std::string& s, FusionPolicy* out);

// Why a candidate pair was not fused: one code per gate of can_fuse.
enum class Reject {
  None, PolicyNone, Extern, ReductionSizes, NumelMismatch, TooManyNodes, NoSharedData,
  MemoryDepsMismatch, IntermediateNodes, HorizontalTooFar, HorizontalTooSmall, PeakMemory, SiblingGemmPolicy,
  TemplateSiblings, TemplatePrologue, TemplateEpilogue, TemplateUnrelated,
  // why a decision went as it did where it was not a rejection
  BatchedSiblings, TpResidualHoisted, GemmEpilogue,
  // rejections of TP rewrites (passes/tp_rewrite)
  TpAddendNotReplicated, TpAddendAfterGemm,
};
const char* reject_code(Reject r);     // "memory_deps_mismatch"
const char* reject_reason(Reject r);   // "memory deps did not match"

struct LedgerEntry {
  std::string first, second;            // groups as "buf1+buf2"
  std::array<int64_t, 4> score{};       // template, node type, memory bytes, proximity
  bool fused = false;
  Reject reason = Reject::None;  // why rejected; for a fused entry, None or how it fused
  int round = 0;
};

struct FusedGroup {
  std::vector<int> nodes;  // scheduler node ids, in execution order
  int64_t numel = 0, rnumel = 1;
  bool generated = false;  // pointwise/reduction code (vs one extern/collective)
};

struct Schedule {
  std::vector<FusedGroup> groups;  // execution order
  std::vector<LedgerEntry> ledger;
};

Schedule schedule(const LoweredGraph& g, FusionPolicy policy);

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
