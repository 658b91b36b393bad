#include "fusion/passes/vector_gemm.h"

#include <algorithm>
#include <numeric>
#include <optional>

namespace fg {

namespace {

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// every element once, in some dim order (a permutation of a contiguous layout)
bool dense(const Shape& shape, const Shape& strides) {
  std::vector<size_t> dims;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1) dims.push_back(i);
  std::stable_sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t expected = 1;
  for (size_t d : dims) {
    if (strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

// ATen's view of `old` (its strides `os`) as `shape`: the strides, or none
// where the view would need a copy (reshape then copies)
std::optional<Shape> view_strides(const Shape& old, const Shape& os, const Shape& shape) {
  if (old.empty() || numel(old) == 0) return contiguous_strides(shape);
  Shape ns(shape.size(), 0);
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk = os.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old.size()) - 1; d >= 0; --d) {
    tensor_numel *= old[static_cast<size_t>(d)];
    if (d == 0 || (old[static_cast<size_t>(d - 1)] != 1 && os[static_cast<size_t>(d - 1)] != tensor_numel * chunk)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[static_cast<size_t>(view_d)] == 1)) {
        ns[static_cast<size_t>(view_d)] = view_numel * chunk;
        view_numel *= shape[static_cast<size_t>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk = os[static_cast<size_t>(d - 1)];
        tensor_numel = view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return ns;
}

// ATen's matmul folds a >= 3-D operand into a matrix when its leading dims
// collapse without a copy
bool foldable(const Shape& shape, const Shape& strides) {
  for (size_t i = 0; i + 2 < shape.size(); ++i)
    if (strides[i] != strides[i + 1] * shape[i + 1]) return false;
  return true;
}

bool low_precision(DType t) { return t == DType::BF16 || t == DType::F16; }

}  // namespace

bool only_pointwise_readers(const Graph& g, int id, const std::vector<std::vector<int>>& live_users,
                            const std::vector<bool>& is_output) {
  if (is_output[static_cast<size_t>(id)]) return false;
  for (int u : live_users[static_cast<size_t>(id)]) {
    const Op op = g.node(u).op;
    if (fusion_kind(op) == FusionKind::View && op != Op::Flip) {
      if (!only_pointwise_readers(g, u, live_users, is_output)) return false;
    } else if (!aten_pointwise(op)) {
      return false;
    }
  }
  return true;
}

std::vector<Shape> aten_strides(const Graph& g) {
  std::vector<Shape> st(g.nodes.size());
  for (const Node& n : g.nodes) {
    const Shape& shape = n.type.shape;
    Shape s = contiguous_strides(shape);
    const Shape* in = n.inputs.empty() ? nullptr : &st[static_cast<size_t>(n.inputs[0])];
    const Shape* ish = n.inputs.empty() ? nullptr : &g.node(n.inputs[0]).type.shape;
    switch (n.op) {
      case Op::Transpose: {
        s = *in;
        if (!s.empty())
          std::swap(s[static_cast<size_t>(norm_dim(attr_int(n.attrs, "dim0", n.op), s.size(), n.op))],
                    s[static_cast<size_t>(norm_dim(attr_int(n.attrs, "dim1", n.op), s.size(), n.op))]);
        break;
      }
      case Op::Permute: {
        const auto dims = attr_ints(n.attrs, "dims", n.op);
        for (size_t i = 0; i < dims.size() && i < s.size(); ++i)
          s[i] = (*in)[static_cast<size_t>(norm_dim(dims[i], in->size(), n.op))];
        break;
      }
      case Op::Expand: {
        const size_t off = shape.size() - ish->size();
        for (size_t i = 0; i < shape.size(); ++i)
          s[i] = i < off || ((*ish)[i - off] == 1 && shape[i] != 1) ? 0 : (*in)[i - off];
        break;
      }
      case Op::Slice: {
        s = *in;
        const size_t d = static_cast<size_t>(norm_dim(attr_int_or(n.attrs, "dim", 0), s.size(), n.op));
        if (d < s.size()) s[d] *= attr_int_or(n.attrs, "step", 1);
        break;
      }
      case Op::Reshape: {
        if (auto v = view_strides(*ish, *in, shape)) s = *v;
        break;
      }
      default:
        if (aten_pointwise(n.op) && !shape.empty()) {
          // TensorIterator lays a result out as operands that share one
          // dense layout; the first full-size operand stands for them here
          for (int i : n.inputs) {
            const Node& a = g.node(i);
            if (a.type.shape != shape) continue;
            const Shape& as = st[static_cast<size_t>(i)];
            if (dense(shape, as)) s = as;
            break;
          }
        }
        break;
    }
    st[static_cast<size_t>(n.id)] = s;
  }
  return st;
}

VectorGemm vector_gemm(const Graph& g, const Node& n, const std::vector<Shape>& strides,
                       const std::vector<std::vector<int>>& live_users, const std::vector<bool>& is_output) {
  if ((n.op != Op::Linear && n.op != Op::Matmul) || !is_floating(n.type.dtype)) return VectorGemm::None;
  const Shape& a = g.node(n.inputs[0]).type.shape;
  const Shape& as = strides[static_cast<size_t>(n.inputs[0])];
  const Shape& out = n.type.shape;
  const int64_t cols = out.back();
  const size_t d = a.size();
  if (n.op == Op::Linear) {
    // ATen's linear: with a bias, an addmm over the input flattened to 2-D
    // where that needs no copy (2-D, or contiguous); else matmul, then the add
    const bool bias = n.inputs.size() == 3;
    const bool addmm = bias && (d == 2 || is_contiguous(a, as));
    VectorGemm kind = VectorGemm::Mm;
    int64_t rows = product(a, 0, d - 1);
    if (d >= 3 && !addmm && !foldable(a, as)) {
      kind = VectorGemm::Bmm;
      rows = a[d - 2];
    }
    if (rows != 1 && cols != 1) return VectorGemm::None;
    if (addmm) {
      // the bias add taken apart only for an f32 (f64) bias whose GEMM is
      // read by pointwise ops alone
      const DType bt = g.node(n.inputs[2]).type.dtype;
      // (a GELU the graph gives as the epilogue is the one reader, pointwise)
      const bool gelu = !attr_str_or(n.attrs, "epilogue", "").empty();
      if (low_precision(bt) || !(gelu || only_pointwise_readers(g, n.id, live_users, is_output))) return VectorGemm::None;
    }
    return kind;
  }
  const Shape& b = g.node(n.inputs[1]).type.shape;
  if (d == 2 && b.size() == 2) return a[0] == 1 || b[1] == 1 ? VectorGemm::Mm : VectorGemm::None;
  if (d >= 3 && b.size() == 2 && foldable(a, as))
    return product(a, 0, d - 1) == 1 || b[1] == 1 ? VectorGemm::Mm : VectorGemm::None;
  return a[d - 2] == 1 || b.back() == 1 ? VectorGemm::Bmm : VectorGemm::None;
}

int emit_vector_gemm(const Node& n, VectorGemm kind, const std::vector<int>& in, Graph& out) {
  const DType t = n.type.dtype;
  const DType acc = low_precision(t) ? DType::F32 : t;
  const char* gemm = kind == VectorGemm::Bmm ? "bmm" : "mm";
  auto emit = [&](Op op, std::vector<int> args, Attrs attrs, const char* origin) {
    const int id = out.add(op, std::move(args), std::move(attrs), nullptr, {}, n.loc);
    out.nodes[static_cast<size_t>(id)].origin = origin;
    return id;
  };
  auto shape_of = [&](int id) -> const Shape& { return out.node(id).type.shape; };
  auto reshape = [&](int id, const Shape& s, const char* origin) {
    return shape_of(id) == s ? id : emit(Op::Reshape, {id}, {{"shape", s}}, origin);
  };
  auto expand = [&](int id, const Shape& s) {
    return shape_of(id) == s ? id : emit(Op::Expand, {id}, {{"shape", s}}, "expand");
  };
  auto cast = [&](int id, DType to) {
    return out.node(id).type.dtype == to ? id : emit(Op::Cast, {id}, {{"to", std::string(dtype_name(to))}}, gemm);
  };
  // opmath: the operands in f32 for bf16 and f16, the result rounded once
  int x = cast(in[0], acc);
  int w = cast(in[1], acc);
  if (n.op == Op::Linear) w = emit(Op::Transpose, {w}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}, "t");
  const Shape xs = shape_of(x), ws = shape_of(w);
  const int64_t k = xs.back(), cols = ws.back();
  int sum = -1;
  if (kind == VectorGemm::Mm) {
    const int64_t rows = product(xs, 0, xs.size() - 1);
    const int a = reshape(x, {rows, k, 1}, "unsqueeze");
    const int b = reshape(w, {1, k, cols}, "unsqueeze");
    sum = emit(Op::Sum, {emit(Op::Mul, {a, b}, {}, gemm)}, {{"dims", std::vector<int64_t>{1}}}, gemm);
  } else {
    // over the broadcast batch, each operand [B, rows, K] and [B, K, N]
    const Shape& o = n.type.shape;
    Shape batch(o.begin(), o.end() - 2);
    const int64_t nb = product(batch, 0, batch.size()), rows = o[o.size() - 2];
    Shape ae = batch, be = batch;
    ae.insert(ae.end(), {rows, k});
    be.insert(be.end(), {k, cols});
    const int a = reshape(reshape(expand(x, ae), {nb, rows, k}, "view"), {nb, rows, k, 1}, "unsqueeze");
    const int b = reshape(reshape(expand(w, be), {nb, k, cols}, "view"), {nb, 1, k, cols}, "unsqueeze");
    sum = emit(Op::Sum, {emit(Op::Mul, {a, b}, {}, gemm)}, {{"dims", std::vector<int64_t>{2}}}, gemm);
  }
  int y = reshape(cast(sum, t), n.type.shape, "view");
  if (n.op == Op::Linear && n.inputs.size() == 3) {
    y = emit(Op::Add, {in[2], y}, {}, "addmm");
    y = cast(y, t);
  }
  if (n.op == Op::Linear && attr_str_or(n.attrs, "epilogue", "") == "gelu_tanh")
    y = emit(Op::Gelu, {y}, {{"approximate", std::string("tanh")}}, "gelu");
  return y;
}

}  // namespace fg
