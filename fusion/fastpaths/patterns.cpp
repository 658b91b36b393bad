#include "fusion/fastpaths/patterns.h"

#include <algorithm>
#include <cmath>

#include "fusion/errors.h"

namespace fg::patterns {

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

}  // namespace fg::patterns
