// The fusion scheduler.
//
// Input: scheduler nodes from `lower`, each a pointwise or reduction body
// over its own coordinates, or an extern / collective call. Output: groups of
// nodes, each group one kernel, in an order that respects every dependency.
//
// The default policy follows TorchInductor's `fuse_nodes` so that a user can
// predict the kernel count of a graph the way torch.compile would produce it:
//
// 1. Candidates. Every fusable group (not extern, not collective) joins a
//    list per buffer it reads or writes. Within each list, kept in node
//    order, group i is paired with the next 64 groups only; pairs are
//    de-duplicated across lists, keeping the order in which they were first
//    met (buffers in first-seen order, then positions). A pair enters the
//    candidate set only if `can_fuse` accepts it.
//
// 2. Scores. A pair scores (template, node type, memory, proximity):
//    template is 2 for an ordinary fusion that shares data; node type is 1
//    when both or neither are reductions and they share data; memory is the
//    bytes of accesses both touch at the same index in the fused kernel (a
//    broadcast read counts only the elements its index uses); proximity is
//    minus the distance in the original order. Pairs are compared on the
//    template score first; then, if one memory score exceeds 16 times the
//    other, memory alone decides; else the tuple decides. The sort is stable.
//
// 3. Greedy application. Walk the sorted pairs; map each node to the group it
//    now belongs to; re-check `can_fuse` (which includes the cycle check) on
//    the current groups, and fuse. Scores are not recomputed within a round.
//    Up to 10 rounds, stopping when the group count no longer changes.
//
// can_fuse gates, in order, each with its own rejection code:
//    extern / collective -> no; iteration spaces: reductions need equal
//    (numel, rnumel), a pointwise joins a reduction when its numel is
//    numel*rnumel (inside the loop) or numel (after it), two pointwise need
//    equal numel; at most 64 nodes per group; no shared bytes -> no;
//    vertical (one reads what the other writes): every such read must be at
//    the index the producer writes ("memory deps did not match"); a path
//    between the two through a third group would make a cycle
//    ("intermediate nodes between node1 & node2"); horizontal (no data
//    flows between them): not if it could raise peak memory (single-use
//    inputs of the same dtype and size on both sides, which fused stay alive
//    together, above 32x the bytes saved), shared bytes >= 10 and distance
//    <= 64.
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
//    result and it reads at most 1.1x what it writes (Inductor's rule);
//    template score 0: prologues go last;
//  - epilogue: pointwise code over (M, N) reading the template outputs at
//    their own index (bias, activation, residual add, silu*mul over merged
//    siblings); template score 1, after ordinary fusions.
//
// Departures, on purpose: split reductions (an extra kernel for a small
// output with a long reduction) are a GPU-occupancy rule and are not applied
// by the cpu backend; in `default` GEMMs stay extern, as in Inductor.
#include "fusion/passes/schedule.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <unordered_map>
#include <set>

#include "fusion/errors.h"

namespace fg {

const char* policy_name(FusionPolicy p) {
  switch (p) {
    case FusionPolicy::Default: return "default";
    case FusionPolicy::MaxAutotune: return "max-autotune";
    case FusionPolicy::None: return "none";
  }
  return "?";
}

bool parse_policy(const std::string& s, FusionPolicy* out) {
  for (FusionPolicy p : {FusionPolicy::Default, FusionPolicy::MaxAutotune, FusionPolicy::None})
    if (s == policy_name(p)) { *out = p; return true; }
  return false;
}

const char* reject_code(Reject r) {
  switch (r) {
    case Reject::None: return "";
    case Reject::PolicyNone: return "policy_none";
    case Reject::Extern: return "extern";
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
  }
  return "?";
}

const char* reject_reason(Reject r) {
  switch (r) {
    case Reject::None: return "";
    case Reject::PolicyNone: return "fusion policy 'none' keeps one kernel per node";
    case Reject::Extern: return "extern kernels and collectives do not fuse";
    case Reject::ReductionSizes: return "reductions over different (numel, rnumel)";
    case Reject::NumelMismatch: return "iteration sizes do not match";
    case Reject::TooManyNodes: return "fused node would exceed 64 nodes";
    case Reject::NoSharedData: return "no shared data";
    case Reject::MemoryDepsMismatch: return "memory deps did not match";
    case Reject::IntermediateNodes: return "intermediate nodes between node1 & node2";
    case Reject::HorizontalTooFar: return "horizontal fusion: nodes too far apart (> 64)";
    case Reject::HorizontalTooSmall: return "horizontal fusion: fewer than 10 shared bytes";
    case Reject::PeakMemory: return "fusion could raise peak memory (single-use inputs it keeps alive > 32x the bytes saved)";
    case Reject::SiblingGemmPolicy:
      return "GEMMs sharing an input stay separate extern kernels (merging them is max-autotune only)";
    case Reject::TemplateSiblings:
      return "GEMM templates merge only when they read the same input with the same (M, K, N) and one prologue at most";
    case Reject::TemplatePrologue:
      return "prologue into a GEMM template: needs one prologue over (M, K), read only by the GEMM, reading <= 1.1x "
             "what it writes";
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
    coords = ix_unflatten(flat, n.shape);
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
  if (n.is_reduction()) {
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

struct Group {
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

using Score = std::array<int64_t, 4>;

// a > b in the scheduler's order
bool score_greater(const Score& a, const Score& b) {
  if (a[0] != b[0]) return a[0] > b[0];
  int64_t ma = a[2], mb = b[2];
  if (ma > 16 * mb || mb > 16 * ma) return ma > mb;
  return std::tie(a[1], a[2], a[3]) > std::tie(b[1], b[2], b[3]);
}

class Scheduler {
 public:
  Scheduler(const LoweredGraph& g, FusionPolicy p) : g_(g), policy_(p) {
    group_of_.resize(g.nodes.size());
    seen_.assign(g.nodes.size(), 0);
    readers_.assign(g.buffers.size(), {});
    for (const auto& n : g.nodes)
      for (int b : n.reads) readers_[static_cast<size_t>(b)].push_back(n.id);
    for (const auto& n : g.nodes) {
      for (int b : n.reads) first_seen_.emplace(b, n.id);
      for (int b : n.writes) first_seen_.emplace(b, n.id);
    }
    for (const auto& n : g.nodes) {
      Group gr;
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
      for (int round = 1; round <= 10; ++round) {
        size_t before = alive_count();
        fuse_once(round);
        size_t after = alive_count();
        if (after == before || after <= 1) break;
      }
    } else {
      record_policy_none();
    }
    Schedule s;
    s.ledger = std::move(ledger_);
    for (int gi : topo_order()) {
      const Group& gr = groups_[static_cast<size_t>(gi)];
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
  bool fusable(const Group& gr) const { return g_.nodes[static_cast<size_t>(gr.nodes[0])].fusable(); }
  std::string name(const Group& gr) const {
    std::string s;
    for (int n : gr.nodes) s += (s.empty() ? "" : "+") + g_.nodes[static_cast<size_t>(n)].name;
    return s;
  }

  // The kernel iteration space of the two groups together, if any.
  bool combined_space(const Group& a, const Group& b, int64_t* numel, int64_t* rnumel, Reject* why) const {
    if (a.reduction && b.reduction) {
      if (a.numel != b.numel || a.rnumel != b.rnumel) { *why = Reject::ReductionSizes; return false; }
      *numel = a.numel; *rnumel = a.rnumel;
      return true;
    }
    if (a.reduction || b.reduction) {
      const Group& red = a.reduction ? a : b;
      const Group& pw = a.reduction ? b : a;
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

  // A node's accesses in a kernel over (numel, rnumel), with each index
  // interned to an integer so that groups compare without strings.
  struct Acc {
    int buffer;
    int index;  // interned index key
    int64_t bytes;
    bool write;
  };
  const std::vector<Acc>& accesses(int node, int64_t numel, int64_t rnumel) {
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

  // Is there a path between the groups through a third group? Walks
  // predecessors from one group, never below the other's first position.
  bool path_through_other(const Group& from_later, const Group& earlier, int ga, int gb) {
    std::vector<int>& stack = stack_;
    stack.clear();
    ++stamp_;
    for (int n : from_later.nodes)
      for (int d : g_.nodes[static_cast<size_t>(n)].deps) {
        int gd = group_of_[static_cast<size_t>(d)];
        if (gd != ga && gd != gb) stack.push_back(d);
      }
    while (!stack.empty()) {
      int n = stack.back();
      stack.pop_back();
      if (seen_[static_cast<size_t>(n)] == stamp_ || n < earlier.min_pos) continue;
      seen_[static_cast<size_t>(n)] = stamp_;
      for (int d : g_.nodes[static_cast<size_t>(n)].deps) {
        int gd = group_of_[static_cast<size_t>(d)];
        if (gd == ga || gd == gb) {
          if (gd == group_of_[static_cast<size_t>(earlier.nodes[0])]) return true;
          continue;
        }
        stack.push_back(d);
      }
    }
    return false;
  }

  Reject can_fuse(int ga, int gb, Score* score) {
    const Group& a = groups_[static_cast<size_t>(ga)];
    const Group& b = groups_[static_cast<size_t>(gb)];
    *score = {0, 0, 0, -std::max(std::abs(a.min_pos - b.max_pos), std::abs(b.min_pos - a.max_pos))};
    if (!fusable(a) || !fusable(b)) return Reject::Extern;
    if (a.tmpl || b.tmpl) return can_fuse_template(ga, gb, score);
    int64_t numel, rnumel;
    Reject why = Reject::None;
    if (!combined_space(a, b, &numel, &rnumel, &why)) return why;
    // accesses of each side in the combined kernel
    auto akey = [](const Acc& x) { return (static_cast<int64_t>(x.buffer) << 32) | static_cast<uint32_t>(x.index); };
    std::unordered_map<int64_t, int64_t> a_keys, b_keys;  // (buffer, index) -> bytes
    std::unordered_map<int, int> a_writes, b_writes;      // buffer -> index
    std::vector<std::pair<int, int>> a_reads, b_reads;
    auto collect = [&](const Group& gr, std::unordered_map<int64_t, int64_t>& keys, std::unordered_map<int, int>& w,
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
    *score = {mem > 0 ? 2 : 1, (both_red && mem > 0) ? 1 : 0, mem, (*score)[3]};
    if (a.nodes.size() + b.nodes.size() > 64) return Reject::TooManyNodes;
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
    if (mem == 0) return Reject::NoSharedData;
    // the cheap horizontal gates first: most far-apart pairs (nodes that
    // share a weight, say) stop here before the cycle check walks the graph
    if (!vertical) {
      if (raises_peak_memory(a, b, mem)) return Reject::PeakMemory;
      if (-(*score)[3] > 64) return Reject::HorizontalTooFar;
      if (mem < 10) return Reject::HorizontalTooSmall;
    }
    const Group& early = a.min_pos <= b.min_pos ? a : b;
    const Group& late = a.min_pos <= b.min_pos ? b : a;
    if (path_through_other(late, early, ga, gb) || path_through_other(early, late, ga, gb))
      return Reject::IntermediateNodes;
    return Reject::None;
  }

  // Inductor's heuristic: unfused, each side's single-use inputs could be
  // freed and their memory reused; fused, inputs of the same (dtype, size)
  // on both sides stay alive together. Reject when that overhead (elements)
  // is more than 32 times the bytes the fusion saves.
  bool raises_peak_memory(const Group& a, const Group& b, int64_t saved) const {
    auto single_use_inputs = [&](const Group& gr) {
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
    return overhead > 32 * saved;
  }

  // The template's A index in its (x=m, r=k) frame.
  std::string template_a_key(const Group& t) {
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

  std::vector<int> templates_of(const Group& t) const {
    std::vector<int> r;
    for (int n : t.nodes)
      if (g_.nodes[static_cast<size_t>(n)].is_template()) r.push_back(n);
    return r;
  }

  // max-autotune: a template group takes a sibling template reading the same
  // A, a prologue computing A over (M, K), and epilogues over (M, N).
  Reject can_fuse_template(int ga, int gb, Score* score) {
    const Group& a = groups_[static_cast<size_t>(ga)];
    const Group& b = groups_[static_cast<size_t>(gb)];
    int64_t prox = (*score)[3];
    auto cycle = [&]() {
      const Group& early = a.min_pos <= b.min_pos ? a : b;
      const Group& late = a.min_pos <= b.min_pos ? b : a;
      return path_through_other(late, early, ga, gb) || path_through_other(early, late, ga, gb);
    };
    if (a.tmpl && b.tmpl) {
      // siblings share the A rows (and at most one prologue computing them);
      // their epilogues run side by side over (M, N)
      int64_t a_bytes = a.tm * a.tk * dtype_size(g_.buffers[static_cast<size_t>(a.a_buffer)].dtype);
      *score = {1, 0, a_bytes, prox};
      if (a.a_buffer != b.a_buffer || a.tm != b.tm || a.tk != b.tk || a.tn != b.tn ||
          (a.has_prologue && b.has_prologue) || template_a_key(a) != template_a_key(b))
        return Reject::TemplateSiblings;
      return cycle() ? Reject::IntermediateNodes : Reject::None;
    }
    const Group& t = a.tmpl ? a : b;
    const Group& o = a.tmpl ? b : a;
    std::set<int> t_members(t.nodes.begin(), t.nodes.end()), o_members(o.nodes.begin(), o.nodes.end());
    std::vector<int> tmpls = templates_of(t);
    int first_tmpl = *std::min_element(tmpls.begin(), tmpls.end());
    if (o.max_pos < first_tmpl) {
      // prologue: o computes A over (M, K) and only the templates read it
      *score = {0, 0, 0, prox};
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
      // reads at most 1.1x what it writes: a prologue must not multiply the
      // GEMM's input traffic
      int64_t a_bytes_w = t.tm * t.tk * dtype_size(g_.buffers[static_cast<size_t>(t.a_buffer)].dtype);
      int64_t read_bytes = 0;
      std::set<int> produced;
      for (int n : o.nodes) produced.insert(g_.nodes[static_cast<size_t>(n)].out_buffer);
      std::set<std::pair<int, int>> counted;
      for (int n : o.nodes)
        for (const Acc& acc : accesses(n, t.tm, t.tk))
          if (!acc.write && !produced.count(acc.buffer) && counted.insert({acc.buffer, acc.index}).second)
            read_bytes += acc.bytes;
      if (read_bytes * 10 > a_bytes_w * 11) return Reject::TemplatePrologue;
      (*score)[2] = a_bytes_w;
      return cycle() ? Reject::IntermediateNodes : Reject::None;
    }
    // epilogue: pointwise over (M, N) reading the outputs at x
    *score = {1, 0, 0, prox};
    if (o.tmpl || o.reduction || o.numel != t.tm * t.tn) return Reject::TemplateEpilogue;
    std::set<int> outs;
    for (int n : tmpls) outs.insert(g_.nodes[static_cast<size_t>(n)].out_buffer);
    std::string x_key = ix_var("x", t.tm * t.tn)->key;
    int64_t mem = 0;
    for (int n : o.nodes)
      for (const Acc& acc : accesses(n, t.tm * t.tn, 1)) {
        if (!outs.count(acc.buffer)) continue;
        if (index_key(acc.index) != x_key) return Reject::TemplateEpilogue;
        mem += acc.bytes;
      }
    if (mem == 0) return Reject::TemplateUnrelated;
    (*score)[2] = mem;
    return cycle() ? Reject::IntermediateNodes : Reject::None;
  }

  const std::string& index_key(int id) const { return index_names_[static_cast<size_t>(id)]; }

  void fuse_once(int round) {
    // 1. candidate pairs by shared buffer, in discovery order
    std::vector<int> buffer_order;
    std::map<int, std::vector<int>> by_buffer;
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      const Group& gr = groups_[gi];
      if (!gr.alive || !fusable(gr)) continue;
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
    std::vector<std::pair<int, int>> pairs;
    std::set<std::pair<int, int>> seen;
    for (int b : buffer_order) {
      auto& list = by_buffer[b];
      std::sort(list.begin(), list.end(), [&](int x, int y) { return groups_[x].min_pos < groups_[y].min_pos; });
      for (size_t i = 0; i < list.size(); ++i)
        for (size_t j = i + 1; j < list.size() && j <= i + 64; ++j)
          if (seen.insert({list[i], list[j]}).second) pairs.push_back({list[i], list[j]});
    }
    struct Cand { int a, b; Score s; };
    std::vector<Cand> cands;
    for (auto [x, y] : pairs) {
      Score s;
      Reject r = can_fuse(x, y, &s);
      if (r == Reject::None) cands.push_back({x, y, s});
      else record(x, y, s, false, r, round);
    }
    // 2. stable sort by score
    std::stable_sort(cands.begin(), cands.end(), [](const Cand& p, const Cand& q) { return score_greater(p.s, q.s); });
    // 3. greedy
    for (const Cand& c : cands) {
      int ga = find(c.a), gb = find(c.b);
      if (ga == gb) continue;
      Score s;
      Reject r = can_fuse(ga, gb, &s);
      record(ga, gb, c.s, r == Reject::None, r, round);
      if (r == Reject::None) merge(ga, gb);
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
    Group& a = groups_[static_cast<size_t>(ga)];
    Group& b = groups_[static_cast<size_t>(gb)];
    int64_t numel = 0, rnumel = 1;
    Reject why = Reject::None;
    if (a.tmpl || b.tmpl) {
      const Group& t = a.tmpl ? a : b;
      const Group& o = a.tmpl ? b : a;
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
    FG_CHECK(combined_space(a, b, &numel, &rnumel, &why), "merging groups that cannot share a kernel");
    a.reduction = a.reduction || b.reduction;
    a.numel = numel;
    a.rnumel = rnumel;
    absorb(ga, gb);
  }

  // Group gb's nodes join group ga; gb is gone (forwarded to ga).
  void absorb(int ga, int gb) {
    Group& a = groups_[static_cast<size_t>(ga)];
    Group& b = groups_[static_cast<size_t>(gb)];
    a.nodes.insert(a.nodes.end(), b.nodes.begin(), b.nodes.end());
    std::sort(a.nodes.begin(), a.nodes.end());
    a.min_pos = std::min(a.min_pos, b.min_pos);
    a.max_pos = std::max(a.max_pos, b.max_pos);
    b.alive = false;
    forward_[gb] = ga;
    for (int n : b.nodes) group_of_[static_cast<size_t>(n)] = ga;
  }

  void record(int ga, int gb, const Score& s, bool fused, Reject r, int round) {
    LedgerEntry e;
    e.first = name(groups_[static_cast<size_t>(ga)]);
    e.second = name(groups_[static_cast<size_t>(gb)]);
    e.score = s;
    e.fused = fused;
    e.reason = r;
    e.round = round;
    ledger_.push_back(e);
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
        if (policy_ != FusionPolicy::MaxAutotune) {
          record(ga, gb, {0, 0, 0, a - b}, false, Reject::SiblingGemmPolicy, 0);
          continue;
        }
        if (!batchable(g_.nodes[static_cast<size_t>(a)], g_.nodes[static_cast<size_t>(b)])) continue;
        record(ga, gb, {0, 0, 0, a - b}, true, Reject::BatchedSiblings, 0);
        absorb(ga, gb);
      }
  }

  // b (the later one) runs at a's place: everything it waits for must run
  // before a. The weights are stacked once and reused while they are the
  // same tensors at the same version, so they must be graph inputs that no
  // node of this graph writes.
  bool batchable(const SchedNode& a, const SchedNode& b) const {
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

  const LoweredGraph& g_;
  FusionPolicy policy_;
  std::vector<Group> groups_;
  std::vector<int> group_of_;
  std::map<int, int> forward_;
  std::vector<LedgerEntry> ledger_;
  std::map<std::tuple<int, int64_t, int64_t>, std::vector<Acc>> access_cache_;
  std::unordered_map<std::string, int> index_ids_;
  std::vector<std::string> index_names_;
  std::vector<std::vector<int>> readers_;  // buffer -> scheduler nodes reading it
  std::vector<int> seen_;
  std::vector<int> stack_;
  int stamp_ = 0;
  std::map<int, int> first_seen_;
};

}  // namespace

Schedule schedule(const LoweredGraph& g, FusionPolicy policy) { return Scheduler(g, policy).run(); }

}  // namespace fg
