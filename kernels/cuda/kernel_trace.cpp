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
std::vector<DeviceKernel> delivered_ops;  // guarded by mu: memsets and copies
int users = 0;                        // guarded by mu: open traces (start/stop pairs)
// The first thing that made the records incomplete, sticky until the last
// user stops: a count that lost records must not read as fewer kernels.
std::string broken;  // guarded by mu

constexpr size_t kBufferBytes = 4u << 20;

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : ("CUPTI error " + std::to_string(static_cast<int>(r)));
}

void mark_broken(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu);
  if (broken.empty()) broken = why;
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
  if (!*buffer) mark_broken("no memory for a CUPTI activity buffer: records were dropped");
}

// Called by CUPTI, possibly on its own thread: nothing may escape into its
// C frames.
void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  try {
    std::vector<DeviceKernel> got, ops;
    CUpti_Activity* rec = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
        ops.push_back({"[memset " + std::to_string(m->bytes) + " B]", m->start, m->end, m->streamId, false});
      } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        // device to device only: a copy to or from the host is the harness
        // reading a result, not the forward's work on the device
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        if (m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD)
          ops.push_back({"[memcpy " + std::to_string(m->bytes) + " B]", m->start, m->end, m->streamId, false});
      }
      if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      got.push_back({short_kernel_name(demangle(k->name)), k->start, k->end, k->streamId});
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0)
      mark_broken("CUPTI dropped " + std::to_string(dropped) + " activity records");
    std::lock_guard<std::mutex> lock(mu);
    if (users > 0) {
      delivered.insert(delivered.end(), got.begin(), got.end());
      delivered_ops.insert(delivered_ops.end(), ops.begin(), ops.end());
    }
  } catch (...) {
    mark_broken("reading CUPTI's activity records failed");
  }
  std::free(buffer);
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
  if (users++ > 0) return "";
  static bool registered = false;
  if (!registered) {
    CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
      --users;
      return "cuptiActivityRegisterCallbacks: " + cupti_error(r) +
             " (is another CUPTI client, a profiler such as nsys or ncu, attached to this process?)";
    }
    registered = true;
  }
  CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    --users;
    return "cuptiActivityEnable(CONCURRENT_KERNEL): " + cupti_error(r) +
           " (is another CUPTI client, a profiler such as nsys or ncu, attached to this process?)";
  }
  // memsets and copies: shown by a profile, never counted as kernels (a
  // failure to enable them loses nothing the count needs)
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  delivered.clear();
  delivered_ops.clear();
  broken.clear();
  return "";
}

std::vector<DeviceKernel> device_trace_collect(std::string* why, std::vector<DeviceKernel>* memory_ops) {
  cudaError_t sync = cudaDeviceSynchronize();
  if (sync != cudaSuccess) mark_broken(std::string("cudaDeviceSynchronize: ") + cudaGetErrorString(sync));
  CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (r != CUPTI_SUCCESS) mark_broken("cuptiActivityFlushAll: " + cupti_error(r));
  std::vector<DeviceKernel> out, ops;
  {
    std::lock_guard<std::mutex> lock(mu);
    out.swap(delivered);
    ops.swap(delivered_ops);
  }
  for (const DeviceKernel& k : out)
    if (k.start_ns == 0 || k.end_ns < k.start_ns) mark_broken("CUPTI gave a kernel (" + k.name + ") no timestamps");
  if (memory_ops)  // a memset without timestamps would sort first and stretch a profile's span
    for (const DeviceKernel& k : ops)
      if (k.start_ns == 0 || k.end_ns < k.start_ns) mark_broken("CUPTI gave a " + k.name + " no timestamps");
  if (why) {  // after the checks above: this collect's own findings count too
    std::lock_guard<std::mutex> lock(mu);
    if (!broken.empty()) *why = broken;
  }
  auto by_start = [](const DeviceKernel& a, const DeviceKernel& b) { return a.start_ns < b.start_ns; };
  std::stable_sort(out.begin(), out.end(), by_start);
  if (memory_ops) {
    std::stable_sort(ops.begin(), ops.end(), by_start);
    *memory_ops = std::move(ops);
  }
  return out;
}

void device_trace_stop() {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (users == 0 || --users > 0) return;
  }
  cudaDeviceSynchronize();
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(mu);
  delivered.clear();
  delivered_ops.clear();
  broken.clear();
}

}  // namespace fg
