// The one-shot exchange fast paths' patterns: the all-reduce of a
// row-parallel GEMM's partial sums, alone, with the residual add after it,
// or with the add and the RMSNorm that reads it.
#include <algorithm>

#include "fusion/errors.h"
#include "fusion/fastpaths/patterns.h"

namespace fg::patterns {

namespace {

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

}  // namespace

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

}  // namespace fg::patterns
