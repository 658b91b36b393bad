#include "fusion/passes/lower.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "fusion/errors.h"

namespace fg {

Layout Layout::in_dim_order(const Shape& s, const std::vector<int64_t>& order) {
  if (order.empty()) return contiguous(s);
  Layout l{s, std::vector<int64_t>(s.size(), 0), 0};
  int64_t stride = 1;
  for (size_t k = order.size(); k-- > 0;) {
    l.strides[static_cast<size_t>(order[k])] = stride;
    stride *= s[static_cast<size_t>(order[k])];
  }
  return l;
}

std::string Layout::str() const {
  return shape_str(sizes) + " strides " + shape_str(strides) + (offset ? " +" + std::to_string(offset) : "");
}

const char* sn_kind_name(SNKind k) {
  switch (k) {
    case SNKind::Pointwise: return "pointwise";
    case SNKind::Reduction: return "reduction";
    case SNKind::Template: return "template";
    case SNKind::Extern: return "extern";
    case SNKind::Collective: return "collective";
  }
  return "?";
}

int64_t SchedNode::numel() const {
  if (kind == SNKind::Template) return gemm_m * gemm_n;
  if (kind != SNKind::Reduction) return fg::numel(shape);
  return fg::numel(shape) / rnumel();
}
int64_t SchedNode::rnumel() const {
  if (kind != SNKind::Reduction) return 1;
  int64_t r = 1;
  for (auto d : reduce_dims) r *= shape[static_cast<size_t>(d)];
  return r;
}
Shape SchedNode::out_shape() const {
  if (kind != SNKind::Reduction) return shape;
  Shape s;
  for (size_t i = 0; i < shape.size(); ++i)
    if (std::find(reduce_dims.begin(), reduce_dims.end(), static_cast<int64_t>(i)) == reduce_dims.end())
      s.push_back(shape[i]);
  return s;
}

// Splits and merges dims the way a strided view can: walks chunks of the
// old shape that are contiguous among themselves and maps new dims onto them.
std::optional<Layout> view_reshape(const Layout& base, const Shape& sizes) {
  Layout out{sizes, std::vector<int64_t>(sizes.size(), 0), base.offset};
  if (numel(sizes) == 0) return out;
  // drop size-1 dims of the base: their strides do not matter
  Shape os;
  std::vector<int64_t> ost;
  for (size_t i = 0; i < base.sizes.size(); ++i)
    if (base.sizes[i] != 1) { os.push_back(base.sizes[i]); ost.push_back(base.strides[i]); }
  int vd = static_cast<int>(sizes.size()) - 1;
  size_t oi = os.size();
  while (oi > 0) {
    // a chunk: old dims [lo, oi) contiguous relative to each other
    size_t lo = oi - 1;
    int64_t chunk = os[lo];
    while (lo > 0 && ost[lo - 1] == ost[lo] * os[lo]) { --lo; chunk *= os[lo]; }
    int64_t stride = ost[oi - 1];
    int64_t acc = 1;
    while (vd >= 0 && (acc < chunk || sizes[static_cast<size_t>(vd)] == 1)) {
      out.strides[static_cast<size_t>(vd)] = acc * stride;
      acc *= sizes[static_cast<size_t>(vd)];
      --vd;
    }
    if (acc != chunk) return std::nullopt;
    oi = lo;
  }
  for (; vd >= 0; --vd) {
    if (sizes[static_cast<size_t>(vd)] != 1) return std::nullopt;
    out.strides[static_cast<size_t>(vd)] = 1;
  }
  return out;
}

namespace {

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t k = 1; k * k <= n; ++k)
    if (n % k == 0) {
      d.push_back(k);
      if (k * k != n) d.push_back(n / k);
    }
  return d;
}

// A block size near `target`: the divisor of n closest to it (the first of
// two as close, as min(sympy.divisors(n), key=|x - target|) picks it), no
// smaller than `floor`, when it is within `slack`; else `target` itself.
int64_t snap_to_divisor(int64_t n, int64_t target, int64_t slack, int64_t floor) {
  std::vector<int64_t> d = divisors(n);
  std::sort(d.begin(), d.end());
  int64_t best = d[0];
  for (int64_t x : d)
    if (std::llabs(x - target) < std::llabs(best - target)) best = x;
  return std::llabs(best - target) < slack ? std::max(best, floor) : target;
}

}  // namespace

int64_t reduction_splits(int64_t numel, int64_t rnumel, bool inner, const SplitReductions& c) {
  if (!c.enabled) return 1;
  const int64_t min_dev = c.min_elements_per_thread * c.num_sm * c.threads_per_sm;
  const int64_t max_dev = c.max_elements_per_thread * c.num_sm * c.threads_per_sm;
  const int64_t threads = 32 * 8;  // num_warps 8
  const int64_t total = rnumel * numel;
  const int64_t fewest = c.min_elements_per_thread, most = c.max_elements_per_thread;
  if (inner || numel == 1) {
    if (numel >= 2 * c.num_sm || rnumel <= c.min_rnumel) return 1;
    int64_t size = fewest;
    if (total > min_dev && total < max_dev) {
      const int64_t per_output = (c.num_sm * c.threads_per_sm / (2 * threads) + numel - 1) / numel;
      size = snap_to_divisor(rnumel, (rnumel + threads * per_output - 1) / (threads * per_output), 30, fewest);
    } else if (total >= max_dev) {
      size = snap_to_divisor(rnumel, most, 50, 0);
    }
    return (rnumel + size * threads - 1) / (size * threads);
  }
  if (rnumel <= fewest || numel >= c.num_sm * 2 * 32) return 1;
  const int64_t rvals_per_thread = 4, xblocks = (numel + 127) / 128;
  int64_t size = fewest;
  if (total >= min_dev && total < max_dev) {
    const int64_t target_blocks = (c.num_sm * c.threads_per_sm / threads + xblocks - 1) / xblocks;
    size = snap_to_divisor(rnumel, (rnumel + rvals_per_thread * target_blocks - 1) / (rvals_per_thread * target_blocks),
                           20, fewest);
  } else if (total >= max_dev) {
    size = snap_to_divisor(rnumel, most, 50, 0);
  }
  return (rnumel + rvals_per_thread * size - 1) / (rvals_per_thread * size);
}

namespace {

using Coords = std::vector<IndexP>;
// Loaders nest (a value inlined into a value inlined into ...); sharing them
// keeps copies cheap.
using LoadFn = std::shared_ptr<const std::function<ExprP(const Coords&)>>;
template <typename F>
LoadFn make_loader(F f) { return std::make_shared<const std::function<ExprP(const Coords&)>>(std::move(f)); }

// A lowered value: either backed by a buffer through a strided layout, or a
// loader that computes it from other values (inlined).
using Relayout = std::function<std::optional<Layout>(const Layout&)>;

struct Value {
  TensorType type;
  LoadFn load;
  int buffer = -1;
  Layout layout;
  // A chain of views over the value of graph node `view_base`, not yet in a
  // buffer: `relayout` maps that value's buffer layout to this view's.
  int view_base = -1;
  Relayout relayout;
  std::set<std::string> origins;
  std::set<std::string> lines;  // repro source locations of the graph nodes it covers
  bool storage() const { return buffer >= 0; }
};

std::string coords_key(const Coords& c) {
  std::string k;
  for (const auto& i : c) k += i->key + ";";
  return k;
}

// Memoises a loader per coordinate tuple, so that a value inlined twice at
// the same index is one expression (printed once).
template <typename F>
LoadFn memo(F f) {
  auto cache = std::make_shared<std::unordered_map<std::string, ExprP>>();
  return make_loader([f = std::move(f), cache](const Coords& c) {
    std::string k = coords_key(c);
    auto it = cache->find(k);
    if (it != cache->end()) return it->second;
    ExprP e = f(c);
    (*cache)[k] = e;
    return e;
  });
}

// Coordinates of an input broadcast to `out` (numpy rules).
Coords broadcast_coords(const Coords& c, const Shape& out, const Shape& in) {
  Coords r;
  size_t off = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) r.push_back(in[k] == 1 ? ix_const(0) : c[k + off]);
  return r;
}

class Lowerer {
 public:
  Lowerer(const Graph& g, const LowerOptions& o) : g_(g), opts_(o), users_(g.users()) {
    for (int o2 : g.outputs) ++extra_uses_[o2];
    out_.name = g.name;
  }

  LoweredGraph run() {
    std::set<int> outputs(g_.outputs.begin(), g_.outputs.end());
    for (const Node& n : g_.nodes) {
      loc_ = n.loc;
      values_.push_back(lower_node(n));
      Value& v = values_.back();
      if (!v.storage() && fusion_kind(n.op) == FusionKind::Pointwise && should_realize(n, v)) v = realize(v);
    }
    for (int o : g_.outputs) {
      Value v = values_[static_cast<size_t>(o)];
      if (!v.storage()) v = realize(v);
      out_.outputs.push_back({v.buffer, v.layout});
    }
    return std::move(out_);
  }

 private:
  int uses(int id) const {
    auto it = extra_uses_.find(id);
    return static_cast<int>(users_[static_cast<size_t>(id)].size()) + (it == extra_uses_.end() ? 0 : it->second);
  }

  bool should_realize(const Node& n, const Value& v) {
    ExprP e = (*v.load)(ix_coords("i", v.type.shape));
    size_t reads = ex_buffers(e).size();
    int ops = e->op_count;
    if (reads > 8 || ops > 100) return true;
    return uses(n.id) > 1 && (reads > 4 || ops > 30);
  }

  int new_buffer(const std::string& name, DType t, const Layout& layout, int input_index = -1) {
    BufferInfo b;
    b.id = static_cast<int>(out_.buffers.size());
    b.name = name.empty() ? "buf" + std::to_string(b.id) : name;
    b.dtype = t;
    b.layout = layout;
    b.input_index = input_index;
    b.storage_numel = 1;
    for (size_t i = 0; i < layout.sizes.size(); ++i) b.storage_numel += (layout.sizes[i] - 1) * layout.strides[i];
    b.storage_numel += layout.offset;
    if (numel(layout.sizes) == 0) b.storage_numel = 0;
    out_.buffers.push_back(b);
    return b.id;
  }

  Value from_storage(int buffer, const Layout& l, DType t, std::set<std::string> origins = {},
                     std::set<std::string> lines = {}) {
    Value v;
    v.type = TensorType{t, l.sizes};
    v.buffer = buffer;
    v.layout = l;
    v.origins = std::move(origins);
    v.lines = std::move(lines);
    v.load = make_loader([buffer, l, t](const Coords& c) { return ex_load(buffer, t, ix_linear(c, l.strides, l.offset)); });
    return v;
  }

  // Records a scheduler node with its reads and dependencies.
  SchedNode& add_node(SchedNode sn) {
    sn.id = static_cast<int>(out_.nodes.size());
    sn.loc = loc_;
    if (sn.body) sn.reads = ex_buffers(sn.body);
    for (const auto& a : sn.args) sn.reads.insert(a.first);
    for (int b : sn.reads) {
      auto it = last_writer_.find(b);
      if (it != last_writer_.end()) sn.deps.insert(it->second);
    }
    for (int b : sn.writes) {
      auto it = last_writer_.find(b);
      if (it != last_writer_.end() && it->second != sn.id) sn.deps.insert(it->second);
      for (int r : readers_[b]) sn.deps.insert(r);  // write after read
    }
    sn.deps.erase(sn.id);
    for (int b : sn.reads) readers_[b].push_back(sn.id);
    for (int b : sn.writes) { last_writer_[b] = sn.id; readers_[b].clear(); }
    if (sn.name.empty()) sn.name = out_.buffers[static_cast<size_t>(sn.out_buffer)].name;
    out_.nodes.push_back(std::move(sn));
    return out_.nodes.back();
  }

  Value realize(const Value& v) {
    Layout l = Layout::contiguous(v.type.shape);
    int b = new_buffer("", v.type.dtype, l);
    SchedNode sn;
    sn.kind = SNKind::Pointwise;
    sn.out_buffer = b;
    sn.shape = v.type.shape;
    sn.body = (*v.load)(ix_coords("i", v.type.shape));
    sn.store = l;
    sn.writes = {b};
    sn.origins.assign(v.origins.begin(), v.origins.end());
    sn.lines.assign(v.lines.begin(), v.lines.end());
    add_node(std::move(sn));
    return from_storage(b, l, v.type.dtype);
  }

  const Value& in(const Node& n, size_t k) { return values_[static_cast<size_t>(n.inputs[k])]; }

  // An extern's input: a view of a pointwise value realizes that value in
  // its own order and reads it through the view when the view keeps the
  // innermost dim contiguous (what the library kernels take); anything else
  // is realized as it is read.
  Value realize_for_extern(const Value& v) {
    if (v.view_base >= 0 && fusion_kind(g_.node(v.view_base).op) == FusionKind::Pointwise) {
      Value& base = values_[static_cast<size_t>(v.view_base)];
      const bool was_stored = base.storage();
      if (!was_stored) base = realize(base);
      std::optional<Layout> l = v.relayout(base.layout);
      if (l && !l->strides.empty() && l->strides.back() == 1)
        return from_storage(base.buffer, *l, v.type.dtype, v.origins, v.lines);
    }
    return realize(v);
  }

  std::string origin_of(const Node& n) const { return n.origin.empty() ? op_info(n.op).aten : n.origin; }
  // Where the repro made `n` (nothing when unknown: a graph built in code).
  static std::set<std::string> line_of(const Node& n) {
    if (!n.loc.known()) return {};
    return {n.loc.str()};
  }
  static void merge(std::set<std::string>& into, const std::set<std::string>& from) { into.insert(from.begin(), from.end()); }

  Value lower_node(const Node& n) {
    switch (fusion_kind(n.op)) {
      case FusionKind::Input: return lower_input(n);
      case FusionKind::Pointwise: return lower_pointwise(n);
      case FusionKind::Reduction: return lower_reduction(n);
      case FusionKind::View: return lower_view(n);
      case FusionKind::Extern: return lower_extern(n);
      case FusionKind::Collective: return lower_collective(n);
      case FusionKind::Mutation: return lower_copy_into(n);
      default: break;
    }
    internal_error(std::string("cannot lower op ") + op_name(n.op) + " (decompose first)");
  }

  Value lower_input(const Node& n) {
    size_t k = out_.input_buffers.size();
    Layout l = k < opts_.input_layouts.size() ? opts_.input_layouts[k] : Layout::contiguous(n.type.shape);
    FG_CHECK(l.sizes == n.type.shape, "input layout does not match input " + g_.ref(n.id));
    int b = new_buffer(n.name.empty() ? "arg" + std::to_string(k) : n.name, n.type.dtype, l, static_cast<int>(k));
    out_.input_buffers.push_back(b);
    return from_storage(b, l, n.type.dtype);
  }

  Value lower_pointwise(const Node& n) {
    Value v;
    v.type = n.type;
    if (n.op != Op::Full) {
      v.origins.insert(origin_of(n));
      v.lines = line_of(n);
    }
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
      // start + step * i: in index arithmetic when both are integers (exact,
      // as Inductor's index_expr), else in the dtype's compute type
      const double start = attr_float_or(attrs, "start", 0.0), step = attr_float_or(attrs, "step", 1.0);
      const bool integral = start == std::floor(start) && step == std::floor(step);
      // then rounded once to the dtype, as eager's arange rounds each value
      // (a bf16 arange past 256 is not the index)
      v.load = make_loader([start, step, integral, t](const Coords& c) {
        if (integral)
          return ex_cast(ex_index_value(ix_add(ix_mul(c[0], static_cast<int64_t>(step)),
                                                ix_const(static_cast<int64_t>(start))),
                                        DType::I64),
                         t);
        const DType ct = t == DType::F64 ? DType::F64 : DType::F32;
        ExprP i = ex_index_value(c[0], ct);
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
          r = r ? ex_where(ex_index_lt(c[static_cast<size_t>(d)], starts[static_cast<size_t>(k)] + sz), piece, r, t) : piece;
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

  Value lower_reduction(const Node& n) {
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
    std::set<std::string> lines = x.lines;
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
    sn.lines.assign(lines.begin(), lines.end());
    add_node(std::move(sn));
    return from_storage(b, l, n.type.dtype);
  }

  // Inductor's hint: a reduction is INNER when most of its full-size reads
  // (those that use every iteration variable) step through some reduced dim
  // with a stride of at most 1, OUTER when they stride over all of them.
  static bool reads_inner(const ExprP& body, const Shape& s, const std::vector<int64_t>& dims) {
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

  // A reduction in two kernels (Inductor's create_multilayer): the first
  // reduces each output's elements in `split` blocks of ceil(r / split)
  // (a block's tail past r reads the reduction's identity), into an f32
  // buffer for 16-bit types; the second reduces the blocks.
  Value lower_split_reduction(const Node& n, const Value& x, const std::vector<int64_t>& dims, int64_t r,
                              int64_t split, const std::set<std::string>& origins, const std::set<std::string>& lines) {
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
      sn.lines.assign(lines.begin(), lines.end());
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

  Value lower_view(const Node& n) {
    Value x = in(n, 0);
    const Shape& is = x.type.shape;
    const Shape& os = n.type.shape;
    // index map from output coords to input coords, and the strided layout
    // of the view over a layout of its input (none: only index arithmetic)
    std::function<Coords(const Coords&)> map;
    Relayout relayout;
    switch (n.op) {
      case Op::Reshape: {
        map = [is, os](const Coords& c) {
          return ix_unflatten(ix_linear(c, contiguous_strides(os)), is);
        };
        relayout = [os](const Layout& l) { return view_reshape(l, os); };
        break;
      }
      case Op::Permute: case Op::Transpose: {
        std::vector<int64_t> dims;
        if (n.op == Op::Permute) {
          for (auto d : attr_ints(n.attrs, "dims", n.op)) dims.push_back(norm_dim(d, is.size(), n.op));
        } else {
          for (size_t i = 0; i < is.size(); ++i) dims.push_back(static_cast<int64_t>(i));
          std::swap(dims[static_cast<size_t>(norm_dim(attr_int(n.attrs, "dim0", n.op), is.size(), n.op))],
                    dims[static_cast<size_t>(norm_dim(attr_int(n.attrs, "dim1", n.op), is.size(), n.op))]);
        }
        map = [dims](const Coords& c) {
          Coords r(c.size());
          for (size_t k = 0; k < dims.size(); ++k) r[static_cast<size_t>(dims[k])] = c[k];
          return r;
        };
        relayout = [dims](const Layout& in_l) -> std::optional<Layout> {
          Layout l = in_l;
          for (size_t k = 0; k < dims.size(); ++k) {
            l.sizes[k] = in_l.sizes[static_cast<size_t>(dims[k])];
            l.strides[k] = in_l.strides[static_cast<size_t>(dims[k])];
          }
          return l;
        };
        break;
      }
      case Op::Slice: {
        const SliceBounds sb = slice_bounds(n.attrs, is, n.op);
        const int64_t d = sb.dim, start = sb.start, step = sb.step;
        map = [d, start, step](const Coords& c) {
          Coords r = c;
          r[static_cast<size_t>(d)] = ix_add(ix_const(start), ix_mul(c[static_cast<size_t>(d)], step));
          return r;
        };
        relayout = [d, start, step, os](const Layout& in_l) -> std::optional<Layout> {
          Layout l = in_l;
          l.offset += start * l.strides[static_cast<size_t>(d)];
          l.sizes[static_cast<size_t>(d)] = os[static_cast<size_t>(d)];
          l.strides[static_cast<size_t>(d)] *= step;
          return l;
        };
        break;
      }
      case Op::Flip: {
        std::vector<int64_t> dims;
        for (int64_t d : attr_ints(n.attrs, "dims", n.op)) dims.push_back(norm_dim(d, is.size(), n.op));
        map = [dims, is](const Coords& c) {
          Coords r = c;
          for (int64_t d : dims) {
            const size_t k = static_cast<size_t>(d);
            r[k] = ix_add(ix_const(is[k] - 1), ix_mul(c[k], -1));
          }
          return r;
        };
        break;  // never a strided view: ATen's flip copies
      }
      case Op::Expand: {
        map = [is, os](const Coords& c) { return broadcast_coords(c, os, is); };
        relayout = [is, os](const Layout& in_l) -> std::optional<Layout> {
          Layout l{os, std::vector<int64_t>(os.size(), 0), in_l.offset};
          size_t off = os.size() - is.size();
          for (size_t k = 0; k < is.size(); ++k) l.strides[k + off] = is[k] == 1 ? 0 : in_l.strides[k];
          return l;
        };
        break;
      }
      default:
        internal_error("unknown view op");
    }
    if (x.storage() && relayout)
      if (std::optional<Layout> l = relayout(x.layout))
        return from_storage(x.buffer, *l, n.type.dtype, x.origins, x.lines);
    Value v;
    v.type = n.type;
    v.origins = x.origins;
    v.origins.insert(origin_of(n));
    v.lines = x.lines;
    merge(v.lines, line_of(n));
    LoadFn inner = x.load;
    v.load = memo([inner, map](const Coords& c) { return (*inner)(map(c)); });
    // a view of a value not yet in a buffer: an extern that reads it
    // realizes that value and reads it through the view (Inductor's
    // realize_input), so the value keeps its own order
    if (relayout && !x.storage()) {
      v.view_base = x.view_base >= 0 ? x.view_base : n.inputs[0];
      Relayout before = x.relayout;
      v.relayout = before ? Relayout([before, relayout](const Layout& l) -> std::optional<Layout> {
        std::optional<Layout> m = before(l);
        return m ? relayout(*m) : std::nullopt;
      })
                          : relayout;
    }
    return v;
  }

  // out = A W^T (+ bias) as a generated kernel: A is read through its
  // layout over (m, k), so a batch of rows can be any strided view.
  Value lower_gemm_template(const Node& n) {
    Value& a = values_[static_cast<size_t>(n.inputs[0])];
    if (!a.storage()) a = realize(a);
    const Value& w = in(n, 1);
    SchedNode sn;
    sn.kind = SNKind::Template;
    sn.op = n;
    const Shape& xs = a.type.shape;
    sn.gemm_k = xs.back();
    sn.gemm_n = w.type.shape[0];
    sn.gemm_m = numel(xs) / sn.gemm_k;
    IndexP m = ix_var("x", sn.gemm_m), k = ix_var("r", sn.gemm_k), nn = ix_var("n", sn.gemm_n);
    Coords ac = ix_unflatten(m, Shape(xs.begin(), xs.end() - 1));
    ac.push_back(k);
    sn.gemm_a = (*a.load)(ac);
    sn.a_buffer = a.buffer;
    sn.gemm_b = (*w.load)({nn, k});
    if (n.inputs.size() == 3) sn.gemm_bias = (*in(n, 2).load)({nn});
    for (int b : ex_buffers(sn.gemm_b)) sn.reads.insert(b);
    if (sn.gemm_bias)
      for (int b : ex_buffers(sn.gemm_bias)) sn.reads.insert(b);
    sn.reads.insert(a.buffer);
    sn.shape = n.type.shape;
    Layout l = Layout::contiguous(n.type.shape);
    int b = new_buffer("", n.type.dtype, l);
    sn.out_buffer = b;
    sn.store = l;
    sn.writes = {b};
    sn.origins = {n.inputs.size() == 3 ? "addmm" : "mm"};
    for (const auto& l2 : line_of(n)) sn.lines.push_back(l2);
    add_node(std::move(sn));
    return from_storage(b, l, n.type.dtype);
  }

  Value lower_extern(const Node& n) {
    // a linear that carries its own epilogue stays the library call that applies it
    if (opts_.gemm_templates && n.op == Op::Linear && attr_str_or(n.attrs, "epilogue", "").empty()) {
      const Shape& xs = in(n, 0).type.shape;
      const int64_t k = xs.back();
      if (!opts_.template_gemms || opts_.template_gemms->count(gemm_shape_key(
                                           n.type.dtype, numel(xs) / k, in(n, 1).type.shape[0], k, n.inputs.size() == 3)))
        return lower_gemm_template(n);
    }
    SchedNode sn;
    sn.kind = SNKind::Extern;
    sn.op = n;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      // realized once: every later reader of this value shares the buffer
      Value& v = values_[static_cast<size_t>(n.inputs[k])];
      if (!v.storage()) v = realize_for_extern(v);
      sn.args.push_back({v.buffer, v.layout});
    }
    Layout l = Layout::contiguous(n.type.shape);
    if (n.op == Op::Sdpa) {
      // attention writes [B,S,H,D] memory and returns the [B,H,S,D] view, so
      // the usual transpose-and-merge-heads after it is a free view
      const Shape& s = n.type.shape;
      l.strides = {s[2] * s[1] * s[3], s[3], s[1] * s[3], 1};
    }
    int b = new_buffer("", n.type.dtype, l);
    sn.out_buffer = b;
    sn.writes = {b};
    sn.origins = {origin_of(n)};
    for (const auto& l2 : line_of(n)) sn.lines.push_back(l2);
    add_node(std::move(sn));
    return from_storage(b, l, n.type.dtype);
  }

  Value lower_collective(const Node& n) {
    Value v = in(n, 0);
    const Node& src = g_.node(n.inputs[0]);
    bool own = v.storage() && out_.buffers[static_cast<size_t>(v.buffer)].input_index < 0 && v.layout.is_contiguous() &&
               out_.buffers[static_cast<size_t>(v.buffer)].layout == v.layout && uses(src.id) == 1;
    SchedNode sn;
    sn.kind = SNKind::Collective;
    sn.op = n;
    if (n.op == Op::AllReduce) {
      // in place on a buffer nobody else reads; otherwise on a fresh copy
      // (the copy is a pointwise node the scheduler fuses with its producer)
      if (!own) v = realize(v);
      sn.args = {{v.buffer, v.layout}};
      sn.out_buffer = v.buffer;
      sn.writes = {v.buffer};
      sn.name = "op" + std::to_string(out_.nodes.size());
    } else {
      if (!v.storage() || !v.layout.is_contiguous()) v = realize(v);
      sn.args = {{v.buffer, v.layout}};
      sn.out_buffer = new_buffer("", n.type.dtype, Layout::contiguous(n.type.shape));
      sn.writes = {sn.out_buffer};
    }
    sn.origins = {origin_of(n)};
    for (const auto& l2 : line_of(n)) sn.lines.push_back(l2);
    int b = sn.out_buffer;
    add_node(std::move(sn));
    return from_storage(b, Layout::contiguous(n.type.shape), n.type.dtype);
  }

  Value lower_copy_into(const Node& n) {
    const Value& dst = in(n, 0);
    Value src = in(n, 1);
    FG_CHECK(dst.storage() && out_.buffers[static_cast<size_t>(dst.buffer)].input_index >= 0,
             "copy_ must write a graph input");
    {
      // a source that reads the destination anywhere but where the copy
      // writes (a[:] = flip(a)) must be whole before the copy starts: its own
      // node (Inductor keeps them apart unless every read is the write's index)
      const Coords c = ix_coords("i", n.type.shape);
      const IndexP at = ix_linear(c, dst.layout.strides, dst.layout.offset);
      std::map<std::string, std::pair<int, IndexP>> loads;
      ex_loads((*src.load)(broadcast_coords(c, n.type.shape, src.type.shape)), &loads);
      for (const auto& [k, ld] : loads)
        if (ld.first == dst.buffer && ld.second->key != at->key) {
          src = realize(src);
          break;
        }
    }
    SchedNode sn;
    sn.kind = SNKind::Pointwise;
    sn.mutation = true;
    sn.out_buffer = dst.buffer;
    sn.shape = n.type.shape;
    sn.body = ex_cast((*src.load)(broadcast_coords(ix_coords("i", n.type.shape), n.type.shape, src.type.shape)), n.type.dtype);
    sn.store = dst.layout;
    sn.writes = {dst.buffer};
    std::set<std::string> o = src.origins;
    o.insert("copy_");
    sn.origins.assign(o.begin(), o.end());
    std::set<std::string> lines = src.lines;
    merge(lines, line_of(n));
    sn.lines.assign(lines.begin(), lines.end());
    sn.name = "mut" + std::to_string(out_.nodes.size());
    add_node(std::move(sn));
    return dst;
  }

  const Graph& g_;
  const LowerOptions& opts_;
  std::vector<std::vector<int>> users_;
  std::map<int, int> extra_uses_;
  LoweredGraph out_;
  std::vector<Value> values_;
  std::map<int, int> last_writer_;
  std::map<int, std::vector<int>> readers_;
  SourceLoc loc_;
  // the next indirect index variable's number (unique in the graph)
  std::shared_ptr<int> indirect_vars_ = std::make_shared<int>(0);
};

}  // namespace

LoweredGraph lower(const Graph& g, const LowerOptions& opts) { return Lowerer(g, opts).run(); }

std::string gemm_shape_key(DType dtype, int64_t m, int64_t n, int64_t k, bool bias) {
  return std::string(dtype_name(dtype)) + " m" + std::to_string(m) + " n" + std::to_string(n) + " k" +
         std::to_string(k) + (bias ? " bias" : "");
}

}  // namespace fg
