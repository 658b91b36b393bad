// The causal_attention fast path against LibTorch's fused attention
// (at::scaled_dot_product_attention: cuDNN's kernel on Hopper) at the TP
// blocks' attention shapes, each timed as it runs in the forward: a CUDA
// graph of twenty [qkv projection -> attention -> output projection] steps,
// replayed, minus the same graph without the attention (as
// bench/attn_backends.py times PyTorch's backends), in interleaved rounds
// (the three graphs in a rotating order, kRounds times; the medians and the
// ratio's range over the rounds: one best-of timing of each, a call apart,
// read 0.89 to 1.13 at h4096 on the same kernels); and each one's distance
// to attention in f64. Run by hand on a Hopper GPU:
//   build-gpu/bench/attention_bench            # prints a Markdown table
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGraph.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "kernels/cuda/kernel_trace.h"
#include "kernels/fastpaths/runtime.h"

namespace {

constexpr int kSteps = 20;
constexpr int kRounds = 9;

// What one replay ran besides the GEMMs: each kernel's (and memset's) mean
// time and the mean idle time before it, "name mean us (idle us before)".
std::string traced(const std::vector<fg::DeviceKernel>& ks) {
  std::map<std::string, std::pair<double, double>> sum;  // time, idle before
  std::map<std::string, int> count;
  for (size_t i = 0; i < ks.size(); ++i) {
    const std::string& n = ks[i].name;
    if (n.find("nvjet") != std::string::npos || n.find("gemm") != std::string::npos) continue;
    sum[n].first += static_cast<double>(ks[i].end_ns - ks[i].start_ns) / 1000;
    if (i > 0) sum[n].second += static_cast<double>(ks[i].start_ns - ks[i - 1].end_ns) / 1000;
    ++count[n];
  }
  std::string r;
  for (const auto& [n, t] : sum) {
    char b[256];
    std::snprintf(b, sizeof b, "%s%.40s %.1f (%.1f)", r.empty() ? "" : "; ", n.c_str(), t.first / count[n],
                  t.second / count[n]);
    r += b;
  }
  return r;
}

// One captured graph of fn, warmed up.
struct Replayed {
  at::cuda::CUDAGraph g;
  explicit Replayed(const std::function<void()>& fn) {
    at::cuda::CUDAStream side = at::cuda::getStreamFromPool();
    c10::cuda::CUDAStreamGuard guard(side);
    fn();
    cudaDeviceSynchronize();
    g.capture_begin();
    fn();
    g.capture_end();
    for (int i = 0; i < 3; ++i) g.replay();
    // the warm-up ran on the side stream, which nothing else waits for
    cudaDeviceSynchronize();
  }
  // ms a replay, over 20 replays
  double ms() {
    at::cuda::CUDAEvent a(cudaEventDefault), b(cudaEventDefault);
    a.record();
    for (int i = 0; i < 20; ++i) g.replay();
    b.record();
    b.synchronize();
    return static_cast<double>(a.elapsed_time(b)) / 20;
  }
  // one more replay's kernels other than the GEMMs
  std::string trace() {
    cudaDeviceSynchronize();
    std::string why = fg::device_trace_start();
    if (!why.empty()) return "no trace: " + why;
    fg::device_trace_collect();
    g.replay();
    cudaDeviceSynchronize();
    std::vector<fg::DeviceKernel> mem;
    std::vector<fg::DeviceKernel> ks = fg::device_trace_collect(&why, &mem);
    fg::device_trace_stop();
    ks.insert(ks.end(), mem.begin(), mem.end());
    std::sort(ks.begin(), ks.end(), [](const fg::DeviceKernel& x, const fg::DeviceKernel& y) { return x.start_ns < y.start_ns; });
    return traced(ks);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double rel_l2_vs_f64(const at::Tensor& got, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  at::Tensor qd = q.to(at::kDouble), kd = k.to(at::kDouble), vd = v.to(at::kDouble);
  at::Tensor s = at::matmul(qd, kd.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(3)));
  at::Tensor mask = at::ones({q.size(2), q.size(2)}, q.options().dtype(at::kBool)).triu(1);
  at::Tensor ref = at::matmul(at::softmax(s.masked_fill(mask, -std::numeric_limits<double>::infinity()), -1), vd);
  return (got.to(at::kDouble) - ref).norm().item<double>() / ref.norm().item<double>();
}

}  // namespace

int main() {
  using namespace fg;
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("%s\n\n", prop.name);
  std::printf("%d interleaved rounds: medians, and the ratio's range over the rounds\n\n", kRounds);
  std::printf("| block | B x S, heads | cuDNN (at::sdpa) us a step | causal_attention us a step | ratio (min-max) | rel L2 vs f64: cuDNN / causal_attention |\n");
  std::printf("|---|---|---|---|---|---|\n");
  struct Shape {
    const char* name;
    int64_t B, S, H;
  };
  FastPathRunner runner(Backend::Cuda, nullptr, 0, 1);
  Node n;
  n.op = Op::FastPath;
  n.attrs["name"] = std::string("causal_attention");
  const int64_t D = 128;
  std::vector<std::string> traces;
  for (const Shape& sh : {Shape{"h2048", 2, 512, 16}, Shape{"h2048_s2048", 2, 2048, 16}, Shape{"h4096", 2, 512, 32}}) {
    at::manual_seed(0);
    const int64_t hid = sh.H * D, rows = sh.B * sh.S;
    auto opt = at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA);
    at::Tensor x = at::randn({rows, hid}, opt);
    at::Tensor w_qkv = at::randn({3 * hid, hid}, opt) / std::sqrt(static_cast<double>(hid));
    at::Tensor w_o = at::randn({hid, hid}, opt) / std::sqrt(static_cast<double>(hid));
    at::Tensor out = at::empty({sh.B, sh.S, sh.H, D}, opt);
    // which: 0 none, 1 cuDNN, 2 the fast path
    auto step = [&](int which) {
      at::Tensor qkv = at::linear(x, w_qkv).view({sh.B, sh.S, 3 * hid});
      auto part = [&](int i) { return qkv.narrow(-1, i * hid, hid).view({sh.B, sh.S, sh.H, D}).transpose(1, 2); };
      at::Tensor a;
      if (which == 0) {
        a = part(0).transpose(1, 2);
      } else if (which == 1) {
        a = at::scaled_dot_product_attention(part(0), part(1), part(2), {}, 0.0, true).transpose(1, 2);
      } else {
        runner.run(n, {part(0), part(1), part(2)}, out);
        a = out;
      }
      return at::linear(a.reshape({rows, hid}), w_o);
    };
    // accuracy, one step's attention
    at::Tensor qkv = at::linear(x, w_qkv).view({sh.B, sh.S, 3 * hid});
    auto part = [&](int i) { return qkv.narrow(-1, i * hid, hid).view({sh.B, sh.S, sh.H, D}).transpose(1, 2); };
    at::Tensor lib = at::scaled_dot_product_attention(part(0), part(1), part(2), {}, 0.0, true);
    runner.run(n, {part(0), part(1), part(2)}, out);
    const double e_lib = rel_l2_vs_f64(lib, part(0), part(1), part(2));
    const double e_fp = rel_l2_vs_f64(out.transpose(1, 2), part(0), part(1), part(2));
    // graphs[0] none, [1] cuDNN, [2] the fast path; round r times them
    // starting from graph r % 3
    std::vector<std::unique_ptr<Replayed>> graphs;
    for (int which = 0; which < 3; ++which)
      graphs.push_back(std::make_unique<Replayed>([&] { for (int i = 0; i < kSteps; ++i) step(which); }));
    std::vector<double> lib_us, fp_us, ratio;
    for (int r = 0; r < kRounds; ++r) {
      double ms[3];
      for (int i = 0; i < 3; ++i) ms[(r + i) % 3] = graphs[(r + i) % 3]->ms();
      lib_us.push_back(1000 * (ms[1] - ms[0]) / kSteps);
      fp_us.push_back(1000 * (ms[2] - ms[0]) / kSteps);
      ratio.push_back(fp_us.back() / lib_us.back());
    }
    traces.push_back(std::string(sh.name) + ": " + graphs[1]->trace() + " | " + graphs[2]->trace());
    std::printf("| %s | %lld x %lld, %lld | %.1f | %.1f | %.2f (%.2f-%.2f) | %.2e / %.2e |\n", sh.name,
                static_cast<long long>(sh.B), static_cast<long long>(sh.S), static_cast<long long>(sh.H),
                median(lib_us), median(fp_us), median(ratio), *std::min_element(ratio.begin(), ratio.end()),
                *std::max_element(ratio.begin(), ratio.end()), e_lib, e_fp);
  }
  std::printf("\nOne traced replay, kernels other than the GEMMs: mean us (mean idle us before), cuDNN | causal_attention\n");
  for (const auto& t : traces) std::printf("- %s\n", t.c_str());
  return 0;
}
