// The fusion ledger: every decision on a pair of groups that the scheduler
// (passes/schedule) and the TP passes (passes/tp_rewrite, gemm_epilogue)
// take, with its reason, so "why didn't this fuse" has an answer (STYLE 7).
// explain prints it; a run record keeps each entry's code.
#pragma once
#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "fusion/ir/types.h"

namespace fg {

struct FusionConfig;  // passes/fusion_cost.h

// Why a candidate pair was not fused: one code per gate of can_fuse.
enum class Reject {
  None, PolicyNone, Extern, IndirectStore, ReductionSizes, NumelMismatch, TooManyNodes, NoSharedData,
  MemoryDepsMismatch, IntermediateNodes, HorizontalTooFar, HorizontalTooSmall, PeakMemory, SiblingGemmPolicy,
  TemplateSiblings, TemplatePrologue, TemplateEpilogue, TemplateUnrelated,
  // why a decision went as it did where it was not a rejection
  BatchedSiblings, TpResidualHoisted, GemmEpilogue,
  // rejections of TP rewrites (passes/tp_rewrite)
  TpAddendNotReplicated, TpAddendAfterGemm,
  // a hoist the run measured slower than the add left after the all-reduce
  TpResidualApart,
  // fast paths (passes/fast_paths): taken, or why not
  FastPathUsed, FastPathUnproven, FastPathInvalidated, FastPathOutranked, FastPathOneHost, FastPathCostModel,
  FastPathPolicy,
  // an application past its FUSEGATE_BISECT limit (fusion/bisect.h)
  BisectLimit,
  // FUSEGATE_FAULT=refuse_fusion:reduction (a test of the gate)
  FaultRefused,
  // dead code (passes/dead_code.h)
  DeadCodeRemoved, CollectiveKept,
  // a cast to the dtype its input has (passes/dead_code.h)
  NoOpCastRemoved,
  // a value every element of which is one number, made one full; x + 0 and
  // the like after it (passes/constant_fold.h, cuda)
  ConstantFolded, NoOpArithmeticRemoved,
  // a cast of a cast between floating types, one cast (passes/constant_fold.h,
  // cuda)
  CastChainCollapsed,
  // fused in the scheduler's last round once one side's pointwise loops ran in
  // the other's order (passes/loop_order.h, cuda)
  LoopsReordered,
  // a GEMM epilogue a graph gave, split off; a bias add folded into its
  // GEMM (passes/gemm_epilogue.h)
  GemmEpilogueSplit, GemmBiasFolded,
  // an attention no fused kernel takes as it is (passes/attention.h)
  AttentionMathForm, AttentionHeadDimPadded,
};
const char* reject_code(Reject r);  // "memory_deps_mismatch"
// In words ("memory deps did not match"); a reason that names a threshold
// quotes its value in `c` (the default FusionConfig without it).
std::string reject_reason(Reject r, const FusionConfig& c);
std::string reject_reason(Reject r);

// The ledger's order of source lines, one rule for every writer: by file,
// then line as a number ("x.cpp:9" before "x.cpp:17"), the text breaking a
// tie. `file` and `line` are the text as SourceLoc::parse reads it (the
// whole text as the file when it is no location); `files` keeps each file
// name once, which `file` points into.
struct LedgerLine {
  const std::string* file;
  int line;
  const std::string* text;
};
LedgerLine ledger_line(const std::string& text, std::set<std::string>* files);
bool ledger_line_less(const LedgerLine& a, const LedgerLine& b);
// Sorted lists merged, each text once.
void merge_ledger_lines(const std::vector<LedgerLine>& a, const std::vector<LedgerLine>& b,
                        std::vector<LedgerLine>* out);

struct LedgerEntry {
  std::string first, second;            // groups as "buf1+buf2"
  std::array<int64_t, 4> score{};       // template, node type, memory bytes, proximity
  bool fused = false;
  Reject reason = Reject::None;  // why rejected; for a fused entry, None or how it fused
  int round = 0;
  // where the repro made the nodes involved ("repros/x.cpp:42 (forward)"),
  // sorted, each once; empty for graphs built without locations
  std::vector<std::string> source;
  void add_source(const SourceLoc& l);
  void add_source(const std::vector<std::string>& lines);
};

}  // namespace fg
