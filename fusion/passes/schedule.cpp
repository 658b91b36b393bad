// The fusion scheduler.
//
// Input: scheduler nodes from `lower`, each a pointwise or reduction body
// over its own coordinates, or an extern / collective call. Output: groups of
// nodes, each group one kernel, in an order that respects every dependency.
//
// The default policy follows TorchInductor's `fuse_nodes` so that a user can
// predict the kernel count of a graph the way torch.compile would produce it.
// The numbers below are the fields of FusionConfig (passes/fusion_cost.h),
// whose defaults are Inductor's; legality and scores live there, and this
// file holds the loop that applies them.
//
// 1. Candidates. Every fusable group (not extern, not collective) joins a
//    list per buffer it reads or writes. Within each list, kept in node
//    order, group i is paired with the next
//    max_fusion_buffer_group_pairwise_attempts groups only; pairs are
//    de-duplicated across lists, keeping the order in which they were first
//    met (buffers in first-seen order, then positions). A pair enters the
//    candidate set only if `can_fuse` accepts it.
//
// 2. Scores. A pair scores (template, node type, memory, proximity):
//    template is 1, plus 1 when the two share data and "a template comes
//    first" equals epilogue_fusion_first: 2 for an ordinary fusion that
//    shares data; node type is 1 when both or neither are reductions and
//    they share data; memory is the bytes of accesses both touch at the same
//    index in the fused kernel (a broadcast read counts only the elements its
//    index uses); proximity is minus the distance in the original order.
//    Pairs are compared on the template score first; then, if one memory
//    score exceeds memory_score_ratio times the other, memory alone decides;
//    else the tuple decides. The sort is stable.
//
// 3. Greedy application. Walk the sorted pairs; map each node to the group it
//    now belongs to; re-check `can_fuse` (which includes the cycle check) on
//    the current groups, and fuse. Scores are not recomputed within a round.
//    Up to fuse_nodes_rounds rounds, stopping when the group count no longer
//    changes.
//
// 4. On cuda (loop_ordering_after_fusion) one more round: before a pair is
//    judged, a pair sharing fewer than score_fusion_memory_threshold bytes
//    gets a pointwise side's loops put in the other side's order where that
//    makes a common buffer's accesses meet (passes/loop_order.h). The round
//    records its fusions and the pairs it reordered.
//
// can_fuse gates, in order, each with its own rejection code:
//    extern / collective -> no; iteration spaces: reductions need equal
//    (numel, rnumel), a pointwise joins a reduction when its numel is
//    numel*rnumel (inside the loop) or numel (after it), two pointwise need
//    equal numel; at most max_fusion_size nodes per group; vertical (one
//    reads what the other writes): every such read must be at the index the
//    producer writes ("memory deps did not match"); no shared bytes -> no;
//    horizontal (no data flows between them): not if it could raise peak
//    memory (single-use inputs of the same dtype and size on both sides,
//    which fused stay alive together, above peak_memory_overhead_ratio times
//    the bytes saved), not farther apart than horizontal_distance_limit, and
//    sharing at least score_fusion_memory_threshold bytes; last, a path
//    between the two through a third group would make a cycle
//    ("intermediate nodes between node1 & node2").
//
// Every pair considered, fused or not, is recorded in the ledger with its
// score and reason, so "why didn't this fuse" has an answer. GEMMs sharing an
// input are never candidates in `default` (they are extern kernels); the
// ledger still lists each such pair with its own reason.
//
// max-autotune goes beyond Inductor's default: `lower` turns each linear into
// a GEMM template, a generated kernel, and templates take part in fusion:
//  - siblings: two templates reading the same A with the same (M, K, N)
//    merge into one kernel that computes both from the same rows of A
//    (q/k/v; gate/up), scored like an epilogue;
//  - prologue: a group computing A over (M, K) — a whole norm, reduction
//    and all — fuses into the template when only the templates read its
//    result and it reads at most bytes_threshold_multiplier times what it
//    writes (Inductor's rule); template score 0: prologues go last;
//  - epilogue: pointwise code over (M, N) reading the template outputs at
//    their own index (bias, activation, residual add, silu*mul over merged
//    siblings); template score 1, after ordinary fusions.
//
// Split reductions (an extra kernel for a small output with a long
// reduction) are made before scheduling, by lower, on the cuda backend only,
// as Inductor makes them for Triton only (passes/lower.h, SplitReductions);
// the scheduler sees two reductions. In `default` GEMMs stay extern, as in
// Inductor.
#include "fusion/passes/schedule.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "fusion/bisect.h"
#include "fusion/fault.h"
#include "fusion/errors.h"
#include "fusion/passes/loop_order.h"

namespace fg {

const char* policy_name(FusionPolicy p) {
  switch (p) {
    case FusionPolicy::Default: return "default";
    case FusionPolicy::MaxAutotune: return "max-autotune";
    case FusionPolicy::None: return "none";
  }
  return "?";
}

bool runs_inner(const SchedNode& n, int64_t numel, int64_t rnumel) {
  if (n.is_reduction()) return true;
  return rnumel > 1 && n.numel() == numel * rnumel;
}

std::map<std::string, IndexP> kernel_var_map(const SchedNode& n, int64_t numel, int64_t rnumel) {
  IndexP x = ix_var("x", numel), r = ix_var("r", rnumel);
  std::vector<IndexP> coords;
  if (n.is_reduction()) {
    Shape rs;
    for (auto d : n.reduce_dims) rs.push_back(n.shape[static_cast<size_t>(d)]);
    auto oc = ix_unflatten(x, n.out_shape());
    auto rc = ix_unflatten(r, rs);
    size_t oi = 0, ri = 0;
    for (size_t i = 0; i < n.shape.size(); ++i) {
      bool red = std::find(n.reduce_dims.begin(), n.reduce_dims.end(), static_cast<int64_t>(i)) != n.reduce_dims.end();
      coords.push_back(red ? rc[ri++] : oc[oi++]);
    }
  } else {
    IndexP flat = runs_inner(n, numel, rnumel) ? ix_add(ix_mul(x, rnumel), r) : x;
    if (n.loop_order.empty()) {
      coords = ix_unflatten(flat, n.shape);
    } else {
      // the loops in their order: the flat index over the dims so ordered
      Shape ordered;
      for (int d : n.loop_order) ordered.push_back(n.shape[static_cast<size_t>(d)]);
      std::vector<IndexP> oc = ix_unflatten(flat, ordered);
      coords.assign(n.shape.size(), nullptr);
      for (size_t k = 0; k < oc.size(); ++k) coords[static_cast<size_t>(n.loop_order[k])] = oc[k];
    }
  }
  std::map<std::string, IndexP> m;
  for (size_t k = 0; k < coords.size(); ++k) m["i" + std::to_string(k)] = coords[k];
  return m;
}

namespace {

// Bytes an access touches: a broadcast read counts only the distinct
// elements its index reaches (a [64] weight read at x % 64 counts 64).
int64_t access_bytes(const IndexP& idx, DType t) {
  std::map<std::string, int64_t> vars;
  ix_vars(idx, &vars);
  int64_t n = 1;
  for (const auto& [v, range] : vars) n *= range;
  return std::min(n, idx->hi - idx->lo + 1) * dtype_size(t);
}

}  // namespace

bool kernel_accesses(const LoweredGraph& g, const SchedNode& n, int64_t numel, int64_t rnumel,
                     std::vector<Access>* out) {
  if (!n.fusable()) return false;
  if (n.is_template()) {
    // its own frames: A over (x=m, r=k), B and bias over (n, k), the output
    // over x = m*N + n
    for (const ExprP& e : {n.gemm_a, n.gemm_b, n.gemm_bias}) {
      if (!e) continue;
      std::map<std::string, std::pair<int, IndexP>> loads;
      ex_loads(e, &loads);
      for (const auto& [k, v] : loads)
        out->push_back({v.first, v.second, false, access_bytes(v.second, g.buffers[static_cast<size_t>(v.first)].dtype)});
    }
    IndexP w = ix_var("x", n.gemm_m * n.gemm_n);
    out->push_back({n.out_buffer, w, true, access_bytes(w, g.buffers[static_cast<size_t>(n.out_buffer)].dtype)});
    return true;
  }
  if (n.is_reduction()) {
    if (n.numel() != numel || n.rnumel() != rnumel) return false;
  } else if (!(n.numel() == numel * rnumel || n.numel() == numel)) {
    return false;
  }
  auto m = kernel_var_map(n, numel, rnumel);
  std::map<std::string, std::pair<int, IndexP>> loads;
  ex_loads(ex_subst(n.body, m), &loads);
  for (const auto& [k, v] : loads)
    out->push_back({v.first, v.second, false, access_bytes(v.second, g.buffers[static_cast<size_t>(v.first)].dtype)});
  // the store: output coordinates through the store layout
  std::vector<IndexP> oc;
  if (n.is_scatter()) {
    // an indirect store: where the index says along its dim
    const size_t d = static_cast<size_t>(n.reduce_dims[0]);
    for (size_t k = 0; k < n.shape.size(); ++k) oc.push_back(m["i" + std::to_string(k)]);
    oc[d] = ix_var(n.scatter_var(), n.store.sizes[d]);
    std::map<std::string, std::pair<int, IndexP>> at;
    ex_loads(ex_subst(n.scatter_at, m), &at);
    for (const auto& [k, v] : at)
      out->push_back({v.first, v.second, false, access_bytes(v.second, g.buffers[static_cast<size_t>(v.first)].dtype)});
  } else if (n.is_reduction() && !n.keeps_shape()) {
    oc = ix_unflatten(ix_var("x", numel), n.store.sizes);
  } else {
    std::vector<IndexP> c;
    for (size_t k = 0; k < n.shape.size(); ++k) c.push_back(m["i" + std::to_string(k)]);
    oc = c;
  }
  IndexP w = ix_linear(oc, n.store.strides, n.store.offset);
  out->push_back({n.out_buffer, w, true, access_bytes(w, g.buffers[static_cast<size_t>(n.out_buffer)].dtype)});
  return true;
}

namespace {

class Scheduler {
 public:
  Scheduler(LoweredGraph& g, FusionPolicy p, const FusionConfig& c)
      : g_(g), policy_(p), config_(c), cost_(g, groups_, group_of_, config_) {
    group_of_.resize(g.nodes.size());
    for (const auto& n : g.nodes) {
      for (int b : n.reads) first_seen_.emplace(b, n.id);
      for (int b : n.writes) first_seen_.emplace(b, n.id);
    }
    for (const auto& n : g.nodes) {
      GroupState gr;
      gr.nodes = {n.id};
      gr.reduction = n.is_reduction();
      if (n.is_template()) {
        gr.tmpl = true;
        gr.tm = n.gemm_m;
        gr.tn = n.gemm_n;
        gr.tk = n.gemm_k;
        gr.a_buffer = n.a_buffer;
      }
      gr.numel = n.numel();
      gr.rnumel = n.rnumel();
      gr.min_pos = gr.max_pos = n.id;
      group_of_[static_cast<size_t>(n.id)] = static_cast<int>(groups_.size());
      groups_.push_back(gr);
    }
  }

  Schedule run() {
    record_sibling_gemms();
    if (policy_ != FusionPolicy::None) {
      int round = 1;
      for (; round <= config_.fuse_nodes_rounds; ++round) {
        size_t before = alive_count();
        fuse_once(round, false);
        size_t after = alive_count();
        if (after == before || after <= 1) break;
      }
      if (config_.loop_ordering_after_fusion) fuse_once(std::min(round, config_.fuse_nodes_rounds) + 1, true);
    } else {
      record_policy_none();
    }
    Schedule s;
    s.ledger = std::move(ledger_);
    for (int gi : topo_order()) {
      const GroupState& gr = groups_[static_cast<size_t>(gi)];
      FusedGroup fgp;
      fgp.nodes = gr.nodes;
      fgp.numel = gr.numel;
      fgp.rnumel = gr.rnumel;
      fgp.generated = g_.nodes[static_cast<size_t>(gr.nodes[0])].fusable();
      s.groups.push_back(fgp);
    }
    return s;
  }

 private:
  size_t alive_count() const {
    size_t n = 0;
    for (const auto& gr : groups_) n += gr.alive;
    return n;
  }
  std::string name(const GroupState& gr) const {
    std::string s;
    for (int n : gr.nodes) s += (s.empty() ? "" : "+") + g_.nodes[static_cast<size_t>(n)].name;
    return s;
  }

  // In the reorder round a pair sharing too little first gets a pointwise
  // side's loops in the other side's order where that makes them meet
  // (passes/loop_order.h): the earlier side when it has no reduction, else
  // the later one; the order stays whatever the pair's fate.
  void maybe_reorder(int ga, int gb) {
    const GroupState& a = groups_[static_cast<size_t>(ga)];
    const GroupState& b = groups_[static_cast<size_t>(gb)];
    if (!cost_.fusable(a) || !cost_.fusable(b) || a.tmpl || b.tmpl) return;
    // FUSEGATE_BISECT=decisions:K: past the limit the code stays as it was
    if (bisect_limits().decisions >= 0 && fusions_ >= bisect_limits().decisions) return;
    if (cost_.can_fuse(ga, gb).score[2] >= config_.score_fusion_memory_threshold) return;
    const bool a_first = a.min_pos <= b.min_pos;
    const int g1 = a_first ? ga : gb, g2 = a_first ? gb : ga;
    const int self = !groups_[static_cast<size_t>(g1)].reduction ? g1 : (!groups_[static_cast<size_t>(g2)].reduction ? g2 : -1);
    if (self < 0) return;
    const GroupState& s = groups_[static_cast<size_t>(self)];
    auto order = loop_order_to_meet(g_, s.nodes, groups_[static_cast<size_t>(self == g1 ? g2 : g1)].nodes);
    if (!order) return;
    std::vector<int> identity(order->size());
    for (size_t k = 0; k < identity.size(); ++k) identity[k] = static_cast<int>(k);
    const std::vector<int> want = *order == identity ? std::vector<int>{} : *order;
    bool changed = false;
    for (int n : s.nodes) {
      std::vector<int>& lo = g_.nodes[static_cast<size_t>(n)].loop_order;
      if (lo == want) continue;
      lo = want;
      cost_.loops_changed(n);
      changed = true;
    }
    // a group whose order was already that one was not reordered
    if (changed) reordered_.insert(self);
  }

  void fuse_once(int round, bool reorder) {
    // 1. candidate pairs by shared buffer, in discovery order
    std::vector<int> buffer_order;
    std::map<int, std::vector<int>> by_buffer;
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      const GroupState& gr = groups_[gi];
      if (!gr.alive || !cost_.fusable(gr)) continue;
      std::set<int> bufs;
      for (int n : gr.nodes) {
        const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
        bufs.insert(sn.reads.begin(), sn.reads.end());
        bufs.insert(sn.writes.begin(), sn.writes.end());
      }
      for (int b : bufs) {
        if (!by_buffer.count(b)) buffer_order.push_back(b);
        by_buffer[b].push_back(static_cast<int>(gi));
      }
    }
    std::sort(buffer_order.begin(), buffer_order.end(), [&](int x, int y) {
      return first_seen(x) < first_seen(y);
    });
    const size_t window = static_cast<size_t>(config_.max_fusion_buffer_group_pairwise_attempts);
    std::vector<std::pair<int, int>> pairs;
    std::set<std::pair<int, int>> seen;
    for (int b : buffer_order) {
      auto& list = by_buffer[b];
      std::sort(list.begin(), list.end(), [&](int x, int y) { return groups_[x].min_pos < groups_[y].min_pos; });
      for (size_t i = 0; i < list.size(); ++i)
        for (size_t j = i + 1; j < list.size() && j <= i + window; ++j)
          if (seen.insert({list[i], list[j]}).second) pairs.push_back({list[i], list[j]});
    }
    struct Cand { int a, b; Score s; };
    std::vector<Cand> cands;
    for (auto [x, y] : pairs) {
      if (reorder) maybe_reorder(x, y);
      FusionDecision d = cost_.can_fuse(x, y);
      if (d.ok()) cands.push_back({x, y, d.score});
      else if (!reorder || reordered_.count(x) || reordered_.count(y)) record(x, y, d.score, false, d.reason, round);
    }
    // 2. stable sort by score
    std::stable_sort(cands.begin(), cands.end(),
                     [&](const Cand& p, const Cand& q) { return score_greater(p.s, q.s, config_); });
    // 3. greedy; the ledger keeps the score the pair was sorted by
    for (const Cand& c : cands) {
      int ga = find(c.a), gb = find(c.b);
      if (ga == gb) continue;
      if (reorder) maybe_reorder(ga, gb);
      FusionDecision d = cost_.can_fuse(ga, gb);
      // FUSEGATE_BISECT=decisions:K: the first K fusions only (fusion/bisect.h);
      // checked before the test fault below refuses a fusion, so ranks of
      // which one has it agree on every fusion past the limit
      if (d.ok() && bisect_limits().decisions >= 0 && fusions_ >= bisect_limits().decisions) {
        record(ga, gb, c.s, false, Reject::BisectLimit, round);
        continue;
      }
      // a test of the gate: a changed fusion rule that refuses every fusion
      // with a reduction (FUSEGATE_FAULT=refuse_fusion:reduction)
      if (d.ok() && fault_argument("refuse_fusion") == "reduction" &&
          (groups_[static_cast<size_t>(ga)].reduction || groups_[static_cast<size_t>(gb)].reduction)) {
        record(ga, gb, c.s, false, Reject::FaultRefused, round);
        continue;
      }
      // the reorder round records its fusions and the pairs whose loops it
      // reordered: the rest it refuses as the rounds before did
      const bool met = reorder && (reordered_.count(ga) || reordered_.count(gb));
      if (!reorder || met || d.ok()) record(ga, gb, c.s, d.ok(), d.ok() && met ? Reject::LoopsReordered : d.reason, round);
      if (d.ok()) {
        merge(ga, gb);
        ++fusions_;
      }
    }
  }

  int first_seen(int buffer) const {
    auto it = first_seen_.find(buffer);
    return it == first_seen_.end() ? static_cast<int>(g_.nodes.size()) : it->second;
  }

  int find(int gi) const {
    while (!groups_[static_cast<size_t>(gi)].alive) gi = forward_.at(gi);
    return gi;
  }

  void merge(int ga, int gb) {
    GroupState& a = groups_[static_cast<size_t>(ga)];
    GroupState& b = groups_[static_cast<size_t>(gb)];
    int64_t numel = 0, rnumel = 1;
    Reject why = Reject::None;
    if (a.tmpl || b.tmpl) {
      const GroupState& t = a.tmpl ? a : b;
      const GroupState& o = a.tmpl ? b : a;
      bool prologue = !o.tmpl && o.max_pos < t.min_pos;
      bool epilogue = !o.tmpl && !prologue;
      numel = t.tm * t.tn;
      a.tm = t.tm; a.tn = t.tn; a.tk = t.tk; a.a_buffer = t.a_buffer;
      a.has_prologue = a.has_prologue || b.has_prologue || prologue;
      a.has_epilogue = a.has_epilogue || b.has_epilogue || epilogue;
      a.tmpl = true;
      a.reduction = false;
      a.numel = numel;
      a.rnumel = 1;
      absorb(ga, gb);
      return;
    }
    FG_CHECK(cost_.combined_space(a, b, &numel, &rnumel, &why), "merging groups that cannot share a kernel");
    a.reduction = a.reduction || b.reduction;
    a.numel = numel;
    a.rnumel = rnumel;
    absorb(ga, gb);
  }

  // Group gb's nodes join group ga; gb is gone (forwarded to ga).
  void absorb(int ga, int gb) {
    GroupState& a = groups_[static_cast<size_t>(ga)];
    GroupState& b = groups_[static_cast<size_t>(gb)];
    a.nodes.insert(a.nodes.end(), b.nodes.begin(), b.nodes.end());
    std::sort(a.nodes.begin(), a.nodes.end());
    a.min_pos = std::min(a.min_pos, b.min_pos);
    a.max_pos = std::max(a.max_pos, b.max_pos);
    b.alive = false;
    // the merged group's lines: the two lists merged, when both are known
    auto la = group_lines_.find(ga), lb = group_lines_.find(gb);
    if (la != group_lines_.end() && lb != group_lines_.end() &&
        la->second.first + lb->second.first == a.nodes.size()) {
      Lines both;
      merge_ledger_lines(la->second.second, lb->second.second, &both);
      la->second = {a.nodes.size(), std::move(both)};
    }
    group_lines_.erase(gb);
    forward_[gb] = ga;
    for (int n : b.nodes) group_of_[static_cast<size_t>(n)] = ga;
    cost_.absorbed(ga);
  }

  void record(int ga, int gb, const Score& s, bool fused, Reject r, int round) {
    LedgerEntry e;
    e.first = name(groups_[static_cast<size_t>(ga)]);
    e.second = name(groups_[static_cast<size_t>(gb)]);
    e.score = s;
    e.fused = fused;
    e.reason = r;
    e.round = round;
    // the union of the two groups' lines, in LedgerEntry::add_source's
    // order, merged from each group's list kept sorted (a group that covers
    // a long inlined chain holds thousands: sorting them again for every
    // decision made scheduling a 50k chain take seconds)
    const Lines& la = group_lines(ga);
    const Lines& lb = group_lines(gb);
    Lines both;
    merge_ledger_lines(la, lb, &both);
    e.source.reserve(both.size());
    for (const LedgerLine& l : both) e.source.push_back(*l.text);
    ledger_.push_back(e);
  }

  // A group's source lines in the ledger's order; `text` points into the
  // scheduler node's lines.
  using Lines = std::vector<LedgerLine>;
  const Lines& node_lines(int n) {
    auto it = node_lines_.find(n);
    if (it != node_lines_.end()) return it->second;
    Lines l, sorted;
    for (const std::string& text : g_.nodes[static_cast<size_t>(n)].lines) l.push_back(ledger_line(text, &files_));
    std::sort(l.begin(), l.end(), ledger_line_less);
    merge_ledger_lines(l, {}, &sorted);  // each text once
    return node_lines_[n] = std::move(sorted);
  }
  // A group's lines, kept while its nodes stay as they were (absorb merges
  // the two lists)
  const Lines& group_lines(int gi) {
    const GroupState& gr = groups_[static_cast<size_t>(gi)];
    auto it = group_lines_.find(gi);
    if (it != group_lines_.end() && it->second.first == gr.nodes.size()) return it->second.second;
    Lines all, next;
    for (int n : gr.nodes) {
      merge_ledger_lines(all, node_lines(n), &next);
      all.swap(next);
    }
    auto& slot = group_lines_[gi];
    slot = {gr.nodes.size(), std::move(all)};
    return slot.second;
  }

  // GEMMs reading the same input (q/k/v, gate/up) are never candidates in
  // the default policy, as in Inductor; the ledger still says so, because
  // "why are these two GEMMs" is the question users ask.
  //
  // In max-autotune, GEMMs that stayed extern (the cuda backend has no GEMM
  // template) and read the same input with weights of one shape and type,
  // without bias, become one group: the runtime runs them as one batched
  // GEMM over their weights stacked once (as a frozen model's weights are
  // prepared once), writing each result where its buffer lives.
  void record_sibling_gemms() {
    std::map<std::pair<int, std::string>, std::vector<int>> by_input;
    for (const auto& n : g_.nodes)
      if (n.kind == SNKind::Extern && (n.op.op == Op::Linear || n.op.op == Op::Matmul) && !n.args.empty())
        by_input[{n.args[0].first, n.args[0].second.str()}].push_back(n.id);
    for (const auto& [in, ids] : by_input)
      for (size_t i = 0; i + 1 < ids.size(); ++i) {
        int a = ids[i], b = ids[i + 1];
        int ga = group_of_[static_cast<size_t>(a)], gb = group_of_[static_cast<size_t>(b)];
        if (policy_ != FusionPolicy::MaxAutotune || !config_.batch_sibling_gemms) {
          record(ga, gb, {0, 0, 0, a - b}, false, Reject::SiblingGemmPolicy, 0);
          continue;
        }
        if (!cost_.batchable(g_.nodes[static_cast<size_t>(a)], g_.nodes[static_cast<size_t>(b)])) continue;
        record(ga, gb, {0, 0, 0, a - b}, true, Reject::BatchedSiblings, 0);
        absorb(ga, gb);
      }
  }

  void record_policy_none() {
    for (const auto& n : g_.nodes)
      for (int d : n.deps)
        if (g_.nodes[static_cast<size_t>(d)].fusable() && n.fusable())
          record(group_of_[static_cast<size_t>(d)], group_of_[static_cast<size_t>(n.id)], {0, 0, 0, d - n.id}, false,
                 Reject::PolicyNone, 1);
  }

  // Groups in dependency order; ties by first position (Kahn's algorithm).
  std::vector<int> topo_order() const {
    std::map<int, std::set<int>> succ;
    std::map<int, int> indegree;
    std::vector<int> alive;
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      if (!groups_[gi].alive) continue;
      alive.push_back(static_cast<int>(gi));
      indegree[static_cast<int>(gi)];
      for (int n : groups_[gi].nodes)
        for (int d : g_.nodes[static_cast<size_t>(n)].deps) {
          int gd = group_of_[static_cast<size_t>(d)];
          if (gd != static_cast<int>(gi) && succ[gd].insert(static_cast<int>(gi)).second) ++indegree[static_cast<int>(gi)];
        }
    }
    auto later = [&](int x, int y) { return groups_[x].min_pos > groups_[y].min_pos; };
    std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
    for (int gi : alive)
      if (indegree[gi] == 0) ready.push(gi);
    std::vector<int> order;
    while (!ready.empty()) {
      int gi = ready.top();
      ready.pop();
      order.push_back(gi);
      for (int s2 : succ[gi])
        if (--indegree[s2] == 0) ready.push(s2);
    }
    FG_CHECK(order.size() == alive.size(), "fused groups form a cycle");
    return order;
  }

  LoweredGraph& g_;
  FusionPolicy policy_;
  FusionConfig config_;
  std::vector<GroupState> groups_;
  std::vector<int> group_of_;  // scheduler node -> its group
  FusionCost cost_;            // reads groups_ and group_of_
  std::map<int, int> forward_;
  std::vector<LedgerEntry> ledger_;
  int64_t fusions_ = 0;  // fusions applied, for FUSEGATE_BISECT=decisions:K
  std::set<int> reordered_;  // groups whose loops the reorder round reordered
  std::map<int, int> first_seen_;
  std::set<std::string> files_;                               // the files lines name, each once
  std::map<int, Lines> node_lines_;                           // scheduler node -> its lines, sorted
  std::map<int, std::pair<size_t, Lines>> group_lines_;       // group -> (its node count then, its lines)
};

}  // namespace

Schedule schedule(LoweredGraph& g, FusionPolicy policy, const FusionConfig& config) {
  return Scheduler(g, policy, config).run();
}

Schedule schedule(LoweredGraph& g, FusionPolicy policy) { return schedule(g, policy, FusionConfig{}); }

}  // namespace fg
