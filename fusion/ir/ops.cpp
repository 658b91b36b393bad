#include "fusion/ir/ops.h"

#include <algorithm>
#include <cmath>

#include "fusion/errors.h"
#include "fusion/ir/text.h"

namespace fg {

namespace {
using K = FusionKind;
// clang-format off
const OpInfo kOps[] = {
  {Op::Input, "input", "input", K::Input, 0, 0},
  {Op::Full, "full", "full", K::Pointwise, 0, 0},
  {Op::Add, "add", "add", K::Pointwise, 2, 2},
  {Op::Sub, "sub", "sub", K::Pointwise, 2, 2},
  {Op::Mul, "mul", "mul", K::Pointwise, 2, 2},
  {Op::Div, "div", "div", K::Pointwise, 2, 2},
  {Op::Pow, "pow", "pow", K::Pointwise, 2, 2},
  {Op::Maximum, "maximum", "maximum", K::Pointwise, 2, 2},
  {Op::Minimum, "minimum", "minimum", K::Pointwise, 2, 2},
  {Op::Neg, "neg", "neg", K::Pointwise, 1, 1},
  {Op::Exp, "exp", "exp", K::Pointwise, 1, 1},
  {Op::Log, "log", "log", K::Pointwise, 1, 1},
  {Op::Sqrt, "sqrt", "sqrt", K::Pointwise, 1, 1},
  {Op::Rsqrt, "rsqrt", "rsqrt", K::Pointwise, 1, 1},
  {Op::Relu, "relu", "relu", K::Pointwise, 1, 1},
  {Op::Gelu, "gelu", "gelu", K::Pointwise, 1, 1},
  {Op::Silu, "silu", "silu", K::Pointwise, 1, 1},
  {Op::Sigmoid, "sigmoid", "sigmoid", K::Pointwise, 1, 1},
  {Op::Tanh, "tanh", "tanh", K::Pointwise, 1, 1},
  {Op::Sin, "sin", "sin", K::Pointwise, 1, 1},
  {Op::Cos, "cos", "cos", K::Pointwise, 1, 1},
  {Op::Erf, "erf", "erf", K::Pointwise, 1, 1},
  {Op::Abs, "abs", "abs", K::Pointwise, 1, 1},
  {Op::Clamp, "clamp", "clamp", K::Pointwise, 1, 1},
  {Op::Where, "where", "where", K::Pointwise, 3, 3},
  {Op::Eq, "eq", "eq", K::Pointwise, 2, 2},
  {Op::Ne, "ne", "ne", K::Pointwise, 2, 2},
  {Op::Lt, "lt", "lt", K::Pointwise, 2, 2},
  {Op::Le, "le", "le", K::Pointwise, 2, 2},
  {Op::Gt, "gt", "gt", K::Pointwise, 2, 2},
  {Op::Ge, "ge", "ge", K::Pointwise, 2, 2},
  {Op::Cast, "cast", "_to_copy", K::Pointwise, 1, 1},
  {Op::Cat, "cat", "cat", K::Pointwise, 1, 64},
  {Op::Arange, "arange", "arange", K::Pointwise, 0, 0},
  {Op::Contiguous, "contiguous", "clone", K::Pointwise, 1, 1},
  {Op::Pad, "pad", "constant_pad_nd", K::Pointwise, 1, 1},
  {Op::IndexSelect, "index_select", "index_select", K::Pointwise, 2, 2},
  {Op::Gather, "gather", "gather", K::Pointwise, 2, 2},
  {Op::OneHot, "one_hot", "one_hot", K::Pointwise, 1, 1},
  {Op::Sum, "sum", "sum", K::Reduction, 1, 1},
  {Op::Mean, "mean", "mean", K::Reduction, 1, 1},
  {Op::Amax, "amax", "amax", K::Reduction, 1, 1},
  {Op::Amin, "amin", "amin", K::Reduction, 1, 1},
  {Op::Argmax, "argmax", "argmax", K::Reduction, 1, 1},
  {Op::Cumsum, "cumsum", "cumsum", K::Reduction, 1, 1},
  {Op::Var, "var", "var", K::Reduction, 1, 1},
  {Op::Softmax, "softmax", "_softmax", K::Reduction, 1, 1},
  {Op::LogSoftmax, "log_softmax", "_log_softmax", K::Reduction, 1, 1},
  {Op::RmsNorm, "rms_norm", "rms_norm", K::Reduction, 2, 2},
  {Op::LayerNorm, "layer_norm", "native_layer_norm", K::Reduction, 3, 3},
  {Op::Linear, "linear", "mm", K::Extern, 2, 3},
  {Op::LinearAddRank0, "linear_add_rank0", "addmm", K::Extern, 3, 3},
  {Op::Matmul, "matmul", "bmm", K::Extern, 2, 2},
  {Op::Sdpa, "sdpa", "scaled_dot_product_attention", K::Extern, 3, 3},
  {Op::Embedding, "embedding", "embedding", K::Extern, 2, 2},
  {Op::FastPath, "fast_path", "fast_path", K::Extern, 1, 8},
  {Op::Topk, "topk", "topk", K::Extern, 1, 1},
  {Op::Sort, "sort", "sort", K::Extern, 1, 1},
  {Op::Argsort, "argsort", "sort", K::Extern, 1, 1},
  {Op::Reshape, "reshape", "view", K::View, 1, 1},
  {Op::Permute, "permute", "permute", K::View, 1, 1},
  {Op::Transpose, "transpose", "permute", K::View, 1, 1},
  {Op::Slice, "slice", "slice", K::View, 1, 1},
  {Op::Expand, "expand", "expand", K::View, 1, 1},
  {Op::Flip, "flip", "flip", K::View, 1, 1},
  {Op::AllReduce, "all_reduce", "all_reduce", K::Collective, 1, 1},
  {Op::AllGather, "all_gather", "all_gather_into_tensor", K::Collective, 1, 1},
  {Op::ReduceScatter, "reduce_scatter", "reduce_scatter_tensor", K::Collective, 1, 1},
  {Op::CopyInto, "copy_", "copy_", K::Mutation, 2, 2},
  {Op::Scatter, "scatter", "scatter", K::Scatter, 3, 3},
  {Op::ScatterAdd, "scatter_add", "scatter_add", K::Scatter, 3, 3},
  {Op::IndexAdd, "index_add", "index_add", K::Scatter, 3, 3},
  {Op::Print, "print", "print", K::Host, 1, 1},
  {Op::Item, "item", "item", K::Host, 1, 1},
  {Op::Nonzero, "nonzero", "nonzero", K::Host, 1, 1},
  {Op::If, "if", "if", K::Host, 3, 3},
};
// clang-format on

}  // namespace

[[noreturn]] void type_error(Op op, const std::string& what) {
  user_error(std::string(op_name(op)) + ": " + what);
}

const char* fusion_kind_name(FusionKind k) {
  switch (k) {
    case K::Input: return "input";
    case K::Pointwise: return "pointwise";
    case K::Reduction: return "reduction";
    case K::Template: return "template";
    case K::Extern: return "extern";
    case K::Collective: return "collective";
    case K::View: return "view";
    case K::Mutation: return "mutation";
    case K::Scatter: return "scatter";
    case K::Host: return "host";
  }
  return "?";
}

const OpInfo& op_info(Op op) {
  for (const auto& i : kOps)
    if (i.op == op) return i;
  internal_error("op missing from the op table");
}

bool op_from_name(const std::string& name, Op* out) {
  for (const auto& i : kOps)
    if (name == i.name) { *out = i.op; return true; }
  return false;
}

bool aten_pointwise(Op op) {
  if (fusion_kind(op) != FusionKind::Pointwise) return false;
  switch (op) {
    case Op::IndexSelect: case Op::Gather: case Op::OneHot: case Op::Arange: case Op::Full: case Op::Contiguous:
    case Op::Cat: case Op::Pad:
      return false;
    default:
      return true;
  }
}

bool is_unary_pointwise(Op op) {
  switch (op) {
    case Op::Neg: case Op::Exp: case Op::Log: case Op::Sqrt: case Op::Rsqrt: case Op::Relu:
    case Op::Gelu: case Op::Silu: case Op::Sigmoid: case Op::Tanh: case Op::Sin: case Op::Cos: case Op::Erf:
      return true;
    default: return false;
  }
}
bool is_comparison(Op op) {
  return op == Op::Eq || op == Op::Ne || op == Op::Lt || op == Op::Le || op == Op::Gt || op == Op::Ge;
}
bool is_binary_pointwise(Op op) {
  return op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div || op == Op::Pow ||
         op == Op::Maximum || op == Op::Minimum || is_comparison(op);
}

int64_t attr_int(const Attrs& a, const std::string& key, Op op) {
  auto it = a.find(key);
  if (it == a.end()) type_error(op, "missing attribute '" + key + "'");
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  type_error(op, "attribute '" + key + "' must be an integer");
}
int64_t attr_int_or(const Attrs& a, const std::string& key, int64_t dflt) {
  auto it = a.find(key);
  if (it == a.end()) return dflt;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  user_error("attribute '" + key + "' must be an integer");
}
double attr_float(const Attrs& a, const std::string& key, Op op) {
  auto it = a.find(key);
  if (it == a.end()) type_error(op, "missing attribute '" + key + "'");
  if (auto* v = std::get_if<double>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  type_error(op, "attribute '" + key + "' must be a number");
}
double attr_float_or(const Attrs& a, const std::string& key, double dflt) {
  auto it = a.find(key);
  if (it == a.end()) return dflt;
  if (auto* v = std::get_if<double>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  user_error("attribute '" + key + "' must be a number");
}
std::string attr_str_or(const Attrs& a, const std::string& key, const std::string& dflt) {
  auto it = a.find(key);
  if (it == a.end()) return dflt;
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  user_error("attribute '" + key + "' must be a string");
}
std::vector<int64_t> attr_ints(const Attrs& a, const std::string& key, Op op) {
  auto it = a.find(key);
  if (it == a.end()) type_error(op, "missing attribute '" + key + "'");
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  type_error(op, "attribute '" + key + "' must be a list of integers");
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out) {
  size_t n = std::max(a.size(), b.size());
  Shape r(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    r[i] = da == 1 ? db : da;
  }
  *out = r;
  return true;
}

int64_t norm_dim(int64_t d, size_t rank, Op op) {
  int64_t r = static_cast<int64_t>(rank);
  // rank 0 has no dims to index; reductions over "all dims" never get here
  if (r == 0 || d < -r || d >= r)
    type_error(op, "dim " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
  return d < 0 ? d + r : d;
}

SliceBounds slice_bounds(const Attrs& a, const Shape& in, Op op) {
  SliceBounds b;
  b.dim = norm_dim(attr_int(a, "dim", op), in.size(), op);
  const int64_t n = in[static_cast<size_t>(b.dim)];
  if (a.count("blocks")) {
    if (a.count("start") || a.count("end") || a.count("step"))
      type_error(op, "takes either blocks/index or start/end/step, not both");
    const std::vector<int64_t> blocks = attr_ints(a, "blocks", op);
    const int64_t index = attr_int(a, "index", op);
    if (blocks.empty()) type_error(op, "blocks must name at least one block");
    if (index < 0 || index >= static_cast<int64_t>(blocks.size()))
      type_error(op, "index " + std::to_string(index) + " is not one of the " + std::to_string(blocks.size()) + " blocks");
    int64_t total = 0;
    for (int64_t x : blocks) {
      if (x < 1) type_error(op, "every block needs a size of at least 1, got " + shape_str(blocks));
      total += x;
    }
    // this rank holds 1/k of every block
    if (n < 1 || total % n != 0)
      type_error(op, "dim " + std::to_string(b.dim) + " of size " + std::to_string(n) + " is no even share of blocks " +
                         shape_str(blocks) + " (" + std::to_string(total) + " in all)");
    const int64_t k = total / n;
    for (int64_t x : blocks)
      if (x % k != 0)
        type_error(op, "blocks " + shape_str(blocks) + " do not split into " + std::to_string(k) + " equal shares");
    for (int64_t i = 0; i < index; ++i) b.start += blocks[static_cast<size_t>(i)] / k;
    b.end = b.start + blocks[static_cast<size_t>(index)] / k;
    return b;
  }
  if (a.count("index")) type_error(op, "attribute 'index' needs 'blocks'");
  b.start = attr_int_or(a, "start", 0);
  b.end = attr_int_or(a, "end", n);
  b.step = attr_int_or(a, "step", 1);
  if (b.step < 1) type_error(op, "step must be >= 1");
  if (b.start < 0) b.start += n;
  if (b.end < 0) b.end += n;
  b.start = std::clamp<int64_t>(b.start, 0, n);
  b.end = std::clamp<int64_t>(b.end, b.start, n);
  return b;
}

}  // namespace fg
