// The per-kernel profile over several traced steps (harness/run/profile.h):
// the trace split into steps, each row its kernel's median with the spread
// between steps, so that a kernel that slows down in some steps is seen.
#include <gtest/gtest.h>

#include "harness/run/profile.h"

namespace fg {
namespace {

DeviceKernel op(const std::string& name, uint64_t start_us, uint64_t end_us, bool kernel = true) {
  DeviceKernel k;
  k.name = name;
  k.start_ns = start_us * 1000;
  k.end_ns = end_us * 1000;
  k.kernel = kernel;
  return k;
}

// One step at `t0` (us): a memset before the GEMM, the GEMM, a norm after a
// 2 us gap; the GEMM takes `gemm_us`.
std::vector<DeviceKernel> step_at(uint64_t t0, uint64_t gemm_us) {
  return {op("[memset 4 B]", t0, t0 + 1, false), op("gemm", t0 + 1, t0 + 1 + gemm_us),
          op("norm", t0 + 3 + gemm_us, t0 + 7 + gemm_us)};
}

std::vector<DeviceKernel> trace_of(const std::vector<uint64_t>& gemm_us) {
  std::vector<DeviceKernel> all;
  uint64_t t = 0;
  for (uint64_t g : gemm_us) {
    auto s = step_at(t, g);
    all.insert(all.end(), s.begin(), s.end());
    t = s.back().end_ns / 1000 + 10;
  }
  return all;
}

TEST(ProfileSteps, TheTraceSplitsIntoStepsWithEachMemsetBeforeItsKernel) {
  std::string why;
  const auto steps = split_steps(trace_of({10, 30, 12}), 3, &why);
  EXPECT_EQ(why, "");
  ASSERT_EQ(steps.size(), 3u);
  for (const auto& s : steps) {
    ASSERT_EQ(s.size(), 3u);
    EXPECT_FALSE(s[0].kernel);  // the memset opens its step, not the step before
    EXPECT_EQ(s[1].name, "gemm");
  }
  EXPECT_EQ(steps[1][1].end_ns - steps[1][1].start_ns, 30000u);
}

// Steps run under the trace only to bring the device back to the timed
// steps' state are checked with the rest but not read: the last ones come back.
TEST(ProfileSteps, OnlyTheLastStepsAreKeptWhenAskedAndTheEarlierAreStillChecked) {
  std::string why;
  auto steps = split_steps(trace_of({10, 30, 12, 11, 50}), 5, &why, 2);
  EXPECT_EQ(why, "");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0][1].end_ns - steps[0][1].start_ns, 11000u);  // the fourth step's GEMM
  EXPECT_EQ(steps[1][1].end_ns - steps[1][1].start_ns, 50000u);
  EXPECT_FALSE(steps[0][0].kernel);  // each kept step still opens with its memset
  // an early step that ran other work is not hidden by being dropped
  auto trace = trace_of({10, 10, 10});
  trace[2].name = "other_norm";
  steps = split_steps(trace, 3, &why, 1);
  EXPECT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].size(), trace.size());
  EXPECT_NE(why.find("ran other device work"), std::string::npos) << why;
}

// The steps to read are cut from the end by their kernel count, each with
// the memset before its first kernel; the steps before them are not checked.
TEST(ProfileSteps, TheStepsToReadAreTheLastKernelsWithTheirMemsets) {
  auto trace = trace_of({10, 30, 12, 11, 50});
  trace[2].name = "other_norm";  // an odd step among those run only to warm the device
  std::string why;
  const auto tail = last_kernels_of(trace, 4, &why);  // two steps of two kernels
  EXPECT_EQ(why, "");
  ASSERT_EQ(tail.size(), 6u);
  EXPECT_FALSE(tail[0].kernel);  // the fourth step's memset opens the tail
  const auto steps = split_steps(tail, 2, &why);
  EXPECT_EQ(why, "");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0][1].end_ns - steps[0][1].start_ns, 11000u);
  EXPECT_EQ(steps[1][1].end_ns - steps[1][1].start_ns, 50000u);
  // more kernels asked than ran: said, and the whole trace comes back
  EXPECT_EQ(last_kernels_of(trace, 11, &why).size(), trace.size());
  EXPECT_NE(why.find("fewer than the 11"), std::string::npos) << why;
}

TEST(ProfileSteps, StepsThatRanOtherWorkAreShownAsOneSpanAndSaidSo) {
  std::string why;
  auto trace = trace_of({10, 10});
  trace.back().name = "other_norm";
  auto steps = split_steps(trace, 2, &why);
  EXPECT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].size(), trace.size());
  EXPECT_NE(why.find("traced step 2 of 2 ran other device work"), std::string::npos) << why;

  why.clear();
  steps = split_steps(trace_of({10, 10, 10}), 2, &why);  // three steps read as two: halves that differ
  EXPECT_EQ(steps.size(), 1u);
  EXPECT_NE(why, "");
  why.clear();
  trace = trace_of({10, 10});
  trace.pop_back();  // 3 kernels over 2 steps
  steps = split_steps(trace, 2, &why);
  EXPECT_NE(why.find("3 device kernels, not the same number each"), std::string::npos) << why;
}

TEST(ProfileSteps, EachRowIsItsKernelsMedianWithTheSpreadBesideIt) {
  std::string why;
  const auto steps = split_steps(trace_of({10, 30, 12, 11, 50}), 5, &why);
  ASSERT_EQ(why, "");
  std::vector<ProfileLaunch> launches = {{"extern_mm", "extern", 1e6, 2e9, {"gemm"}},
                                         {"cuda_red_norm_0", "red", 4e6, 0, {"norm"}}};
  const nlohmann::json p = profile_json(launches, steps, "CUDA graph replay", "GPU", 3000.0, 800.0);
  EXPECT_EQ(p["steps"], 5);
  ASSERT_EQ(p["kernels"].size(), 3u);
  const auto& gemm = p["kernels"][1];
  EXPECT_EQ(gemm["launch"], "extern_mm");
  EXPECT_DOUBLE_EQ(gemm["ms"].get<double>(), 0.012);  // 10 11 12 30 50: the median, not the first step's 10
  EXPECT_DOUBLE_EQ(gemm["ms_min"].get<double>(), 0.010);
  EXPECT_DOUBLE_EQ(gemm["ms_max"].get<double>(), 0.050);
  EXPECT_NEAR(gemm["tflops"].get<double>(), 2e9 / 0.012e-3 / 1e12, 1e-9);  // the rate of the median time
  EXPECT_EQ(p["kernels"][0]["kind"], "memory");
  EXPECT_DOUBLE_EQ(p["kernels"][2]["gap_ms"].get<double>(), 0.002);
  // spans: 1 + g + 2 + 4 for g = 10 11 12 30 50
  EXPECT_DOUBLE_EQ(p["span_ms"].get<double>(), 0.019);
  EXPECT_DOUBLE_EQ(p["span_ms_min"].get<double>(), 0.017);
  EXPECT_DOUBLE_EQ(p["span_ms_max"].get<double>(), 0.057);
  EXPECT_NEAR(p["idle_ms"].get<double>(), 0.002, 1e-12);
  EXPECT_FALSE(p.contains("note"));
  // 10 us from each step's last op to the next step's first, outside the spans
  EXPECT_DOUBLE_EQ(p["between_steps_ms"].get<double>(), 0.010);
  EXPECT_DOUBLE_EQ(p["between_steps_ms_max"].get<double>(), 0.010);
}

// The device's time between steps is each step's last end to the next
// step's first start, the median of them with the spread beside it.
TEST(ProfileSteps, TheTimeBetweenStepsIsMeasuredFromTheLastEndToTheNextStart) {
  std::vector<DeviceKernel> trace;
  uint64_t t = 0;
  for (uint64_t pause : {3, 25, 4, 0}) {  // the pause after each step, us
    // the step's second kernel ends before its first: the step reaches the first's end
    trace.push_back(op("gemm", t, t + 20));
    trace.push_back(op("norm", t + 1, t + 5));
    t += 20 + pause;
  }
  std::string why;
  const auto steps = split_steps(trace, 4, &why);
  ASSERT_EQ(why, "");
  const nlohmann::json p = profile_json({}, steps, "CUDA graph replay", "GPU", 3000.0, 800.0);
  EXPECT_DOUBLE_EQ(p["between_steps_ms"].get<double>(), 0.004);  // 3 25 4: the median
  EXPECT_DOUBLE_EQ(p["between_steps_ms_min"].get<double>(), 0.003);
  EXPECT_DOUBLE_EQ(p["between_steps_ms_max"].get<double>(), 0.025);
  // one step: nothing between steps to read
  EXPECT_FALSE(profile_json({}, {steps[0]}, "", "GPU", 3000.0, 800.0).contains("between_steps_ms"));
}

// Steps that could not be split are one span of every traced forward: the
// forward's TFLOP/s counts all of their FLOPs, not one forward's.
TEST(ProfileSteps, AnUnsplitTraceRatesEveryForwardInItsSpan) {
  std::string why;
  auto trace = trace_of({10, 10});
  trace.back().name = "other_norm";
  const auto steps = split_steps(trace, 2, &why);
  ASSERT_EQ(steps.size(), 1u);
  std::vector<ProfileLaunch> launches = {{"extern_mm", "extern", 1e6, 2e9, {"gemm"}},
                                         {"cuda_red_norm_0", "red", 4e6, 0, {"norm"}}};
  const nlohmann::json one = profile_json(launches, steps, "CUDA graph replay", "GPU", 3000.0, 800.0);
  const nlohmann::json two = profile_json(launches, steps, "CUDA graph replay", "GPU", 3000.0, 800.0, 2);
  EXPECT_EQ(two["forwards_per_step"], 2);
  EXPECT_FALSE(one.contains("forwards_per_step"));
  EXPECT_NEAR(two["forward_tflops"].get<double>(), 2 * one["forward_tflops"].get<double>(), 1e-9);
  // the span runs from the first step's first op to the second's last: 17 + 10 + 17 us
  EXPECT_DOUBLE_EQ(two["span_ms"].get<double>(), 0.044);
}

TEST(ProfileSteps, KernelsThatDisagreeWithTheLaunchesAreNamedInTheNote) {
  const auto steps = split_steps(trace_of({10}), 1, nullptr);
  std::vector<ProfileLaunch> launches = {{"extern_mm", "extern", 1e6, 2e9, {"gemm", "splitk_reduce"}}};
  const nlohmann::json p = profile_json(launches, steps, "host launches", "GPU", 3000.0, 800.0);
  EXPECT_EQ(p["steps"], 1);
  ASSERT_TRUE(p.contains("note"));
  EXPECT_NE(p["note"].get<std::string>().find("they agree on the first 1 (then norm)"), std::string::npos)
      << p["note"];
  EXPECT_FALSE(p["kernels"][2].contains("launch"));
}

}  // namespace
}  // namespace fg
