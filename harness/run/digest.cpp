#include "harness/run/digest.h"

#include <xxhash.h>

#include <cmath>
#include <cstdio>

namespace fg {

namespace {
std::pair<double, double> tolerances(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return {1.6e-2, 1e-5};
    case at::kHalf: return {1e-3, 1e-5};
    case at::kFloat: return {1.3e-6, 1e-5};
    case at::kDouble: return {1e-7, 1e-7};
    default: return {0, 0};
  }
}
const char* short_name(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return "bf16";
    case at::kHalf: return "f16";
    case at::kFloat: return "f32";
    case at::kDouble: return "f64";
    case at::kLong: return "i64";
    case at::kBool: return "bool";
    case at::kInt: return "i32";
    case at::kByte: return "u8";
    default: return "?";
  }
}
}  // namespace

std::string exact_digest(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  std::string head = short_name(c.scalar_type());
  for (int64_t d : c.sizes()) head += "," + std::to_string(d);
  XXH64_state_t* s = XXH64_createState();
  XXH64_reset(s, 0);
  XXH64_update(s, head.data(), head.size());
  XXH64_update(s, c.data_ptr(), static_cast<size_t>(c.numel() * c.element_size()));
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(XXH64_digest(s)));
  XXH64_freeState(s);
  return buf;
}

record::Fingerprint fingerprint(const at::Tensor& t) {
  at::Tensor d = t.to(at::kDouble).contiguous().flatten();
  at::Tensor finite = d.isfinite();
  at::Tensor f = d.masked_select(finite);
  record::Fingerprint fp;
  fp.dtype = short_name(t.scalar_type());
  fp.shape = std::vector<long long>(t.sizes().begin(), t.sizes().end());
  fp.numel = t.numel();
  fp.sum = f.numel() ? f.sum().item<double>() : 0.0;
  fp.sumsq = f.numel() ? f.mul(f).sum().item<double>() : 0.0;
  fp.max_abs = f.numel() ? f.abs().max().item<double>() : 0.0;
  fp.nan = d.isnan().sum().item<int64_t>();
  fp.inf = d.isinf().sum().item<int64_t>();
  std::vector<double> samples;
  int64_t n = d.numel();
  for (int k = 0; k < 8 && n > 0; ++k) samples.push_back(d[(n - 1) * k / 7].item<double>());
  fp.samples = samples;
  return fp;
}

record::AccuracyOutput judge_accuracy(const std::string& name, const at::Tensor& cand, const at::Tensor& eager,
                                      const at::Tensor& fp64) {
  auto [rtol, atol] = tolerances(cand.scalar_type());
  at::Tensor c = cand.to(at::kDouble), e = eager.to(at::kDouble), r = fp64.to(at::kDouble);
  // NaN and infinities are compared by place (eager's NaN where eager has
  // one, as torch's equal_nan); the figures are over the elements finite in
  // all three (a NaN in them had made every figure NaN and failed a
  // candidate that matched eager bit for bit)
  const bool same_specials = c.isnan().equal(e.isnan()) && c.isposinf().equal(e.isposinf()) &&
                             c.isneginf().equal(e.isneginf());
  const at::Tensor finite = c.isfinite().logical_and(e.isfinite()).logical_and(r.isfinite());
  c = c.masked_select(finite);
  e = e.masked_select(finite);
  r = r.masked_select(finite);
  const bool any = c.numel() > 0;
  double rmse_c = any ? std::sqrt(c.sub(r).pow(2).mean().item<double>()) : 0.0;
  double rmse_e = any ? std::sqrt(e.sub(r).pow(2).mean().item<double>()) : 0.0;
  double max_abs = any ? c.sub(e).abs().max().item<double>() : 0.0;
  bool low = cand.scalar_type() == at::kBFloat16 || cand.scalar_type() == at::kHalf;
  double mult = low ? 3.0 : 2.0;
  bool close = same_specials && c.allclose(e, rtol, atol);
  bool rmse_ok = same_specials && rmse_c <= mult * rmse_e + rtol / 10;
  record::AccuracyOutput a;
  a.name = name;
  a.rmse_vs_fp64 = rmse_c;
  a.eager_rmse_vs_fp64 = rmse_e;
  a.max_abs_vs_eager = max_abs;
  a.allclose_eager = close;
  a.pass = close || rmse_ok;
  return a;
}

}  // namespace fg
