// lower, reductions: a reduction becomes a reduction node, unrolled into a
// pointwise loader when it is short, or two nodes when Inductor would split it.
#include <algorithm>
#include <cmath>
#include <limits>

#include "fusion/errors.h"
#include "fusion/passes/lowerer.h"

namespace fg::lowering {

Value Lowerer::lower_reduction(const Node& n) {
  FG_CHECK(n.op == Op::Sum || n.op == Op::Amax || n.op == Op::Amin || n.op == Op::Argmax || n.op == Op::Cumsum,
           "reduction not decomposed");
  const Value& x = in(n, 0);
  const Shape& s = x.type.shape;
  std::vector<int64_t> dims = n.attrs.count("dims") ? attr_ints(n.attrs, "dims", n.op) : std::vector<int64_t>{};
  if ((n.op == Op::Argmax && n.attrs.count("dim")) || n.op == Op::Cumsum) dims = {attr_int(n.attrs, "dim", n.op)};
  if (dims.empty())
    for (size_t i = 0; i < s.size(); ++i) dims.push_back(static_cast<int64_t>(i));
  for (auto& d : dims) d = norm_dim(d, s.size(), n.op);
  std::sort(dims.begin(), dims.end());
  bool keep = attr_int_or(n.attrs, "keepdim", 0) != 0;
  int64_t r = 1;
  Shape rshape;
  for (auto d : dims) { r *= s[static_cast<size_t>(d)]; rshape.push_back(s[static_cast<size_t>(d)]); }
  std::set<std::string> origins = x.origins;
  origins.insert(origin_of(n));
  SourceLines lines = x.lines;
  merge(lines, line_of(n));
  // the type of what is reduced: the result's, but argmax compares values
  // and returns an index
  DType t = n.op == Op::Argmax ? x.type.dtype : n.type.dtype;
  Op op = n.op;

  // full coordinates of the input from output coordinates and reduced ones
  auto full = [s, dims, keep](const Coords& oc, const Coords& rc) {
    Coords f;
    size_t oi = 0, ri = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      bool red = std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end();
      if (red) { f.push_back(rc[ri++]); if (keep) ++oi; }
      else f.push_back(oc[oi++]);
    }
    return f;
  };

  if (r < 8 && op != Op::Cumsum) {  // unrolled: a pointwise value (a scan never is)
    Value v;
    v.type = n.type;
    v.origins = origins;
    v.lines = lines;
    LoadFn xl = x.load;
    v.load = memo([xl, full, rshape, r, op, t](const Coords& oc) {
      ExprP acc, index = ex_const(0, DType::I64);
      for (int64_t j = 0; j < r; ++j) {
        ExprP e = ex_cast((*xl)(full(oc, ix_unflatten(ix_const(j), rshape))), t);
        if (op == Op::Argmax && acc) {
          // the first largest, NaN largest: as fg_argmax_better
          auto isnan = [t](const ExprP& a) { return ex_binary(Op::Ne, a, a, DType::Bool); };
          auto notnan = [t](const ExprP& a) { return ex_binary(Op::Eq, a, a, DType::Bool); };
          ExprP take = ex_where(isnan(e), notnan(acc),
                                ex_where(isnan(acc), ex_const(0, DType::Bool), ex_binary(Op::Gt, e, acc, DType::Bool),
                                         DType::Bool),
                                DType::Bool);
          index = ex_where(take, ex_const(static_cast<double>(j), DType::I64), index, DType::I64);
          acc = ex_where(take, e, acc, t);
          continue;
        }
        acc = acc ? ex_binary(op == Op::Sum ? Op::Add : op == Op::Amin ? Op::Minimum : Op::Maximum, acc, e, t) : e;
      }
      if (op == Op::Argmax) return index;
      return acc ? acc : ex_const(0, t);
    });
    return v;
  }
  ExprP body = ex_cast((*x.load)(ix_coords("i", s)), t);
  const int64_t numel_out = numel(s) / r;
  // Inductor never splits argmax (nor scans, which have their own rule
  // for long 1-D ones: not built)
  const int64_t split = op == Op::Argmax || op == Op::Cumsum
                            ? 1
                            : reduction_splits(numel_out, r, reads_inner(body, s, dims), opts_.split);
  if (split > 1) return lower_split_reduction(n, x, dims, r, split, origins, lines);
  Layout l = Layout::contiguous(n.type.shape);
  int b = new_buffer("", n.type.dtype, l);
  SchedNode sn;
  sn.kind = SNKind::Reduction;
  sn.out_buffer = b;
  sn.shape = s;
  sn.reduce_dims = dims;
  sn.reduce_op = op;
  sn.body = body;
  sn.store = l;
  sn.writes = {b};
  sn.origins.assign(origins.begin(), origins.end());
  sn.lines = lines.flat();
  add_node(std::move(sn));
  return from_storage(b, l, n.type.dtype);
}

bool Lowerer::reads_inner(const ExprP& body, const Shape& s, const std::vector<int64_t>& dims) {
  std::map<std::string, std::pair<int, IndexP>> loads;
  ex_loads(body, &loads);
  std::map<std::string, IndexP> zero;
  for (size_t i = 0; i < s.size(); ++i) zero["i" + std::to_string(i)] = ix_const(0);
  int inner = 0, outer = 0;
  for (const auto& [key, ld] : loads) {
    std::map<std::string, int64_t> vars;
    ix_vars(ld.second, &vars);
    bool full = true;
    for (size_t i = 0; i < s.size(); ++i) full = full && (s[i] == 1 || vars.count("i" + std::to_string(i)));
    if (!full) continue;
    bool all_strided = true;
    const int64_t at0 = ix_subst(ld.second, zero)->constant;
    for (int64_t d : dims) {
      if (s[static_cast<size_t>(d)] == 1) continue;
      auto one = zero;
      one["i" + std::to_string(d)] = ix_const(1);
      all_strided = all_strided && ix_subst(ld.second, one)->constant - at0 > 1;
    }
    (all_strided ? outer : inner) += 1;
  }
  return inner > outer;
}

Value Lowerer::lower_split_reduction(const Node& n, const Value& x, const std::vector<int64_t>& dims, int64_t r,
                                     int64_t split, const std::set<std::string>& origins,
                                     const SourceLines& lines) {
  const Shape& s = x.type.shape;
  const DType t = n.type.dtype;
  const Op op = n.op;
  const int64_t block = (r + split - 1) / split;
  Shape outer, rshape;
  for (size_t i = 0; i < s.size(); ++i)
    (std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end() ? rshape : outer).push_back(s[i]);
  const DType acc = (t == DType::BF16 || t == DType::F16) ? DType::F32 : t;
  const bool fp = is_floating(acc);
  const double identity = op == Op::Sum    ? 0.0
                          : op == Op::Amin ? (fp ? INFINITY : static_cast<double>(std::numeric_limits<int64_t>::max()))
                                           : (fp ? -INFINITY : static_cast<double>(std::numeric_limits<int64_t>::min()));
  auto add_reduction = [&](const Shape& shape, ExprP body, DType dt, const Shape& out_shape) {
    Layout l = Layout::contiguous(out_shape);
    const int b = new_buffer("", dt, l);
    SchedNode sn;
    sn.kind = SNKind::Reduction;
    sn.out_buffer = b;
    sn.shape = shape;
    sn.reduce_dims = {static_cast<int64_t>(shape.size()) - 1};
    sn.reduce_op = op;
    sn.body = std::move(body);
    sn.store = l;
    sn.writes = {b};
    sn.origins.assign(origins.begin(), origins.end());
    sn.lines = lines.flat();
    add_node(std::move(sn));
    return from_storage(b, l, dt);
  };
  // stage 1 over [outer..., split, block]
  Shape s1 = outer;
  s1.push_back(split);
  s1.push_back(block);
  Coords c1 = ix_coords("i", s1);
  IndexP flat = ix_add(ix_mul(c1[outer.size()], block), c1[outer.size() + 1]);
  Coords rc = ix_unflatten(split * block == r ? flat : ix_clamp(flat, 0, r - 1), rshape);
  Coords full;
  size_t oi = 0, ri = 0;
  for (size_t i = 0; i < s.size(); ++i)
    full.push_back(std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end() ? rc[ri++] : c1[oi++]);
  ExprP body1 = ex_cast(ex_cast((*x.load)(full), t), acc);
  if (split * block != r) body1 = ex_where(ex_index_lt(flat, r), body1, ex_const(identity, acc), acc);
  Shape mid = outer;
  mid.push_back(split);
  Value partial = add_reduction(s1, body1, acc, mid);
  // stage 2 over [outer..., split], accumulated as stage 1, rounded once
  // into the reduction's own shape and dtype
  return add_reduction(mid, (*partial.load)(ix_coords("i", mid)), t, n.type.shape);
}

}  // namespace fg::lowering
