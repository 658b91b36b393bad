#include "harness/tools/ab_stats.h"

#include <cmath>

#include "fusion/ir/types.h"
#include "harness/run/digest.h"
#include "kernels/cpu/aten_ops.h"

namespace fg {

namespace {

// Explicit mantissa bits and least normal exponent of a float dtype.
void float_format(at::ScalarType t, int* mantissa, int* min_exp) {
  switch (t) {
    case at::kBFloat16: *mantissa = 7; *min_exp = -126; return;
    case at::kHalf: *mantissa = 10; *min_exp = -14; return;
    case at::kDouble: *mantissa = 52; *min_exp = -1022; return;
    default: *mantissa = 23; *min_exp = -126; return;
  }
}

// |a - ref| in ulps of `dtype` at |ref| (flushed to the least normal).
at::Tensor ulps(const at::Tensor& a, const at::Tensor& ref, at::ScalarType dtype) {
  int mant = 23, min_exp = -126;
  float_format(dtype, &mant, &min_exp);
  at::Tensor mag = ref.abs().clamp_min(std::ldexp(1.0, min_exp));
  at::Tensor ulp = at::exp2(at::floor(at::log2(mag)) - mant);
  return (a - ref).abs() / ulp;
}

nlohmann::json ulp_histogram(const at::Tensor& u) {
  // bins: 0, 1, 2, 3-4, 5-8, 9-16, 17-64, >64 (rounded to whole ulps; NaN in ">64")
  const double edges[] = {0.5, 1.5, 2.5, 4.5, 8.5, 16.5, 64.5};
  const char* names[] = {"0", "1", "2", "3-4", "5-8", "9-16", "17-64", ">64"};
  nlohmann::json h = nlohmann::json::object();
  at::Tensor v = at::nan_to_num(u, 1e30, 1e30, 1e30);
  int64_t below = 0;
  for (int i = 0; i < 7; ++i) {
    int64_t n = (v < edges[i]).sum().item<int64_t>();
    h[names[i]] = n - below;
    below = n;
  }
  h[names[7]] = v.numel() - below;
  return h;
}

double rel_l2(const at::Tensor& a, const at::Tensor& ref) {
  double den = ref.norm().item<double>();
  double num = (a - ref).norm().item<double>();
  return den > 0 ? num / den : num;
}

}  // namespace

nlohmann::json ab_compare(const std::string& name, bool replicated, const at::Tensor& generic, const at::Tensor& fast,
                          const at::Tensor& fp64) {
  const at::ScalarType dt = generic.scalar_type();
  at::Tensor g = generic.to(at::kDouble).reshape({-1});
  at::Tensor f = fast.to(at::kDouble).reshape({-1});
  at::Tensor r = fp64.to(at::kDouble).reshape({-1});
  nlohmann::json j;
  j["name"] = name;
  j["replicated"] = replicated;
  j["dtype"] = dtype_name(from_aten(dt));
  j["numel"] = g.numel();
  j["exact_generic"] = exact_digest(generic);
  j["exact_fast"] = exact_digest(fast);
  j["identical"] = j["exact_generic"] == j["exact_fast"];
  j["differing"] = (g != f).sum().item<int64_t>();
  j["nonfinite_fast"] = (~at::isfinite(f)).sum().item<int64_t>();
  j["max_abs_fast_vs_generic"] = g.numel() ? (f - g).abs().max().item<double>() : 0.0;
  j["max_abs_generic"] = g.numel() ? (g - r).abs().max().item<double>() : 0.0;
  j["max_abs_fast"] = g.numel() ? (f - r).abs().max().item<double>() : 0.0;
  j["rel_l2_generic"] = rel_l2(g, r);
  j["rel_l2_fast"] = rel_l2(f, r);
  j["ulps_fast_vs_generic"] = ulp_histogram(ulps(f, g, dt));
  j["ulps_fast_vs_fp64"] = ulp_histogram(ulps(f, r, dt));
  j["ulps_generic_vs_fp64"] = ulp_histogram(ulps(g, r, dt));
  j["worst"] = nlohmann::json::array();
  if (g.numel()) {
    const int64_t k = std::min<int64_t>(5, g.numel());
    at::Tensor err = at::nan_to_num((f - r).abs(), 1e300, 1e300, 1e300);
    auto top = err.topk(k);
    at::Tensor idx = std::get<1>(top);
    for (int64_t i = 0; i < k; ++i) {
      int64_t flat = idx[i].item<int64_t>();
      std::vector<int64_t> at;
      int64_t rest = flat;
      for (int64_t d = generic.dim() - 1; d >= 0; --d) {
        at.insert(at.begin(), rest % generic.size(d));
        rest /= generic.size(d);
      }
      j["worst"].push_back({{"index", flat},
                            {"at", at},
                            {"fast", f[flat].item<double>()},
                            {"generic", g[flat].item<double>()},
                            {"fp64", r[flat].item<double>()}});
    }
  }
  return j;
}

}  // namespace fg
