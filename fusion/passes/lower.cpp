#include "fusion/passes/lower.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "fusion/errors.h"
#include "fusion/fastpaths/catalog.h"
#include "fusion/passes/lowerer.h"
#include "fusion/passes/decompose.h"
#include "fusion/fault.h"

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

namespace lowering {

LoweredGraph Lowerer::run() {
  std::set<int> outputs(g_.outputs.begin(), g_.outputs.end());
  for (const Node& n : g_.nodes) {
    loc_ = n.loc;
    values_.push_back(lower_node(n));
    Value& v = values_.back();
    // a pointwise value, or a reduction unrolled into one
    const FusionKind k = fusion_kind(n.op);
    if (!v.storage() && (k == FusionKind::Pointwise || k == FusionKind::Reduction) && !n.attrs.count("@inline") &&
        (n.attrs.count("@realize") || should_realize(n, v)))
      v = realize(v, !is_output(n.id));
    // a view read by several: its base value is marked for reuse with the
    // view's readers (Inductor's mark_reuse goes through views to the
    // storage), and the view then reads the base's buffer
    if (k == FusionKind::View && !v.storage() && v.view_base >= 0) reuse_through_view(n, v);
    if (opts_.outputs_stored_when_lowered && extra_uses_.count(n.id)) store_output(n);
  }
  for (int o : g_.outputs) {
    Value v = values_[static_cast<size_t>(o)];
    if (opts_.output_views_of_base) v = view_of_stored_base(v);
    if (!v.storage()) v = realize(v);
    out_.outputs.push_back({v.buffer, v.layout});
  }
  return std::move(out_);
}

void Lowerer::store_output(const Node& n) {
  Value& v = values_[static_cast<size_t>(n.id)];
  const FusionKind k = fusion_kind(n.op);
  if (v.type.shape.empty()) {
    // 0-d: stored now only where another node reads it too (a value whose
    // users include the output); one only returned is stored at the end
    if (!v.storage() && uses(n.id) > 1 && (k == FusionKind::Pointwise || k == FusionKind::Reduction)) v = realize(v);
    return;
  }
  v = view_of_stored_base(v);
  if (!v.storage()) v = realize(v);
  fixed_.insert(v.buffer);
}

Value Lowerer::view_of_stored_base(const Value& v) {
  if (v.storage() || v.view_base < 0 || fusion_kind(g_.node(v.view_base).op) != FusionKind::Pointwise) return v;
  Value& base = values_[static_cast<size_t>(v.view_base)];
  if (!base.storage()) base = realize(base);
  fixed_.insert(base.buffer);
  if (std::optional<Layout> l = v.relayout(base.layout)) return from_storage(base.buffer, *l, v.type.dtype, v.origins, v.lines);
  return v;
}

bool Lowerer::should_realize(const Node& n, const Value& v) {
  // Inductor's store-or-recompute rules, on its op counter's figures:
  // reused with > 4 loads or > 30 values (mark_reuse); > 8 loads or > 30
  // values when more than one load has a varying index (realize_hint of
  // has_exceeded_max_reads); > 100 values always.
  const InlineStats st = ex_inline_stats((*v.load)(ix_coords("i", v.type.shape)));
  if (st.values > 100) return true;
  if (heavy_on_reuse(st, uses(n.id))) return true;
  return (st.loads > 8 || st.values > 30) && st.nontrivial_loads > 1;
}

void Lowerer::reuse_through_view(const Node& n, Value& v) { reuse_view_base(v, uses(n.id)); }

void Lowerer::reuse_view_base(Value& v, int64_t users) {
  const Node& bn = g_.node(v.view_base);
  const FusionKind bk = fusion_kind(bn.op);
  Value& base = values_[static_cast<size_t>(v.view_base)];
  if (base.storage() || (bk != FusionKind::Pointwise && bk != FusionKind::Reduction) || bn.attrs.count("@inline") ||
      !realize_on_reuse(base, users))
    return;
  base = realize(base, !is_output(v.view_base));
  if (std::optional<Layout> l = v.relayout(base.layout)) v = from_storage(base.buffer, *l, v.type.dtype, v.origins, v.lines);
}

bool Lowerer::heavy_on_reuse(const InlineStats& st, int64_t users) { return users > 1 && (st.loads > 4 || st.values > 30); }

bool Lowerer::realize_on_reuse(const Value& v, int64_t users) const {
  return users > 1 && heavy_on_reuse(ex_inline_stats((*v.load)(ix_coords("i", v.type.shape))), users);
}

void Lowerer::mark_broadcast_reuse(const Node& n) {
  const int64_t out = numel(n.type.shape);
  for (int id : n.inputs) {
    Value& x = values_[static_cast<size_t>(id)];
    const FusionKind k = fusion_kind(g_.node(id).op);
    const bool view = k == FusionKind::View && x.view_base >= 0;
    if (x.storage() || (k != FusionKind::Pointwise && k != FusionKind::Reduction && !view)) continue;
    const int64_t own = numel(x.type.shape);
    if (own <= 0 || x.type.shape == n.type.shape) continue;
    // a view broadcast: its base is reused (expand's mark_reuse goes
    // through views to the storage; moe_mixtral's top-k weights, reshaped
    // to a column and read by every hidden unit, are stored)
    if (view) {
      reuse_view_base(x, out / own);
      continue;
    }
    // [511, 1] read as [511, 7]: each element 7 times (an rms_norm's rsqrt
    // over 7 columns, its mean unrolled into 7 loads, is stored)
    if (realize_on_reuse(x, out / own)) x = realize(x, !is_output(id));
  }
}

int Lowerer::new_buffer(const std::string& name, DType t, const Layout& layout, int input_index) {
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

SourceLines::SourceLines(std::set<std::string> own) {
  if (!own.empty()) p_ = std::make_shared<const Part>(Part{std::move(own), nullptr, nullptr});
}

void SourceLines::add(const SourceLines& other) {
  if (!other.p_ || other.p_ == p_) return;
  if (!p_) {
    p_ = other.p_;
    return;
  }
  p_ = std::make_shared<const Part>(Part{{}, p_, other.p_});
}

std::vector<std::string> SourceLines::flat() const {
  std::set<std::string> all;
  std::set<const Part*> seen;
  std::vector<const Part*> todo;
  if (p_) todo.push_back(p_.get());
  while (!todo.empty()) {
    const Part* p = todo.back();
    todo.pop_back();
    if (!seen.insert(p).second) continue;
    all.insert(p->own.begin(), p->own.end());
    for (const auto& q : {p->a, p->b})
      if (q) todo.push_back(q.get());
  }
  return {all.begin(), all.end()};
}

Value Lowerer::from_storage(int buffer, const Layout& l, DType t, std::set<std::string> origins,
                            SourceLines lines) {
  Value v;
  v.type = TensorType{t, l.sizes};
  v.buffer = buffer;
  v.layout = l;
  v.origins = std::move(origins);
  v.lines = std::move(lines);
  v.load = make_loader([buffer, l, t](const Coords& c) { return ex_load(buffer, t, ix_linear(c, l.strides, l.offset)); });
  return v;
}

SchedNode& Lowerer::add_node(SchedNode sn) {
  sn.id = static_cast<int>(out_.nodes.size());
  sn.loc = loc_;
  if (sn.body) sn.reads = ex_buffers(sn.body);
  if (sn.scatter_at) {
    // an indirect store reads its index, and keeps the copy it stores into
    for (int b : ex_buffers(sn.scatter_at)) sn.reads.insert(b);
    sn.reads.insert(sn.out_buffer);
  }
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

Layout Lowerer::flexible_layout(const Shape& s, DType t) const {
  Layout l = Layout::contiguous(s);
  if (!opts_.pad_strides || s.size() < 2) return l;
  // Layout._pad_strides: from the innermost dim out, each stride over the
  // threshold rounded up to the alignment (128 bytes); unchanged if none is
  const int64_t align = 128 / dtype_size(t);
  std::vector<int64_t> st(s.size(), 1);
  bool padded = false;
  for (size_t i = s.size() - 1; i-- > 0;) {
    int64_t stride = st[i + 1] * s[i + 1];
    if (stride > 1024 && stride % align != 0) {
      stride = (stride + align - 1) / align * align;
      padded = true;
    }
    st[i] = stride;
  }
  if (padded) l.strides = st;
  return l;
}

bool Lowerer::is_output(int id) const { return std::find(g_.outputs.begin(), g_.outputs.end(), id) != g_.outputs.end(); }

Layout Lowerer::chosen_layout(int id, const Shape& s, DType t) const {
  return is_output(id) ? Layout::contiguous(s) : flexible_layout(s, t);
}

Value Lowerer::realize(const Value& v, bool flexible) {
  Layout l = flexible ? flexible_layout(v.type.shape, v.type.dtype) : Layout::contiguous(v.type.shape);
  int b = new_buffer("", v.type.dtype, l);
  return store_copy(v, b, v.type.shape, (*v.load)(ix_coords("i", v.type.shape)), l, l);
}

Value Lowerer::store_copy(const Value& v, int b, const Shape& loop, ExprP body, const Layout& store,
                          const Layout& read_as) {
  SchedNode sn;
  sn.kind = SNKind::Pointwise;
  sn.out_buffer = b;
  sn.shape = loop;
  sn.body = std::move(body);
  sn.store = store;
  sn.writes = {b};
  sn.origins.assign(v.origins.begin(), v.origins.end());
  sn.lines = v.lines.flat();
  add_node(std::move(sn));
  return from_storage(b, read_as, v.type.dtype);
}

Value Lowerer::realize_for_extern(const Value& v) {
  if (v.view_base >= 0 && fusion_kind(g_.node(v.view_base).op) == FusionKind::Pointwise) {
    Value& base = values_[static_cast<size_t>(v.view_base)];
    const bool was_stored = base.storage();
    if (!was_stored) base = realize(base, !is_output(v.view_base));
    std::optional<Layout> l = v.relayout(base.layout);
    if (l && !l->strides.empty() && l->strides.back() == 1)
      return from_storage(base.buffer, *l, v.type.dtype, v.origins, v.lines);
  }
  return realize(v, true);
}

// Whether `n` is lowered into generated code, counting it: a composite op
// decompose left whole, or an op past FUSEGATE_BISECT=lowerings:K, is not.
bool Lowerer::generated(const Node& n) {
  if (decomposes(n.op)) return false;
  const int64_t limit = bisect_limits().lowerings;
  const FusionKind k = fusion_kind(n.op);
  const bool reduction = k == FusionKind::Reduction || n.op == Op::Sort || n.op == Op::Argsort;
  StageApplication a{"lowerings", std::string(reduction ? "reduction " : k == FusionKind::Scatter ? "scatter " : "pointwise ") + op_name(n.op), g_.ref(n.id), {}};
  if (n.loc.known()) a.lines.push_back(n.loc.str());
  if (limit >= 0 && lowered_ >= limit) {
    // the first one held back is listed as such (fusion/bisect.h)
    if (lowered_++ == limit) {
      a.held_back = true;
      out_.lowerings.push_back(std::move(a));
    }
    return false;
  }
  ++lowered_;
  out_.lowerings.push_back(std::move(a));
  // FUSEGATE_FAULT=crash_lowering:OP and hang_lowering:OP: a compiler that
  // crashes or never returns when it lowers OP (fusion/fault.h)
  if (fault_argument("crash_lowering") == op_name(n.op))
    throw InternalError("lowering " + g_.ref(n.id) + " (" + op_name(n.op) +
                        "): internal check failed (FUSEGATE_FAULT=crash_lowering:" + op_name(n.op) + ")");
  if (fault_argument("hang_lowering") == op_name(n.op))
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  return true;
}

// `n` as a library (ATen) call, one kernel of its own: an op whose
// lowering is switched off, as Inductor's fallback kernels run an op it
// does not lower.
Value Lowerer::lower_fallback(const Node& n) { return lower_extern(n); }

Value Lowerer::lower_node(const Node& n) {
  const FusionKind kind = fusion_kind(n.op);
  // Inductor's index_add decomposition gives a bf16 index_add back to ATen
  // (its own kernel, on every device): a library call here too
  if (n.op == Op::IndexAdd && n.type.dtype == DType::BF16) return lower_fallback(n);
  if ((kind == FusionKind::Pointwise || kind == FusionKind::Reduction || kind == FusionKind::Scatter) &&
      !generated(n))
    return lower_fallback(n);
  // FUSEGATE_FAULT=broken_lowering:OP: OP's generated code gives 1.5x its
  // value (a miscompile `bisect` must name at this stage and rule)
  if (kind == FusionKind::Pointwise && fault_argument("broken_lowering") == op_name(n.op)) {
    Value v = lower_pointwise(n);
    const DType t = n.type.dtype;
    const LoadFn inner = v.load;
    v.load = make_loader([inner, t](const Coords& c) { return ex_binary(Op::Mul, (*inner)(c), ex_const(1.5, t), t); });
    return v;
  }
  if (n.op == Op::Sort || n.op == Op::Argsort) return lower_sort(n);
  switch (kind) {
    case FusionKind::Input: return lower_input(n);
    case FusionKind::Pointwise: return n.op == Op::Cat && concat_as_kernel(n) ? lower_concat(n) : lower_pointwise(n);
    case FusionKind::Reduction: return lower_reduction(n);
    case FusionKind::View: return lower_view(n);
    case FusionKind::Extern: return lower_extern(n);
    case FusionKind::Collective: return lower_collective(n);
    case FusionKind::Mutation: return lower_copy_into(n);
    case FusionKind::Scatter: return lower_scatter(n);
    default: break;
  }
  internal_error(std::string("cannot lower op ") + op_name(n.op) + " (decompose first)");
}

Value Lowerer::lower_input(const Node& n) {
  size_t k = out_.input_buffers.size();
  Layout l = k < opts_.input_layouts.size() ? opts_.input_layouts[k] : Layout::contiguous(n.type.shape);
  FG_CHECK(l.sizes == n.type.shape, "input layout does not match input " + g_.ref(n.id));
  int b = new_buffer(n.name.empty() ? "arg" + std::to_string(k) : n.name, n.type.dtype, l, static_cast<int>(k));
  out_.input_buffers.push_back(b);
  return from_storage(b, l, n.type.dtype);
}

void Lowerer::add_store(int buffer, const Layout& layout, const Shape& shape, ExprP body, const Value& src,
                        const Node& n, const char* origin, const char* prefix) {
  SchedNode sn;
  sn.kind = SNKind::Pointwise;
  sn.mutation = true;
  sn.out_buffer = buffer;
  sn.shape = shape;
  sn.body = std::move(body);
  sn.store = layout;
  sn.writes = {buffer};
  std::set<std::string> o = src.origins;
  o.insert(origin);
  sn.origins.assign(o.begin(), o.end());
  SourceLines lines = src.lines;
  merge(lines, line_of(n));
  sn.lines = lines.flat();
  sn.name = prefix + std::to_string(out_.nodes.size());
  add_node(std::move(sn));
}

}  // namespace lowering


LoweredGraph lower(const Graph& g, const LowerOptions& opts) { return lowering::Lowerer(g, opts).run(); }

std::string gemm_shape_key(DType dtype, int64_t m, int64_t n, int64_t k, bool bias) {
  return std::string(dtype_name(dtype)) + " m" + std::to_string(m) + " n" + std::to_string(n) + " k" +
         std::to_string(k) + (bias ? " bias" : "");
}

}  // namespace fg

