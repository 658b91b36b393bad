// The GPU's power state around a stretch of work: NVML's energy counter, the
// SM clock, the enforced power limit and why the clock is held down. A GPU
// at its power cap runs a dense forward slower than a cool one (the H100 at
// 700 W: SM clock 1980 -> 1400-1650 MHz, bench/RESULTS.md, tenth step), so a
// timing at the sustained state says at what power it ran, and the energy a
// forward takes is the figure that decides its time there.
//
// NVML is loaded at run time from the driver (libnvidia-ml.so.1), not linked:
// its header is not part of every CUDA toolkit install (Debian's has none),
// while the driver library is present wherever a GPU is. Without it, or where
// the counter is not supported, `why` says so and the figures are absent.
#pragma once
#include <cstdint>
#include <string>

namespace fg {

struct PowerReading {
  std::string why;             // "" when the energy counter read; else what failed
  uint64_t energy_mj = 0;      // since the driver loaded
  double power_limit_w = 0;    // enforced; 0 where it did not read
  unsigned sm_mhz = 0;         // now; 0 where it did not read
  bool reasons_read = false;   // whether clock_reasons holds a reading
  uint64_t clock_reasons = 0;  // NVML's clocks event reasons bitmask
};

// Reads one device's counters: the NVML handle is found once, at
// construction, for the constructing thread's current CUDA device (matched
// by PCI bus id), so that read() serves any thread as often as a poller
// asks (the energy window reads every 2 ms: kernels/cuda/cuda_module.cpp).
class DevicePowerReader {
 public:
  DevicePowerReader();
  PowerReading read() const;

 private:
  std::string why_;         // why the device has no handle ("" when it has)
  void* device_ = nullptr;  // NVML's handle
};

// One reading of the current CUDA device: DevicePowerReader().read().
PowerReading read_device_power();

// "sw_power_cap", "hw_slowdown | sw_thermal", "none": NVML's reason bits by
// name, unknown bits as hex.
std::string clock_reasons_text(uint64_t reasons);

}  // namespace fg
