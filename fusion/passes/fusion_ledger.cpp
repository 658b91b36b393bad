#include "fusion/passes/fusion_ledger.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <utility>
#include <vector>

#include "fusion/ir/text.h"
#include "fusion/passes/fusion_cost.h"

namespace fg {

LedgerLine ledger_line(const std::string& text, std::set<std::string>* files) {
  SourceLoc l;
  if (!SourceLoc::parse(text, &l)) l.file = text;
  return {&*files->insert(l.file).first, l.line, &text};
}

bool ledger_line_less(const LedgerLine& a, const LedgerLine& b) {
  if (a.file != b.file && *a.file != *b.file) return *a.file < *b.file;
  if (a.line != b.line) return a.line < b.line;
  return *a.text < *b.text;
}

void merge_ledger_lines(const std::vector<LedgerLine>& a, const std::vector<LedgerLine>& b,
                        std::vector<LedgerLine>* out) {
  out->clear();
  out->reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(*out), ledger_line_less);
  out->erase(std::unique(out->begin(), out->end(),
                         [](const LedgerLine& x, const LedgerLine& y) { return *x.text == *y.text; }),
             out->end());
}

void LedgerEntry::add_source(const std::vector<std::string>& lines) {
  // each location once, in the ledger's order: one sort of the union, each
  // text parsed once (a node that covers a long inlined chain brings
  // thousands)
  std::set<std::string> all(source.begin(), source.end());
  all.insert(lines.begin(), lines.end());
  if (all.size() == source.size()) return;  // nothing new (source is kept unique)
  std::set<std::string> files;
  std::vector<LedgerLine> keyed;
  keyed.reserve(all.size());
  for (const std::string& text : all) keyed.push_back(ledger_line(text, &files));
  std::sort(keyed.begin(), keyed.end(), ledger_line_less);
  std::vector<std::string> sorted;
  sorted.reserve(keyed.size());
  for (const LedgerLine& k : keyed) sorted.push_back(*k.text);
  source = std::move(sorted);
}

void LedgerEntry::add_source(const SourceLoc& l) {
  if (l.known()) add_source(std::vector<std::string>{l.str()});
}

const char* reject_code(Reject r) {
  switch (r) {
    case Reject::None: return "";
    case Reject::PolicyNone: return "policy_none";
    case Reject::Extern: return "extern";
    case Reject::IndirectStore: return "indirect_store";
    case Reject::ReductionSizes: return "reduction_sizes";
    case Reject::NumelMismatch: return "numel_mismatch";
    case Reject::TooManyNodes: return "too_many_nodes";
    case Reject::NoSharedData: return "no_shared_data";
    case Reject::MemoryDepsMismatch: return "memory_deps_mismatch";
    case Reject::IntermediateNodes: return "intermediate_nodes";
    case Reject::HorizontalTooFar: return "horizontal_too_far";
    case Reject::HorizontalTooSmall: return "horizontal_too_small";
    case Reject::PeakMemory: return "peak_memory";
    case Reject::SiblingGemmPolicy: return "sibling_gemm_policy";
    case Reject::TemplateSiblings: return "template_siblings";
    case Reject::TemplatePrologue: return "template_prologue";
    case Reject::TemplateEpilogue: return "template_epilogue";
    case Reject::TemplateUnrelated: return "template_unrelated";
    case Reject::BatchedSiblings: return "batched_siblings";
    case Reject::TpResidualHoisted: return "tp_residual_hoisted";
    case Reject::GemmEpilogue: return "gemm_epilogue";
    case Reject::TpAddendNotReplicated: return "tp_addend_not_replicated";
    case Reject::TpAddendAfterGemm: return "tp_addend_after_gemm";
    case Reject::TpResidualApart: return "tp_residual_apart";
    case Reject::FastPathUsed: return "fast_path_used";
    case Reject::FastPathUnproven: return "fast_path_unproven";
    case Reject::FastPathInvalidated: return "fast_path_proof_invalidated";
    case Reject::FastPathOutranked: return "fast_path_lower_priority";
    case Reject::FastPathOneHost: return "fast_path_needs_one_host";
    case Reject::FastPathCostModel: return "fast_path_cost_model";
    case Reject::FastPathPolicy: return "fast_path_policy";
    case Reject::BisectLimit: return "bisect_limit";
    case Reject::FaultRefused: return "fault_refused";
    case Reject::DeadCodeRemoved: return "dead_code_removed";
    case Reject::NoOpCastRemoved: return "noop_cast_removed";
    case Reject::ConstantFolded: return "constant_folded";
    case Reject::NoOpArithmeticRemoved: return "noop_arithmetic_removed";
    case Reject::CastChainCollapsed: return "cast_chain_collapsed";
    case Reject::LoopsReordered: return "loops_reordered";
    case Reject::GemmEpilogueSplit: return "gemm_epilogue_split";
    case Reject::GemmBiasFolded: return "gemm_bias_folded";
    case Reject::CollectiveKept: return "collective_kept";
    case Reject::AttentionMathForm: return "attention_math_form";
    case Reject::AttentionHeadDimPadded: return "attention_head_dim_padded";
  }
  return "?";
}

std::string reject_reason(Reject r, const FusionConfig& c) {
  switch (r) {
    case Reject::None: return "";
    case Reject::PolicyNone: return "fusion policy 'none' keeps one kernel per node";
    case Reject::Extern: return "extern kernels and collectives do not fuse";
    case Reject::IndirectStore:
      return "an indirect store (scatter) is a kernel of its own: what computes its source is inlined into it, "
             "what reads its result waits for every element";
    case Reject::ReductionSizes: return "reductions over different (numel, rnumel)";
    case Reject::NumelMismatch: return "iteration sizes do not match";
    case Reject::TooManyNodes: return "fused node would exceed " + std::to_string(c.max_fusion_size) + " nodes";
    case Reject::NoSharedData: return "no shared data";
    case Reject::MemoryDepsMismatch: return "memory deps did not match";
    case Reject::IntermediateNodes: return "intermediate nodes between node1 & node2";
    case Reject::HorizontalTooFar:
      return "horizontal fusion: nodes too far apart (> " + std::to_string(c.horizontal_distance_limit) + ")";
    case Reject::HorizontalTooSmall:
      return "horizontal fusion: fewer than " + std::to_string(c.score_fusion_memory_threshold) + " shared bytes";
    case Reject::PeakMemory:
      return "fusion could raise peak memory (single-use inputs it keeps alive > " +
             std::to_string(c.peak_memory_overhead_ratio) + "x the bytes saved)";
    case Reject::SiblingGemmPolicy:
      return "GEMMs sharing an input stay separate extern kernels (merging them is max-autotune only)";
    case Reject::TemplateSiblings:
      return "GEMM templates merge only when they read the same input with the same (M, K, N) and one prologue at most";
    case Reject::TemplatePrologue:
      return "prologue into a GEMM template: needs one prologue over (M, K), read only by the GEMM, reading <= " +
             format_double(static_cast<double>(c.bytes_threshold_multiplier.num) / c.bytes_threshold_multiplier.den) +
             "x what it writes";
    case Reject::TemplateEpilogue:
      return "epilogue of a GEMM template: needs pointwise code over (M, N) reading the GEMM output at its own index";
    case Reject::TemplateUnrelated: return "a GEMM template fuses only with its prologue, epilogue or sibling";
    case Reject::BatchedSiblings:
      return "GEMMs sharing an input run as one batched GEMM over their stacked weights (max-autotune, cuda)";
    case Reject::TpResidualHoisted:
      return "residual add moved in front of the all-reduce, onto rank 0's GEMM (the addend is replicated)";
    case Reject::GemmEpilogue:
      return "GELU (tanh) applied by the GEMM's cuBLASLt epilogue to its f32 result";
    case Reject::TpAddendNotReplicated:
      return "residual add stays after the all-reduce: its addend is not provably the same on every rank";
    case Reject::TpAddendAfterGemm:
      return "residual add stays after the all-reduce: its addend is computed after the GEMM";
    case Reject::TpResidualApart:
      return "residual add stays after the all-reduce, in the next kernel: the forward timed faster that way "
             "(the run's residual_placement)";
    case Reject::FastPathUsed: return "fast path put in place of these nodes (its proof covers this run)";
    case Reject::FastPathUnproven:
      return "fast path blocked: no proof covers this world size, backend and shape class (fusegate prove)";
    case Reject::FastPathInvalidated:
      return "fast path blocked: its proof no longer holds (its kernel source or the GPU changed)";
    case Reject::FastPathOutranked: return "fast path not used: a fast path of higher priority took these nodes";
    case Reject::FastPathOneHost:
      return "fast path blocked: its exchange maps the other ranks' memory, and the ranks span several nodes";
    case Reject::FastPathCostModel:
      return "fast path not used: the cost model says the generic path is faster here (its status says why)";
    case Reject::FastPathPolicy:
      return "fast path not used: max-autotune only (the default policy stays faithful to Inductor)";
    case Reject::BisectLimit: return "not applied: past its FUSEGATE_BISECT limit";
    case Reject::FaultRefused: return "refused by FUSEGATE_FAULT=refuse_fusion:reduction (a test of the gate)";
    case Reject::DeadCodeRemoved: return "removed before scheduling: nothing reads its value (dead code)";
    case Reject::GemmEpilogueSplit:
      return "the graph gave the GELU as the GEMM's epilogue: a kernel of its own, as Inductor runs the program a user "
             "writes (max-autotune on cuda folds it back into the GEMM)";
    case Reject::GemmBiasFolded:
      return "the bias added to the GEMM's result is the GEMM's own (addmm), as Inductor's post-grad pattern folds "
             "it where something other than pointwise ops reads the sum";
    case Reject::NoOpCastRemoved:
      return "removed before scheduling: a cast to the dtype its input has is that input (torch returns the tensor "
             "itself; Inductor runs no kernel for it)";
    case Reject::ConstantFolded:
      return "folded before lowering: computed from constants alone, every element the same number, so one full "
             "(Inductor's constant_fold_uniform_value; the values that only fed it are dead code)";
    case Reject::NoOpArithmeticRemoved:
      return "removed before lowering: adding or subtracting a folded 0, or multiplying or dividing by a folded 1, "
             "is its other operand (Inductor's remove_no_ops)";
    case Reject::CastChainCollapsed:
      return "removed before lowering: a cast of a cast between floating types is one cast from the first value, the "
             "rounding between them dropped (Inductor's joint-graph pattern pointless_convert)";
    case Reject::LoopsReordered:
      return "fused after reordering loops: one side's pointwise loops now run in the other's order, so the two "
             "read or write their shared buffer at one index (Inductor's loop_ordering_after_fusion, a last round)";
    case Reject::CollectiveKept:
      return "kept though nothing reads its value: a collective runs as under torch.compile, where PyTorch "
             "registers the functional collectives' wait_tensor as side-effectful and Dynamo's graph keeps it";
    case Reject::AttentionMathForm:
      return "no fused attention kernel takes this call on an H100/H200 (dtype, head dim, or causal over more or "
             "fewer keys than queries): PyTorch's math form, scaled q and k^T, a batched GEMM, the mask, a softmax, "
             "a GEMM with v (kernels of their own around two library GEMMs)";
    case Reject::AttentionHeadDimPadded:
      return "flash attention pads a head dim that is not a multiple of 8: q, k and v copied with zeros (three "
             "kernels), the result sliced back";
  }
  return "?";
}

std::string reject_reason(Reject r) { return reject_reason(r, FusionConfig{}); }

}  // namespace fg
