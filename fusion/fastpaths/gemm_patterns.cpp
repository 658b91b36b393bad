// The fast paths whose kernel is a Hopper GEMM or attention: the MLP's
// SwiGLU (gate and up GEMMs with SiLU * up in the epilogue, and the same
// with the RMSNorm before it folded in) and causal attention.
#include <algorithm>

#include "fusion/errors.h"
#include "fusion/fastpaths/patterns.h"
#include "fusion/fault.h"

namespace fg {

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

namespace patterns {

namespace {

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

}  // namespace

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
    if (n.op != Op::Sdpa || attr_int_or(n.attrs, "causal", 1) == 0 || n.type.dtype != DType::BF16 ||
        n.attrs.count("scale"))
      continue;
    // the kernel scales by 1 / sqrt(128), as sdpa does at head dim 128 (a
    // call given its own scale is not matched)
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

}  // namespace patterns
}  // namespace fg
