#include "harness/tools/ab_stats.h"

#include <cmath>
#include <map>
#include <vector>

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
  at::Tensor ulp = mag.log2().floor().sub(mant).exp2();
  return a.sub(ref).abs().div(ulp);
}

std::map<std::string, long long> ulp_histogram(const at::Tensor& u) {
  // bins: 0, 1, 2, 3-4, 5-8, 9-16, 17-64, >64 (rounded to whole ulps; NaN in ">64")
  const double edges[] = {0.5, 1.5, 2.5, 4.5, 8.5, 16.5, 64.5};
  const char* names[] = {"0", "1", "2", "3-4", "5-8", "9-16", "17-64", ">64"};
  std::map<std::string, long long> h;
  at::Tensor v = u.nan_to_num(1e30, 1e30, 1e30);
  int64_t below = 0;
  for (int i = 0; i < 7; ++i) {
    int64_t n = v.lt(edges[i]).sum().item<int64_t>();
    h[names[i]] = n - below;
    below = n;
  }
  h[names[7]] = v.numel() - below;
  return h;
}

double rel_l2(const at::Tensor& a, const at::Tensor& ref) {
  double den = ref.norm().item<double>();
  double num = a.sub(ref).norm().item<double>();
  return den > 0 ? num / den : num;
}

}  // namespace

record::AbOutput ab_compare(const std::string& name, bool replicated, const at::Tensor& generic, const at::Tensor& fast,
                            const at::Tensor& fp64) {
  const at::ScalarType dt = generic.scalar_type();
  at::Tensor g = generic.to(at::kDouble).reshape({-1});
  at::Tensor f = fast.to(at::kDouble).reshape({-1});
  at::Tensor r = fp64.to(at::kDouble).reshape({-1});
  record::AbOutput o;
  o.name = name;
  o.replicated = replicated;
  o.dtype = dtype_name(from_aten(dt));
  o.numel = g.numel();
  o.exact_generic = exact_digest(generic);
  o.exact_fast = exact_digest(fast);
  o.identical = o.exact_generic == o.exact_fast;
  o.differing = g.ne(f).sum().item<int64_t>();
  o.nonfinite_fast = f.isfinite().logical_not().sum().item<int64_t>();
  o.max_abs_fast_vs_generic = g.numel() ? f.sub(g).abs().max().item<double>() : 0.0;
  o.max_abs_generic = g.numel() ? g.sub(r).abs().max().item<double>() : 0.0;
  o.max_abs_fast = g.numel() ? f.sub(r).abs().max().item<double>() : 0.0;
  o.rel_l2_generic = rel_l2(g, r);
  o.rel_l2_fast = rel_l2(f, r);
  o.ulps_fast_vs_generic = ulp_histogram(ulps(f, g, dt));
  o.ulps_fast_vs_fp64 = ulp_histogram(ulps(f, r, dt));
  o.ulps_generic_vs_fp64 = ulp_histogram(ulps(g, r, dt));
  if (g.numel()) {
    const int64_t k = std::min<int64_t>(5, g.numel());
    at::Tensor err = f.sub(r).abs().nan_to_num(1e300, 1e300, 1e300);
    auto top = err.topk(k);
    at::Tensor idx = std::get<1>(top);
    for (int64_t i = 0; i < k; ++i) {
      int64_t flat = idx[i].item<int64_t>();
      std::vector<long long> at;
      int64_t rest = flat;
      for (int64_t d = generic.dim() - 1; d >= 0; --d) {
        at.insert(at.begin(), rest % generic.size(d));
        rest /= generic.size(d);
      }
      o.worst.push_back({flat, at, f[flat].item<double>(), g[flat].item<double>(), r[flat].item<double>()});
    }
  }
  return o;
}

}  // namespace fg
