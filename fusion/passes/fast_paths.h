// fast_paths: puts hand-written fused kernels (kernels/fastpaths/) in place
// of the patterns they match, where the run asks for them and a proof allows
// them. Runs right after decompose, before the max-autotune rewrites
// (gemm_epilogue, tp_rewrite): those see the fast paths as extern nodes.
//
// Per site of each fast path asked for (FastPathSelection):
//   forced (ab, prove)                        -> eligible
//   max-autotune only, other policy           -> "not used: max-autotune only (...)"
//   cost model: nothing to gain here         -> "not used: cost model (...)"
//   cannot run here (one host)                -> "blocked: ..."
//   proof invalid (source or GPU changed)     -> "blocked: proof invalidated (...)"
//   no proof at this world size and backend   -> "blocked: unproven under TP"
//   a proof here, of other shape classes      -> "blocked: unproven for this shape class (its proof
//                                                 covers ...)"
//   else                                      -> eligible
// The policy rule: gate_up_swiglu (FastPathSpec::max_autotune_only) runs in
// max-autotune only; the default policy stays faithful to Inductor, which
// has no such kernel.
// The cost model ("can fuse is not should fuse"): a fast path whose only
// gain is the exchange it fuses (FastPathSpec::exchange_only_gain) is
// refused on one rank on the cuda backend, where it was measured slower than
// the generic path it replaces: allreduce_residual_rmsnorm took 10.2 us
// on an H100 at world size 1 (tp_block_llama_h2048, max-autotune) where the
// generic path's fused add + RMSNorm took 4.1 us, the residual add riding on
// the O GEMM (bench/RESULTS.md). On the cpu backend its host kernel is the
// generic path's loop in the generic order, and measured no slower
// (tp_block_llama, world size 1, 200 forwards on 2 cores: median 2.72-2.81
// ms with it, 2.75-2.76 ms without), so it stays. A fast path whose host
// kernel is a reference loop (FastPathSpec::cuda_gain_only: gate_up_swiglu,
// a GEMM written as three loops against the generic path's library GEMM) is
// refused on the cpu backend: at tp_block_llama's size (M 128, N 1024, K
// 256) the loop alone took 25.9-38.7 ms on this 2-core machine, the whole
// generic forward 2.9 ms (default) and 17.4-18.1 ms (max-autotune). A fast
// path measured slower on cuda than what runs without it
// (FastPathSpec::cuda_measured_slower: rmsnorm_gate_up_swiglu, whose row
// norms in the GEMM's producer warps cost the kernel more than the norm
// kernel they save) is refused there with the measurement as its reason.
// Forced runs (ab, prove) skip the policy rule and the cost model.
// Eligible sites are taken by priority (then name, then position); a site
// overlapping one already taken is "not used: lower priority than X". Each
// site is a ledger entry. A fast path's status is the best of its sites':
// used, blocked: proof invalidated, blocked: unproven under TP, not used:
// lower priority, not matched; "not selected" when the run did not ask.
//
// Before: a verified, decomposed graph. After: a verified graph in which
// every taken site's nodes are gone, its fast_path nodes (and the views that
// stand for what it replaced) in their place, and the nodes only they read
// removed. Outputs keep their order.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/options.h"
#include "fusion/passes/fusion_ledger.h"

namespace fg {

// What the proofs allow at this world size and backend; filled by the
// harness (harness/record/proofs.h) from golden/proofs/.
struct FastPathProofs {
  std::map<std::string, std::string> invalid;                // name -> why its proof is invalid
  std::map<std::string, std::set<std::string>> shape_classes;  // name -> classes its proof covers here
  std::set<std::string> forced;                              // run without a proof (ab, prove)
  // name -> why it cannot run in this run whatever its proof says
  // (a one-host exchange when the ranks span several nodes)
  std::map<std::string, std::string> blocked;
};

struct FastPathStatus {
  std::string status;                      // used | blocked: ... | not used: ... | not matched | not selected
  std::vector<std::string> shape_classes;  // of the sites found
};

// The status texts, written once.
extern const char* const kFastPathUsed;
extern const char* const kFastPathUnproven;
extern const char* const kFastPathOtherShapeClass;  // the start of its status
extern const char* const kFastPathNotMatched;
extern const char* const kFastPathNotSelected;

// Orders statuses, best first (used, blocked: proof invalidated, blocked:
// unproven, not used, not matched, not selected): a fast path over several
// graphs reports the best.
int fast_path_status_order(const std::string& status);

// Where the graph runs, for the cost model (world size 0: not known, no
// refusal of the exchange-only kind; the backend's refusals still hold) and
// the policy rule (max-autotune only fast paths). compile() passes all
// three; a caller that leaves the policy out gets max-autotune's rules.
struct FastPathTarget {
  Backend backend = Backend::Cpu;
  int world_size = 0;
  FusionPolicy fusion = FusionPolicy::MaxAutotune;
};

// The policy's and the cost model's refusal of `spec` at `target`: "" or why
// it does not run there. Decided before the proof is looked at: a fast path
// that would not run here whatever its proof says reads "not used", not
// "blocked".
struct FastPathSpec;  // fusion/fastpaths/catalog.h
std::string fast_path_cost_refusal(const FastPathSpec& spec, const FastPathTarget& target);

Graph apply_fast_paths(const Graph& g, const FastPathSelection& sel, const FastPathProofs& proofs,
                       std::vector<LedgerEntry>* ledger, std::map<std::string, FastPathStatus>* status,
                       const FastPathTarget& target = {});

}  // namespace fg
