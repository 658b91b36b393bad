// The type of an op's result from its operands' types and its attributes
// (fusion/ir/ops.h: infer_type), or a UserError naming the op and what is
// wrong.
#include <algorithm>
#include <cmath>

#include "fusion/errors.h"
#include "fusion/ir/ops.h"
#include "fusion/ir/text.h"

namespace fg {

namespace {

std::string shapes_of(const std::vector<TensorType>& in) {
  std::string r;
  for (size_t i = 0; i < in.size(); ++i) r += (i ? " and " : "") + shape_str(in[i].shape);
  return r;
}

// A rank-0 operand behaves like a Python scalar: it does not widen the type
// of a tensor operand of the same category (as in PyTorch).
DType binary_dtype(const TensorType& a, const TensorType& b) {
  if (a.shape.empty() && !b.shape.empty() && is_floating(a.dtype) == is_floating(b.dtype)) return b.dtype;
  if (b.shape.empty() && !a.shape.empty() && is_floating(a.dtype) == is_floating(b.dtype)) return a.dtype;
  if (a.shape.empty() && !b.shape.empty() && is_floating(b.dtype)) return b.dtype;
  if (b.shape.empty() && !a.shape.empty() && is_floating(a.dtype)) return a.dtype;
  return promote(a.dtype, b.dtype);
}

std::vector<int64_t> reduce_dims(const Attrs& attrs, size_t rank, Op op) {
  std::vector<int64_t> dims = attrs.count("dims") ? attr_ints(attrs, "dims", op) : std::vector<int64_t>{};
  if (dims.empty())
    for (size_t i = 0; i < rank; ++i) dims.push_back(static_cast<int64_t>(i));
  for (auto& d : dims) d = norm_dim(d, rank, op);
  std::sort(dims.begin(), dims.end());
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end()) type_error(op, "repeated dim in dims");
  return dims;
}

// Pointwise: unary math on floats, broadcasting binaries and comparisons, where, cast and cat.
TensorType infer_pointwise(Op op, const std::vector<TensorType>& in, const Attrs& attrs) {
  TensorType out;
  if (is_unary_pointwise(op)) {
    if (!is_floating(in[0].dtype)) type_error(op, "needs a floating input, got " + in[0].str());
    return in[0];
  }
  if (is_binary_pointwise(op)) {
    if (!broadcast_shapes(in[0].shape, in[1].shape, &out.shape))
      type_error(op, "shapes " + shapes_of(in) + " do not broadcast");
    out.dtype = is_comparison(op) ? DType::Bool : binary_dtype(in[0], in[1]);
    return out;
  }
  switch (op) {
    case Op::Full:
      internal_error("input and full carry their declared type");
    case Op::Where: {
      if (in[0].dtype != DType::Bool) type_error(op, "condition must be bool, got " + in[0].str());
      Shape s;
      if (!broadcast_shapes(in[0].shape, in[1].shape, &s) || !broadcast_shapes(s, in[2].shape, &out.shape))
        type_error(op, "shapes " + shapes_of(in) + " do not broadcast");
      out.dtype = binary_dtype(in[1], in[2]);
      return out;
    }
    case Op::Cast: {
      DType t;
      if (!parse_dtype(attr_str_or(attrs, "to", ""), &t)) type_error(op, "attribute 'to' must name a dtype");
      return TensorType{t, in[0].shape};
    }
    case Op::Abs: case Op::Contiguous:
      if (op == Op::Abs && in[0].dtype == DType::Bool) type_error(op, "needs a number, got " + in[0].str());
      return in[0];
    case Op::Clamp:
      if (!attrs.count("min") && !attrs.count("max")) type_error(op, "needs attribute 'min', 'max' or both");
      if (in[0].dtype == DType::Bool) type_error(op, "needs a number, got " + in[0].str());
      if (attrs.count("min") && attrs.count("max") && attr_float(attrs, "min", op) > attr_float(attrs, "max", op))
        type_error(op, "min is above max");
      return in[0];
    case Op::Arange: {
      // torch.arange(start, end, step): ceil((end - start) / step) values
      const double start = attr_float_or(attrs, "start", 0.0), end = attr_float(attrs, "end", op),
                   step = attr_float_or(attrs, "step", 1.0);
      if (step == 0) type_error(op, "step must not be 0");
      const double n = std::ceil((end - start) / step);
      if (!(n >= 1) || n > 1e12) type_error(op, "gives no values from start " + format_double(start) + " to end " + format_double(end));
      if (!parse_dtype(attr_str_or(attrs, "dtype", "i64"), &out.dtype)) type_error(op, "attribute 'dtype' must name a dtype");
      if (out.dtype == DType::Bool) type_error(op, "cannot make bool values");
      out.shape = {static_cast<int64_t>(n)};
      return out;
    }
    case Op::Pad: {
      const std::vector<int64_t> pad = attr_ints(attrs, "pad", op);
      out = in[0];
      if (pad.size() % 2 || pad.size() / 2 > out.shape.size())
        type_error(op, "pad " + shape_str(pad) + " needs two sizes (before, after) a dim, at most " +
                           std::to_string(out.shape.size()) + " dims, last dim first");
      for (size_t k = 0; k < pad.size(); k += 2) {
        if (pad[k] < 0 || pad[k + 1] < 0) type_error(op, "negative padding " + shape_str(pad) + " is not supported");
        out.shape[out.shape.size() - 1 - k / 2] += pad[k] + pad[k + 1];
      }
      return out;
    }
    case Op::IndexSelect: case Op::Gather: {
      const int64_t d = norm_dim(attr_int(attrs, "dim", op), in[0].shape.size(), op);
      // torch: gather takes i64 indices, index_select i64 or i32
      if (in[1].dtype != DType::I64 && !(op == Op::IndexSelect && in[1].dtype == DType::I32))
        type_error(op, std::string("needs an i64") + (op == Op::IndexSelect ? " or i32" : "") + " index, got " +
                           in[1].str());
      out = in[0];
      if (op == Op::IndexSelect) {
        if (in[1].shape.size() != 1) type_error(op, "needs a 1-D index, got " + in[1].str());
        out.shape[static_cast<size_t>(d)] = in[1].shape[0];
        return out;
      }
      if (in[1].shape.size() != in[0].shape.size())
        type_error(op, "index " + in[1].str() + " must have the rank of " + in[0].str());
      for (size_t i = 0; i < in[0].shape.size(); ++i)
        if (static_cast<int64_t>(i) != d && in[1].shape[i] > in[0].shape[i])
          type_error(op, "index " + in[1].str() + " is larger than " + in[0].str() + " outside dim " + std::to_string(d));
      out.shape = in[1].shape;
      return out;
    }
    case Op::OneHot: {
      if (in[0].dtype != DType::I64) type_error(op, "needs an i64 index, got " + in[0].str());
      const int64_t c = attr_int(attrs, "num_classes", op);
      if (c < 1) type_error(op, "num_classes must be at least 1, got " + std::to_string(c));
      out = TensorType{DType::I64, in[0].shape};
      out.shape.push_back(c);
      return out;
    }
    case Op::Cat: {
      int64_t d = norm_dim(attr_int(attrs, "dim", op), in[0].shape.size(), op);
      out = in[0];
      out.shape[d] = 0;
      for (const auto& t : in) {
        if (t.shape.size() != in[0].shape.size()) type_error(op, "inputs differ in rank: " + shapes_of(in));
        for (size_t i = 0; i < t.shape.size(); ++i)
          if (static_cast<int64_t>(i) != d && t.shape[i] != in[0].shape[i])
            type_error(op, "inputs differ outside dim " + std::to_string(d) + ": " + shapes_of(in));
        out.shape[d] += t.shape[d];
        out.dtype = promote(out.dtype, t.dtype);
      }
      return out;
    }
    default:
      break;
  }
  internal_error(std::string("no type rule for op ") + op_name(op));
}

// Reductions, and the composites decompose turns into them (softmax, norms).
TensorType infer_reduction(Op op, const std::vector<TensorType>& in, const Attrs& attrs) {
  TensorType out;
  switch (op) {
    case Op::Sum: case Op::Mean: case Op::Amax: case Op::Amin: case Op::Var: {
      auto dims = reduce_dims(attrs, in[0].shape.size(), op);
      bool keep = attr_int_or(attrs, "keepdim", 0) != 0;
      for (size_t i = 0; i < in[0].shape.size(); ++i) {
        bool red = std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end();
        if (!red) out.shape.push_back(in[0].shape[i]);
        else if (keep) out.shape.push_back(1);
      }
      out.dtype = in[0].dtype;
      if (!is_floating(out.dtype)) {
        if (op != Op::Sum && op != Op::Amax && op != Op::Amin) type_error(op, "needs a floating input, got " + in[0].str());
        if (op == Op::Sum) out.dtype = DType::I64;
      }
      return out;
    }
    case Op::Argmax: {
      if (in[0].dtype == DType::Bool) type_error(op, "needs a number, got " + in[0].str());
      const bool keep = attr_int_or(attrs, "keepdim", 0) != 0;
      out.dtype = DType::I64;
      if (!attrs.count("dim")) {
        if (keep) out.shape.assign(in[0].shape.size(), 1);
        return out;
      }
      const int64_t d = norm_dim(attr_int(attrs, "dim", op), in[0].shape.size(), op);
      for (size_t i = 0; i < in[0].shape.size(); ++i)
        if (static_cast<int64_t>(i) != d) out.shape.push_back(in[0].shape[i]);
        else if (keep) out.shape.push_back(1);
      return out;
    }
    case Op::Cumsum:
      norm_dim(attr_int(attrs, "dim", op), in[0].shape.size(), op);
      return TensorType{is_floating(in[0].dtype) ? in[0].dtype : DType::I64, in[0].shape};
    case Op::Softmax: case Op::LogSoftmax:
      if (!is_floating(in[0].dtype)) type_error(op, "needs a floating input, got " + in[0].str());
      norm_dim(attr_int(attrs, "dim", op), in[0].shape.size(), op);
      return in[0];
    case Op::RmsNorm: case Op::LayerNorm: {
      if (in[0].shape.empty()) type_error(op, "needs rank >= 1");
      for (size_t i = 1; i < in.size(); ++i)
        if (in[i].shape != Shape{in[0].shape.back()})
          type_error(op, "weight/bias must be [" + std::to_string(in[0].shape.back()) + "], got " + in[i].str());
      return in[0];
    }
    default:
      break;
  }
  internal_error(std::string("no type rule for op ") + op_name(op));
}

// Library kernels: GEMMs, attention, embedding.
TensorType infer_extern(Op op, const std::vector<TensorType>& in, const Attrs& attrs) {
  TensorType out;
  switch (op) {
    case Op::Linear: case Op::LinearAddRank0: {
      const auto& x = in[0].shape;
      const auto& w = in[1].shape;
      if (x.empty() || w.size() != 2 || w[1] != x.back())
        type_error(op, "input " + shape_str(x) + " and weight " + shape_str(w) + " do not match ([...,K] x [N,K])");
      out.shape = x;
      out.shape.back() = w[0];
      out.dtype = in[0].dtype;
      if (op == Op::Linear && in.size() == 3 && in[2].shape != Shape{w[0]})
        type_error(op, "bias must be [" + std::to_string(w[0]) + "]");
      if (op == Op::LinearAddRank0 && in[2] != out)
        type_error(op, "the addend must be " + out.str() + " (the GEMM's result), got " + in[2].str());
      return out;
    }
    case Op::Matmul: {
      const auto& a = in[0].shape;
      const auto& b = in[1].shape;
      if (a.size() < 2 || b.size() < 2 || a.back() != b[b.size() - 2])
        type_error(op, "shapes " + shapes_of(in) + " do not multiply ([...,M,K] x [...,K,N])");
      Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
      if (!broadcast_shapes(ba, bb, &out.shape)) type_error(op, "batch dims of " + shapes_of(in) + " do not broadcast");
      out.shape.push_back(a[a.size() - 2]);
      out.shape.push_back(b.back());
      out.dtype = promote(in[0].dtype, in[1].dtype);
      return out;
    }
    case Op::Sdpa: {
      // grouped-query attention: k and v may have fewer heads, each shared
      // by q's heads in groups of q heads / kv heads
      const auto &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
      if (q.size() != 4 || k.size() != 4 || v.size() != 4 || q[0] != k[0] || q[3] != k[3] || k[2] != v[2] ||
          k[0] != v[0] || k[1] != v[1])
        type_error(op, "q, k, v must be [B,H,S,D] with matching B, D, key length and k/v heads: " + shapes_of(in));
      if (q[1] % k[1] != 0)
        type_error(op, std::to_string(q[1]) + " query heads do not share " + std::to_string(k[1]) +
                           " key/value heads evenly: " + shapes_of(in));
      return TensorType{in[0].dtype, {q[0], q[1], q[2], v[3]}};
    }
    case Op::FastPath: {
      // the kernel's declared result: its matcher computed it
      if (attr_str_or(attrs, "name", "").empty()) type_error(op, "needs attribute 'name' (the fast path)");
      if (!parse_dtype(attr_str_or(attrs, "dtype", ""), &out.dtype))
        type_error(op, "needs attribute 'dtype' (its result's dtype), got '" + attr_str_or(attrs, "dtype", "") + "'");
      out.shape = attr_ints(attrs, "shape", op);
      for (int64_t d : out.shape)
        if (d < 0) type_error(op, "negative size in 'shape'");
      return out;
    }
    case Op::Topk: case Op::Sort: case Op::Argsort: {
      if (in[0].dtype == DType::Bool) type_error(op, "needs a number, got " + in[0].str());
      if (in[0].shape.empty()) type_error(op, "needs rank >= 1, got " + in[0].str());
      const int64_t d = norm_dim(attr_int_or(attrs, "dim", -1), in[0].shape.size(), op);
      out = in[0];
      if (op == Op::Sort) return out;
      out.dtype = DType::I64;
      if (op == Op::Topk) {
        const int64_t k = attr_int(attrs, "k", op), size = in[0].shape[static_cast<size_t>(d)];
        if (k < 1 || k > size)
          type_error(op, "k = " + std::to_string(k) + " is not in 1.." + std::to_string(size) + " (dim " +
                             std::to_string(d) + " of " + in[0].str() + ")");
        out.shape[static_cast<size_t>(d)] = k;
      }
      return out;
    }
    case Op::Embedding: {
      if (in[0].shape.size() != 2 || in[1].dtype != DType::I64)
        type_error(op, "needs weight [V,D] and i64 indices, got " + in[0].str() + " and " + in[1].str());
      out.shape = in[1].shape;
      out.shape.push_back(in[0].shape[1]);
      out.dtype = in[0].dtype;
      return out;
    }
    default:
      break;
  }
  internal_error(std::string("no type rule for op ") + op_name(op));
}

// Views: the same elements under another shape.
TensorType infer_view(Op op, const std::vector<TensorType>& in, const Attrs& attrs) {
  TensorType out;
  switch (op) {
    case Op::Reshape: {
      Shape s = attr_ints(attrs, "shape", op);
      int64_t known = 1;
      int infer_at = -1;
      for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == -1) {
          if (infer_at >= 0) type_error(op, "only one -1 allowed in shape");
          infer_at = static_cast<int>(i);
        } else if (s[i] < 0) {
          type_error(op, "negative size " + std::to_string(s[i]) + " in shape " + shape_str(s));
        } else {
          known *= s[i];
        }
      }
      if (infer_at >= 0 && known == 0) type_error(op, "cannot infer -1 in shape " + shape_str(s) + " with a zero-sized dim");
      if (infer_at >= 0 && known > 0) s[infer_at] = numel(in[0].shape) / known;
      if (numel(s) != numel(in[0].shape))
        type_error(op, "cannot reshape " + in[0].str() + " to " + shape_str(s));
      return TensorType{in[0].dtype, s};
    }
    case Op::Permute: {
      auto dims = attr_ints(attrs, "dims", op);
      if (dims.size() != in[0].shape.size()) type_error(op, "dims must name every dim of " + in[0].str());
      std::vector<bool> seen(dims.size());
      out.dtype = in[0].dtype;
      for (auto d : dims) {
        d = norm_dim(d, dims.size(), op);
        if (seen[d]) type_error(op, "dims repeat a dim");
        seen[d] = true;
        out.shape.push_back(in[0].shape[d]);
      }
      return out;
    }
    case Op::Transpose: {
      out = in[0];
      int64_t a = norm_dim(attr_int(attrs, "dim0", op), out.shape.size(), op);
      int64_t b = norm_dim(attr_int(attrs, "dim1", op), out.shape.size(), op);
      std::swap(out.shape[a], out.shape[b]);
      return out;
    }
    case Op::Slice: {
      out = in[0];
      const SliceBounds b = slice_bounds(attrs, in[0].shape, op);
      out.shape[static_cast<size_t>(b.dim)] = (b.end - b.start + b.step - 1) / b.step;
      return out;
    }
    case Op::Flip:
      for (int64_t d : attr_ints(attrs, "dims", op)) norm_dim(d, in[0].shape.size(), op);
      return in[0];
    case Op::Expand: {
      Shape s = attr_ints(attrs, "shape", op);
      const Shape& x = in[0].shape;
      if (s.size() < x.size()) type_error(op, "cannot expand " + in[0].str() + " to fewer dims " + shape_str(s));
      for (size_t i = 0; i < s.size(); ++i) {
        size_t off = s.size() - x.size();
        int64_t xd = i < off ? 1 : x[i - off];
        if (s[i] == -1) {
          if (i < off) type_error(op, "-1 not allowed for a new leading dim");
          s[i] = xd;
        }
        if (xd != s[i] && xd != 1) type_error(op, "cannot expand " + in[0].str() + " to " + shape_str(s));
      }
      return TensorType{in[0].dtype, s};
    }
    default:
      break;
  }
  internal_error(std::string("no type rule for op ") + op_name(op));
}

// Collectives, copy_ into a graph input, and host ops (which break the graph).
TensorType infer_collective_mutation_host(Op op, const std::vector<TensorType>& in, const Attrs& attrs) {
  TensorType out;
  switch (op) {
    case Op::AllReduce:
      return in[0];
    case Op::AllGather: case Op::ReduceScatter: {
      out = in[0];
      // `world` types a .fg line; a run takes its own world size (1 if absent)
      int64_t w = attr_int_or(attrs, "world", 1);
      if (w < 1) type_error(op, "world must be >= 1");
      if (out.shape.empty()) type_error(op, "needs rank >= 1");
      // ranks' pieces are stacked along dim 0; a `dim` attribute must say so
      if (attrs.count("dim") && norm_dim(attr_int(attrs, "dim", op), out.shape.size(), op) != 0)
        type_error(op, "works along dim 0 only, not dim " + std::to_string(attr_int(attrs, "dim", op)));
      if (op == Op::AllGather) {
        out.shape[0] *= w;
      } else {
        if (out.shape[0] % w) type_error(op, "dim 0 of " + in[0].str() + " not divisible by world " + std::to_string(w));
        out.shape[0] /= w;
      }
      return out;
    }
    case Op::CopyInto: {
      Shape s;
      if (!broadcast_shapes(in[0].shape, in[1].shape, &s) || s != in[0].shape)
        type_error(op, "source " + in[1].str() + " does not broadcast to destination " + in[0].str());
      return in[0];
    }
    case Op::Print:
      return in[0];
    case Op::If:
      if (numel(in[0].shape) != 1) type_error(op, "needs a one-element condition, got " + in[0].str());
      if (in[1] != in[2]) type_error(op, "its arms yield " + in[1].str() + " and " + in[2].str() + ": they must agree");
      return in[1];
    case Op::Item:
      if (numel(in[0].shape) != 1) type_error(op, "needs a one-element tensor, got " + in[0].str());
      return TensorType{DType::F64, {}};
    case Op::Nonzero:
      return TensorType{DType::I64, {-1, static_cast<int64_t>(in[0].shape.size())}};
    default:
      break;
  }
  internal_error(std::string("no type rule for op ") + op_name(op));
}

// Indirect stores: self's type, with the index and src checked as torch does.
TensorType infer_scatter(Op op, const std::vector<TensorType>& in, const Attrs& attrs) {
  const TensorType &self = in[0], &index = in[1], &src = in[2];
  const int64_t d = norm_dim(attr_int(attrs, "dim", op), self.shape.size(), op);
  if (index.dtype != DType::I64) type_error(op, "needs an i64 index, got " + index.str());
  if (src.dtype != self.dtype)
    type_error(op, "src " + src.str() + " must have self's dtype (" + dtype_name(self.dtype) + ")");
  if (op == Op::IndexAdd) {
    if (index.shape.size() != 1) type_error(op, "needs a 1-D index, got " + index.str());
    Shape want = self.shape;
    want[static_cast<size_t>(d)] = index.shape[0];
    if (src.shape != want)
      type_error(op, "src " + src.str() + " must be " + shape_str(want) + " (self " + self.str() +
                         " with dim " + std::to_string(d) + " the index's length)");
    return self;
  }
  if (index.shape.size() != self.shape.size())
    type_error(op, "index " + index.str() + " must have the rank of self " + self.str());
  if (src.shape != index.shape) type_error(op, "src " + src.str() + " must have the index's shape " + shape_str(index.shape));
  for (size_t i = 0; i < self.shape.size(); ++i)
    if (static_cast<int64_t>(i) != d && index.shape[i] > self.shape[i])
      type_error(op, "index " + index.str() + " is larger than self " + self.str() + " outside dim " + std::to_string(d));
  return self;
}

}  // namespace

TensorType infer_type(Op op, const std::vector<TensorType>& in, const Attrs& attrs) {
  const OpInfo& info = op_info(op);
  if (static_cast<int>(in.size()) < info.min_inputs || static_cast<int>(in.size()) > info.max_inputs)
    type_error(op, "takes " + std::to_string(info.min_inputs) +
                       (info.max_inputs != info.min_inputs ? ".." + std::to_string(info.max_inputs) : "") +
                       " inputs, got " + std::to_string(in.size()));
  AttrProblem bad;
  if (!check_attrs(op, attrs, &bad)) type_error(op, bad.message);
  // one rule per op family: the fusion kind in the op table
  switch (fusion_kind(op)) {
    case FusionKind::Input: internal_error("input and full carry their declared type");
    case FusionKind::Pointwise: return infer_pointwise(op, in, attrs);
    case FusionKind::Reduction: return infer_reduction(op, in, attrs);
    case FusionKind::Extern: return infer_extern(op, in, attrs);
    case FusionKind::View: return infer_view(op, in, attrs);
    case FusionKind::Scatter: return infer_scatter(op, in, attrs);
    case FusionKind::Collective: case FusionKind::Mutation: case FusionKind::Host:
      return infer_collective_mutation_host(op, in, attrs);
    case FusionKind::Template: break;  // made by lower, never in a graph
  }
  internal_error(std::string("no type rule for op ") + op_name(op));
}

}  // namespace fg
