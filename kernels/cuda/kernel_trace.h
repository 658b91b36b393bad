// The device kernels that really run, seen by CUPTI's activity API: every
// kernel the GPU executes in this process (generated, cuBLASLt, ATen, NCCL,
// graph replays included), with its name and device timestamps. fusegate's
// own launch count sees one launch per extern call, whatever the library
// launches underneath; this is the count that can tell. Memsets and copies
// are not kernels and are never counted as kernels: they are recorded apart
// (a library's 4-byte counter reset before its GEMM is a graph node that
// costs the forward time, and a profile must be able to show it). Needs
// only the CUDA toolkit (no LibTorch), so CI builds it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fg {

struct DeviceKernel {
  std::string name;  // demangled, without template arguments or parameters
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t stream = 0;
  bool kernel = true;  // false: a memset or a copy ("[memset 4 B]")
};

// Starts recording kernel activity; returns "" or why it cannot. Starts
// nest: recording goes on until as many stops have come.
std::string device_trace_start();
// Waits for the device, flushes CUPTI's buffers and returns the kernels that
// finished since the last call, in start order. `why` (may be null) gets
// what made the records incomplete since the trace started (a dropped
// record, a failed flush or sync, a kernel without timestamps), or stays
// untouched when they are whole: a count from incomplete records is no count.
// `memory_ops` (may be null: dropped) gets the memsets and copies of the
// same span, kernel = false, in start order; they are never in the result.
std::vector<DeviceKernel> device_trace_collect(std::string* why = nullptr,
                                               std::vector<DeviceKernel>* memory_ops = nullptr);
// Ends one start (what is still buffered is dropped at the last).
void device_trace_stop();

// "void ns::kern<T, 4>(float*, int)" -> "ns::kern"; a C name stays as it is.
std::string short_kernel_name(const std::string& demangled);

}  // namespace fg
