// The free functions of the tensor API: each records one op through the
// session that owns its first operand.
#include "fusion/capture/session.h"
#include "fusion/errors.h"

namespace fg {

namespace {
Session& S(const Tensor& t) {
  FG_CHECK(t.defined() && t.impl()->session, "tensor without a session");
  return *t.impl()->session;
}
Tensor scalar(const Tensor& like, double v) { return S(like).full(v, like.dtype(), {}, Here(SourceLoc{})); }
const Here kNoLoc{SourceLoc{}};
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Here& h) { return S(a).op(Op::Add, {a, b}, {}, h); }
Tensor sub(const Tensor& a, const Tensor& b, const Here& h) { return S(a).op(Op::Sub, {a, b}, {}, h); }
Tensor mul(const Tensor& a, const Tensor& b, const Here& h) { return S(a).op(Op::Mul, {a, b}, {}, h); }
Tensor div(const Tensor& a, const Tensor& b, const Here& h) { return S(a).op(Op::Div, {a, b}, {}, h); }
Tensor maximum(const Tensor& a, const Tensor& b, const Here& h) { return S(a).op(Op::Maximum, {a, b}, {}, h); }
Tensor pow(const Tensor& a, double e, const Here& h) { return S(a).op(Op::Pow, {a, scalar(a, e)}, {}, h); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b, kNoLoc); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b, kNoLoc); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b, kNoLoc); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b, kNoLoc); }
Tensor operator+(const Tensor& a, double b) { return add(a, scalar(a, b), kNoLoc); }
Tensor operator-(const Tensor& a, double b) { return sub(a, scalar(a, b), kNoLoc); }
Tensor operator*(const Tensor& a, double b) { return mul(a, scalar(a, b), kNoLoc); }
Tensor operator/(const Tensor& a, double b) { return div(a, scalar(a, b), kNoLoc); }
Tensor operator-(const Tensor& a) { return neg(a, kNoLoc); }

Tensor unary(Op op, const Tensor& a, const Here& h) { return S(a).op(op, {a}, {}, h); }
Tensor neg(const Tensor& a, const Here& h) { return unary(Op::Neg, a, h); }
Tensor exp(const Tensor& a, const Here& h) { return unary(Op::Exp, a, h); }
Tensor log(const Tensor& a, const Here& h) { return unary(Op::Log, a, h); }
Tensor sqrt(const Tensor& a, const Here& h) { return unary(Op::Sqrt, a, h); }
Tensor rsqrt(const Tensor& a, const Here& h) { return unary(Op::Rsqrt, a, h); }
Tensor relu(const Tensor& a, const Here& h) { return unary(Op::Relu, a, h); }
Tensor silu(const Tensor& a, const Here& h) { return unary(Op::Silu, a, h); }
Tensor sigmoid(const Tensor& a, const Here& h) { return unary(Op::Sigmoid, a, h); }
Tensor tanh(const Tensor& a, const Here& h) { return unary(Op::Tanh, a, h); }
Tensor sin(const Tensor& a, const Here& h) { return unary(Op::Sin, a, h); }
Tensor cos(const Tensor& a, const Here& h) { return unary(Op::Cos, a, h); }
Tensor gelu(const Tensor& a, bool tanh_approx, const Here& h) {
  return S(a).op(Op::Gelu, {a}, {{"approximate", std::string(tanh_approx ? "tanh" : "none")}}, h);
}
Tensor where(const Tensor& c, const Tensor& a, const Tensor& b, const Here& h) {
  return S(c).op(Op::Where, {c, a, b}, {}, h);
}
Tensor compare(Op op, const Tensor& a, const Tensor& b, const Here& h) {
  if (!is_comparison(op)) user_error(std::string("compare: ") + op_name(op) + " is not a comparison");
  return S(a).op(op, {a, b}, {}, h);
}
Tensor cast(const Tensor& a, DType t, const Here& h) {
  return S(a).op(Op::Cast, {a}, {{"to", std::string(dtype_name(t))}}, h);
}

namespace {
Attrs red_attrs(std::vector<int64_t> dims, bool keepdim) {
  return {{"dims", std::move(dims)}, {"keepdim", int64_t{keepdim ? 1 : 0}}};
}
}  // namespace

Tensor sum(const Tensor& a, std::vector<int64_t> dims, bool keepdim, const Here& h) {
  return S(a).op(Op::Sum, {a}, red_attrs(std::move(dims), keepdim), h);
}
Tensor mean(const Tensor& a, std::vector<int64_t> dims, bool keepdim, const Here& h) {
  return S(a).op(Op::Mean, {a}, red_attrs(std::move(dims), keepdim), h);
}
Tensor amax(const Tensor& a, std::vector<int64_t> dims, bool keepdim, const Here& h) {
  return S(a).op(Op::Amax, {a}, red_attrs(std::move(dims), keepdim), h);
}
Tensor var(const Tensor& a, std::vector<int64_t> dims, bool keepdim, int64_t correction, const Here& h) {
  Attrs at = red_attrs(std::move(dims), keepdim);
  at["correction"] = correction;
  return S(a).op(Op::Var, {a}, at, h);
}
Tensor softmax(const Tensor& a, int64_t dim, const Here& h) { return S(a).op(Op::Softmax, {a}, {{"dim", dim}}, h); }
Tensor rms_norm(const Tensor& x, const Tensor& w, double eps, const Here& h) {
  return S(x).op(Op::RmsNorm, {x, w}, {{"eps", eps}}, h);
}
Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Here& h) {
  return S(x).op(Op::LayerNorm, {x, w, b}, {{"eps", eps}}, h);
}
Tensor linear(const Tensor& x, const Tensor& w, const Here& h) { return S(x).op(Op::Linear, {x, w}, {}, h); }
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, const Here& h) {
  return S(x).op(Op::Linear, {x, w, b}, {}, h);
}
Tensor matmul(const Tensor& a, const Tensor& b, const Here& h) { return S(a).op(Op::Matmul, {a, b}, {}, h); }
Tensor reshape(const Tensor& a, Shape shape, const Here& h) {
  return S(a).op(Op::Reshape, {a}, {{"shape", std::move(shape)}}, h);
}
Tensor permute(const Tensor& a, std::vector<int64_t> dims, const Here& h) {
  return S(a).op(Op::Permute, {a}, {{"dims", std::move(dims)}}, h);
}
Tensor transpose(const Tensor& a, int64_t d0, int64_t d1, const Here& h) {
  return S(a).op(Op::Transpose, {a}, {{"dim0", d0}, {"dim1", d1}}, h);
}
Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end, int64_t step, const Here& h) {
  return S(a).op(Op::Slice, {a}, {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}}, h);
}
Tensor cat(const std::vector<Tensor>& xs, int64_t dim, const Here& h) {
  if (xs.empty()) user_error("cat: needs at least one tensor");
  return S(xs[0]).op(Op::Cat, xs, {{"dim", dim}}, h);
}
Tensor expand(const Tensor& a, Shape shape, const Here& h) {
  return S(a).op(Op::Expand, {a}, {{"shape", std::move(shape)}}, h);
}
Tensor sdpa_causal(const Tensor& q, const Tensor& k, const Tensor& v, const Here& h) {
  return S(q).op(Op::Sdpa, {q, k, v}, {{"causal", int64_t{1}}}, h);
}
Tensor embedding(const Tensor& weight, const Tensor& idx, const Here& h) {
  return S(weight).op(Op::Embedding, {weight, idx}, {}, h);
}

}  // namespace fg
