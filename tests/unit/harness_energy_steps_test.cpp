// The power from NVML's stepping energy counter (kernels/cuda/energy_steps.h:
// no CUDA in it, so it is tested here with the harness's tests).
#include "kernels/cuda/energy_steps.h"

#include <gtest/gtest.h>

using namespace fg;

namespace {
// A counter that steps every `period` ms by `watts` x period, first at
// `phase`, polled every `poll` ms from 0 to `until`.
std::vector<EnergySample> polled(double watts, double period, double phase, double poll, double until,
                                 uint64_t start = 1000000) {
  std::vector<EnergySample> s;
  for (double t = 0; t <= until; t += poll) {
    const long long k = t < phase ? 0 : static_cast<long long>((t - phase) / period) + 1;
    s.push_back({t, start + static_cast<uint64_t>(k * watts * period)});
  }
  return s;
}
}  // namespace

TEST(EnergySteps, WholeUpdatePeriodsGiveThePower) {
  // 680 W stepping every 100 ms from 37 ms on, polled every 2 ms over 1050 ms:
  // read at the window's two ends it would be off by whatever the partial
  // periods at the edges hold; between steps it is exact to the poll
  const EnergySteps r = energy_from_steps(polled(680, 100, 37, 2, 1050), 1050);
  ASSERT_EQ(r.why, "");
  EXPECT_EQ(r.periods, 10);  // steps at 37, 137, ..., 1037, each seen at the next poll
  EXPECT_NEAR(r.over_ms, 1000, 2);
  EXPECT_NEAR(r.watts, 680, 680 * 0.005);
}

TEST(EnergySteps, FewerThanTwoStepsSayWhy) {
  const EnergySteps r = energy_from_steps(polled(680, 100, 60, 2, 120), 120);
  EXPECT_EQ(r.watts, 0);
  EXPECT_NE(r.why.find("stepped 1 time(s) in the window of 120 ms"), std::string::npos) << r.why;
  EXPECT_NE(r.why.find("--warmup-ms"), std::string::npos);
  EXPECT_NE(energy_from_steps({}, 1000).why, "");
}

TEST(EnergySteps, StepsOutsideTheWindowAndACounterThatGoesBack) {
  // samples past the window's end are not the window's
  std::vector<EnergySample> s = {{0, 100}, {50, 100}, {100, 170}, {200, 240}, {300, 310}, {400, 1000}};
  const EnergySteps r = energy_from_steps(s, 350);
  ASSERT_EQ(r.why, "");
  EXPECT_EQ(r.periods, 2);              // steps at 100, 200, 300
  EXPECT_DOUBLE_EQ(r.over_ms, 200);
  EXPECT_DOUBLE_EQ(r.watts, 140.0 / 200);  // (310 - 170) mJ over 200 ms
  s[3].mj = 50;
  EXPECT_NE(energy_from_steps(s, 350).why.find("went back"), std::string::npos);
}
