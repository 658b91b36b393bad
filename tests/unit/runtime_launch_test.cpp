// What really runs: a compiled graph launches fewer kernels than eager,
// every launch is probed (device kernels on cuda, ATen ops on cpu), the
// fused attention runs where LibTorch has one, and capture recompiles on a
// new shape and breaks the graph where it must.
#include <gtest/gtest.h>

#include <torch/version.h>
#include <ATen/ops/ones.h>

#include "tests/unit/codegen_fixtures.h"

namespace fg {
namespace {
using namespace testing_codegen;

TEST(Codegen, CompiledLaunchesFewerKernelsThanEager) {
  std::string text = R"(
graph g(%x: f32[64,32], %y: f32[64,32]) {
  %2 = add(%x, %y) : f32[64,32]
  %3 = relu(%2) : f32[64,32]
  %4 = full() {value = 0.5} : f32[]
  %5 = mul(%3, %4) : f32[64,32]
  return %5
}
)";
  auto in = random_inputs(text);
  Result a = run(text, Mode::Eager, in);
  Result c = run(text, Mode::Compiled, in);
  EXPECT_EQ(c.launches.size(), 1u);
  EXPECT_GE(a.launches.size(), 3u);
}

// -- what really runs -----------------------------------------------------------

// The probe of the backend: device kernels on cuda, ATen operators on cpu.
std::unique_ptr<LaunchProbe> backend_probe() {
  if (test_backend() != "cuda") return make_aten_op_probe();
  std::string why;
  auto p = make_device_kernel_probe(&why);
  EXPECT_TRUE(p) << "cannot count device kernels: " << why;
  return p;
}

const LaunchRecord* find_launch(const Result& r, const std::string& part) {
  for (const auto& l : r.launches)
    if (l.name.find(part) != std::string::npos) return &l;
  return nullptr;
}

// Attention as the TP blocks write it: q, k and v are head-split views of
// one projection, and the heads are merged again after it.
const char* kAttention = R"(
graph g(%qkv: bf16[2,128,768]) {
  %1 = slice(%qkv) {dim = 2, end = 256, start = 0, step = 1} : bf16[2,128,256]
  %2 = reshape(%1) {shape = [2, 128, 4, 64]} : bf16[2,128,4,64]
  %3 = transpose(%2) {dim0 = 1, dim1 = 2} : bf16[2,4,128,64]
  %4 = slice(%qkv) {dim = 2, end = 512, start = 256, step = 1} : bf16[2,128,256]
  %5 = reshape(%4) {shape = [2, 128, 4, 64]} : bf16[2,128,4,64]
  %6 = transpose(%5) {dim0 = 1, dim1 = 2} : bf16[2,4,128,64]
  %7 = slice(%qkv) {dim = 2, end = 768, start = 512, step = 1} : bf16[2,128,256]
  %8 = reshape(%7) {shape = [2, 128, 4, 64]} : bf16[2,128,4,64]
  %9 = transpose(%8) {dim0 = 1, dim1 = 2} : bf16[2,4,128,64]
  %10 = sdpa(%3, %6, %9) {causal = 1} : bf16[2,4,128,64]
  %11 = transpose(%10) {dim0 = 1, dim1 = 2} : bf16[2,128,4,64]
  %12 = reshape(%11) {shape = [2, 128, 256]} : bf16[2,128,256]
  return %12
}
)";

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// LibTorch 2 has fused attention and the extern must run it: on cuda one
// device kernel (flash or cuDNN), on cpu the fused operator. LibTorch 1.x
// has none and runs the composite. This file includes <torch/version.h>
// itself, so a runtime that lost the version macros disagrees with it here.
TEST(RealWork, AttentionRunsTheFusedKernelWhereLibTorchHasOne) {
  auto probe = backend_probe();
  ASSERT_TRUE(probe);
  Result c = run(kAttention, Mode::Compiled, random_inputs(kAttention), FusionPolicy::Default, 0, probe.get());
  const LaunchRecord* a = find_launch(c, "scaled_dot_product_attention");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->probed);
  if (test_backend() == "cuda") {
    ASSERT_EQ(a->device_kernels.size(), 1u) << "attention ran " << joined(a->device_kernels);
    const std::string& k = a->device_kernels[0];
    EXPECT_TRUE(k.find("flash") != std::string::npos || k.find("fmha") != std::string::npos ||
                k.find("cudnn") != std::string::npos || k.find("attention") != std::string::npos)
        << "not a fused attention kernel: " << k;
    return;
  }
#if TORCH_VERSION_MAJOR >= 2
  EXPECT_STREQ(attention_kernel(), "fused");
  EXPECT_TRUE(a->aten_ops.count("aten::scaled_dot_product_attention"));
  EXPECT_FALSE(a->aten_ops.count("aten::softmax")) << "the composite ran";
#else
  EXPECT_STREQ(attention_kernel(), "composite");
  EXPECT_TRUE(a->aten_ops.count("aten::softmax"));
  EXPECT_TRUE(a->aten_ops.count("aten::triu"));
#endif
}

// Every launch of a compiled graph gets what it ran: a generated kernel is
// one device kernel of its own name; a GEMM extern dispatches a matrix
// product on cpu.
TEST(RealWork, EveryLaunchIsProbed) {
  const char* text = R"(
graph g(%x: f32[32,64], %w: f32[48,64]) {
  %2 = linear(%x, %w) : f32[32,48]
  %3 = relu(%2) : f32[32,48]
  return %3
}
)";
  auto probe = backend_probe();
  ASSERT_TRUE(probe);
  Result c = run(text, Mode::Compiled, random_inputs(text), FusionPolicy::Default, 0, probe.get());
  ASSERT_EQ(c.launches.size(), 2u);
  for (const auto& l : c.launches) EXPECT_TRUE(l.probed) << l.name;
  const LaunchRecord* gemm = find_launch(c, "extern");
  const LaunchRecord* relu = find_launch(c, "relu");
  ASSERT_TRUE(gemm && relu);
  EXPECT_GT(gemm->flops, 0);
  EXPECT_DOUBLE_EQ(relu->bytes, 2.0 * 32 * 48 * 4);
  if (test_backend() == "cuda") {
    EXPECT_GE(gemm->device_kernels.size(), 1u);
    ASSERT_EQ(relu->device_kernels.size(), 1u);
    EXPECT_EQ(relu->device_kernels[0], relu->name);
  } else {
    EXPECT_TRUE(gemm->aten_ops.count("aten::mm") || gemm->aten_ops.count("aten::addmm")) << "no matrix product";
    EXPECT_TRUE(relu->aten_ops.empty() || relu->aten_ops.size() == 1);  // only its output's allocation
  }
}

TEST(Capture, ShapeChangeRecompiles) {
  AtenExecutor ex(nullptr, 0, 1, FusionPolicy::Default);
  for (int64_t n : {8, 8, 16}) {
    Session s(Mode::Compiled, &ex);
    Tensor x = s.wrap(wrap_aten(at::randn({n, 4})));
    s.finish({relu(x) * 2.0});
  }
  EXPECT_EQ(ex.recompile_count(), 1);
}

TEST(Capture, ItemAndDisabledRegionBreakTheGraph) {
  AtenExecutor ex(nullptr, 0, 1, FusionPolicy::Default);
  Session s(Mode::Compiled, &ex);
  Tensor x = s.wrap(wrap_aten(at::ones({4})));
  Tensor y = exp(x);
  double v = s.item(sum(y, {}));
  Tensor z;
  s.disabled("helper", [&] { z = y * v; });
  auto outs = s.finish({z + 1.0});
  EXPECT_EQ(s.breaks().size(), 2u);
  EXPECT_EQ(s.graph_count(), 2);  // before item(); after the region (the region itself runs eagerly)
  EXPECT_NE(s.breaks()[0].reason.find("item()"), std::string::npos);
  EXPECT_NE(s.breaks()[0].loc.file.find("runtime_launch_test.cpp"), std::string::npos);
  EXPECT_NE(s.breaks()[1].reason.find("disabled function helper"), std::string::npos);
  double expect = std::exp(1.0) * 4 * std::exp(1.0) + 1.0;
  EXPECT_NEAR(unwrap(outs[0])[0].item<double>(), expect, 1e-4);
}

}  // namespace
}  // namespace fg
