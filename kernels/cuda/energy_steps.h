// The power over a window from NVML's energy counter as a poller saw it.
//
// The driver updates the counter in steps, not continuously: on the H100
// (driver 580, 2026-11-26) every 97.8-102 ms, idle and under load alike
// (bench/RESULTS.md, twelfth step). Read once at each end of a window, a
// window of about 1 s is off by up to a step at each end: readings of 715-749
// W came out under a 700 W cap. So a thread polls the counter every few ms
// while the window runs, and the power is the energy between the first and
// the last step seen inside the window over the time between them: whole
// update periods, each edge known to within one poll.
//
// No CUDA here: the arithmetic is tested on any machine
// (tests/unit/harness_energy_steps_test.cpp); kernels/cuda/cuda_module.cpp
// polls.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fg {

struct EnergySample {
  double ms = 0;     // host time since the window opened
  uint64_t mj = 0;   // the counter then
};

struct EnergySteps {
  std::string why;     // "" when the figures hold
  double watts = 0;    // energy between the first and last step over the time between them
  double over_ms = 0;  // that time
  int periods = 0;     // the counter's update periods it spans
};

// `samples` in time order; only those inside (0, window_ms] count, the first
// sample at or before the window's start being the counter's value there.
inline EnergySteps energy_from_steps(const std::vector<EnergySample>& samples, double window_ms) {
  EnergySteps r;
  std::vector<EnergySample> steps;  // the first sample that saw each new value
  for (size_t i = 1; i < samples.size(); ++i) {
    if (samples[i].mj < samples[i - 1].mj) {
      r.why = "NVML's energy counter went back during the window";
      return r;
    }
    if (samples[i].mj != samples[i - 1].mj && samples[i].ms > 0 && samples[i].ms <= window_ms)
      steps.push_back(samples[i]);
  }
  if (steps.size() < 2) {
    r.why = "NVML's energy counter stepped " + std::to_string(steps.size()) + " time(s) in the window of " +
            std::to_string(static_cast<long long>(window_ms)) +
            " ms (it steps about every 100 ms; two steps are needed): a longer --warmup-ms";
    return r;
  }
  r.over_ms = steps.back().ms - steps.front().ms;
  r.periods = static_cast<int>(steps.size()) - 1;
  if (r.over_ms <= 0) {
    r.why = "NVML's energy counter stepped twice at one instant";
    return r;
  }
  r.watts = static_cast<double>(steps.back().mj - steps.front().mj) / r.over_ms;  // mJ over ms
  return r;
}

}  // namespace fg
