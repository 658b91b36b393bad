// lower, pointwise: a pointwise node becomes a loader (an expression at
// given coordinates), inlined into its consumers until something realizes it.
#include <cmath>
#include <tuple>

#include "fusion/errors.h"
#include "fusion/passes/lowerer.h"

namespace fg::lowering {

Value Lowerer::lower_pointwise(const Node& n) {
  Value v;
  v.type = n.type;
  if (n.op != Op::Full) {
    v.origins.insert(origin_of(n));
    v.lines = line_of(n);
  }
  // operands read broadcast (the generic path below), as Inductor's
  // broadcasting lowerings read them: a heavy one is stored
  if (n.inputs.size() > 1 && n.op != Op::Cat && n.op != Op::IndexSelect && n.op != Op::Gather) mark_broadcast_reuse(n);
  std::vector<Value> ins;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    ins.push_back(in(n, k));
    v.origins.insert(ins.back().origins.begin(), ins.back().origins.end());
    merge(v.lines, ins.back().lines);
  }
  Shape out = n.type.shape;
  Op op = n.op;
  Attrs attrs = n.attrs;
  DType t = n.type.dtype;
  if (op == Op::Full) {
    double val = attr_float(attrs, "value", op);
    v.load = make_loader([val, t](const Coords&) { return ex_const(val, t); });
    return v;
  }
  if (op == Op::Arange) {
    // As torch's arange decomposes (torch 2.11): where start, end and step
    // are all written as integers (or the dtype is one), one index value in
    // the dtype (prims.iota; Inductor's index_expr, one op); else start +
    // step * i, an i64 index converted to the compute type (f32 for 16-bit
    // dtypes), then rounded once to the dtype: six or seven values for
    // Inductor's op counter, which decide what is stored (fuzz_371: an
    // rms_norm of add(w, arange(4.0)) is two kernels; fuzz_338: a cast of a
    // pointwise cat of two such pieces is stored). Rounded once either way,
    // as eager rounds each value (a bf16 arange past 256 is not the index).
    const double start = attr_float_or(attrs, "start", 0.0), step = attr_float_or(attrs, "step", 1.0);
    const bool integral = start == std::floor(start) && step == std::floor(step);
    auto written_int = [&](const char* k) { return !attrs.count(k) || std::holds_alternative<int64_t>(attrs.at(k)); };
    const bool iota = integral && (!is_floating(t) || (written_int("start") && written_int("end") && written_int("step")));
    v.load = make_loader([start, step, iota, t](const Coords& c) {
      if (iota)
        return ex_cast_counted(ex_index_value(ix_add(ix_mul(c[0], static_cast<int64_t>(step)),
                                                      ix_const(static_cast<int64_t>(start))),
                                              DType::I64),
                               t, 0);
      const DType ct = t == DType::F64 ? DType::F64 : DType::F32;
      ExprP i = ex_cast(ex_index_value(c[0], DType::I64), ct);
      return ex_cast(ex_binary(Op::Add, ex_binary(Op::Mul, i, ex_const(step, ct), ct), ex_const(start, ct), ct), t);
    });
    return v;
  }
  if (op == Op::Contiguous) {
    // already in row-major order: the same value, no copy
    if (ins[0].storage() && ins[0].layout.is_contiguous()) return ins[0];
    v.load = ins[0].load;
    return v;
  }
  if (op == Op::Pad) {
    const std::vector<int64_t> pad = attr_ints(attrs, "pad", op);
    const Shape in_shape = ins[0].type.shape;
    const double fill = attr_float_or(attrs, "value", 0.0);
    LoadFn inner = ins[0].load;
    v.load = memo([inner, pad, in_shape, fill, t](const Coords& c) {
      // outside the input on any padded dim: the fill value
      Coords cc = c;
      std::vector<std::tuple<size_t, int64_t, int64_t>> edges;  // dim, before, size
      for (size_t k = 0; k < pad.size(); k += 2) {
        const size_t d = in_shape.size() - 1 - k / 2;
        cc[d] = ix_clamp(ix_add(c[d], ix_const(-pad[k])), 0, in_shape[d] - 1);
        edges.emplace_back(d, pad[k], in_shape[d]);
      }
      ExprP r = ex_cast((*inner)(cc), t);
      const ExprP f = ex_const(fill, t);
      for (const auto& [d, before, n] : edges)
        r = ex_where(ex_index_lt(c[d], before), f, ex_where(ex_index_lt(c[d], before + n), r, f, t), t);
      return r;
    });
    return v;
  }
  if (op == Op::Cat) {
    int64_t d = norm_dim(attr_int(attrs, "dim", op), out.size(), op);
    std::vector<std::pair<LoadFn, Shape>> pieces;
    for (const auto& x : ins) pieces.push_back({x.load, x.type.shape});
    v.load = memo([pieces, d, t](const Coords& c) {
      // nested selects from the last piece back; indices are clamped so
      // that the piece not taken still reads in bounds
      int64_t start = 0;
      std::vector<int64_t> starts;
      for (const auto& x : pieces) { starts.push_back(start); start += x.second[static_cast<size_t>(d)]; }
      ExprP r;
      for (int k = static_cast<int>(pieces.size()) - 1; k >= 0; --k) {
        int64_t sz = pieces[static_cast<size_t>(k)].second[static_cast<size_t>(d)];
        Coords cc = c;
        cc[static_cast<size_t>(d)] = ix_clamp(ix_add(c[static_cast<size_t>(d)], ix_const(-starts[static_cast<size_t>(k)])), 0, sz - 1);
        ExprP piece = ex_cast((*pieces[static_cast<size_t>(k)].first)(cc), t);
        // the outermost select counts what Inductor's pointwise_cat spends
        // on its masks beyond one compare and one select a boundary: the
        // dim's index, each piece's bounds, compares (both, and their and
        // in a middle piece) and masked load: 6n - 1 ops for n pieces
        const int n = static_cast<int>(pieces.size());
        const int ops = k == 0 ? 4 * n + 2 : 1;
        r = r ? ex_where_counted(ex_index_lt(c[static_cast<size_t>(d)], starts[static_cast<size_t>(k)] + sz), piece,
                                 r, t, ops)
              : piece;
      }
      return r;
    });
    return v;
  }
  if (op == Op::IndexSelect || op == Op::Gather) {
    // x read where the index says: a variable per read, bound to the
    // index's value at these coordinates (Inductor's indirect indexing)
    const int64_t d = norm_dim(attr_int(attrs, "dim", op), out.size(), op);
    const int64_t size = ins[0].type.shape[static_cast<size_t>(d)];
    LoadFn xl = ins[0].load, il = ins[1].load;
    auto counter = indirect_vars_;
    v.load = memo([xl, il, d, size, op, counter](const Coords& c) {
      ExprP at = (*il)(op == Op::Gather ? c : Coords{c[static_cast<size_t>(d)]});
      const std::string name = std::string(kIndirectVarPrefix) + std::to_string((*counter)++);
      Coords xc = c;
      xc[static_cast<size_t>(d)] = ix_var(name, size);
      return ex_bind_indirect((*xl)(xc), name, size, at);
    });
    return v;
  }
  if (op == Op::OneHot) {
    // 1 where the last coordinate is the index's value: index arithmetic
    LoadFn il = ins[0].load;
    v.load = memo([il](const Coords& c) {
      const Coords at(c.begin(), c.end() - 1);
      ExprP idx = ex_cast((*il)(at), DType::I64);
      return ex_cast(ex_binary(Op::Eq, idx, ex_index_value(c.back(), DType::I64), DType::Bool), DType::I64);
    });
    return v;
  }
  std::vector<std::pair<LoadFn, Shape>> loads;
  for (const auto& x : ins) loads.push_back({x.load, x.type.shape});
  v.load = memo([loads, out, op, attrs, t](const Coords& c) {
    std::vector<ExprP> a;
    for (const auto& [ld, shape] : loads) a.push_back((*ld)(broadcast_coords(c, out, shape)));
    if (op == Op::Cast) return ex_cast(a[0], t);
    if (op == Op::Where) return ex_where(a[0], a[1], a[2], t);
    if (op == Op::Abs) return ex_unary(op, a[0], attrs);
    if (op == Op::Clamp) {
      // torch.clamp: max(x, min), then min(., max); NaN stays NaN
      ExprP r = a[0];
      if (attrs.count("min")) r = ex_binary(Op::Maximum, r, ex_const(attr_float(attrs, "min", op), t), t);
      if (attrs.count("max")) r = ex_binary(Op::Minimum, r, ex_const(attr_float(attrs, "max", op), t), t);
      return r;
    }
    if (is_unary_pointwise(op)) return ex_unary(op, a[0], attrs);
    return ex_binary(op, a[0], a[1], t);
  });
  return v;
}

}  // namespace fg::lowering
