// fusion_cost: may two groups share a kernel (legality), and what is fusing
// them worth (the score)? The scheduler's loop (passes/schedule.cpp) asks
// here and only walks candidates and merges (STYLE 5: legality, cost and
// mutation apart).
//
// Every number these decisions use is a field of FusionConfig. Where
// TorchInductor has a config for it (torch/_inductor/config.py), the field
// has that name and default; where Inductor writes it as a literal, the
// field is named after what it limits and says where the literal lives.
// Ratios are integers or exact fractions: the decisions are integer
// comparisons, as they were before the numbers moved here.
//
// Before: groups of lowered scheduler nodes, each with one iteration space.
// After: nothing changes; a decision carries its rejection reason and score.
#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "fusion/passes/fusion_ledger.h"
#include "fusion/passes/lower.h"
#include "fusion/passes/loop_order.h"

namespace fg {

// num/den, compared as products so that no decision depends on rounding.
struct Ratio {
  int64_t num = 1, den = 1;
};

struct FusionConfig {
  // Inductor configs, same names and defaults.
  // Candidates: in a buffer's list of groups, group i pairs with the next
  // this many only.
  int max_fusion_buffer_group_pairwise_attempts = 64;
  // Scheduler nodes in one fused group.
  int max_fusion_size = 64;
  // Bytes a horizontal fusion (no data flows between the two) must share.
  int64_t score_fusion_memory_threshold = 10;
  // Template score: whether template epilogues go before ordinary fusions.
  bool epilogue_fusion_first = false;

  // Literals in Inductor's code.
  // Rounds of candidate search and fusion (Scheduler.fuse_nodes: range(10)).
  int fuse_nodes_rounds = 10;
  // Largest distance in the original order of a horizontal fusion
  // (Scheduler.are_long_distant_nodes: proximity_score > 64).
  int64_t horizontal_distance_limit = 64;
  // Above this ratio of memory scores, memory alone orders two candidates
  // (FusionScore.__lt__: threshold = 16).
  int64_t memory_score_ratio = 16;
  // Reject a horizontal fusion whose kept-alive single-use inputs exceed this
  // many times the bytes it saves (Scheduler.can_fusion_increase_peak_memory:
  // memory_overhead > 32 * score).
  int64_t peak_memory_overhead_ratio = 32;
  // A prologue fused into a GEMM template reads at most this much of what it
  // writes (BYTES_THRESHOLD_MULTIPLIER = 1.1 in Inductor's prologue check).
  Ratio bytes_threshold_multiplier = {11, 10};
  // One more round after fusion settles, in which a pair sharing fewer than
  // score_fusion_memory_threshold bytes gets a pointwise side's loops put in
  // the other side's order where that makes their accesses meet
  // (passes/loop_order.h). Inductor's config of the name is on for GPUs and
  // off for its C++ backend; compile turns it on for cuda.
  bool loop_ordering_after_fusion = false;
  // fusegate's own (no Inductor config): under max-autotune, extern GEMMs
  // that read one input with weights of one shape run as one batched GEMM.
  // Off for the program Inductor runs (CompileOptions::inductor_program).
  bool batch_sibling_gemms = true;
};

// (template, node type, memory bytes, proximity); the higher fuses first.
using Score = std::array<int64_t, 4>;
// a fuses before b: the template score first; then, if one memory score
// exceeds memory_score_ratio times the other, memory alone; else the tuple.
bool score_greater(const Score& a, const Score& b, const FusionConfig& c);

// A group while the scheduler works on it: its nodes, its kernel's iteration
// space, its place in the original order and what it holds of a GEMM template.
struct GroupState {
  std::vector<int> nodes;  // sorted by original position
  bool tmpl = false;       // holds GEMM template(s); then numel = M*N, rnumel = 1
  int64_t tm = 0, tn = 0, tk = 0;
  int a_buffer = -1;
  bool has_prologue = false, has_epilogue = false;
  bool reduction = false;
  int64_t numel = 0, rnumel = 1;
  int min_pos = 0, max_pos = 0;
  bool alive = true;
};

// Reject::None accepts. A pair refused by an early gate carries the score
// as far as it was computed; the ledger shows it as it is.
struct FusionDecision {
  Reject reason = Reject::None;
  Score score{};
  bool ok() const { return reason == Reject::None; }
};

// Legality and score of fusing two of the scheduler's groups. It reads the
// groups and the node -> group map (the scheduler's, by reference; it never
// changes them) and caches every node's accesses per kernel frame.
class FusionCost {
 public:
  FusionCost(const LoweredGraph& g, const std::vector<GroupState>& groups, const std::vector<int>& group_of,
             const FusionConfig& c);

  // can_fuse gates, in order, each with its own rejection code (the essay
  // at the top of passes/schedule.cpp says why each exists).
  FusionDecision can_fuse(int ga, int gb);
  // The kernel iteration space of the two groups together, if any.
  bool combined_space(const GroupState& a, const GroupState& b, int64_t* numel, int64_t* rnumel, Reject* why) const;
  // Whether extern GEMMs a and b (b the later) can run as one batched GEMM
  // over their stacked weights, at a's place.
  bool batchable(const SchedNode& a, const SchedNode& b) const;
  // Pointwise or reduction code (not an extern or collective call).
  bool fusable(const GroupState& gr) const;
  // Group `into` took another group's nodes (the cycle check keeps the
  // groups of several nodes: only they can span another group's position).
  void absorbed(int into) { multi_.push_back(into); }
  // Node `node`'s loops were reordered: its cached accesses are stale.
  void loops_changed(int node);

 private:
  // A node's access in a kernel over (numel, rnumel), its index interned to
  // an integer so that groups compare without strings.
  struct Acc {
    int buffer;
    int index;  // interned index key
    int64_t bytes;
    bool write;
  };
  const std::vector<Acc>& accesses(int node, int64_t numel, int64_t rnumel);
  const std::string& index_key(int id) const { return index_names_[static_cast<size_t>(id)]; }

  Reject gates(int ga, int gb, Score* score);
  bool scatter_may_fuse(const GroupState& a, const GroupState& b) const;
  bool has_scatter(const GroupState& gr) const;
  Reject template_gates(int ga, int gb, Score* score);
  bool cycle(int ga, int gb);
  bool path_through_other(const GroupState& from_later, const GroupState& earlier, int ga, int gb, bool prune);
  bool raises_peak_memory(const GroupState& a, const GroupState& b, int64_t saved) const;
  std::string template_a_key(const GroupState& t) const;
  std::vector<int> templates_of(const GroupState& t) const;

  const LoweredGraph& g_;
  const std::vector<GroupState>& groups_;
  const std::vector<int>& group_of_;
  const FusionConfig& config_;
  std::map<std::tuple<int, int64_t, int64_t>, std::vector<Acc>> access_cache_;
  // buffers a node reads at an index that is not affine in its own loops
  // (a floor-div or modulo a reshape left: Inductor's MemoryDep of such a
  // read never equals its writer's)
  const std::set<int>& reshaped_reads(int node);
  std::map<int, std::set<int>> reshaped_cache_;
  // on a GPU (loop ordering after fusion), whether two groups that do not
  // read each other share an access as Inductor's scheduler compares its
  // memory dependencies there: equal over each node's own loops
  // (passes/loop_order.h, own_loop_deps). Where a node's accesses cannot
  // be put so, they are taken to share (the flat comparison stands).
  bool own_loops_share(const GroupState& a, const GroupState& b);
  const std::optional<std::vector<OwnDep>>& own_deps(int node);
  std::map<int, std::pair<std::vector<int>, std::optional<std::vector<OwnDep>>>> own_cache_;
  std::unordered_map<std::string, int> index_ids_;
  std::vector<std::string> index_names_;
  std::vector<std::vector<int>> readers_;  // buffer -> scheduler nodes reading it
  // the cycle check's walk: groups seen in the current walk carry its stamp
  std::vector<int> seen_;
  std::vector<int> stack_;
  int stamp_ = 0;
  std::vector<int> multi_;  // groups that absorbed another (dead or repeated ones skipped when read)
  size_t multi_limit_ = 64;  // its size that triggers the next clean-up
};

}  // namespace fg
