#include "fusion/passes/fusion_cost.h"

#include <algorithm>
#include <set>

#include "fusion/errors.h"
#include "fusion/passes/schedule.h"

namespace fg {

bool score_greater(const Score& a, const Score& b, const FusionConfig& c) {
  if (a[0] != b[0]) return a[0] > b[0];
  int64_t ma = a[2], mb = b[2];
  if (ma > c.memory_score_ratio * mb || mb > c.memory_score_ratio * ma) return ma > mb;
  return std::tie(a[1], a[2], a[3]) > std::tie(b[1], b[2], b[3]);
}

namespace {

// Inductor's template score: 0 for a prologue (prologues go last); else 1,
// plus 1 when "the template comes first" agrees with epilogue_fusion_first
// and the two share data. An epilogue or a sibling has the template first;
// an ordinary fusion has none.
int64_t template_score(bool template_first, bool prologue, int64_t mem, const FusionConfig& c) {
  if (prologue) return 0;
  return 1 + (template_first == c.epilogue_fusion_first && mem > 0 ? 1 : 0);
}

}  // namespace

FusionCost::FusionCost(const LoweredGraph& g, const std::vector<GroupState>& groups, const std::vector<int>& group_of,
                       const FusionConfig& c)
    : g_(g), groups_(groups), group_of_(group_of), config_(c) {
  seen_.assign(g.nodes.size(), 0);
  readers_.assign(g.buffers.size(), {});
  for (const auto& n : g.nodes)
    for (int b : n.reads) readers_[static_cast<size_t>(b)].push_back(n.id);
}

bool FusionCost::fusable(const GroupState& gr) const { return g_.nodes[static_cast<size_t>(gr.nodes[0])].fusable(); }

FusionDecision FusionCost::can_fuse(int ga, int gb) {
  FusionDecision d;
  d.reason = gates(ga, gb, &d.score);
  return d;
}

bool FusionCost::combined_space(const GroupState& a, const GroupState& b, int64_t* numel, int64_t* rnumel,
                                Reject* why) const {
  if (a.reduction && b.reduction) {
    if (a.numel != b.numel || a.rnumel != b.rnumel) { *why = Reject::ReductionSizes; return false; }
    *numel = a.numel; *rnumel = a.rnumel;
    return true;
  }
  if (a.reduction || b.reduction) {
    const GroupState& red = a.reduction ? a : b;
    const GroupState& pw = a.reduction ? b : a;
    // a pointwise group may hold nodes of both sizes only if it is itself
    // already fused into a reduction, which `reduction` would say
    if (pw.numel != red.numel * red.rnumel && pw.numel != red.numel) { *why = Reject::NumelMismatch; return false; }
    *numel = red.numel; *rnumel = red.rnumel;
    return true;
  }
  if (a.numel != b.numel) { *why = Reject::NumelMismatch; return false; }
  *numel = a.numel; *rnumel = 1;
  return true;
}

const std::vector<FusionCost::Acc>& FusionCost::accesses(int node, int64_t numel, int64_t rnumel) {
  auto key = std::make_tuple(node, numel, rnumel);
  auto it = access_cache_.find(key);
  if (it != access_cache_.end()) return it->second;
  std::vector<Access> acc;
  bool ok = kernel_accesses(g_, g_.nodes[static_cast<size_t>(node)], numel, rnumel, &acc);
  FG_CHECK(ok, "node placed in a kernel it does not fit");
  std::vector<Acc> out;
  for (const Access& a : acc) {
    auto [ii, fresh] = index_ids_.emplace(a.index->key, static_cast<int>(index_ids_.size()));
    if (fresh) index_names_.push_back(a.index->key);
    out.push_back({a.buffer, ii->second, a.bytes, a.write});
  }
  return access_cache_[key] = std::move(out);
}

const std::optional<std::vector<OwnDep>>& FusionCost::own_deps(int node) {
  const SchedNode& n = g_.nodes[static_cast<size_t>(node)];
  auto it = own_cache_.find(node);
  if (it == own_cache_.end() || it->second.first != n.loop_order)
    it = own_cache_.insert_or_assign(node, std::make_pair(n.loop_order, own_loop_deps(n))).first;
  return it->second.second;
}

bool FusionCost::own_loops_share(const GroupState& a, const GroupState& b) {
  std::vector<OwnDep> da;
  for (int n : a.nodes) {
    const auto& d = own_deps(n);
    if (!d) return true;
    da.insert(da.end(), d->begin(), d->end());
  }
  for (int n : b.nodes) {
    const auto& d = own_deps(n);
    if (!d) return true;
    for (const OwnDep& x : *d)
      if (std::find(da.begin(), da.end(), x) != da.end()) return true;
  }
  return false;
}

namespace {
bool has_div_or_mod(const IndexP& ix) {
  for (const auto& [c, atom] : ix->terms) {
    if (atom->kind == IndexAtom::Div || atom->kind == IndexAtom::Mod) return true;
    if (atom->arg && has_div_or_mod(atom->arg)) return true;
  }
  return false;
}
}  // namespace

const std::set<int>& FusionCost::reshaped_reads(int node) {
  auto it = reshaped_cache_.find(node);
  if (it != reshaped_cache_.end()) return it->second;
  std::set<int> out;
  const SchedNode& sn = g_.nodes[static_cast<size_t>(node)];
  if (sn.kind == SNKind::Pointwise && sn.body) {
    std::map<std::string, std::pair<int, IndexP>> loads;
    ex_loads(sn.body, &loads);
    for (const auto& [k, bi] : loads)
      if (bi.second && has_div_or_mod(bi.second)) out.insert(bi.first);
  }
  return reshaped_cache_[node] = std::move(out);
}

void FusionCost::loops_changed(int node) {
  auto it = access_cache_.lower_bound(std::make_tuple(node, INT64_MIN, INT64_MIN));
  while (it != access_cache_.end() && std::get<0>(it->first) == node) it = access_cache_.erase(it);
}

// Is there a path between the groups through a third group? Walks the
// groups `from_later` depends on, group by group: a group runs as one kernel,
// so reaching any of its nodes reaches the inputs of all of them (a walk over
// nodes alone misses a path that enters a group at one node and leaves it at
// another: found by the fuzzer on cuda, where two split variances over the
// same input fused crosswise into a cycle). `prune` skips the groups that end
// before `earlier` begins: sound only when no third group spans `earlier`'s
// first position (a path back from a group wholly before it to `earlier`
// must pass through such a group), which cycle() checks.
bool FusionCost::path_through_other(const GroupState& from_later, const GroupState& earlier, int ga, int gb,
                                    bool prune) {
  const int target = group_of_[static_cast<size_t>(earlier.nodes[0])];
  if (seen_.size() < groups_.size()) seen_.resize(groups_.size(), 0);
  std::vector<int>& stack = stack_;  // groups to expand
  stack.clear();
  ++stamp_;
  auto push_deps = [&](const GroupState& gr, bool first) {
    for (int n : gr.nodes)
      for (int d : g_.nodes[static_cast<size_t>(n)].deps) {
        const int gd = group_of_[static_cast<size_t>(d)];
        if (gd == ga || gd == gb) {
          // a third group reading the earlier one closes the path (the later
          // one's own reads of it are the direct edge, not a path)
          if (!first && gd == target) return true;
          continue;
        }
        if (seen_[static_cast<size_t>(gd)] == stamp_) continue;
        seen_[static_cast<size_t>(gd)] = stamp_;
        if (prune && groups_[static_cast<size_t>(gd)].max_pos < earlier.min_pos) continue;
        stack.push_back(gd);
      }
    return false;
  };
  push_deps(from_later, true);
  while (!stack.empty()) {
    const int gi = stack.back();
    stack.pop_back();
    if (push_deps(groups_[static_cast<size_t>(gi)], false)) return true;
  }
  return false;
}

// Fusing would make a cycle: a path between the two runs through a third
// group, which would have to run both before and after the fused kernel.
bool FusionCost::cycle(int ga, int gb) {
  const GroupState& a = groups_[static_cast<size_t>(ga)];
  const GroupState& b = groups_[static_cast<size_t>(gb)];
  const GroupState& early = a.min_pos <= b.min_pos ? a : b;
  const GroupState& late = a.min_pos <= b.min_pos ? b : a;
  // a third group spanning a group's first position: then no pruning below it
  auto spanned = [&](const GroupState& x) {
    for (int m : multi_) {
      const GroupState& s = groups_[static_cast<size_t>(m)];
      if (m != ga && m != gb && s.alive && s.min_pos < x.min_pos && s.max_pos >= x.min_pos) return true;
    }
    return false;
  };
  if (multi_.size() > multi_limit_) {  // drop dead and repeated entries when the list has doubled
    std::sort(multi_.begin(), multi_.end());
    multi_.erase(std::unique(multi_.begin(), multi_.end()), multi_.end());
    multi_.erase(std::remove_if(multi_.begin(), multi_.end(),
                                [&](int m) { return !groups_[static_cast<size_t>(m)].alive; }),
                 multi_.end());
    multi_limit_ = std::max<size_t>(64, 2 * multi_.size());
  }
  return path_through_other(late, early, ga, gb, !spanned(early)) ||
         path_through_other(early, late, ga, gb, !spanned(late));
}

// An indirect store runs alone but beside other serial rows of its
// iteration space: the sort that gives its positions (argsort, then scatter
// along the same dim) and other indirect stores over the same source rows
// (as Inductor fuses its scatters with such nodes). Every row still runs in
// order, each node's stores in graph order. The usual gates then judge the
// pair: their loops must match, a read must be at the element its writer
// wrote (so nothing reads an indirect store's result).
bool FusionCost::scatter_may_fuse(const GroupState& a, const GroupState& b) const {
  for (const GroupState* gr : {&a, &b})
    for (int n : gr->nodes) {
      const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
      if (!sn.is_scatter() && !sn.is_sort()) return false;
    }
  return true;
}

bool FusionCost::has_scatter(const GroupState& gr) const {
  for (int n : gr.nodes)
    if (g_.nodes[static_cast<size_t>(n)].is_scatter()) return true;
  return false;
}

Reject FusionCost::gates(int ga, int gb, Score* score) {
  const GroupState& a = groups_[static_cast<size_t>(ga)];
  const GroupState& b = groups_[static_cast<size_t>(gb)];
  *score = {0, 0, 0, -std::max(std::abs(a.min_pos - b.max_pos), std::abs(b.min_pos - a.max_pos))};
  if (!fusable(a) || !fusable(b)) return Reject::Extern;
  // (a group holding one may begin with the sort it reads)
  if ((has_scatter(a) || has_scatter(b)) && !scatter_may_fuse(a, b)) return Reject::IndirectStore;
  if (a.tmpl || b.tmpl) return template_gates(ga, gb, score);
  int64_t numel, rnumel;
  Reject why = Reject::None;
  if (!combined_space(a, b, &numel, &rnumel, &why)) return why;
  // accesses of each side in the combined kernel
  auto akey = [](const Acc& x) { return (static_cast<int64_t>(x.buffer) << 32) | static_cast<uint32_t>(x.index); };
  std::unordered_map<int64_t, int64_t> a_keys, b_keys;  // (buffer, index) -> bytes
  std::unordered_map<int, int> a_writes, b_writes;      // buffer -> index
  std::vector<std::pair<int, int>> a_reads, b_reads;
  auto collect = [&](const GroupState& gr, std::unordered_map<int64_t, int64_t>& keys, std::unordered_map<int, int>& w,
                     std::vector<std::pair<int, int>>& r) {
    for (int n : gr.nodes)
      for (const Acc& acc : accesses(n, numel, rnumel)) {
        keys[akey(acc)] = acc.bytes;
        if (acc.write) w[acc.buffer] = acc.index;
        else r.push_back({acc.buffer, acc.index});
      }
  };
  collect(a, a_keys, a_writes, a_reads);
  collect(b, b_keys, b_writes, b_reads);
  int64_t mem = 0;
  for (const auto& [k, bytes] : a_keys)
    if (b_keys.count(k)) mem += bytes;
  bool both_red = a.reduction == b.reduction;
  *score = {template_score(false, false, mem, config_), (both_red && mem > 0) ? 1 : 0, mem, (*score)[3]};
  if (static_cast<int64_t>(a.nodes.size() + b.nodes.size()) > config_.max_fusion_size) return Reject::TooManyNodes;
  bool vertical = false;
  auto deps_match = [&](const std::unordered_map<int, int>& w, const std::vector<std::pair<int, int>>& r) {
    for (const auto& [buf, key] : r) {
      auto it = w.find(buf);
      if (it == w.end()) continue;
      vertical = true;
      if (it->second != key) return false;
    }
    return true;
  };
  if (!deps_match(a_writes, b_reads) || !deps_match(b_writes, a_reads)) return Reject::MemoryDepsMismatch;
  // a read through a reshape its writer's loops do not share
  auto reshaped = [&](const GroupState& reader, const std::unordered_map<int, int>& w) {
    for (int n : reader.nodes)
      for (int buf : reshaped_reads(n))
        if (w.count(buf)) return true;
    return false;
  };
  if (reshaped(b, a_writes) || reshaped(a, b_writes)) return Reject::MemoryDepsMismatch;
  if (mem == 0) return Reject::NoSharedData;
  // side by side on a GPU: the same addresses read through loops of
  // another shape share nothing (moe_mixtral's top-k weights, [64, 2], and
  // its slot destinations, [128], both read the top-k indices)
  if (!vertical && config_.loop_ordering_after_fusion && !own_loops_share(a, b)) return Reject::NoSharedData;
  // the cheap horizontal gates first: most far-apart pairs (nodes that
  // share a weight, say) stop here before the cycle check walks the graph
  if (!vertical) {
    if (raises_peak_memory(a, b, mem)) return Reject::PeakMemory;
    if (-(*score)[3] > config_.horizontal_distance_limit) return Reject::HorizontalTooFar;
    if (mem < config_.score_fusion_memory_threshold) return Reject::HorizontalTooSmall;
  }
  if (cycle(ga, gb)) return Reject::IntermediateNodes;
  return Reject::None;
}

// Inductor's heuristic: unfused, each side's single-use inputs could be
// freed and their memory reused; fused, inputs of the same (dtype, size)
// on both sides stay alive together. Reject when that overhead (elements)
// is more than peak_memory_overhead_ratio times the bytes the fusion saves.
bool FusionCost::raises_peak_memory(const GroupState& a, const GroupState& b, int64_t saved) const {
  auto single_use_inputs = [&](const GroupState& gr) {
    std::set<std::pair<int, int64_t>> keys;  // (dtype, storage elements)
    for (int n : gr.nodes)
      for (int buf : g_.nodes[static_cast<size_t>(n)].reads) {
        const BufferInfo& bi = g_.buffers[static_cast<size_t>(buf)];
        if (bi.input_index >= 0 || readers_[static_cast<size_t>(buf)].size() != 1) continue;
        keys.insert({static_cast<int>(bi.dtype), bi.storage_numel});
      }
    return keys;
  };
  auto ka = single_use_inputs(a), kb = single_use_inputs(b);
  int64_t overhead = 0;
  for (const auto& k : ka)
    if (kb.count(k)) overhead += k.second;
  return overhead > config_.peak_memory_overhead_ratio * saved;
}

// The template's A index in its (x=m, r=k) frame.
std::string FusionCost::template_a_key(const GroupState& t) const {
  for (int n : t.nodes) {
    const SchedNode& sn = g_.nodes[static_cast<size_t>(n)];
    if (!sn.is_template()) continue;
    std::map<std::string, std::pair<int, IndexP>> loads;
    ex_loads(sn.gemm_a, &loads);
    for (const auto& [k, v] : loads)
      if (v.first == sn.a_buffer) return v.second->key;
  }
  return "";
}

std::vector<int> FusionCost::templates_of(const GroupState& t) const {
  std::vector<int> r;
  for (int n : t.nodes)
    if (g_.nodes[static_cast<size_t>(n)].is_template()) r.push_back(n);
  return r;
}

// max-autotune: a template group takes a sibling template reading the same
// A, a prologue computing A over (M, K), and epilogues over (M, N).
Reject FusionCost::template_gates(int ga, int gb, Score* score) {
  const GroupState& a = groups_[static_cast<size_t>(ga)];
  const GroupState& b = groups_[static_cast<size_t>(gb)];
  int64_t prox = (*score)[3];
  if (a.tmpl && b.tmpl) {
    // siblings share the A rows (and at most one prologue computing them);
    // their epilogues run side by side over (M, N); scored like an epilogue
    int64_t a_bytes = a.tm * a.tk * dtype_size(g_.buffers[static_cast<size_t>(a.a_buffer)].dtype);
    *score = {template_score(true, false, a_bytes, config_), 0, a_bytes, prox};
    if (a.a_buffer != b.a_buffer || a.tm != b.tm || a.tk != b.tk || a.tn != b.tn ||
        (a.has_prologue && b.has_prologue) || template_a_key(a) != template_a_key(b))
      return Reject::TemplateSiblings;
    return cycle(ga, gb) ? Reject::IntermediateNodes : Reject::None;
  }
  const GroupState& t = a.tmpl ? a : b;
  const GroupState& o = a.tmpl ? b : a;
  std::set<int> t_members(t.nodes.begin(), t.nodes.end()), o_members(o.nodes.begin(), o.nodes.end());
  std::vector<int> tmpls = templates_of(t);
  int first_tmpl = *std::min_element(tmpls.begin(), tmpls.end());
  if (o.max_pos < first_tmpl) {
    // prologue: o computes A over (M, K) and only the templates read it
    *score = {template_score(false, true, 0, config_), 0, 0, prox};
    if (t.has_prologue || o.tmpl) return Reject::TemplatePrologue;
    std::string a_key = template_a_key(t), written;
    for (int n : o.nodes) {
      std::vector<Access> acc;
      if (!kernel_accesses(g_, g_.nodes[static_cast<size_t>(n)], t.tm, t.tk, &acc)) return Reject::TemplatePrologue;
      for (const Access& x : acc)
        if (x.write && x.buffer == t.a_buffer) written = x.index->key;
      int out = g_.nodes[static_cast<size_t>(n)].out_buffer;
      for (const auto& reader : g_.nodes)
        if (reader.reads.count(out) && !o_members.count(reader.id) &&
            !(reader.is_template() && t_members.count(reader.id) && reader.a_buffer == out))
          return Reject::TemplatePrologue;
    }
    if (written.empty() || written != a_key) return Reject::TemplatePrologue;
    // a prologue must not multiply the GEMM's input traffic
    int64_t a_bytes_w = t.tm * t.tk * dtype_size(g_.buffers[static_cast<size_t>(t.a_buffer)].dtype);
    int64_t read_bytes = 0;
    std::set<int> produced;
    for (int n : o.nodes) produced.insert(g_.nodes[static_cast<size_t>(n)].out_buffer);
    std::set<std::pair<int, int>> counted;
    for (int n : o.nodes)
      for (const Acc& acc : accesses(n, t.tm, t.tk))
        if (!acc.write && !produced.count(acc.buffer) && counted.insert({acc.buffer, acc.index}).second)
          read_bytes += acc.bytes;
    const Ratio& most = config_.bytes_threshold_multiplier;
    if (read_bytes * most.den > a_bytes_w * most.num) return Reject::TemplatePrologue;
    (*score)[2] = a_bytes_w;
    return cycle(ga, gb) ? Reject::IntermediateNodes : Reject::None;
  }
  // epilogue: pointwise over (M, N) reading the outputs at x, and what
  // the group's epilogues wrote at x too: the kernel writes it element by
  // element, so an element read elsewhere may not be written yet (fusegate
  // fuzz found a norm over a where-epilogue's row reading the whole row)
  *score = {template_score(true, false, 0, config_), 0, 0, prox};
  if (o.tmpl || o.reduction || o.numel != t.tm * t.tn) return Reject::TemplateEpilogue;
  std::set<int> outs, written;
  for (int n : tmpls) outs.insert(g_.nodes[static_cast<size_t>(n)].out_buffer);
  for (int n : t.nodes) written.insert(g_.nodes[static_cast<size_t>(n)].out_buffer);
  std::string x_key = ix_var("x", t.tm * t.tn)->key;
  int64_t mem = 0;
  for (int n : o.nodes)
    for (const Acc& acc : accesses(n, t.tm * t.tn, 1)) {
      if (!written.count(acc.buffer)) continue;
      if (index_key(acc.index) != x_key) return Reject::TemplateEpilogue;
      if (outs.count(acc.buffer)) mem += acc.bytes;
    }
  if (mem == 0) return Reject::TemplateUnrelated;
  (*score)[0] = template_score(true, false, mem, config_);
  (*score)[2] = mem;
  return cycle(ga, gb) ? Reject::IntermediateNodes : Reject::None;
}

// b (the later one) runs at a's place: everything it waits for must run
// before a. The weights are stacked once and reused while they are the
// same tensors at the same version, so they must be graph inputs that no
// node of this graph writes.
bool FusionCost::batchable(const SchedNode& a, const SchedNode& b) const {
  auto w = [&](const SchedNode& n) { return g_.buffers[static_cast<size_t>(n.args[1].first)]; };
  auto frozen = [&](const SchedNode& n) {
    if (w(n).input_index < 0) return false;
    for (const auto& m : g_.nodes)
      if (m.writes.count(n.args[1].first)) return false;
    return true;
  };
  for (int d : b.deps)
    if (d >= a.id) return false;
  return a.op.op == Op::Linear && b.op.op == Op::Linear && a.args.size() == 2 && b.args.size() == 2 &&
         a.op.attrs.empty() && b.op.attrs.empty() &&
         a.op.type == b.op.type && w(a).dtype == w(b).dtype && w(a).layout.sizes == w(b).layout.sizes &&
         w(a).layout.is_contiguous() && w(b).layout.is_contiguous() && frozen(a) && frozen(b);
}

}  // namespace fg
