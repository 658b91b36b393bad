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

  // a scan over one element: the element, a pointwise copy where the
  // backend says so
  if (op == Op::Cumsum && r <= 1 && opts_.scan_of_one_is_pointwise) {
    Value v;
    v.type = n.type;
    v.origins = origins;
    v.lines = lines;
    LoadFn xl = x.load;
    v.load = memo([xl, t](const Coords& oc) { return ex_cast((*xl)(oc), t); });
    return v;
  }
  // unrolled: a pointwise value (a longer scan never is, nor a one-row
  // variance's sums on cuda, a Welford reduction there: decompose's
  // welford_row)
  if (r < 8 && op != Op::Cumsum && !n.attrs.count("@welford_row")) {
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
  const ReadHint hint = op == Op::Argmax || op == Op::Cumsum ? ReadHint::None : read_hint(body, s, dims);
  int64_t split = op == Op::Argmax || op == Op::Cumsum || (numel_out > 1 && hint == ReadHint::None)
                      ? 1
                      : reduction_splits(numel_out, r, hint == ReadHint::Inner, opts_.split);
  // a full reduction split where a reduction it reads had its rows (stage 1
  // then runs over those rows and can share their kernel)
  if (split > 1 && numel_out == 1) {
    const int64_t rows = existing_split(x, r);
    if (rows > 1) split = rows;
  }
  if (split > 1) {
    const int mean_sum = welford_mean_sum(n, dims, r, split);
    if (mean_sum >= 0) return lower_welford_split(n, mean_sum, dims, r, split, origins, lines);
    return lower_split_reduction(n, x, dims, r, split, origins, lines);
  }
  return add_reduction(n, s, dims, op, body, origins, lines);
}

Value Lowerer::add_reduction(const Node& n, const Shape& s, const std::vector<int64_t>& dims, Op op, ExprP body,
                             const std::set<std::string>& origins, const SourceLines& lines, bool descending) {
  Layout l = chosen_layout(n.id, n.type.shape, n.type.dtype);
  int b = new_buffer("", n.type.dtype, l);
  SchedNode sn;
  sn.kind = SNKind::Reduction;
  sn.out_buffer = b;
  sn.shape = s;
  sn.reduce_dims = dims;
  sn.reduce_op = op;
  sn.descending = descending;
  sn.body = std::move(body);
  sn.store = l;
  sn.writes = {b};
  sn.origins.assign(origins.begin(), origins.end());
  sn.lines = lines.flat();
  add_node(std::move(sn));
  return from_storage(b, l, n.type.dtype);
}

// sort and argsort as Inductor lowers them for GPUs (ir.Sort.create): a
// dim of one element is a copy of x (argsort: position 0 everywhere); up to
// 512 elements a row, a reduction node that sorts each row whole (Inductor's
// persistent sort kernel: its producers inlined, stable, NaN largest) and
// stores it at every element; a longer row is the library call, as there.
Value Lowerer::lower_sort(const Node& n) {
  constexpr int64_t kLongestSortedRow = 512;
  const Value& x = in(n, 0);
  const Shape& s = x.type.shape;
  if (s.empty()) return lower_extern(n);
  const int64_t d = norm_dim(attr_int_or(n.attrs, "dim", -1), s.size(), n.op);
  const int64_t len = s[static_cast<size_t>(d)];
  if (len > kLongestSortedRow || !generated(n)) return lower_extern(n);
  std::set<std::string> origins = x.origins;
  origins.insert(origin_of(n));
  SourceLines lines = x.lines;
  merge(lines, line_of(n));
  if (len <= 1) {
    Value v;
    v.type = n.type;
    v.origins = origins;
    v.lines = lines;
    const LoadFn xl = x.load;
    const bool positions = n.op == Op::Argsort;
    v.load = memo([xl, positions](const Coords& c) { return positions ? ex_const(0, DType::I64) : (*xl)(c); });
    return v;
  }
  // compared in x's dtype
  return add_reduction(n, s, {d}, n.op, (*x.load)(ix_coords("i", s)), origins, lines,
                       attr_int_or(n.attrs, "descending", 0) != 0);
}

Lowerer::ReadHint Lowerer::read_hint(const ExprP& body, const Shape& s, const std::vector<int64_t>& dims) {
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
      // a stride of 0 (a broadcast read) makes no reduction contiguous
      const int64_t stride = ix_subst(ld.second, one)->constant - at0;
      all_strided = all_strided && (stride == 0 || stride > 1);
    }
    (all_strided ? outer : inner) += 1;
  }
  if (inner + outer == 0) return ReadHint::None;
  return inner > outer ? ReadHint::Inner : ReadHint::Outer;
}

namespace {
// A split reduction's iteration spaces: the first kernel's [outer...,
// split, block] (each output's elements in `split` blocks of ceil(r /
// split)), the input's coordinates there and the element's flat place among
// the r reduced ones, and the second kernel's [outer..., split].
struct SplitFrame {
  Shape s1, mid;
  Coords c1, full;
  IndexP flat;
  int64_t block = 0;
  bool even = true;  // split * block == r: no block runs past the end
};

SplitFrame split_frame(const Shape& s, const std::vector<int64_t>& dims, int64_t r, int64_t split) {
  auto reduced = [&dims](size_t i) { return std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end(); };
  SplitFrame f;
  f.block = (r + split - 1) / split;
  f.even = split * f.block == r;
  Shape outer, rshape;
  for (size_t i = 0; i < s.size(); ++i) (reduced(i) ? rshape : outer).push_back(s[i]);
  f.s1 = outer;
  f.s1.push_back(split);
  f.s1.push_back(f.block);
  f.mid = outer;
  f.mid.push_back(split);
  f.c1 = ix_coords("i", f.s1);
  f.flat = ix_add(ix_mul(f.c1[outer.size()], f.block), f.c1[outer.size() + 1]);
  const Coords rc = ix_unflatten(f.even ? f.flat : ix_clamp(f.flat, 0, r - 1), rshape);
  size_t oi = 0, ri = 0;
  for (size_t i = 0; i < s.size(); ++i) f.full.push_back(reduced(i) ? rc[ri++] : f.c1[oi++]);
  return f;
}
}  // namespace

Value Lowerer::add_split_stage(const Shape& shape, ExprP body, Op op, DType dt, const Shape& out_shape,
                               const std::set<std::string>& origins, const SourceLines& lines) {
  Layout l = flexible_layout(out_shape, dt);
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
}

Value Lowerer::lower_split_reduction(const Node& n, const Value& x, const std::vector<int64_t>& dims, int64_t r,
                                     int64_t split, const std::set<std::string>& origins,
                                     const SourceLines& lines) {
  const DType t = n.type.dtype;
  const Op op = n.op;
  const DType acc = (t == DType::BF16 || t == DType::F16) ? DType::F32 : t;
  const bool fp = is_floating(acc);
  const double identity = op == Op::Sum    ? 0.0
                          : op == Op::Amin ? (fp ? INFINITY : static_cast<double>(std::numeric_limits<int64_t>::max()))
                                           : (fp ? -INFINITY : static_cast<double>(std::numeric_limits<int64_t>::min()));
  const SplitFrame f = split_frame(x.type.shape, dims, r, split);
  // stage 1 over [outer..., split, block]
  ExprP body1 = ex_cast(ex_cast((*x.load)(f.full), t), acc);
  if (!f.even) body1 = ex_where(ex_index_lt(f.flat, r), body1, ex_const(identity, acc), acc);
  Value partial = intermediate_reduction(f.s1, body1, op, acc, identity, f.mid, origins, lines);
  split_partials_[n.id] = SplitPartial{partial, dims, r, split};
  // stage 2 over [outer..., split], accumulated as stage 1, rounded once
  // into the reduction's own shape and dtype
  return add_split_stage(f.mid, (*partial.load)(ix_coords("i", f.mid)), op, t, n.type.shape, origins, lines);
}

Value Lowerer::intermediate_reduction(const Shape& shape, ExprP body, Op op, DType acc, double identity,
                                     const Shape& out_shape, const std::set<std::string>& origins,
                                     const SourceLines& lines) {
  const int64_t last = static_cast<int64_t>(shape.size()) - 1, block = shape.back();
  const ReadHint hint = read_hint(body, shape, {last});
  // Reduction.create again: over fewer than 8 values it would unroll, which
  // a block never is; no full-size read: no split
  const int64_t split = block < 8 || hint == ReadHint::None
                            ? 1
                            : reduction_splits(numel(out_shape), block, hint == ReadHint::Inner, opts_.split);
  if (split <= 1) return add_split_stage(shape, std::move(body), op, acc, out_shape, origins, lines);
  const SplitFrame f = split_frame(shape, {last}, block, split);
  std::map<std::string, IndexP> at;
  for (size_t i = 0; i < f.full.size(); ++i) at["i" + std::to_string(i)] = f.full[i];
  ExprP body1 = ex_subst(body, at);
  if (!f.even) body1 = ex_where(ex_index_lt(f.flat, block), body1, ex_const(identity, acc), acc);
  Value partial = intermediate_reduction(f.s1, body1, op, acc, identity, f.mid, origins, lines);
  return add_split_stage(f.mid, (*partial.load)(ix_coords("i", f.mid)), op, acc, out_shape, origins, lines);
}

// Inductor's extract_input_node_reduction_ranges: a stored input gives its
// own ranges if a reduction wrote it; a value not stored is searched by what
// it reads, level by level through pointwise writers (graph inputs and
// library calls skipped), and the first level holding reductions decides:
// they must all have one (numel, rnumel)
int64_t Lowerer::existing_split(const Value& x, int64_t r) const {
  auto writer = [this](int b) -> const SchedNode* {
    auto it = last_writer_.find(b);
    return it == last_writer_.end() ? nullptr : &out_.nodes[static_cast<size_t>(it->second)];
  };
  auto covers = [r](const SchedNode& w) { return w.numel() * w.rnumel() == r ? w.numel() : int64_t{0}; };
  if (x.storage()) {
    const SchedNode* w = writer(x.buffer);
    return w && w->kind == SNKind::Reduction ? covers(*w) : 0;
  }
  std::set<int> level = ex_buffers((*x.load)(ix_coords("i", x.type.shape)));
  while (!level.empty()) {
    const SchedNode* found = nullptr;
    std::set<int> next;
    for (int b : level) {
      const SchedNode* w = writer(b);
      if (!w || (w->kind != SNKind::Reduction && w->kind != SNKind::Pointwise)) continue;
      if (w->kind == SNKind::Pointwise) {
        next.insert(w->reads.begin(), w->reads.end());
      } else if (!found) {
        found = w;
      } else if (w->numel() != found->numel() || w->rnumel() != found->rnumel()) {
        return 0;
      }
    }
    if (found) return covers(*found);
    if (next == level) break;
    level = std::move(next);
  }
  return 0;
}

int Lowerer::welford_mean_sum(const Node& n, const std::vector<int64_t>& dims, int64_t r, int64_t split) const {
  // sum(d * d) {@welford}, d = x - m, m = sum(x) / N with the same dims,
  // as decompose writes a variance (var, layer_norm)
  if (n.op != Op::Sum || !n.attrs.count("@welford")) return -1;
  const Node& sq = g_.node(n.inputs[0]);
  if (sq.op != Op::Mul || sq.inputs[0] != sq.inputs[1]) return -1;
  const Node& d = g_.node(sq.inputs[0]);
  if (d.op != Op::Sub) return -1;
  const Node& m = g_.node(d.inputs[1]);
  if (m.op != Op::Div) return -1;
  const Node& s0 = g_.node(m.inputs[0]);
  if (s0.op != Op::Sum || s0.inputs[0] != d.inputs[0]) return -1;
  auto it = split_partials_.find(s0.id);
  if (it == split_partials_.end() || it->second.dims != dims || it->second.r != r || it->second.split != split)
    return -1;
  return s0.id;
}

Value Lowerer::lower_welford_split(const Node& n, int mean_sum, const std::vector<int64_t>& dims, int64_t r,
                                   int64_t split, const std::set<std::string>& origins, const SourceLines& lines) {
  const Node& d = g_.node(g_.node(n.inputs[0]).inputs[0]);
  const Value& x = values_[static_cast<size_t>(d.inputs[0])];
  const Value& mean = values_[static_cast<size_t>(d.inputs[1])];
  const Value& sums = split_partials_.at(mean_sum).partial;
  const DType t = n.type.dtype;
  const DType acc = (t == DType::BF16 || t == DType::F16) ? DType::F32 : t;
  const SplitFrame f = split_frame(x.type.shape, dims, r, split);
  const int64_t block = f.block;
  // block b of an output holds min(block, r - b * block) elements (none
  // past r); its mean is its sum over that count
  auto count = [&](const IndexP& b, int64_t least) {
    return ix_clamp(ix_add(ix_const(r), ix_mul(b, -block)), least, block);
  };
  auto block_mean = [&](const Coords& at) {
    return ex_binary(Op::Div, ex_cast((*sums.load)(at), acc), ex_index_value(count(at.back(), 1), acc), acc);
  };
  // first kernel over [outer..., split, block]: each block's squared
  // deviations from its own mean
  const Coords at_block(f.c1.begin(), f.c1.end() - 1);
  const ExprP dev = ex_binary(Op::Sub, ex_cast((*x.load)(f.full), acc), block_mean(at_block), acc);
  ExprP body1 = ex_binary(Op::Mul, dev, dev, acc);
  if (!f.even) body1 = ex_where(ex_index_lt(f.flat, r), body1, ex_const(0, acc), acc);
  const Value m2 = add_split_stage(f.s1, body1, Op::Sum, acc, f.mid, origins, lines);
  // second kernel over [outer..., split]: the blocks combined about the
  // whole mean (read at its keepdim coordinates)
  const Coords c2 = ix_coords("i", f.mid);
  Coords at_mean;
  size_t oi = 0;
  for (size_t i = 0; i < x.type.shape.size(); ++i)
    at_mean.push_back(std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end() ? ix_const(0)
                                                                                                : c2[oi++]);
  const ExprP shift = ex_binary(Op::Sub, block_mean(c2), ex_cast((*mean.load)(at_mean), acc), acc);
  const ExprP weighted =
      ex_binary(Op::Mul, ex_index_value(count(c2.back(), 0), acc), ex_binary(Op::Mul, shift, shift, acc), acc);
  return add_split_stage(f.mid, ex_binary(Op::Add, ex_cast((*m2.load)(c2), acc), weighted, acc), Op::Sum, t,
                         n.type.shape, origins, lines);
}

}  // namespace fg::lowering
