// The per-kernel profile (`fusegate run --backend cuda --profile FILE`):
// the device work of several steps run back to back as the timed ones were
// (CUDA-graph replays, or host launches), split into steps and read slot by
// slot, so that each row says what its kernel takes in the median step and
// how far it moves between steps. One traced step showed a typical kernel
// time and hid the spread: on the H100 the same forward's median moved by
// up to 10% between processes while its fastest held, and a profile of one
// step could not say which kernel moved.
//
// Plain JSON and the trace's records: no LibTorch, no CUDA (unit-tested
// without a GPU); the worker measures the peaks and traces the steps.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "kernels/cuda/kernel_trace.h"

namespace fg {

// What the counted forward launched, as the profile matches it: a launch's
// device kernels in order, and the least it must move and compute (0 where
// not estimated).
struct ProfileLaunch {
  std::string name, kind;
  double bytes = 0, flops = 0;
  std::vector<std::string> device_kernels;
};

// Splits the trace of `steps` back-to-back steps (kernels and memory ops in
// start order) into steps: each holds the same number of kernels, and a
// memset or copy belongs to the step of the kernel after it (a library's
// counter reset precedes its GEMM), or to the last step when none follows.
// Every step must run the same device work in the same order as the first;
// when the kernels do not divide evenly or a step differs, `why` says so and
// the whole trace comes back as one step. `keep_last` (> 0): only the last
// that many steps come back (the steps before them were run under the
// trace to bring the device back to the state the timed steps met, and are
// checked but not read).
std::vector<std::vector<DeviceKernel>> split_steps(const std::vector<DeviceKernel>& ran, int steps, std::string* why,
                                                   int keep_last = 0);

// The ops of the last `kernels` kernels of the trace, each memset or copy
// before the first of them (after the kernel before it) included: the
// steps to read, cut from the steps run before them under the trace only
// to bring the device back to the timed steps' state (those are neither
// read nor checked). Fewer kernels than asked: `why` says so and the whole
// trace comes back.
std::vector<DeviceKernel> last_kernels_of(const std::vector<DeviceKernel>& ran, size_t kernels, std::string* why);

// The profile of the steps (each in start order, every step the same work):
// a row per kernel or memory op of a step, its `ms` the median over the
// steps with `ms_min` and `ms_max`, `gap_ms` the median idle time before it
// within its step; `span_ms`, `busy_ms` and `idle_ms` the medians of the
// steps' own, with `span_ms_min` and `span_ms_max`. Kernels are matched in
// order with the launches while their names agree (`note` says where they
// stop agreeing); a launch's rates use the sum of its kernels' median times
// against the measured ceilings. `forwards_per_step` is how many forwards a
// step holds: 1, or the traced count where split_steps could not split them
// (then the forward's TFLOP/s is their FLOPs over the one span).
nlohmann::json profile_json(const std::vector<ProfileLaunch>& launches,
                            const std::vector<std::vector<DeviceKernel>>& steps, const std::string& how,
                            const std::string& device, double copy_gbps, double gemm_tflops,
                            int forwards_per_step = 1);

}  // namespace fg
