// The q/k norm fast paths' pattern: two RMSNorm chains over slices of the
// last dim of one value (the QKV projection).
#include <algorithm>
#include <map>

#include "fusion/errors.h"
#include "fusion/fastpaths/patterns.h"

namespace fg::patterns {

namespace {

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

}  // namespace

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

}  // namespace fg::patterns
