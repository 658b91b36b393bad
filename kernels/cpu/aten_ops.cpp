#include "kernels/cpu/aten_ops.h"


// the op library: every ATen op the runtime calls
#include <ATen/ATen.h>
#include <torch/version.h>

#include <cmath>
#include <limits>

#include "fusion/errors.h"
#include "fusion/fault.h"
#include "kernels/collectives/collectives.h"

// Which attention runs depends on the LibTorch version: without the version
// macros the fused path would be compiled out silently (it once was).
#if !defined(TORCH_VERSION_MAJOR)
#error "torch/version.h did not define TORCH_VERSION_MAJOR: cannot tell whether LibTorch has fused attention"
#endif

namespace fg {

const char* attention_kernel() {
#if TORCH_VERSION_MAJOR >= 2
  return fault_active("attention_fallback") ? "composite" : "fused";
#else
  return "composite";
#endif
}

at::ScalarType to_aten(DType t) {
  switch (t) {
    case DType::BF16: return at::kBFloat16;
    case DType::F16: return at::kHalf;
    case DType::F32: return at::kFloat;
    case DType::F64: return at::kDouble;
    case DType::I64: return at::kLong;
    case DType::Bool: return at::kBool;
    case DType::I32: return at::kInt;
    case DType::U8: return at::kByte;
  }
  internal_error("unknown dtype");
}

DType from_aten(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return DType::BF16;
    case at::kHalf: return DType::F16;
    case at::kFloat: return DType::F32;
    case at::kDouble: return DType::F64;
    case at::kLong: return DType::I64;
    case at::kBool: return DType::Bool;
    case at::kInt: return DType::I32;
    case at::kByte: return DType::U8;
    default: break;
  }
  user_error(std::string("dtype ") + c10::toString(t) + " is not supported by fusegate");
}

namespace {

// Counts one launched kernel and passes the value through.
struct Counter {
  EagerContext& ctx;
  at::Tensor operator()(at::Tensor t) { ++ctx.launches; return t; }
};

// Attention, composed of ATen ops: scores, causal mask, softmax and the
// weighted sum, computed in f32 and rounded once. LibTorch 1.x has nothing
// better; on 2.x it runs only when FUSEGATE_FAULT=attention_fallback asks,
// so that the device-kernel count can be shown to catch it.
at::Tensor composite_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal,
                               c10::optional<double> scale) {
  // f32 math, or f64 in the fp64 reference
  const at::ScalarType acc = q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  at::Tensor qf = q.to(acc), kf = k.to(acc), vf = v.to(acc);
  at::Tensor s = at::matmul(qf, kf.transpose(-2, -1)) * scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  if (causal) {
    at::Tensor mask = at::ones({q.size(-2), k.size(-2)}, q.options().dtype(at::kBool)).triu(1);
    s = s.masked_fill(mask, -std::numeric_limits<float>::infinity());
  }
  return at::matmul(at::softmax(s, -1), vf).to(q.scalar_type());
}

// Grouped-query attention: q has `group` heads for each k/v head. `scale`:
// the scores' factor, 1/sqrt(D) when not given.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal,
                     c10::optional<double> scale, Counter& K) {
  const bool gqa = q.size(1) != k.size(1);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
  // the fused kernels read each k/v head for its whole group (enable_gqa)
  if (!fault_active("attention_fallback"))
    return K(at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal, scale, gqa));
#elif TORCH_VERSION_MAJOR >= 2
  if (!fault_active("attention_fallback") && !gqa && !scale)
    return K(at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal));
#endif
  if (!gqa) return K(composite_attention(q, k, v, causal, scale));
  const int64_t group = q.size(1) / k.size(1);
  return K(composite_attention(q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), causal, scale));
}

// LibTorch's deterministic algorithms while it lives, as they were after.
class DeterministicForThisOp {
 public:
  DeterministicForThisOp()
      : was_(at::globalContext().deterministicAlgorithms()),
        warn_only_(at::globalContext().deterministicAlgorithmsWarnOnly()) {
    at::globalContext().setDeterministicAlgorithms(true, false);
  }
  ~DeterministicForThisOp() { at::globalContext().setDeterministicAlgorithms(was_, warn_only_); }

 private:
  bool was_, warn_only_;
};

}  // namespace

at::Tensor linear_batch(const at::Tensor& a, const std::vector<at::Tensor>& ws, const at::Tensor& bias,
                        const at::Tensor& addend, float beta, bool gelu_tanh) {
  const at::ScalarType t = a.scalar_type();
  bool lt = a.is_cuda() && (t == at::kBFloat16 || t == at::kHalf || t == at::kFloat) &&
            (!bias.defined() || bias.scalar_type() == t) && (!addend.defined() || addend.scalar_type() == t);
  for (const auto& w : ws) lt = lt && w.scalar_type() == t && w.sizes() == ws[0].sizes();
  if (lt) return cuda_linear(a, ws, bias, addend, beta, gelu_tanh);
  const int64_t N = ws[0].size(0);
  std::vector<at::Tensor> outs;
  for (const auto& w : ws) {
    at::Tensor y = bias.defined() ? at::linear(a, w, bias) : at::linear(a, w);
    if (gelu_tanh) y = at::gelu(y, "tanh");
    if (addend.defined() && beta != 0.0f) y = y + addend * beta;
    outs.push_back(y.reshape({-1, N}));
  }
  return outs.size() == 1 ? outs[0].unsqueeze(0) : at::stack(outs);
}

at::Tensor aten_op(const Node& n, const std::vector<at::Tensor>& in, EagerContext& ctx) {
  Counter K{ctx};
  auto dt = [&](DType t) { return to_aten(ctx.upcast_fp64 && is_floating(t) ? DType::F64 : t); };
  const Attrs& a = n.attrs;
  auto dims = [&]() {
    std::vector<int64_t> d = a.count("dims") ? attr_ints(a, "dims", n.op) : std::vector<int64_t>{};
    if (d.empty())
      for (int64_t i = 0; i < in[0].dim(); ++i) d.push_back(i);
    return d;
  };
  bool keep = attr_int_or(a, "keepdim", 0) != 0;
  // a rank-0 operand acts as a Python scalar, as in the repro's source
  auto arg = [&](size_t i) -> at::Tensor { return in[i]; };
  auto binary = [&](auto f) {
    if (in[1].dim() == 0 && in[0].dim() > 0) return K(f(in[0], in[1].item()));
    return K(f(in[0], in[1]));
  };
  switch (n.op) {
    case Op::Full:  // a fill kernel, as torch.full launches
      return K(at::full(n.type.shape, attr_float(a, "value", n.op),
                        at::TensorOptions().dtype(dt(n.type.dtype)).device(ctx.device)));
    case Op::Add: return binary([](const auto& x, const auto& y) { return at::add(x, y); });
    case Op::Sub: return binary([](const auto& x, const auto& y) { return at::sub(x, y); });
    case Op::Mul: return binary([](const auto& x, const auto& y) { return at::mul(x, y); });
    case Op::Div: return binary([](const auto& x, const auto& y) { return at::div(x, y); });
    case Op::Pow: return binary([](const auto& x, const auto& y) { return at::pow(x, y); });
    case Op::Maximum: return K(at::maximum(arg(0), arg(1)));
    case Op::Minimum: return K(at::minimum(arg(0), arg(1)));
    case Op::Erf: return K(at::erf(arg(0)));
    case Op::Abs: return K(at::abs(arg(0)));
    case Op::Clamp: {
      c10::optional<at::Scalar> lo, hi;
      if (a.count("min")) lo = attr_float(a, "min", n.op);
      if (a.count("max")) hi = attr_float(a, "max", n.op);
      return K(at::clamp(arg(0), lo, hi));
    }
    case Op::Arange:
      return K(at::arange(attr_float_or(a, "start", 0.0), attr_float(a, "end", n.op), attr_float_or(a, "step", 1.0),
                          at::TensorOptions().dtype(dt(n.type.dtype)).device(ctx.device)));
    case Op::Contiguous: {
      at::Tensor r = in[0].contiguous();
      if (!r.is_alias_of(in[0])) ++ctx.launches;  // a copy
      return r;
    }
    case Op::Pad: {
      const std::vector<int64_t> pad = attr_ints(a, "pad", n.op);
      return K(at::constant_pad_nd(arg(0), pad, attr_float_or(a, "value", 0.0)));
    }
    case Op::Flip: return K(at::flip(arg(0), attr_ints(a, "dims", n.op)));
    case Op::IndexSelect: return K(at::index_select(arg(0), attr_int(a, "dim", n.op), arg(1)));
    case Op::Gather: return K(at::gather(arg(0), attr_int(a, "dim", n.op), arg(1)));
    case Op::OneHot: return K(at::one_hot(arg(0), attr_int(a, "num_classes", n.op)));
    case Op::Topk:
      return K(std::get<1>(at::topk(arg(0), attr_int(a, "k", n.op), attr_int_or(a, "dim", -1),
                                    attr_int_or(a, "largest", 1) != 0, /*sorted=*/true)));
    case Op::Sort: case Op::Argsort: {
      auto r = at::sort(arg(0), /*stable=*/true, attr_int_or(a, "dim", -1), attr_int_or(a, "descending", 0) != 0);
      return K(n.op == Op::Sort ? std::get<0>(r) : std::get<1>(r));
    }
    case Op::Scatter: return K(at::scatter(arg(0), attr_int(a, "dim", n.op), arg(1), arg(2)));
    case Op::ScatterAdd: case Op::IndexAdd: {
      // LibTorch's cuda kernels add with atomics, in an order that changes
      // from run to run (eager digests that differed between two ranks of
      // the same inputs: a fuzz finding); its deterministic algorithms, for
      // this op alone, make eager a reference: a sort, then sums in order,
      // more kernels than the atomics (scatter, which adds nothing, keeps
      // its one kernel: its deterministic form ran 18 on an H200)
      DeterministicForThisOp det;
      const int64_t d = attr_int(a, "dim", n.op);
      if (n.op == Op::ScatterAdd) return K(at::scatter_add(arg(0), d, arg(1), arg(2)));
      return K(at::index_add(arg(0), d, arg(1), arg(2)));
    }
    case Op::Amin: return K(at::amin(arg(0), dims(), keep));
    case Op::Cumsum: return K(at::cumsum(arg(0), attr_int(a, "dim", n.op), dt(n.type.dtype)));
    case Op::Argmax: {
      c10::optional<int64_t> d;
      if (a.count("dim")) d = attr_int(a, "dim", n.op);
      return K(at::argmax(arg(0), d, keep));
    }
    case Op::LogSoftmax: return K(at::log_softmax(arg(0), attr_int(a, "dim", n.op)));
    case Op::Eq: return binary([](const auto& x, const auto& y) { return at::eq(x, y); });
    case Op::Ne: return binary([](const auto& x, const auto& y) { return at::ne(x, y); });
    case Op::Lt: return binary([](const auto& x, const auto& y) { return at::lt(x, y); });
    case Op::Le: return binary([](const auto& x, const auto& y) { return at::le(x, y); });
    case Op::Gt: return binary([](const auto& x, const auto& y) { return at::gt(x, y); });
    case Op::Ge: return binary([](const auto& x, const auto& y) { return at::ge(x, y); });
    case Op::Neg: return K(at::neg(arg(0)));
    case Op::Exp: return K(at::exp(arg(0)));
    case Op::Log: return K(at::log(arg(0)));
    case Op::Sqrt: return K(at::sqrt(arg(0)));
    case Op::Rsqrt: return K(at::rsqrt(arg(0)));
    case Op::Relu: return K(at::relu(arg(0)));
    case Op::Gelu: return K(at::gelu(arg(0), attr_str_or(a, "approximate", "none")));
    case Op::Silu: return K(at::silu(arg(0)));
    case Op::Sigmoid: return K(at::sigmoid(arg(0)));
    case Op::Tanh: return K(at::tanh(arg(0)));
    case Op::Sin: return K(at::sin(arg(0)));
    case Op::Cos: return K(at::cos(arg(0)));
    case Op::Where: return K(at::where(arg(0), arg(1), arg(2)));
    case Op::Cast: {
      at::ScalarType t = dt(n.type.dtype);
      if (in[0].scalar_type() == t) return in[0];
      return K(in[0].to(t));
    }
    case Op::Cat: return K(at::cat(in, attr_int(a, "dim", n.op)));
    case Op::Sum: return K(at::sum(arg(0), dims(), keep));
    case Op::Mean: return K(at::mean(arg(0), dims(), keep));
    case Op::Amax: return K(at::amax(arg(0), dims(), keep));
    case Op::Var: {
      // correction 0 and 1 as ATen's unbiased flag; any other, the biased
      // variance scaled to n - correction (the flag alone had taken every
      // correction but 0 as 1, so eager and the fp64 reference were wrong
      // for 2 and more, and a right compiled run failed against them)
      const int64_t c = attr_int_or(a, "correction", 1);
      if (c == 0 || c == 1) return K(at::var(arg(0), dims(), c == 1, keep));
      int64_t n = 1;
      for (int64_t d : dims()) n *= arg(0).size(d);
      return K(K(at::var(arg(0), dims(), false, keep)) * (static_cast<double>(n) / static_cast<double>(n - c)));
    }
    case Op::Softmax: return K(at::softmax(arg(0), attr_int(a, "dim", n.op)));
    case Op::RmsNorm: {
      // the model codebases' RMSNorm: in f32, then back to the input type
      double eps = attr_float_or(a, "eps", 1e-6);
      at::Tensor x = in[0];
      at::Tensor xf = x.scalar_type() == at::kDouble ? x : K(x.to(at::kFloat));
      at::Tensor ms = K(at::mean(K(xf.pow(2)), {-1}, true));
      at::Tensor y = K(xf * K(at::rsqrt(K(ms + eps))));
      if (y.scalar_type() != x.scalar_type()) y = K(y.to(x.scalar_type()));
      return K(y * in[1]);
    }
    case Op::LayerNorm:
      return K(at::layer_norm(arg(0), {in[0].size(-1)}, in[1], in[2], attr_float_or(a, "eps", 1e-5)));
    case Op::Linear:
      // {epilogue = "gelu_tanh"}: the GELU folded into the GEMM (passes/gemm_epilogue)
      return K(linear_batch(in[0], {in[1]}, in.size() == 3 ? in[2] : at::Tensor(), at::Tensor(), 0.0f,
                            attr_str_or(a, "epilogue", "") == "gelu_tanh")[0]
                   .view(n.type.shape));
    case Op::LinearAddRank0:
      return K(linear_batch(in[0], {in[1]}, at::Tensor(), in[2], ctx.rank == 0 ? 1.0f : 0.0f)[0].view(n.type.shape));
    case Op::Matmul: return K(at::matmul(arg(0), arg(1)));
    case Op::Sdpa: {
      const c10::optional<double> scale =
          a.count("scale") ? c10::optional<double>(attr_float_or(a, "scale", 0.0)) : c10::nullopt;
      return attention(in[0], in[1], in[2], attr_int_or(a, "causal", 1) != 0, scale, K);
    }
    case Op::Embedding: return K(at::embedding(in[0], in[1]));
    case Op::Reshape: {
      at::Tensor r = in[0].reshape(n.type.shape);
      if (!r.is_alias_of(in[0])) ++ctx.launches;  // a copy
      return r;
    }
    case Op::Permute: return in[0].permute(attr_ints(a, "dims", n.op));
    case Op::Transpose: return in[0].transpose(attr_int(a, "dim0", n.op), attr_int(a, "dim1", n.op));
    case Op::Slice: {
      const SliceBounds b = slice_bounds(a, Shape(in[0].sizes().begin(), in[0].sizes().end()), n.op);
      return in[0].slice(b.dim, b.start, b.end, b.step);
    }
    case Op::Expand: return in[0].expand(n.type.shape);
    case Op::AllReduce: {
      FG_CHECK(ctx.collectives, "collective without a process group");
      // in place (dist.all_reduce) reduces the caller's tensor itself
      at::Tensor t = attr_int_or(a, "inplace", 0) ? in[0] : in[0].clone();
      ctx.collectives->all_reduce_(t);
      ++ctx.launches;
      return t;
    }
    case Op::AllGather: ++ctx.launches; return ctx.collectives->all_gather(in[0]);
    case Op::ReduceScatter: ++ctx.launches; return ctx.collectives->reduce_scatter(in[0]);
    case Op::CopyInto: return K(in[0].copy_(in[1]));
    case Op::Print: return in[0];
    case Op::Nonzero: return K(at::nonzero(in[0]));
    default: break;
  }
  internal_error(std::string("no ATen lowering for op ") + op_name(n.op));
}

}  // namespace fg
