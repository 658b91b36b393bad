// The fp64 reference with one rounding's noise at every value (the fuzzer's
// measure of how much a graph amplifies where roundings fall): each value
// moves by at most the unit roundoff of the type the repro declares, views
// and integers not at all, and every rank draws the same noise.
#include <gtest/gtest.h>

#include <ATen/ops/arange.h>
#include <ATen/ops/randn.h>

#include "fusion/capture/session.h"
#include "kernels/cpu/runtime.h"

namespace fg {
namespace {

struct Values {
  at::Tensor exact, noisy, view, ints;
};

// x * x for x declared as `declared` but held in f64, with or without the
// noise; a reshape of it; an i64 arange times 3
Values square(DType declared, bool noise) {
  AtenExecutor ex(nullptr, 0, 1, FusionPolicy::Default, true);
  ex.set_rounding_noise(noise);
  Session s(Mode::Eager, &ex);
  at::manual_seed(3);
  const at::Tensor x = at::randn({4096}, at::TensorOptions().dtype(at::kDouble));
  Tensor t = s.wrap(wrap_aten(x), "x", {}, declared);
  Tensor sq = s.op(Op::Mul, {t, t}, {}, Here());
  Tensor v = reshape(sq, {64, 64});
  Tensor i = s.wrap(wrap_aten(at::arange(16, at::TensorOptions().dtype(at::kLong))), "i");
  Tensor three = s.full(3.0, DType::I64, {}, Here());
  Tensor i3 = s.op(Op::Mul, {i, three}, {}, Here());
  return {x.mul(x), unwrap(s.concrete(sq)), unwrap(s.concrete(v)), unwrap(s.concrete(i3))};
}

TEST(Reference, RoundingNoiseIsOneRoundingOfTheDeclaredType) {
  for (auto [declared, u] : {std::pair{DType::BF16, 0x1p-8}, {DType::F16, 0x1p-11}, {DType::F32, 0x1p-24}}) {
    SCOPED_TRACE(dtype_name(declared));
    const Values v = square(declared, true);
    const at::Tensor rel = v.noisy.sub(v.exact).div(v.exact).abs();
    EXPECT_LE(rel.max().item<double>(), u * (1 + 1e-9));
    // uniform in +-u: the mean of |d| is u/2
    EXPECT_NEAR(rel.mean().item<double>(), u / 2, u / 10);
    EXPECT_TRUE(v.view.reshape({4096}).equal(v.noisy)) << "a view got noise of its own";
    EXPECT_TRUE(v.ints.equal(at::arange(16, at::TensorOptions().dtype(at::kLong)).mul(3))) << "an integer got noise";
  }
}

TEST(Reference, RoundingNoiseIsTheSameOnEveryRankAndNoneWithout) {
  EXPECT_TRUE(square(DType::F16, true).noisy.equal(square(DType::F16, true).noisy));
  const Values plain = square(DType::F16, false);
  EXPECT_TRUE(plain.noisy.equal(plain.exact));
  // f64 declared: the reference is already exact to its own rounding
  const Values f64 = square(DType::F64, true);
  EXPECT_TRUE(f64.noisy.equal(f64.exact));
}

}  // namespace
}  // namespace fg
