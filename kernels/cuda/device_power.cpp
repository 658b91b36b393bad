#include "kernels/cuda/device_power.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <mutex>
#include <vector>

namespace fg {

namespace {

// The few NVML entry points used, declared as the driver library exports
// them (C ABI; the handle is opaque; 0 is NVML_SUCCESS).
using NvmlDevice = void*;
struct Nvml {
  std::string why;
  int (*init)() = nullptr;
  int (*by_bus)(const char*, NvmlDevice*) = nullptr;
  int (*energy)(NvmlDevice, unsigned long long*) = nullptr;
  int (*limit)(NvmlDevice, unsigned*) = nullptr;
  int (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  int (*reasons)(NvmlDevice, unsigned long long*) = nullptr;
  const char* (*error)(int) = nullptr;
};

const Nvml& nvml() {
  static Nvml n;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      n.why = "libnvidia-ml.so.1 (NVML, from the GPU driver) could not be loaded";
      return;
    }
    auto sym = [&](const char* name) { return dlsym(lib, name); };
    n.init = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
    n.by_bus = reinterpret_cast<int (*)(const char*, NvmlDevice*)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
    n.energy = reinterpret_cast<int (*)(NvmlDevice, unsigned long long*)>(sym("nvmlDeviceGetTotalEnergyConsumption"));
    n.limit = reinterpret_cast<int (*)(NvmlDevice, unsigned*)>(sym("nvmlDeviceGetEnforcedPowerLimit"));
    n.clock = reinterpret_cast<int (*)(NvmlDevice, int, unsigned*)>(sym("nvmlDeviceGetClockInfo"));
    n.reasons = reinterpret_cast<int (*)(NvmlDevice, unsigned long long*)>(sym("nvmlDeviceGetCurrentClocksEventReasons"));
    if (!n.reasons)  // the older name of the same call
      n.reasons = reinterpret_cast<int (*)(NvmlDevice, unsigned long long*)>(sym("nvmlDeviceGetCurrentClocksThrottleReasons"));
    n.error = reinterpret_cast<const char* (*)(int)>(sym("nvmlErrorString"));
    if (!n.init || !n.by_bus || !n.energy || !n.limit || !n.clock || !n.reasons) {
      n.why = "libnvidia-ml.so.1 lacks the calls used (an older driver)";
      return;
    }
    const int r = n.init();
    if (r != 0) n.why = std::string("nvmlInit: ") + (n.error ? n.error(r) : std::to_string(r));
  });
  return n;
}

std::string nvml_error(const Nvml& n, const char* call, int r) {
  return std::string(call) + ": " + (n.error ? n.error(r) : std::to_string(r));
}

}  // namespace

DevicePowerReader::DevicePowerReader() {
  const Nvml& n = nvml();
  if (!n.why.empty()) {
    why_ = n.why;
    return;
  }
  int dev = 0;
  char bus[32] = {0};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetPCIBusId(bus, sizeof bus, dev) != cudaSuccess) {
    why_ = "the current CUDA device's PCI bus id could not be read";
    return;
  }
  if (int r = n.by_bus(bus, &device_); r != 0) {
    why_ = nvml_error(n, "nvmlDeviceGetHandleByPciBusId", r) + " (" + bus + ")";
    device_ = nullptr;
  }
}

PowerReading DevicePowerReader::read() const {
  PowerReading p;
  if (!why_.empty()) {
    p.why = why_;
    return p;
  }
  const Nvml& n = nvml();
  unsigned long long mj = 0, reasons = 0;
  unsigned mw = 0, mhz = 0;
  if (int r = n.energy(device_, &mj); r != 0) {
    p.why = nvml_error(n, "nvmlDeviceGetTotalEnergyConsumption", r);
    return p;
  }
  // the limit, the clock and its reasons are figures apart: one a device
  // does not support stays unread (0, reasons_read false)
  constexpr int kClockSm = 1;  // NVML_CLOCK_SM
  p.energy_mj = mj;
  if (n.limit(device_, &mw) == 0) p.power_limit_w = mw / 1000.0;
  if (n.clock(device_, kClockSm, &mhz) == 0) p.sm_mhz = mhz;
  if (n.reasons(device_, &reasons) == 0) {
    p.reasons_read = true;
    p.clock_reasons = reasons;
  }
  return p;
}

PowerReading read_device_power() { return DevicePowerReader().read(); }

std::string clock_reasons_text(uint64_t reasons) {
  static const std::vector<std::pair<uint64_t, const char*>> names = {
      {0x1, "gpu_idle"},         {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},      {0x10, "sync_boost"},         {0x20, "sw_thermal"},
      {0x40, "hw_thermal"},      {0x80, "hw_power_brake"},     {0x100, "display_clocks"}};
  std::string s;
  uint64_t left = reasons;
  for (const auto& [bit, name] : names)
    if (reasons & bit) {
      s += (s.empty() ? "" : " | ") + std::string(name);
      left &= ~bit;
    }
  if (left) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(left));
    s += (s.empty() ? "" : " | ") + std::string(hex);
  }
  return s.empty() ? "none" : s;
}

}  // namespace fg
