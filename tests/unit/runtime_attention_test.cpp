// The causal_attention fast path run directly on the test backend
// (FUSEGATE_TEST_BACKEND: cpu runs the host reference, cuda the Hopper
// kernel): against attention computed in f64, on q, k, v that are views of
// one qkv projection as the blocks hand them over, for each shape class the
// kernel has a code path for (whole tiles, a partial last tile, shared k/v
// heads).
#include <gtest/gtest.h>

#include <ATen/Context.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/softmax.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
#include <ATen/ops/scaled_dot_product_attention.h>
#endif

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "fusion/ir/graph.h"
#include "fusion/ir/text.h"
#include "kernels/cpu/runtime.h"
#include "kernels/fastpaths/runtime.h"
#include "repros/registry.h"

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
  at::Tensor s = at::matmul(qd, kd.transpose(-2, -1)).div(std::sqrt(static_cast<double>(q.size(3))));
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
  at::Tensor s = at::matmul(q.to(at::kFloat), kf.transpose(-2, -1)).div(std::sqrt(static_cast<double>(q.size(3))));
  at::Tensor mask = at::ones({q.size(2), q.size(2)}, q.options().dtype(at::kBool)).triu(1);
  return at::matmul(at::softmax(s.masked_fill(mask, -std::numeric_limits<float>::infinity()), -1), vf)
      .to(at::kBFloat16);
#endif
}

double rel_l2(const at::Tensor& got, const at::Tensor& ref) {
  return got.to(at::kDouble).cpu().sub(ref).norm().item<double>() / ref.norm().item<double>();
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
    const double worst = got.to(at::kDouble).cpu().sub(ref).abs().max().item<double>();
    EXPECT_LT(worst, 0.05);
  }
}

// The fast path inside a compiled graph, forced as `ab` forces it: the qkv
// projection's views go in as they are, the head merge after it is a view,
// the output matches the graph run op by op (the library's attention), and
// its launch counts the causal attention's FLOPs (what the profile's
// TFLOP/s adds up).
const char* kAttnGraph = R"(
graph g(%x: bf16[2,200,256], %wqkv: bf16[768,256], %wo: bf16[256,256]) {
  %3 = linear(%x, %wqkv) : bf16[2,200,768]
  %4 = slice(%3) {dim = -1, end = 256, start = 0, step = 1} : bf16[2,200,256]
  %5 = reshape(%4) {shape = [2, 200, 2, 128]} : bf16[2,200,2,128]
  %6 = transpose(%5) {dim0 = 1, dim1 = 2} : bf16[2,2,200,128]
  %7 = slice(%3) {dim = -1, end = 512, start = 256, step = 1} : bf16[2,200,256]
  %8 = reshape(%7) {shape = [2, 200, 2, 128]} : bf16[2,200,2,128]
  %9 = transpose(%8) {dim0 = 1, dim1 = 2} : bf16[2,2,200,128]
  %10 = slice(%3) {dim = -1, end = 768, start = 512, step = 1} : bf16[2,200,256]
  %11 = reshape(%10) {shape = [2, 200, 2, 128]} : bf16[2,200,2,128]
  %12 = transpose(%11) {dim0 = 1, dim1 = 2} : bf16[2,2,200,128]
  %13 = sdpa(%6, %9, %12) {causal = 1} : bf16[2,2,200,128]
  %14 = transpose(%13) {dim0 = 1, dim1 = 2} : bf16[2,200,2,128]
  %15 = reshape(%14) {shape = [2, 200, 256]} : bf16[2,200,256]
  %16 = linear(%15, %wo) : bf16[2,200,256]
  return %16
}
)";

std::pair<at::Tensor, std::vector<LaunchRecord>> run_graph(Mode mode, bool fast,
                                                           const std::map<std::string, at::Tensor>& inputs) {
  const std::string backend = backend_name();
  AtenExecutor ex(nullptr, 0, 1, FusionPolicy::Default, false, parse_backend(backend));
  if (fast) {
    FastPathProofs forced;
    forced.forced = {"causal_attention"};
    ex.set_fast_paths(parse_fast_paths("causal_attention"), forced);
  }
  Session s(mode, &ex);
  Inputs in;
  for (const auto& [k, v] : inputs) in[k] = s.wrap(wrap_aten(v.to(backend == "cuda" ? at::kCUDA : at::kCPU)));
  ex.begin_forward();
  auto outs = run_fg(s, parse_graph(kAttnGraph, "attn.fg"), in);
  at::Tensor out = unwrap(s.finish(outs).at(0)).to(at::kCPU).contiguous();
  return {out, ex.launches()};
}

TEST(CausalAttention, RunsInACompiledGraphOnTheProjectionsViews) {
  std::map<std::string, at::Tensor> in;
  at::manual_seed(11);
  auto bf16 = at::TensorOptions().dtype(at::kBFloat16);
  in["x"] = at::randn({2, 200, 256}, bf16);
  in["wqkv"] = at::randn({768, 256}, bf16).div(16);
  in["wo"] = at::randn({256, 256}, bf16).div(16);
  std::pair<at::Tensor, std::vector<LaunchRecord>> fast;
  try {
    fast = run_graph(Mode::Compiled, true, in);
  } catch (const std::exception& e) {
    if (backend_name() == "cuda" && std::string(e.what()).find("for Hopper") != std::string::npos)
      GTEST_SKIP() << e.what();
    throw;
  }
  const auto eager = run_graph(Mode::Eager, false, in);
  const LaunchRecord* attn = nullptr;
  for (const auto& l : fast.second)
    if (l.name == "fastpath_causal_attention") attn = &l;
  ASSERT_NE(attn, nullptr) << "the fast path did not run";
  // 4 B H S^2 D / 2: the two causal products
  EXPECT_DOUBLE_EQ(attn->flops, 0.5 * 4.0 * 2 * 2 * 200.0 * 200.0 * 128);
  // the q, k, v views and the head merge stay views: no copy kernel
  EXPECT_EQ(fast.second.size(), 3u);
  const at::Tensor a = fast.first.to(at::kFloat), b = eager.first.to(at::kFloat);
  const double rel = a.sub(b).norm().item<double>() / b.norm().item<double>();
  EXPECT_LT(rel, 1e-2);
  EXPECT_GT(b.norm().item<double>(), 0);
}

}  // namespace
}  // namespace fg
