// Names of the device kernels CUPTI reports, as the records keep them: short
// enough to read and stable across template arguments.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda/kernel_trace.h"

namespace fg {
namespace {

TEST(ShortKernelName, DropsReturnTypeTemplateArgumentsAndParameters) {
  EXPECT_EQ(short_kernel_name("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>, "
                              "false, true>(Flash_fwd_params)"),
            "pytorch_flash::flash_fwd_kernel");
  EXPECT_EQ(short_kernel_name("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
}

TEST(ShortKernelName, KeepsAnonymousNamespaces) {
  EXPECT_EQ(short_kernel_name("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*, int)"),
            "at::native::(anonymous namespace)::cunn_SoftMaxForward");
}

TEST(ShortKernelName, PlainCNamesStay) {
  EXPECT_EQ(short_kernel_name("cuda_per_fused__to_copy_add_mean_0"), "cuda_per_fused__to_copy_add_mean_0");
  EXPECT_EQ(short_kernel_name("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN"), "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN");
}

// Memsets and copies are device work a profile must show (a library's
// 4-byte counter reset before its GEMM is a graph node with a cost), and
// never kernels: the count of device kernels must not move with them. Runs
// where a GPU is present (the device machine runs this binary).
TEST(DeviceTrace, MemsetsAndCopiesAreRecordedApartFromKernels) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no GPU here";
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 4096), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 4096), cudaSuccess);
  ASSERT_EQ(device_trace_start(), "");
  device_trace_collect();  // what ran before is not this test's
  ASSERT_EQ(cudaMemsetAsync(a, 0, 4, nullptr), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(b, a, 4096, cudaMemcpyDeviceToDevice, nullptr), cudaSuccess);
  std::string why;
  std::vector<DeviceKernel> ops;
  const std::vector<DeviceKernel> kernels = device_trace_collect(&why, &ops);
  device_trace_stop();
  cudaFree(a);
  cudaFree(b);
  EXPECT_EQ(why, "");
  EXPECT_TRUE(kernels.empty()) << kernels.size() << " kernels, the first " << kernels.front().name;
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].name, "[memset 4 B]");
  EXPECT_EQ(ops[1].name, "[memcpy 4096 B]");
  for (const DeviceKernel& o : ops) {
    EXPECT_FALSE(o.kernel);
    EXPECT_GT(o.start_ns, 0u);
    EXPECT_GE(o.end_ns, o.start_ns);
  }
  EXPECT_LE(ops[0].start_ns, ops[1].start_ns);
}

}  // namespace
}  // namespace fg
