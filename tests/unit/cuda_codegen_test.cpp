// The CUDA printer's output compiles with NVRTC for sm_90 (no GPU needed),
// and has the structure the launcher relies on.
#include <gtest/gtest.h>

#include "fusion/codegen/cuda_printer.h"
#include "fusion/compile.h"
#include "fusion/ir/text.h"
#include "kernels/cuda/nvrtc.h"

namespace fg {
namespace {

CompiledProgram compile_cuda(const std::string& text, FusionPolicy p = FusionPolicy::Default) {
  CompileOptions o;
  o.backend = "cuda";
  o.fusion = p;
  return compile(parse_graph(text, "case.fg"), o);
}

void expect_compiles(const CompiledProgram& c) {
  NvrtcResult r = nvrtc_compile(c.program.module_source, c.captured.name + ".cu");
  EXPECT_FALSE(r.cubin.empty()) << r.log << "\n" << c.program.module_source;
  for (const auto& k : c.program.kernels)
    if (k.generated()) {
      EXPECT_EQ(k.name.rfind("cuda_", 0), 0u) << k.name;
      EXPECT_NE(k.source.find("__global__"), std::string::npos);
    }
}

const char* kCases[] = {
    R"(graph chain(%x: bf16[64,32], %y: bf16[64,32]) {
  %2 = add(%x, %y) : bf16[64,32]
  %3 = gelu(%2) {approximate = "tanh"} : bf16[64,32]
  %4 = silu(%3) : bf16[64,32]
  return %4
})",
    R"(graph rms(%x: bf16[2,64,2048], %w: bf16[2048]) {
  %2 = rms_norm(%x, %w) {eps = 1e-06} : bf16[2,64,2048]
  return %2
})",
    R"(graph norms(%x: f32[8,100], %w: f32[100], %b: f32[100]) {
  %3 = softmax(%x) {dim = -1} : f32[8,100]
  %4 = layer_norm(%x, %w, %b) {eps = 1e-05} : f32[8,100]
  %5 = add(%3, %4) : f32[8,100]
  return %5
})",
    R"(graph reductions(%x: f32[16,32,12], %h: f16[16,32]) {
  %2 = sum(%x) {dims = [0], keepdim = 0} : f32[32,12]
  %3 = amax(%x) {dims = [1, 2], keepdim = 1} : f32[16,1,1]
  %4 = var(%x) {correction = 1, dims = [2], keepdim = 1} : f32[16,32,1]
  %5 = cast(%h) {to = "f32"} : f32[16,32]
  %6 = exp(%5) : f32[16,32]
  return %2, %3, %4, %6
})",
    R"(graph views(%a: f32[4,3], %b: f32[4,5]) {
  %2 = cat(%a, %b) {dim = 1} : f32[4,8]
  %3 = full() {value = 0.0} : f32[]
  %4 = gt(%2, %3) : bool[4,8]
  %5 = relu(%2) : f32[4,8]
  %6 = where(%4, %5, %2) : f32[4,8]
  %7 = transpose(%6) {dim0 = 0, dim1 = 1} : f32[8,4]
  %8 = neg(%7) : f32[8,4]
  return %8
})",
};

TEST(CudaCodegen, EveryCaseCompilesForSm90) {
  for (const char* text : kCases) expect_compiles(compile_cuda(text));
}

TEST(CudaCodegen, RowReductionIsOneBlockPerRowWithCombinedPartials) {
  CompiledProgram c = compile_cuda(kCases[1]);
  ASSERT_EQ(c.program.kernels.size(), 1u);
  const Kernel& k = c.program.kernels[0];
  EXPECT_EQ(k.name, "cuda_red_fused__to_copy_add_mean_mul_pow_rsqrt_0");  // rnumel 2048 > 1024: looped
  EXPECT_EQ(k.numel, 128);
  EXPECT_EQ(k.rnumel, 2048);
  EXPECT_NE(k.source.find("x += gridDim.x"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("= fg_block_sum("), std::string::npos) << k.source;
  // 2048 elements: 256 threads keep 8 each in registers; the normalising
  // loop reads x from them, not from memory
  EXPECT_EQ(cuda_row_threads(2048), 256);
  EXPECT_NE(k.source.find("float row0[8];"), std::string::npos) << k.source;
  size_t second_loop = k.source.find("#pragma unroll", k.source.find("fg_block_sum"));
  ASSERT_NE(second_loop, std::string::npos) << k.source;
  EXPECT_NE(k.source.find("row0[j]", second_loop), std::string::npos) << k.source;
  EXPECT_EQ(k.source.find("p0[", second_loop), std::string::npos) << "x read twice:\n" << k.source;
  // the row is staged into shared memory with 16-byte loads first
  EXPECT_NE(k.source.find("__shared__ __align__(16) uint16_t srow0[2048];"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("reinterpret_cast<const uint4*>(p0 + (2048*x) + i)"), std::string::npos) << k.source;
  LaunchShape l = cuda_launch_shape(k.numel, k.rnumel, 132);
  EXPECT_EQ(l.threads, 256);
  EXPECT_EQ(l.blocks, 128);
}

TEST(CudaCodegen, MaxAutotuneKeepsGemmsAsLibraryCalls) {
  CompiledProgram c = compile_cuda(R"(graph mlp(%x: bf16[128,256], %w: bf16[512,256]) {
  %2 = linear(%x, %w) : bf16[128,512]
  %3 = relu(%2) : bf16[128,512]
  return %3
})", FusionPolicy::MaxAutotune);
  ASSERT_EQ(c.program.kernels.size(), 2u);
  EXPECT_EQ(c.program.kernels[0].kind, "extern");
  expect_compiles(c);
}

TEST(CudaCodegen, NvrtcReportsErrors) {
  NvrtcResult r = nvrtc_compile("extern \"C\" __global__ void k() { undefined_call(); }", "bad.cu");
  EXPECT_TRUE(r.cubin.empty());
  EXPECT_NE(r.log.find("undefined_call"), std::string::npos) << r.log;
}

}  // namespace
}  // namespace fg
