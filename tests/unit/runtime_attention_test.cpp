// The causal_attention fast path run directly on the test backend
// (FUSEGATE_TEST_BACKEND: cpu runs the host reference, cuda the Hopper
// kernel): against attention computed in f64, on q, k, v that are views of
// one qkv projection as the blocks hand them over, for each shape class the
// kernel has a code path for (whole tiles, a partial last tile, shared k/v
// heads).
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/version.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "fusion/ir/graph.h"
#include "kernels/fastpaths/runtime.h"

namespace fg {
namespace {

std::string backend_name() {
  const char* b = std::getenv("FUSEGATE_TEST_BACKEND");
  return b && *b ? b : "cpu";
}

struct AttnCase {
  int64_t B, H, Hk, S;
  bool copied = false;  // q's last dim not contiguous: the cuda runtime copies it first
};

// attention in f64: scores, causal mask, softmax, the weighted sum
at::Tensor reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const int64_t group = q.size(1) / k.size(1);
  at::Tensor qd = q.to(at::kDouble).cpu(), kd = k.to(at::kDouble).cpu().repeat_interleave(group, 1),
             vd = v.to(at::kDouble).cpu().repeat_interleave(group, 1);
  at::Tensor s = at::matmul(qd, kd.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(3)));
  at::Tensor mask = at::ones({q.size(2), q.size(2)}, at::kBool).triu(1);
  s = s.masked_fill(mask, -std::numeric_limits<double>::infinity());
  return at::matmul(at::softmax(s, -1), vd);
}

// the library's fused attention where LibTorch has one (2.5 and later: with
// shared k/v heads); else the same in f32, rounded to bf16 once
at::Tensor library(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const bool gqa = q.size(1) != k.size(1);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, true, std::nullopt, gqa);
#else
  const int64_t group = q.size(1) / k.size(1);
  at::Tensor kf = k.to(at::kFloat), vf = v.to(at::kFloat);
  if (gqa) {
    kf = kf.repeat_interleave(group, 1);
    vf = vf.repeat_interleave(group, 1);
  }
  at::Tensor s = at::matmul(q.to(at::kFloat), kf.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(3)));
  at::Tensor mask = at::ones({q.size(2), q.size(2)}, q.options().dtype(at::kBool)).triu(1);
  return at::matmul(at::softmax(s.masked_fill(mask, -std::numeric_limits<float>::infinity()), -1), vf)
      .to(at::kBFloat16);
#endif
}

double rel_l2(const at::Tensor& got, const at::Tensor& ref) {
  return (got.to(at::kDouble).cpu() - ref).norm().item<double>() / ref.norm().item<double>();
}

TEST(CausalAttention, MatchesAttentionInF64OnEveryShapeClass) {
  const std::string backend = backend_name();
  const at::Device dev = backend == "cuda" ? at::Device(at::kCUDA) : at::Device(at::kCPU);
  const int64_t D = 128;
  FastPathRunner runner(backend == "cuda" ? Backend::Cuda : Backend::Cpu, nullptr, 0, 1);
  Node n;
  n.op = Op::FastPath;
  n.attrs["name"] = std::string("causal_attention");
  // whole 128-row tiles; a partial last tile; k/v heads shared by two q heads
  for (const AttnCase& c : {AttnCase{2, 4, 4, 256}, AttnCase{1, 2, 2, 200}, AttnCase{1, 4, 2, 384},
                            AttnCase{1, 2, 1, 128, true}}) {
    SCOPED_TRACE("B " + std::to_string(c.B) + " H " + std::to_string(c.H) + " Hk " + std::to_string(c.Hk) + " S " +
                 std::to_string(c.S) + (c.copied ? ", q not contiguous in d" : ""));
    at::manual_seed(7);
    const int64_t width = (c.H + 2 * c.Hk) * D;
    at::Tensor qkv = at::randn({c.B, c.S, width}, at::TensorOptions().dtype(at::kBFloat16)).to(dev);
    auto heads = [&](int64_t start, int64_t h) {
      return qkv.narrow(-1, start, h * D).view({c.B, c.S, h, D}).transpose(1, 2);
    };
    at::Tensor q = heads(0, c.H), k = heads(c.H * D, c.Hk), v = heads((c.H + c.Hk) * D, c.Hk);
    if (c.copied) q = q.transpose(2, 3).contiguous().transpose(2, 3);
    ASSERT_FALSE(q.is_contiguous());
    ASSERT_EQ(q.stride(3) != 1, c.copied);
    at::Tensor out = at::empty({c.B, c.S, c.H, D}, qkv.options());
    try {
      runner.run(n, {q, k, v}, out);
    } catch (const std::exception& e) {
      // the kernel is for Hopper; elsewhere the runtime says so
      if (backend == "cuda" && std::string(e.what()).find("for Hopper") != std::string::npos)
        GTEST_SKIP() << e.what();
      throw;
    }
    const at::Tensor got = out.transpose(1, 2);  // [B, H, S, D]
    const at::Tensor ref = reference(q, k, v);
    // the library's fused attention on the same backend and inputs, as far
    // from f64 as bf16 output and bf16 probabilities put it
    const at::Tensor lib = library(q, k, v);
    const double err = rel_l2(got, ref), lib_err = rel_l2(lib, ref);
    EXPECT_LT(err, 6e-3);
    EXPECT_LE(err, 1.5 * lib_err + 1e-3) << "the library's error " << lib_err;
    // every row, the first (one key) and the last (all keys) included
    const double worst = (got.to(at::kDouble).cpu() - ref).abs().max().item<double>();
    EXPECT_LT(worst, 0.05);
  }
}

}  // namespace
}  // namespace fg
