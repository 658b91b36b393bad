// Names of the device kernels CUPTI reports, as the records keep them: short
// enough to read and stable across template arguments.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace fg
