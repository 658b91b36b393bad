// The power state a timing ran at (kernels/cuda/device_power.h): NVML's
// clock reasons by name, and a reading that says why when it cannot read.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "kernels/cuda/device_power.h"

namespace fg {
namespace {

TEST(ClockReasons, NamesEachBitAndKeepsUnknownBitsAsHex) {
  EXPECT_EQ(clock_reasons_text(0), "none");
  EXPECT_EQ(clock_reasons_text(0x4), "sw_power_cap");
  EXPECT_EQ(clock_reasons_text(0x4 | 0x20), "sw_power_cap | sw_thermal");
  EXPECT_EQ(clock_reasons_text(0x1 | 0x10000), "gpu_idle | 0x10000");
}

// Where no GPU is visible, the reading says why and reports no figures, so
// a record never shows a power of 0 W as if it had been measured.
TEST(DevicePower, WithoutAGpuTheReadingSaysWhyAndHoldsNoFigures) {
  int n = 0;
  if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) GTEST_SKIP() << "a GPU is visible: read on the GPU machine";
  const PowerReading p = read_device_power();
  EXPECT_FALSE(p.why.empty());
  EXPECT_EQ(p.energy_mj, 0u);
  EXPECT_EQ(p.sm_mhz, 0u);
}

}  // namespace
}  // namespace fg
