#include "kernels/fastpaths/catalog.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "fusion/codegen/cpp_printer.h"
#include "fusion/codegen/cuda_printer.h"
#include "fusion/errors.h"
#include "fusion/fault.h"
#include "kernels/fastpaths/sources.h"

namespace fg {

namespace {

bool full_value(const Graph& g, int id, double* v) {
  const Node& n = g.node(id);
  if (n.op != Op::Full || !n.type.shape.empty()) return false;
  *v = attr_float(n.attrs, "value", n.op);
  return true;
}

bool is_last_dim(const Node& n, int64_t dim) {
  const int64_t rank = static_cast<int64_t>(n.type.shape.size());
  return dim == -1 || (rank > 0 && dim == rank - 1);
}

// An RMSNorm over the last dim as decompose (or a repro) writes it, ending
// in the weight multiply:
//   xf = cast(x, f32); ss = sum(xf*xf | pow(xf, 2), [-1], keepdim)
//   [ss = all_reduce(ss)]   (a distributed norm: the dim is sharded)
//   out = cast(xf * rsqrt(ss / N + eps), dtype(x)) * w
struct NormChain {
  int x = -1, xf = -1, weight = -1, out = -1, sum = -1, all_reduce = -1;
  double eps = 0, divisor = 0;
  std::vector<int> nodes;  // the chain without x, the weight and the constants
};

bool match_norm(const Graph& g, int out_id, NormChain* c) {
  const Node& out = g.node(out_id);
  if (out.op != Op::Mul || out.type.dtype != DType::BF16 || out.type.shape.empty()) return false;
  const int64_t dim = out.type.shape.back();
  for (int side = 0; side < 2; ++side) {
    const Node& cast = g.node(out.inputs[static_cast<size_t>(side)]);
    const Node& w = g.node(out.inputs[static_cast<size_t>(1 - side)]);
    if (cast.op != Op::Cast || cast.type.dtype != DType::BF16 || w.type.shape != Shape{dim} ||
        w.type.dtype != DType::BF16)
      continue;
    const Node& m = g.node(cast.inputs[0]);
    if (m.op != Op::Mul || m.type.dtype != DType::F32) continue;
    for (int ms = 0; ms < 2; ++ms) {
      const Node& xf = g.node(m.inputs[static_cast<size_t>(ms)]);
      const Node& r = g.node(m.inputs[static_cast<size_t>(1 - ms)]);
      if (r.op != Op::Rsqrt || xf.op != Op::Cast || xf.type.dtype != DType::F32) continue;
      const Node& x = g.node(xf.inputs[0]);
      if (x.type.dtype != DType::BF16 || x.type.shape != out.type.shape) continue;
      const Node& a = g.node(r.inputs[0]);
      if (a.op != Op::Add) continue;
      double eps = 0;
      int d_id = -1;
      for (int as = 0; as < 2; ++as)
        if (full_value(g, a.inputs[static_cast<size_t>(1 - as)], &eps)) d_id = a.inputs[static_cast<size_t>(as)];
      if (d_id < 0) continue;
      const Node& d = g.node(d_id);
      double n = 0;
      if (d.op != Op::Div || !full_value(g, d.inputs[1], &n)) continue;
      int ss = d.inputs[0], ar = -1;
      if (g.node(ss).op == Op::AllReduce) {
        if (attr_str_or(g.node(ss).attrs, "reduce_op", "sum") != "sum") continue;
        ar = ss;
        ss = g.node(ss).inputs[0];
      }
      const Node& sum = g.node(ss);
      if (sum.op != Op::Sum || attr_int_or(sum.attrs, "keepdim", 0) != 1) continue;
      std::vector<int64_t> dims = attr_ints(sum.attrs, "dims", sum.op);
      if (dims.size() != 1 || !is_last_dim(xf, dims[0])) continue;
      const Node& sq = g.node(sum.inputs[0]);
      double two = 0;
      bool square = (sq.op == Op::Mul && sq.inputs[0] == xf.id && sq.inputs[1] == xf.id) ||
                    (sq.op == Op::Pow && sq.inputs[0] == xf.id && full_value(g, sq.inputs[1], &two) && two == 2.0);
      if (!square) continue;
      c->x = x.id;
      c->xf = xf.id;
      c->weight = w.id;
      c->out = out.id;
      c->sum = sum.id;
      c->all_reduce = ar;
      c->eps = eps;
      c->divisor = n;
      c->nodes = {xf.id, sq.id, sum.id, d.id, a.id, r.id, m.id, cast.id, out.id};
      if (ar >= 0) c->nodes.push_back(ar);
      return true;
    }
  }
  return false;
}

std::vector<NormChain> norm_chains(const Graph& g) {
  std::vector<NormChain> r;
  for (const Node& n : g.nodes) {
    NormChain c;
    if (match_norm(g, n.id, &c)) r.push_back(std::move(c));
  }
  return r;
}

int widest_vector(int64_t n) {
  for (int v : {8, 4, 2})
    if (n % v == 0) return v;
  return 1;
}

// Sites of the q/k norm fast paths: two norm chains over slices of the last
// dim of one value (the QKV projection), of the same width and kind.
struct QkSite {
  int qkv = -1;
  NormChain q, k;
  int64_t q_start = 0, k_start = 0, width = 0;
};

std::vector<QkSite> qk_sites(const Graph& g, bool distributed_only) {
  std::map<int, std::vector<std::pair<int64_t, NormChain>>> by_source;
  for (NormChain& c : norm_chains(g)) {
    const Node& x = g.node(c.x);
    if (x.op != Op::Slice) continue;
    const Node& src = g.node(x.inputs[0]);
    const SliceBounds sb = slice_bounds(x.attrs, src.type.shape);
    if (!is_last_dim(x, sb.dim) || sb.step != 1) continue;
    if (distributed_only && c.all_reduce < 0) continue;
    if (src.type.dtype != DType::BF16 || src.type.shape.size() != x.type.shape.size()) continue;
    // the columns as the kernel reads them: a negative start counts from the end
    const int64_t cols = src.type.shape.back(), width = x.type.shape.back();
    if (width % 8 != 0) continue;  // the kernels work in chunks of 8 elements
    const int64_t start = sb.start;
    if (start + width > cols) continue;
    by_source[src.id].push_back({start, std::move(c)});
  }
  std::vector<QkSite> out;
  for (auto& [src, chains] : by_source) {
    if (chains.size() != 2) continue;
    std::sort(chains.begin(), chains.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    QkSite s;
    s.qkv = src;
    s.q = chains[0].second;
    s.k = chains[1].second;
    s.q_start = chains[0].first;
    s.k_start = chains[1].first;
    s.width = g.node(s.q.x).type.shape.back();
    if (g.node(s.k.x).type.shape.back() != s.width || (s.q.all_reduce < 0) != (s.k.all_reduce < 0) ||
        s.q.eps != s.k.eps || s.q.divisor != s.k.divisor || s.k_start < s.q_start + s.width)
      continue;
    out.push_back(std::move(s));
  }
  return out;
}

Attrs fast_attrs(const std::string& name, const std::string& stage, const Shape& shape, DType dt) {
  Attrs a;
  a["name"] = name;
  if (!stage.empty()) a["stage"] = stage;
  a["shape"] = std::vector<int64_t>(shape.begin(), shape.end());
  a["dtype"] = std::string(dtype_name(dt));
  return a;
}

int add_slice(Graph& out, int src, int64_t dim, int64_t start, int64_t end) {
  return out.add(Op::Slice, {src}, {{"dim", dim}, {"start", start}, {"end", end}, {"step", int64_t{1}}});
}

std::vector<int> sorted_unique(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

FastPathSite qk_site(const Graph& g, const QkSite& s, const std::string& name) {
  FastPathSite site;
  site.name = name;
  std::vector<int> cov = s.q.nodes;
  cov.insert(cov.end(), s.k.nodes.begin(), s.k.nodes.end());
  site.covered = sorted_unique(cov);
  site.inputs = {s.qkv, s.q.weight, s.k.weight};
  site.replaced = {s.q.out, s.k.out};
  // what the kernels' code depends on: the width they read and normalize,
  // the divisor the graph uses (the local kernel divides by its width
  // whatever the graph says: a proof of it holds for one divisor), and
  // whether the graph sums the squares over the ranks (which the local
  // kernel does not)
  char div[32];
  std::snprintf(div, sizeof div, "%g", s.q.divisor);
  site.shape_class = "bf16,norm_dim=" + std::to_string(s.width) + ",divisor=" + div +
                     ",sumsq=" + (s.q.all_reduce >= 0 ? "all_reduced" : "local") +
                     ",vec=" + std::to_string(widest_vector(s.width));
  Shape two = g.node(s.q.out).type.shape;
  two.back() *= 2;  // q | k, normalized
  const int64_t L = s.width;
  Attrs common;
  common["q_start"] = s.q_start;
  common["k_start"] = s.k_start;
  common["width"] = L;
  common["eps"] = s.q.eps;
  const bool tp = name == "qkv_rmsnorm_tp";
  // the local kernel normalizes over the columns it holds; the TP one by the
  // full dimension the graph divides by
  common["divisor"] = tp ? s.q.divisor : static_cast<double>(L);
  site.emit = [=](Graph& out, const std::vector<int>& in) {
    int fp = -1;
    if (!tp) {
      Attrs a = fast_attrs(name, "", two, DType::BF16);
      a.insert(common.begin(), common.end());
      fp = out.add(Op::FastPath, {in[0], in[1], in[2]}, a);
    } else {
      Shape ss = two;
      ss.back() = 2;
      Attrs a1 = fast_attrs(name, "sumsq", ss, DType::F32);
      a1.insert(common.begin(), common.end());
      int partial = out.add(Op::FastPath, {in[0]}, a1);
      int total = out.add(Op::AllReduce, {partial}, {{"reduce_op", std::string("sum")}});
      Attrs a2 = fast_attrs(name, "apply", two, DType::BF16);
      a2.insert(common.begin(), common.end());
      fp = out.add(Op::FastPath, {in[0], total, in[1], in[2]}, a2);
    }
    return std::vector<int>{add_slice(out, fp, -1, 0, L), add_slice(out, fp, -1, L, 2 * L)};
  };
  return site;
}

std::vector<FastPathSite> match_qkv_local(const Graph& g) {
  std::vector<FastPathSite> r;
  for (const QkSite& s : qk_sites(g, false)) r.push_back(qk_site(g, s, "qkv_rmsnorm_local"));
  return r;
}

std::vector<FastPathSite> match_qkv_tp(const Graph& g) {
  std::vector<FastPathSite> r;
  for (const QkSite& s : qk_sites(g, true)) r.push_back(qk_site(g, s, "qkv_rmsnorm_tp"));
  return r;
}

// The shape class of the one-shot exchange fast paths: bf16 rows of H
// elements, in 16-byte chunks of 8.
std::string exchange_shape_class(int64_t H) {
  return "bf16,hidden=" + std::to_string(H) + ",vec=" + std::to_string(widest_vector(H));
}

// x2 = r + s (either operand order) where s = all_reduce(g), summed, of
// x2's type, and r another value (s + s is not the pattern: a site would
// read what it replaces): {s, r}, or {-1, -1}
std::pair<int, int> residual_add_of_all_reduce(const Graph& g, const Node& x2) {
  if (x2.op != Op::Add || x2.inputs.size() != 2) return {-1, -1};
  for (int side = 0; side < 2; ++side) {
    const Node& s = g.node(x2.inputs[static_cast<size_t>(side)]);
    const Node& res = g.node(x2.inputs[static_cast<size_t>(1 - side)]);
    if (s.op == Op::AllReduce && attr_str_or(s.attrs, "reduce_op", "sum") == "sum" && s.inputs.size() == 1 &&
        res.id != s.id && s.type == x2.type && res.type == x2.type && g.node(s.inputs[0]).type == x2.type)
      return {s.id, res.id};
  }
  return {-1, -1};
}

// s = all_reduce(g); x2 = r + s; h = rms_norm(x2) * w, over the whole last dim
std::vector<FastPathSite> match_allreduce_norm(const Graph& g) {
  std::vector<FastPathSite> r;
  for (const NormChain& c : norm_chains(g)) {
    if (c.all_reduce >= 0) continue;
    const Node& x2 = g.node(c.x);
    const int64_t H = x2.type.shape.back();
    if (c.divisor != static_cast<double>(H) || H % 8 != 0) continue;  // chunks of 8
    const auto [sid, rid] = residual_add_of_all_reduce(g, x2);
    if (sid < 0) continue;
    const Node& s = g.node(sid);
    const Node& res = g.node(rid);
    FastPathSite site;
    site.name = "allreduce_residual_rmsnorm";
    std::vector<int> cov = c.nodes;
    cov.push_back(s.id);
    cov.push_back(x2.id);
    site.covered = sorted_unique(cov);
    site.inputs = {s.inputs[0], res.id, c.weight};
    site.replaced = {x2.id, c.out};
    site.shape_class = exchange_shape_class(H);
    const Shape shape = x2.type.shape;
    Shape both = shape;
    both.insert(both.begin(), 2);  // [residual sum, normalized]
    const double eps = c.eps;
    site.emit = [=](Graph& out, const std::vector<int>& in) {
      Attrs a = fast_attrs("allreduce_residual_rmsnorm", "", both, DType::BF16);
      a["eps"] = eps;
      a["hidden"] = H;
      int fp = out.add(Op::FastPath, {in[0], in[1], in[2]}, a);
      std::vector<int> ids;
      for (int64_t i = 0; i < 2; ++i)
        ids.push_back(out.add(Op::Reshape, {add_slice(out, fp, 0, i, i + 1)},
                              {{"shape", std::vector<int64_t>(shape.begin(), shape.end())}}));
      return ids;
    };
    r.push_back(std::move(site));
  }
  return r;
}

// s = all_reduce(g), summed, bf16, its last dim a multiple of 8: the
// exchange alone (the block's last all-reduce, whose sum no norm reads)
std::vector<FastPathSite> match_allreduce_sum(const Graph& g) {
  std::vector<FastPathSite> r;
  for (const Node& s : g.nodes) {
    if (s.op != Op::AllReduce || attr_str_or(s.attrs, "reduce_op", "sum") != "sum" ||
        s.type.dtype != DType::BF16 || s.type.shape.empty() || s.inputs.size() != 1)
      continue;
    const Node& in = g.node(s.inputs[0]);
    const int64_t H = s.type.shape.back();
    if (in.type != s.type || H <= 0 || H % 8 != 0) continue;  // chunks of 8
    FastPathSite site;
    site.name = "allreduce_sum";
    site.covered = {s.id};
    site.inputs = {in.id};
    site.replaced = {s.id};
    site.shape_class = exchange_shape_class(H);
    const Shape shape = s.type.shape;
    site.emit = [=](Graph& out, const std::vector<int>& ids) {
      Attrs a = fast_attrs("allreduce_sum", "", shape, DType::BF16);
      a["hidden"] = H;
      return std::vector<int>{out.add(Op::FastPath, {ids[0]}, a)};
    };
    r.push_back(std::move(site));
  }
  return r;
}

// x2 = r + all_reduce(g), summed, bf16, last dim a multiple of 8: the
// block's last all-reduce and the residual add after it (where a norm reads
// x2, allreduce_residual_rmsnorm outranks it)
std::vector<FastPathSite> match_allreduce_residual(const Graph& g) {
  std::vector<FastPathSite> r;
  for (const Node& x2 : g.nodes) {
    if (x2.type.dtype != DType::BF16 || x2.type.shape.empty()) continue;
    const int64_t H = x2.type.shape.back();
    if (H <= 0 || H % 8 != 0) continue;  // chunks of 8
    const auto [sid, rid] = residual_add_of_all_reduce(g, x2);
    if (sid < 0) continue;
    FastPathSite site;
    site.name = "allreduce_residual";
    site.covered = sorted_unique({sid, x2.id});
    site.inputs = {g.node(sid).inputs[0], rid};
    site.replaced = {x2.id};
    site.shape_class = exchange_shape_class(H);
    const Shape shape = x2.type.shape;
    site.emit = [=](Graph& out, const std::vector<int>& ids) {
      Attrs a = fast_attrs("allreduce_residual", "", shape, DType::BF16);
      a["hidden"] = H;
      return std::vector<int>{out.add(Op::FastPath, {ids[0], ids[1]}, a)};
    };
    r.push_back(std::move(site));
  }
  return r;
}

// silu(linear(h, Wg)) * linear(h, Wu), the MLP's SwiGLU (either operand
// order of the mul): both linears without bias or epilogue, over the same
// bf16 h, weights [N, K] alike and two distinct graph inputs; N a multiple
// of 128 (the kernel's blocks of the interleaved weights), K a multiple of 8
// (16-byte rows for TMA).
struct SwigluSite {
  int gate = -1, up = -1, act = -1, mul = -1, h = -1, wg = -1, wu = -1;
  int64_t M = 0, N = 0, K = 0;
  int64_t tile_n = 128;  // swiglu_tile_n(M, N)
};

}  // namespace

// The kernel is persistent: each CTA (or CTA pair) takes tiles in rounds,
// and its time follows the rounds, not the work: at M 1024, K 4096 one H100
// ran N 7168 in 196.1 us and N 8448, 18% more work in the same 4 rounds, in
// 200.3 us (bench/RESULTS.md, "Issue 17, sixteenth step"). So the width is
// the one of 128 and 112 (where it divides N) whose rounds x width is
// least, 128 on a tie. The rounds are counted for 132 SMs, the H100 SXM's
// and the H200's, whatever GPU compiles the graph: the width is then a
// function of the shape alone, and the ledger, the goldens and the proofs'
// shape classes are the same on every machine. On a GPU of another SM
// count the kernel is still right, its rounds maybe less full.
int swiglu_tile_n(int64_t M, int64_t N) {
  // FUSEGATE_FAULT=swiglu_tile:W (fusion/fault.h): the other width, for an
  // A/B in one build; the shape class follows, so its proof must cover it
  const std::string forced = fault_argument("swiglu_tile");
  if (forced == "128") return 128;
  if (forced == "112" && N % 112 == 0) return 112;
  constexpr int64_t kPlannedSms = 132;
  const int64_t cm = M % 256 == 0 ? 2 : 1;
  const int64_t units = kPlannedSms / cm, m_groups = (M + 128 * cm - 1) / (128 * cm);
  auto cost = [&](int64_t w) { return (m_groups * (N / w) + units - 1) / units * w; };
  if (N % 112 == 0 && N % 128 == 0 && cost(112) < cost(128)) return 112;
  return 128;
}

namespace {

std::vector<SwigluSite> swiglu_sites(const Graph& g) {
  std::vector<SwigluSite> r;
  auto plain_linear = [&](const Node& n) {
    return n.op == Op::Linear && n.inputs.size() == 2 && !n.attrs.count("epilogue") && n.type.dtype == DType::BF16;
  };
  for (const Node& mul : g.nodes) {
    if (mul.op != Op::Mul || mul.type.dtype != DType::BF16 || mul.inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      const Node& act = g.node(mul.inputs[static_cast<size_t>(side)]);
      const Node& up = g.node(mul.inputs[static_cast<size_t>(1 - side)]);
      if (act.op != Op::Silu || act.type != mul.type || up.type != mul.type || !plain_linear(up)) continue;
      const Node& gate = g.node(act.inputs[0]);
      if (!plain_linear(gate) || gate.type != mul.type || gate.inputs[0] != up.inputs[0] || gate.id == up.id) continue;
      const Node& h = g.node(gate.inputs[0]);
      const Node& wg = g.node(gate.inputs[1]);
      const Node& wu = g.node(up.inputs[1]);
      // the weights are graph inputs (a model's parameters): the runtime
      // interleaves them once, which a value computed every forward is not
      if (wg.op != Op::Input || wu.op != Op::Input || wg.id == wu.id) continue;
      if (h.type.dtype != DType::BF16 || wg.type != wu.type || wg.type.dtype != DType::BF16) continue;
      const int64_t N = wg.type.shape[0], K = wg.type.shape[1];
      if (N % 128 != 0 || K % 8 != 0 || N == 0 || K == 0) continue;
      int64_t M = 1;
      for (size_t i = 0; i + 1 < h.type.shape.size(); ++i) M *= h.type.shape[i];
      if (M == 0) continue;
      r.push_back({gate.id, up.id, act.id, mul.id, h.id, wg.id, wu.id, M, N, K, swiglu_tile_n(M, N)});
      break;
    }
  }
  return r;
}


// what the kernel's code path depends on: the tile's width (128 or 112
// output columns: swiglu_tile_n), CTA pairs (M a multiple of 256), rows past
// the last tile (M not a multiple of 128), a partial last k step (K not a
// multiple of 64)
std::string swiglu_shape_class(const SwigluSite& s) {
  return std::string("bf16,tile=128x") + std::to_string(s.tile_n) +
         "x64,cta_pair=" + (s.M % 256 == 0 ? "yes" : "no") + ",m_tail=" + (s.M % 128 != 0 ? "yes" : "no") +
         ",k_tail=" + (s.K % 64 != 0 ? "yes" : "no");
}

std::vector<FastPathSite> match_gate_up_swiglu(const Graph& g) {
  std::vector<FastPathSite> r;
  for (const SwigluSite& s : swiglu_sites(g)) {
    FastPathSite site;
    site.name = "gate_up_swiglu";
    site.covered = sorted_unique({s.gate, s.up, s.act, s.mul});
    site.inputs = {s.h, s.wg, s.wu};
    site.replaced = {s.mul};
    site.shape_class = swiglu_shape_class(s);
    const Shape shape = g.node(s.mul).type.shape;
    const int64_t tile_n = s.tile_n;
    site.emit = [=](Graph& out, const std::vector<int>& in) {
      Attrs a = fast_attrs("gate_up_swiglu", "", shape, DType::BF16);
      a["tile_n"] = tile_n;
      return std::vector<int>{out.add(Op::FastPath, {in[0], in[1], in[2]}, a)};
    };
    r.push_back(std::move(site));
  }
  return r;
}

// The same SwiGLU where h is an RMSNorm of x over the whole last dim whose
// sum of squares is this rank's (not all-reduced: a distributed norm needs
// the other ranks' sums before any row scale is known), its weight gamma a
// graph input (folded into the interleaved weights once per version). The
// norm's nodes are covered: self_contained() keeps the site only where
// nothing else reads the normalized h.
std::vector<FastPathSite> match_rmsnorm_gate_up_swiglu(const Graph& g) {
  std::vector<FastPathSite> r;
  std::map<int, NormChain> norms;  // the norm's output -> its chain
  for (NormChain& c : norm_chains(g)) norms.emplace(c.out, std::move(c));
  for (const SwigluSite& s : swiglu_sites(g)) {
    auto it = norms.find(s.h);
    if (it == norms.end()) continue;
    const NormChain& c = it->second;
    if (c.all_reduce >= 0 || g.node(c.weight).op != Op::Input || c.divisor <= 0) continue;
    if (g.node(c.x).type.shape.back() != s.K) continue;
    FastPathSite site;
    site.name = "rmsnorm_gate_up_swiglu";
    std::vector<int> cov = c.nodes;
    cov.insert(cov.end(), {s.gate, s.up, s.act, s.mul});
    site.covered = sorted_unique(cov);
    site.inputs = {c.x, c.weight, s.wg, s.wu};
    site.replaced = {s.mul};
    site.shape_class = swiglu_shape_class(s);
    const Shape shape = g.node(s.mul).type.shape;
    const double eps = c.eps, divisor = c.divisor;
    const int64_t tile_n = s.tile_n;
    site.emit = [=](Graph& out, const std::vector<int>& in) {
      Attrs a = fast_attrs("rmsnorm_gate_up_swiglu", "", shape, DType::BF16);
      a["tile_n"] = tile_n;
      a["eps"] = eps;
      a["divisor"] = divisor;
      return std::vector<int>{out.add(Op::FastPath, {in[0], in[1], in[2], in[3]}, a)};
    };
    r.push_back(std::move(site));
  }
  return r;
}

// Causal self-attention of bf16 q, k, v [B, H, S, 128] (k, v with H or a
// divisor of H heads): the cuda kernel's tiles are 128 query and 128 key rows
// of head dim 128. Its result is [B, S, H, 128] memory, returned as the
// [B, H, S, 128] view the graph reads (so merging the heads after it stays a
// view).
std::vector<FastPathSite> match_causal_attention(const Graph& g) {
  std::vector<FastPathSite> r;
  for (const Node& n : g.nodes) {
    if (n.op != Op::Sdpa || attr_int_or(n.attrs, "causal", 1) == 0 || n.type.dtype != DType::BF16) continue;
    // the kernel scales by 1 / sqrt(128), the default; a graph that names
    // another scale is not its pattern
    if (n.attrs.count("scale") && std::abs(attr_float(n.attrs, "scale", n.op) - 1.0 / std::sqrt(128.0)) > 1e-12)
      continue;
    const Shape &q = g.node(n.inputs[0]).type.shape, &k = g.node(n.inputs[1]).type.shape;
    bool bf16 = true;
    for (int in : n.inputs) bf16 = bf16 && g.node(in).type.dtype == DType::BF16;
    if (!bf16 || q.size() != 4 || k.size() != 4 || q[3] != 128 || n.type.shape[3] != 128 || q[2] != k[2] ||
        k[1] == 0 || q[1] % k[1] != 0 || q[2] == 0)
      continue;
    FastPathSite site;
    site.name = "causal_attention";
    site.covered = {n.id};
    site.inputs = {n.inputs[0], n.inputs[1], n.inputs[2]};
    site.replaced = {n.id};
    // what the kernel's code depends on: a last q tile that is partial, and
    // k/v heads shared by several q heads
    site.shape_class = std::string("bf16,head_dim=128,tile=128x128,s_tail=") + (q[2] % 128 != 0 ? "yes" : "no") +
                       ",gqa=" + (q[1] != k[1] ? "yes" : "no");
    const Shape bshd = {q[0], q[2], q[1], q[3]};
    site.emit = [=](Graph& out, const std::vector<int>& in) {
      int fp = out.add(Op::FastPath, {in[0], in[1], in[2]}, fast_attrs("causal_attention", "", bshd, DType::BF16));
      return std::vector<int>{out.add(Op::Transpose, {fp}, {{"dim0", int64_t{1}}, {"dim1", int64_t{2}}})};
    };
    r.push_back(std::move(site));
  }
  return r;
}

std::vector<FastPathSpec> make_catalog() {
  std::vector<FastPathSpec> c;
  c.push_back({"qkv_rmsnorm_tp", 20,
               "head-sharding aware, distributed norm: each rank sums the squares of the q and k columns it holds, "
               "one all-reduce adds those partial sums over the ranks, then q and k are normalized by the full "
               "projected dimension",
               "q and k slices of one projection (widths a multiple of 8), each through an RMSNorm whose sum of "
               "squares is all-reduced",
               false, match_qkv_tp, {}});
  c.push_back({"qkv_rmsnorm_local", 10,
               "assumes the full normalized dim: normalizes q and k over the columns this rank holds, in one "
               "kernel; right only where a rank holds the whole dimension (world size 1, or a per-shard norm)",
               "q and k slices of one projection (widths a multiple of 8), each through an RMSNorm (all-reduced or "
               "not)",
               true,
               match_qkv_local, {}});
  c.push_back({"allreduce_residual_rmsnorm", 10,
               "replicated output: one-shot all-reduce over the ranks' buffers (shared memory on cpu, CUDA IPC on "
               "cuda; ranks on one host), summed in rank order so every rank holds the same bits, fused with the "
               "residual add and the RMSNorm",
               "all_reduce(g) + r, then an RMSNorm over the whole last dim of the sum (a multiple of 8)", false,
               match_allreduce_norm,
               // every rank sums the same partials in the same order: the
               // result is replicated when the residual and the weight are
               {1, 2}});
  c.back().one_host = true;
  c.back().exchange_only_gain = true;
  // The block's last all-reduce and the residual add after it, where no
  // norm reads the sum: the add done as each chunk's sum is stored, so that
  // the GEMM before the all-reduce stays the plain one on every rank. The
  // residual hoist (passes/tp_rewrite) would put the add into rank 0's GEMM
  // as its C operand instead: on two H100 at tp_block_llama_h4096 that GEMM
  // took 84.1 us where the plain one takes 79.1, and every rank's exchange
  // waits for it (bench/RESULTS.md, "Issue 17, fourteenth step"). Below
  // allreduce_residual_rmsnorm (10), above allreduce_sum (4), which it
  // contains.
  c.push_back({"allreduce_residual", 6,
               "replicated output when the residual is: one-shot all-reduce over the ranks' buffers (shared memory "
               "on cpu, CUDA IPC on cuda; ranks on one host), summed in rank order in f32 and rounded once, then the "
               "residual added and rounded once, so every rank holds the same bits",
               "all_reduce(g) + r, summed, of bf16 whose last dim is a multiple of 8, the sum read by nothing else",
               false, match_allreduce_residual,
               // every rank sums the same partials in the same order: the
               // result is replicated when the residual is
               {1}});
  c.back().one_host = true;
  c.back().exchange_alone = true;
  c.back().max_autotune_only = true;
  c.back().cuda_measured_slower =
      "tp_block_llama_h4096 at world size 2, H100: no faster than allreduce_sum with the residual as the down "
      "projection's C on rank 0 (exchange + GEMM 118.6-123.3 us against 117.9-120.2, forward within noise)";
  // The exchange alone, where no norm follows the all-reduce (the block's
  // last one): allreduce_residual_rmsnorm (10) takes every all-reduce that
  // a norm reads, allreduce_residual (6) one that a residual add reads.
  c.push_back({"allreduce_sum", 4,
               "replicated output: one-shot all-reduce over the ranks' buffers (shared memory on cpu, CUDA IPC on "
               "cuda; ranks on one host), summed in rank order in f32 and rounded once, so every rank holds the "
               "same bits",
               "all_reduce(g), summed, of bf16 whose last dim is a multiple of 8", false, match_allreduce_sum,
               // the partials differ by rank; the sum is the same on
               // every rank by construction
               {}});
  c.back().replicated_always = true;
  c.back().one_host = true;
  c.back().exchange_alone = true;
  // a win over the collective Inductor calls: max-autotune's, as every
  // fast path since (the default policy stays faithful to Inductor)
  c.back().max_autotune_only = true;
  // The MLP's two fast paths. Where the norm before the MLP also ends an
  // all-reduce + residual (world size 2 and up), allreduce_residual_rmsnorm
  // (10) takes the norm: its exchange saves more than the normalized copy
  // the fold saves, and gate_up_swiglu runs after it. Elsewhere the fold
  // (8) outranks the plain kernel (5) where it is eligible; on cuda the cost
  // model refuses the fold, as measured (bench/RESULTS.md, "Issue 17, fifth
  // step"): its producer warps' row sums re-read every x tile from shared
  // memory, which the wgmma and TMA traffic already nearly fill, and the
  // kernel took 100.2-102.3 us at tp_block_llama_h2048 where gate_up_swiglu
  // took 93.0 us and the norm kernel it saves 3.6-3.9 us.
  c.push_back({"rmsnorm_gate_up_swiglu", 8,
               "column-parallel, no exchange: as gate_up_swiglu, with the RMSNorm before it folded in; the norm is "
               "over the whole last dim of x, which every rank holds (a norm whose sum of squares is all-reduced "
               "is not matched), so each rank computes the same row scales as the generic path's norm",
               "silu(linear(n, Wg)) * linear(n, Wu), n = rms_norm(x) * gamma over x's last dim (its sum of squares "
               "not all-reduced) and read by nothing else; gamma, Wg and Wu graph inputs, Wg and Wu [N, K] with N a "
               "multiple of 128 and K of 8",
               false, match_rmsnorm_gate_up_swiglu,
               // a function of its inputs alone, computed the same way on
               // every rank of one GPU model
               {0, 1, 2, 3}});
  c.back().max_autotune_only = true;
  c.back().cuda_gain_only = true;
  c.back().cuda_measured_slower =
      "tp_block_llama_h2048, H100 and H200: its kernel 100.2-102.3 us against gate_up_swiglu's 93.0 us and the "
      "3.6-3.9 us norm kernel it saves";
  c.back().cuda_arch = "sm_90a";
  c.back().source = "gate_up_swiglu";
  c.push_back({"gate_up_swiglu", 5,
               "column-parallel, no exchange: the gate and up weights are sharded alike along their output dim, so "
               "output column j pairs gate column j with up column j on the rank that holds both; each rank "
               "computes its own columns from the whole h, as the generic path does",
               "silu(linear(h, Wg)) * linear(h, Wu): both linears without bias over one bf16 h, Wg and Wu two "
               "graph inputs [N, K] with N a multiple of 128 and K of 8",
               false, match_gate_up_swiglu,
               // a function of its inputs alone, computed the same way on
               // every rank of one GPU model
               {0, 1, 2}});
  c.back().max_autotune_only = true;
  c.back().cuda_gain_only = true;
  c.back().cuda_arch = "sm_90a";
  c.push_back({"causal_attention", 5,
               "head-parallel, no exchange: each rank holds whole heads of q, k and v (the column-parallel qkv "
               "projection shards by head) and attention mixes no heads, so each rank computes its own heads from "
               "its own q, k and v, as the generic path does",
               "scaled_dot_product_attention, causal, over bf16 q [B, H, S, 128] and k, v [B, Hk, S, 128] of one "
               "sequence length, H a multiple of Hk",
               false, match_causal_attention,
               // a function of its inputs alone, computed the same way on
               // every rank of one GPU model
               {0, 1, 2}});
  c.back().max_autotune_only = true;
  c.back().cuda_gain_only = true;
  c.back().cuda_arch = "sm_90a";
  return c;
}

std::string hex64(uint64_t h) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

}  // namespace

const std::vector<FastPathSpec>& fast_path_catalog() {
  static const std::vector<FastPathSpec> c = make_catalog();
  return c;
}

const FastPathSpec* find_fast_path(const std::string& name) {
  for (const auto& s : fast_path_catalog())
    if (s.name == name) return &s;
  return nullptr;
}

std::string fast_path_names() {
  std::vector<std::string> n;
  for (const auto& s : fast_path_catalog()) n.push_back(s.name);
  std::sort(n.begin(), n.end());
  std::string r;
  for (const auto& s : n) r += (r.empty() ? "" : ", ") + s;
  return r;
}

std::string fast_path_source(const std::string& name, Backend backend) {
  const FastPathSpec* spec = find_fast_path(name);
  if (!spec) internal_error("no fast path named " + name);
  const std::string file = spec->file();
  std::string src = backend == Backend::Cpu ? host_kernel_prelude() + embedded_fast_path_source(file, "host")
                                            : cuda_kernel_prelude() + embedded_fast_path_source(file, "cuda");
  // an edit of NAME's file: every fast path that runs that file sees it
  const std::string edited = fault_argument("fastpath_edit");
  const FastPathSpec* e = edited.empty() ? nullptr : find_fast_path(edited);
  if (e && e->file() == file)
    src += "\n// edited (FUSEGATE_FAULT=fastpath_edit:" + edited + ")\n";
  return src;
}

std::string fast_path_source_hash(const std::string& name, Backend backend) {
  const std::string s = fast_path_source(name, backend);
  return hex64(XXH64(s.data(), s.size(), 0));
}

}  // namespace fg
