#include "kernels/cuda/kernel_trace.h"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>

namespace fg {

namespace {

std::mutex mu;
std::vector<DeviceKernel> delivered;  // guarded by mu
bool recording = false;               // guarded by mu

constexpr size_t kBufferBytes = 4u << 20;

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : ("CUPTI error " + std::to_string(static_cast<int>(r)));
}

std::string demangle(const char* name) {
  if (!name) return "?";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<DeviceKernel> got;
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    got.push_back({short_kernel_name(demangle(k->name)), k->start, k->end, k->streamId});
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(mu);
  if (recording) delivered.insert(delivered.end(), got.begin(), got.end());
}

}  // namespace

std::string short_kernel_name(const std::string& d) {
  // Cut at the first '<' or '(' at nesting depth zero, where "(anonymous
  // namespace)" does not count; drop the return type ("void ") that demangled
  // function templates carry.
  std::string s = d;
  int depth = 0;
  size_t cut = s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '<' || c == '(') {
      if (depth == 0 && !(c == '(' && s.compare(i, 11, "(anonymous ") == 0)) {
        cut = i;
        break;
      }
      ++depth;
    } else if (c == '>' || c == ')') {
      --depth;
    }
  }
  s = s.substr(0, cut);
  if (s.rfind("void ", 0) == 0) s = s.substr(5);  // kernels return void
  return s.empty() ? d : s;
}

std::string device_trace_start() {
  std::lock_guard<std::mutex> lock(mu);
  if (recording) return "";
  static bool registered = false;
  if (!registered) {
    CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) return "cuptiActivityRegisterCallbacks: " + cupti_error(r);
    registered = true;
  }
  CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) return "cuptiActivityEnable(CONCURRENT_KERNEL): " + cupti_error(r);
  delivered.clear();
  recording = true;
  return "";
}

std::vector<DeviceKernel> device_trace_collect() {
  cudaDeviceSynchronize();
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::vector<DeviceKernel> out;
  {
    std::lock_guard<std::mutex> lock(mu);
    out.swap(delivered);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const DeviceKernel& a, const DeviceKernel& b) { return a.start_ns < b.start_ns; });
  return out;
}

void device_trace_stop() {
  cudaDeviceSynchronize();
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(mu);
  recording = false;
  delivered.clear();
}

}  // namespace fg
