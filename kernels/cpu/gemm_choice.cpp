#include "kernels/cpu/gemm_choice.h"

#include <ATen/ops/randn.h>

#include <algorithm>
#include <functional>
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

std::vector<std::string> gemm_group_shapes(const std::string& group) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    const size_t plus = group.find(" + ", at);
    out.push_back(group.substr(at, plus == std::string::npos ? std::string::npos : plus - at));
    if (plus == std::string::npos) return out;
    at = plus + 3;
  }
}

namespace {

struct GemmShape {
  DType dtype;
  int64_t m, n, k;
  bool bias;
};

// "bf16 m1024 n1536 k512[ bias]"
GemmShape parse_shape(const std::string& shape) {
  std::istringstream in(shape);
  std::string dt, ms, ns, ks, extra, more;
  in >> dt >> ms >> ns >> ks >> extra >> more;
  auto num = [&](const std::string& s, char c) -> int64_t {
    if (s.size() < 2 || s[0] != c || s.find_first_not_of("0123456789", 1) != std::string::npos)
      internal_error("GEMM shape '" + shape + "': expected " + c + "<number>, got '" + s + "'");
    return std::stoll(s.substr(1));
  };
  GemmShape g{};
  if (!parse_dtype(dt, &g.dtype)) internal_error("GEMM shape '" + shape + "': unknown type '" + dt + "'");
  g.m = num(ms, 'm');
  g.n = num(ns, 'n');
  g.k = num(ks, 'k');
  if ((!extra.empty() && extra != "bias") || !more.empty())
    internal_error("GEMM shape '" + shape + "': unexpected '" + extra + more + "'");
  g.bias = extra == "bias";
  return g;
}

}  // namespace

double library_gemm_us(const std::string& group, int reps) {
  std::vector<GemmShape> shapes;
  for (const std::string& s : gemm_group_shapes(group)) shapes.push_back(parse_shape(s));
  at::Generator gen = at::detail::createCPUGenerator(20261125);
  auto rnd = [&](std::vector<int64_t> sizes, double scale, DType t) {
    return (at::randn(sizes, gen, at::TensorOptions().dtype(at::kFloat)).mul(scale)).to(to_aten(t));
  };
  // one call a shape, or one batched call for siblings of one shape (what
  // the scheduler's batched sibling GEMMs run); the values do not matter
  bool one_shape = true;
  for (const GemmShape& g : shapes)
    one_shape = one_shape && g.dtype == shapes[0].dtype && g.m == shapes[0].m && g.n == shapes[0].n &&
                g.k == shapes[0].k && g.bias == shapes[0].bias;
  std::vector<std::function<void()>> calls;
  if (one_shape) {
    const GemmShape& g = shapes[0];
    at::Tensor a = rnd({g.m, g.k}, 1.0, g.dtype);
    std::vector<at::Tensor> ws;
    for (size_t i = 0; i < shapes.size(); ++i) ws.push_back(rnd({g.n, g.k}, 0.05, g.dtype));
    at::Tensor b = g.bias ? rnd({g.n}, 1.0, g.dtype) : at::Tensor();
    calls.push_back([a, ws, b] { linear_batch(a, ws, b, at::Tensor(), 0.0f); });
  } else {
    for (const GemmShape& g : shapes) {
      at::Tensor a = rnd({g.m, g.k}, 1.0, g.dtype), w = rnd({g.n, g.k}, 0.05, g.dtype);
      at::Tensor b = g.bias ? rnd({g.n}, 1.0, g.dtype) : at::Tensor();
      calls.push_back([a, w, b] { linear_batch(a, {w}, b, at::Tensor(), 0.0f); });
    }
  }
  auto all = [&] {
    for (const auto& c : calls) c();
  };
  for (int i = 0; i < 2; ++i) all();
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    all();
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
