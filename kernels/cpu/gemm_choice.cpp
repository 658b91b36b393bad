#include "kernels/cpu/gemm_choice.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <sstream>

#include "kernels/cpu/aten_ops.h"
#include "fusion/errors.h"
#include "fusion/ir/types.h"

namespace fg {

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

}  // namespace

void GemmTimingProbe::close(LaunchRecord& r) {
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count();
  if (!r.gemm.empty()) us_[r.gemm].push_back(us);
}

std::map<std::string, double> GemmTimingProbe::medians() const {
  std::map<std::string, double> out;
  for (const auto& [shape, v] : us_) out[shape] = median_of(v);
  return out;
}

double library_gemm_us(const std::string& shape, int reps) {
  // "bf16 m1024 n1536 k512[ bias]"
  std::istringstream in(shape);
  std::string dt, ms, ns, ks, extra;
  in >> dt >> ms >> ns >> ks;
  in >> extra;
  DType dtype;
  auto num = [&](const std::string& s, char c) -> int64_t {
    if (s.size() < 2 || s[0] != c || s.find_first_not_of("0123456789", 1) != std::string::npos)
      internal_error("GEMM shape '" + shape + "': expected " + c + "<number>, got '" + s + "'");
    return std::stoll(s.substr(1));
  };
  if (!parse_dtype(dt, &dtype)) internal_error("GEMM shape '" + shape + "': unknown type '" + dt + "'");
  const int64_t m = num(ms, 'm'), n = num(ns, 'n'), k = num(ks, 'k');
  if (!extra.empty() && extra != "bias") internal_error("GEMM shape '" + shape + "': unexpected '" + extra + "'");
  at::Generator gen = at::detail::createCPUGenerator(20261125);
  const auto opt = at::TensorOptions().dtype(to_aten(dtype));
  // values of the scale a block's weights have; the timing does not depend on them
  at::Tensor a = at::randn({m, k}, gen, at::TensorOptions().dtype(at::kFloat)).to(opt);
  at::Tensor w = (at::randn({n, k}, gen, at::TensorOptions().dtype(at::kFloat)) * 0.05).to(opt);
  at::Tensor b = extra == "bias" ? at::randn({n}, gen, at::TensorOptions().dtype(at::kFloat)).to(opt) : at::Tensor();
  for (int i = 0; i < 2; ++i) linear_batch(a, {w}, b, at::Tensor(), 0.0f);
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    at::Tensor r = linear_batch(a, {w}, b, at::Tensor(), 0.0f);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  return median_of(us);
}

GemmChoice choose_gemm(const std::string& shape, double template_us, double library_us) {
  GemmChoice c;
  c.shape = shape;
  c.source = "measured";
  c.template_us = template_us;
  c.library_us = library_us;
  c.choice = template_us < library_us ? "template" : "library";
  return c;
}

}  // namespace fg
