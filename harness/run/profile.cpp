#include "harness/run/profile.h"

#include <algorithm>
#include <map>

#include "harness/run/rounds.h"

namespace fg {

namespace {

double ms_between(uint64_t from_ns, uint64_t to_ns) {
  return to_ns > from_ns ? static_cast<double>(to_ns - from_ns) * 1e-6 : 0.0;
}

// One step's timeline: the idle time before each op (0 before the first: a
// step's span runs from its first start to its last end), its span and the
// time some op was running.
struct StepTimes {
  std::vector<double> gap_ms;
  double span_ms = 0, busy_ms = 0;
};

StepTimes step_times(const std::vector<DeviceKernel>& step) {
  StepTimes t;
  if (step.empty()) return t;
  uint64_t reach = step.front().start_ns;
  for (const DeviceKernel& k : step) {
    t.gap_ms.push_back(ms_between(reach, k.start_ns));
    t.busy_ms += ms_between(std::max(k.start_ns, reach), k.end_ns);
    reach = std::max(reach, k.end_ns);
  }
  t.span_ms = ms_between(step.front().start_ns, reach);
  return t;
}

}  // namespace

std::vector<std::vector<DeviceKernel>> split_steps(const std::vector<DeviceKernel>& ran, int steps, std::string* why,
                                                   int keep_last) {
  auto whole = [&](const std::string& reason) {
    if (why) *why = reason;
    return std::vector<std::vector<DeviceKernel>>{ran};
  };
  if (steps <= 1) return {ran};
  const size_t kernels = static_cast<size_t>(
      std::count_if(ran.begin(), ran.end(), [](const DeviceKernel& k) { return k.kernel; }));
  const size_t n = static_cast<size_t>(steps);
  if (kernels == 0 || kernels % n != 0)
    return whole("the " + std::to_string(steps) + " traced steps ran " + std::to_string(kernels) +
                 " device kernels, not the same number each: shown as one span");
  const size_t per = kernels / n;
  std::vector<std::vector<DeviceKernel>> out(n);
  size_t step = 0, seen = 0;
  for (const DeviceKernel& k : ran) {
    out[step].push_back(k);
    if (k.kernel && ++seen == per && step + 1 < n) {
      ++step;
      seen = 0;
    }
  }
  for (size_t s = 1; s < n; ++s) {
    bool same = out[s].size() == out[0].size();
    for (size_t i = 0; same && i < out[s].size(); ++i)
      same = out[s][i].name == out[0][i].name && out[s][i].kernel == out[0][i].kernel;
    if (!same)
      return whole("traced step " + std::to_string(s + 1) + " of " + std::to_string(steps) +
                   " ran other device work than the first (" + std::to_string(out[s].size()) + " ops against " +
                   std::to_string(out[0].size()) + "): shown as one span");
  }
  if (keep_last > 0 && static_cast<size_t>(keep_last) < out.size())
    out.erase(out.begin(), out.end() - keep_last);
  return out;
}

std::vector<DeviceKernel> last_kernels_of(const std::vector<DeviceKernel>& ran, size_t kernels, std::string* why) {
  const size_t total = static_cast<size_t>(
      std::count_if(ran.begin(), ran.end(), [](const DeviceKernel& k) { return k.kernel; }));
  if (kernels == 0 || total < kernels) {
    if (why)
      *why = "the trace ran " + std::to_string(total) + " device kernels, fewer than the " + std::to_string(kernels) +
             " of the steps to read: shown whole";
    return ran;
  }
  // the tail starts right after the last kernel that is dropped
  size_t seen = 0, start = 0;
  const size_t dropped = total - kernels;
  for (size_t i = 0; i < ran.size() && seen < dropped; ++i)
    if (ran[i].kernel && ++seen == dropped) start = i + 1;
  return std::vector<DeviceKernel>(ran.begin() + static_cast<std::ptrdiff_t>(start), ran.end());
}

nlohmann::json profile_json(const std::vector<ProfileLaunch>& launches,
                            const std::vector<std::vector<DeviceKernel>>& steps, const std::string& how,
                            const std::string& device, double copy_gbps, double gemm_tflops,
                            int forwards_per_step) {
  static const std::vector<DeviceKernel> none;
  const std::vector<DeviceKernel>& first = steps.empty() ? none : steps.front();
  const size_t ops = first.size();

  // each slot (an op of the first step) across the steps
  std::vector<std::vector<double>> slot_ms(ops), slot_gap(ops);
  std::vector<double> spans, busys, idles;
  for (const auto& step : steps) {
    if (step.size() != ops) continue;  // split_steps hands only equal steps
    const StepTimes t = step_times(step);
    for (size_t i = 0; i < ops; ++i) {
      slot_ms[i].push_back(ms_between(step[i].start_ns, step[i].end_ns));
      slot_gap[i].push_back(t.gap_ms[i]);
    }
    spans.push_back(t.span_ms);
    busys.push_back(t.busy_ms);
    idles.push_back(t.span_ms - t.busy_ms);
  }
  std::vector<double> ms(ops), gap(ops);
  for (size_t i = 0; i < ops; ++i) {
    ms[i] = median_of(slot_ms[i]);
    gap[i] = median_of(slot_gap[i]);
  }

  struct Slot {
    const ProfileLaunch* launch;
    std::string kernel;
    bool first;  // the first device kernel of its launch carries the launch's figures
  };
  std::vector<Slot> expected;
  for (const auto& l : launches)
    for (size_t i = 0; i < l.device_kernels.size(); ++i) expected.push_back({&l, l.device_kernels[i], i == 0});
  nlohmann::json p = {{"device", device},
                      {"copy_gbps", copy_gbps},
                      {"gemm_tflops", gemm_tflops},
                      {"how", how},
                      {"steps", static_cast<int>(spans.size())}};
  // kernels are matched to launches in order while their names agree; from
  // the first disagreement on, rows carry no launch (memsets and copies,
  // kernel = false, are rows of their own: never matched to a launch)
  std::vector<size_t> kidx;  // the first step's kernels, by position
  for (size_t i = 0; i < ops; ++i)
    if (first[i].kernel) kidx.push_back(i);
  size_t matched = 0;
  while (matched < kidx.size() && matched < expected.size() && expected[matched].kernel == first[kidx[matched]].name)
    ++matched;
  if (matched < kidx.size() || matched < expected.size())
    p["note"] = "the profiled step ran " + std::to_string(kidx.size()) + " device kernels, the probed forward " +
                std::to_string(expected.size()) + "; they agree on the first " + std::to_string(matched) +
                (matched < kidx.size() ? " (then " + first[kidx[matched]].name + ")" : "") +
                ": later kernels are shown without their launch";
  // a launch's time is the sum of its device kernels' median times
  std::map<const ProfileLaunch*, double> launch_ms;
  std::map<size_t, const Slot*> slot_of;  // position -> its launch
  for (size_t i = 0; i < matched; ++i) {
    launch_ms[expected[i].launch] += ms[kidx[i]];
    slot_of[kidx[i]] = &expected[i];
  }
  nlohmann::json rows = nlohmann::json::array();
  int memory_ops = 0;
  for (size_t i = 0; i < ops; ++i) {
    const DeviceKernel& k = first[i];
    const auto [lo, hi] = std::minmax_element(slot_ms[i].begin(), slot_ms[i].end());
    nlohmann::json row = {{"device_kernel", k.name}, {"ms", ms[i]},         {"ms_min", *lo},
                          {"ms_max", *hi},           {"gap_ms", gap[i]},    {"stream", k.stream}};
    if (!k.kernel) {
      row["kind"] = "memory";
      ++memory_ops;
    }
    if (slot_of.count(i)) {
      const Slot& s = *slot_of[i];
      row["launch"] = s.launch->name;
      row["kind"] = s.launch->kind;
      const double bytes = s.first ? s.launch->bytes : 0, flops = s.first ? s.launch->flops : 0;
      const double t = s.first ? launch_ms[s.launch] : 0;
      // rates only where the launch's work was estimated (compiled graphs)
      if ((bytes > 0 || flops > 0) && t > 0 && copy_gbps > 0 && gemm_tflops > 0) {
        const double gbps = bytes / (t * 1e-3) / 1e9, tflops = flops / (t * 1e-3) / 1e12;
        const bool compute = flops / (gemm_tflops * 1e12) > bytes / (copy_gbps * 1e9);
        row["bytes"] = bytes;
        row["flops"] = flops;
        row["gbps"] = gbps;
        row["tflops"] = tflops;
        row["bound"] = compute ? "compute" : "memory";
        row["of_peak"] = compute ? tflops / gemm_tflops : gbps / copy_gbps;
      }
    }
    rows.push_back(row);
  }
  const double span = median_of(spans);
  p["kernels"] = rows;
  p["memory_ops"] = memory_ops;  // rows that are memsets or copies, not kernels
  p["span_ms"] = span;
  p["span_ms_min"] = spans.empty() ? 0.0 : *std::min_element(spans.begin(), spans.end());
  p["span_ms_max"] = spans.empty() ? 0.0 : *std::max_element(spans.begin(), spans.end());
  // the device's time from one step's last op to the next step's first:
  // what a step costs beyond its span when steps run back to back (a CUDA
  // graph's launch on the device between replays), apart from any event
  // the timed steps record between them
  std::vector<double> between;
  for (size_t s = 1; s < steps.size(); ++s) {
    if (steps[s - 1].empty() || steps[s].empty()) continue;
    uint64_t reach = 0;  // the step's last end (its ops may overlap)
    for (const DeviceKernel& k : steps[s - 1]) reach = std::max(reach, k.end_ns);
    if (steps[s].front().start_ns >= reach) between.push_back(ms_between(reach, steps[s].front().start_ns));
  }
  if (!between.empty()) {
    p["between_steps_ms"] = median_of(between);
    p["between_steps_ms_min"] = *std::min_element(between.begin(), between.end());
    p["between_steps_ms_max"] = *std::max_element(between.begin(), between.end());
  }
  p["busy_ms"] = median_of(busys);
  p["idle_ms"] = median_of(idles);
  // the forward as a whole: its GEMM and attention FLOPs over its median
  // span (every forward's, where one step holds several), against the
  // large GEMM measured on this GPU
  double flops = 0;
  for (const auto& l : launches) flops += l.flops;
  flops *= std::max(1, forwards_per_step);
  if (forwards_per_step > 1) p["forwards_per_step"] = forwards_per_step;
  if (span > 0 && flops > 0) {
    p["forward_flops"] = flops;
    p["forward_tflops"] = flops / (span * 1e-3) / 1e12;
    if (gemm_tflops > 0) p["forward_of_gemm_peak"] = flops / (span * 1e-3) / 1e12 / gemm_tflops;
  }
  return p;
}

}  // namespace fg
