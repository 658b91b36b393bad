// The cuda runtime's kernel module: NVRTC compiles the generated CUDA C++ of
// a graph to a cubin for the device's architecture (cached on disk by source
// hash), the driver API loads it, and each kernel is launched on LibTorch's
// current stream with the launch shape its iteration space asks for.
#include <ATen/TensorOperators.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/stack.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "fusion/codegen/cuda_printer.h"
#include "fusion/errors.h"
#include "fusion/fault.h"
#include "kernels/cpu/aten_ops.h"
#include "kernels/cpu/jit.h"
#include "kernels/cpu/runtime.h"
#include "kernels/cuda/cublaslt.h"
#include "kernels/cuda/device_power.h"
#include "kernels/cuda/energy_steps.h"
#include "kernels/cuda/kernel_trace.h"
#include "kernels/cuda/nvrtc.h"

namespace fg {

namespace {

void check(CUresult r, const std::string& what) {
  if (r == CUDA_SUCCESS) return;
  const char* msg = nullptr;
  cuGetErrorString(r, &msg);
  internal_error("CUDA driver: " + what + ": " + (msg ? msg : "unknown error"));
}

// The kernel parameter block: the generated signature takes FgArgs by value.
struct FgArgs {
  void* p[32];
};

std::string arch_of_current_device() {
  int dev = 0, major = 0, minor = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

// The cubin for `source`, from the disk cache or compiled now.
std::string cubin_for(const std::string& source, const std::string& arch) {
  std::string key = source + "\n// " + arch + " nvrtc " + nvrtc_version();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH64(key.data(), key.size(), 0)));
  std::string dir = jit_cache_dir();
  std::filesystem::create_directories(dir);
  std::string path = dir + "/" + hex + "." + arch + ".cubin";
  if (std::filesystem::exists(path)) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  // the source is on disk while NVRTC runs: a compile that fails, or
  // crashes the process inside NVRTC, leaves it there and names it
  const std::string cu = dir + "/" + hex + ".cu";
  std::ofstream(cu) << source;
  NvrtcResult r;
  {
    FatalNote note("compiling " + cu + " with NVRTC (" + arch + ")");
    r = nvrtc_compile(source, std::string(hex) + ".cu", arch);
  }
  if (r.cubin.empty())
    internal_error("generated CUDA code did not compile (source in " + cu + "):\n" + r.log);
  std::error_code ec;
  std::filesystem::remove(cu, ec);
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  std::ofstream(tmp, std::ios::binary) << r.cubin;
  std::filesystem::rename(tmp, path);
  return r.cubin;
}

class CudaModule : public KernelModule {
 public:
  explicit CudaModule(const KernelProgram& p) {
    const std::string arch = arch_of_current_device();
    load(p, cubin_for(p.module_source, arch));
    // A row kernel the printer held to full occupancy (FG_FULL_OCCUPANCY,
    // fusion/codegen/cuda_printer.cpp) that spills anyway: the module is
    // compiled again without the bound (the printer's rule is a count of
    // the registers its rows hold, not of everything the kernel keeps).
    // FUSEGATE_FAULT=occupancy_spill takes this path for every module
    // that has such a kernel: it tests the path, and times the kernels
    // without the bound in the same build.
    const std::string spilled = bounded_kernel_that_spills(p);
    if (!spilled.empty()) {
      std::fprintf(stderr, "fusegate: %s: compiled without the full-occupancy bound (FG_NO_FULL_OCCUPANCY)\n",
                   spilled.c_str());
      unload();
      load(p, cubin_for("#define FG_NO_FULL_OCCUPANCY\n" + p.module_source, arch));
    }
  }
  ~CudaModule() override { unload(); }
  void launch(size_t index, const std::vector<void*>& ptrs) override {
    FG_CHECK(ptrs.size() <= 32, "a kernel with more than 32 buffers");
    FgArgs args{};
    for (size_t i = 0; i < ptrs.size(); ++i) args.p[i] = ptrs[i];
    void* params[] = {&args};
    const LaunchShape& l = shapes_[index];
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    check(cuLaunchKernel(fns_[index], static_cast<unsigned>(l.blocks), 1, 1, static_cast<unsigned>(l.threads), 1, 1, 0,
                         stream, params, nullptr),
          "launch");
  }

 private:
  void load(const KernelProgram& p, const std::string& cubin) {
    check(cuModuleLoadData(&module_, cubin.data()), "load module");
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    for (const auto& k : p.kernels) {
      CUfunction f = nullptr;
      if (k.generated()) check(cuModuleGetFunction(&f, module_, k.name.c_str()), "find kernel " + k.name);
      fns_.push_back(f);
      shapes_.push_back(cuda_launch_shape(k.numel, k.rnumel, sms, k.chunked));
    }
  }
  void unload() {
    if (module_) cuModuleUnload(module_);
    module_ = nullptr;
    fns_.clear();
    shapes_.clear();
  }
  // The first kernel held to full occupancy that uses local memory (a
  // spill), as "kernel NAME spills N bytes a thread"; "" when none does.
  std::string bounded_kernel_that_spills(const KernelProgram& p) const {
    const bool forced = fault_active("occupancy_spill");
    for (size_t i = 0; i < p.kernels.size(); ++i) {
      const Kernel& k = p.kernels[i];
      if (!k.generated() || k.source.find("FG_FULL_OCCUPANCY(") == std::string::npos) continue;
      if (forced) return "FUSEGATE_FAULT=occupancy_spill";
      int local = 0;
      check(cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fns_[i]), "attributes of " + k.name);
      if (local > 0) return "kernel " + k.name + " spills " + std::to_string(local) + " bytes a thread";
    }
    return "";
  }

  CUmodule module_ = nullptr;
  std::vector<CUfunction> fns_;
  std::vector<LaunchShape> shapes_;
};

}  // namespace

bool cuda_backend_built() { return true; }

int cuda_select_device(int rank) {
  int n = c10::cuda::device_count();
  if (n < 1) cannot_test("--backend cuda: no GPU is visible to this process (CUDA_VISIBLE_DEVICES, the driver)");
  int dev = rank % n;
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(dev));
  cudaFree(nullptr);  // makes the device's primary context current for the driver API
  return dev;
}

std::unique_ptr<KernelModule> load_cuda_module(const KernelProgram& p) { return std::make_unique<CudaModule>(p); }

std::string cuda_cubin(const std::string& source, const std::string& arch) {
  return cubin_for(source, arch.empty() ? arch_of_current_device() : arch);
}

void cuda_synchronize() { c10::cuda::device_synchronize(); }

namespace {

// Captures one call of `body` into `g` on a side stream, as CUDA graphs
// require, after one call outside the capture so that library handles and
// workspaces exist before it: "" or why it failed (the device drained then).
// Every rank calls body once outside the capture either way.
std::string capture_one(const std::function<void()>& body, at::cuda::CUDAGraph* g) {
  at::cuda::CUDAStream side = at::cuda::getStreamFromPool();
  try {
    c10::cuda::CUDAStreamGuard guard(side);
    body();
    c10::cuda::device_synchronize();
    g->capture_begin();
    body();
    g->capture_end();
  } catch (const std::exception& e) {
    c10::cuda::device_synchronize();
    return e.what()[0] ? e.what() : "an exception without a message";
  }
  return "";
}

}  // namespace

// How often the energy window's thread reads NVML: the counter steps about
// every 100 ms, so a step's instant is known to within this
constexpr int kEnergyPollMs = 2;

std::vector<double> cuda_time(int iters, const std::function<void()>& body, bool graph, std::string* note,
                              std::vector<DeviceKernel>* profile, int profile_steps, int warmup_steps,
                              EnergyWindow* energy) {
  std::vector<double> ms;
  // untimed steps, queued as the timed ones are, the device never idle
  // between them; a count, not a duration: under collectives every rank
  // must run as many
  auto warm = [&](const std::function<void()>& step) {
    for (int i = 0; i < warmup_steps; ++i) step();
    c10::cuda::device_synchronize();
  };
  auto time_each = [&](const std::function<void()>& step) {
    std::vector<at::cuda::CUDAEvent> start(static_cast<size_t>(iters)), stop(static_cast<size_t>(iters));
    for (int i = 0; i < iters; ++i) {
      start[static_cast<size_t>(i)] = at::cuda::CUDAEvent(cudaEventDefault);
      stop[static_cast<size_t>(i)] = at::cuda::CUDAEvent(cudaEventDefault);
    }
    for (int i = 0; i < iters; ++i) {
      start[static_cast<size_t>(i)].record();
      step();
      stop[static_cast<size_t>(i)].record();
    }
    c10::cuda::device_synchronize();
    for (int i = 0; i < iters; ++i)
      ms.push_back(start[static_cast<size_t>(i)].elapsed_time(stop[static_cast<size_t>(i)]));
  };
  // the energy of more steps run the same way, from a drained device to a
  // drained device: a thread polls NVML (the counter in mJ, the SM clock,
  // its reasons) while they run, and the power is read between the
  // counter's first and last steps inside the window
  // (kernels/cuda/energy_steps.h); the steps run whether or not NVML reads
  // (their collectives pair with the other ranks', which may read): only
  // the figures are dropped
  auto energy_window = [&](const std::function<void()>& step) {
    if (!energy || energy->steps <= 0) return;
    c10::cuda::device_synchronize();
    const DevicePowerReader reader;  // this rank's device, found once
    std::atomic<bool> done{false};
    std::vector<EnergySample> samples;
    std::string why;
    double mhz_sum = 0, limit_w = 0;
    int mhz_n = 0;
    uint64_t reasons = 0;
    bool reasons_read = false;
    const auto t0 = std::chrono::steady_clock::now();
    auto since_t0 = [&t0] {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    std::thread poller([&] {
      while (!done.load()) {
        const PowerReading p = reader.read();
        const double at = since_t0();
        if (!p.why.empty()) {
          why = p.why;
          return;
        }
        samples.push_back({at, p.energy_mj});
        if (p.sm_mhz > 0) mhz_sum += p.sm_mhz, ++mhz_n;
        if (p.power_limit_w > 0) limit_w = p.power_limit_w;
        if (p.reasons_read) reasons |= p.clock_reasons, reasons_read = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(kEnergyPollMs));
      }
    });
    for (int i = 0; i < energy->steps; ++i) step();
    c10::cuda::device_synchronize();
    energy->ms = since_t0();
    done.store(true);
    poller.join();
    if (!why.empty()) {
      energy->why = why;
      return;
    }
    const EnergySteps e = energy_from_steps(samples, energy->ms);
    if (!e.why.empty()) {
      energy->why = e.why;
      return;
    }
    energy->watts = e.watts;
    energy->read_over_ms = e.over_ms;
    energy->counter_periods = e.periods;
    // the limit, the clock and its reasons are figures apart: one that did
    // not read is left out (0 and ""), not the window; the clock is the mean
    // of the polls, the reasons every one seen
    energy->power_limit_w = limit_w;
    energy->sm_mhz = mhz_n > 0 ? static_cast<unsigned>(mhz_sum / mhz_n + 0.5) : 0;
    energy->clock_reasons = reasons_read ? clock_reasons_text(reasons) : "";
  };
  // NVML loaded before the warm-up, not between the timings and the window
  // (loading it idles the device)
  if (energy && energy->steps > 0) read_device_power();
  // more steps, back to back as the timed ones ran, traced after them: what
  // ran and when (harness/run/profile.h splits them)
  auto trace = [&](const std::function<void()>& step) {
    if (!profile) return;
    c10::cuda::device_synchronize();
    std::string why = device_trace_start();
    if (!why.empty()) throw std::runtime_error("--profile: cannot trace device kernels: " + why);
    device_trace_collect();  // drop anything from before
    for (int i = 0; i < std::max(1, profile_steps); ++i) step();
    // the kernels and, apart, the memsets and copies between them (a
    // library's counter reset is a graph node that takes time too)
    std::vector<DeviceKernel> ops;
    *profile = device_trace_collect(&why, &ops);
    device_trace_stop();
    profile->insert(profile->end(), ops.begin(), ops.end());
    std::stable_sort(profile->begin(), profile->end(),
                     [](const DeviceKernel& a, const DeviceKernel& b) { return a.start_ns < b.start_ns; });
    if (!why.empty()) throw std::runtime_error("--profile: the device-kernel trace is incomplete: " + why);
  };
  if (!graph) {
    warm(body);
    time_each(body);
    energy_window(body);
    trace(body);
    return ms;
  }
  at::cuda::CUDAGraph g;
  if (const std::string failed = capture_one(body, &g); !failed.empty()) {
    if (note) *note = "CUDA graph capture failed: " + failed;
    warm(body);
    time_each(body);
    energy_window(body);
    trace(body);
    return ms;
  }
  if (note) *note = "CUDA graph replay";
  warm([&] { g.replay(); });
  time_each([&] { g.replay(); });
  energy_window([&] { g.replay(); });
  trace([&] { g.replay(); });
  return ms;
}

double cuda_replay_pace_ms(int n, const std::function<void()>& body) {
  n = std::max(1, n);
  auto pace = [n](const std::function<void()>& step) {
    step();  // a graph's first replay uploads it
    c10::cuda::device_synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) step();
    c10::cuda::device_synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / n;
  };
  at::cuda::CUDAGraph g;
  if (!capture_one(body, &g).empty()) return pace(body);  // cuda_time times host launches then, and says why
  return pace([&] { g.replay(); });
}

void cuda_peaks(double* copy_gbps, double* gemm_tflops) {
  auto median_ms = [](int n, const std::function<void()>& f) {
    for (int i = 0; i < 3; ++i) f();
    std::vector<double> t;
    for (int i = 0; i < n; ++i) {
      at::cuda::CUDAEvent a(cudaEventDefault), b(cudaEventDefault);
      a.record();
      f();
      b.record();
      b.synchronize();
      t.push_back(a.elapsed_time(b));
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  const int64_t n = int64_t{1} << 30;
  auto opts = at::TensorOptions().device(at::kCUDA, c10::cuda::current_device());
  {
    at::Tensor src = at::randint(0, 255, {n}, opts.dtype(at::kByte)), dst = at::empty_like(src);
    double ms = median_ms(20, [&] { dst.copy_(src); });
    *copy_gbps = 2.0 * static_cast<double>(n) / (ms * 1e-3) / 1e9;
  }
  {
    const int64_t m = 8192;
    at::Tensor a = at::randn({m, m}, opts.dtype(at::kBFloat16)), b = at::randn({m, m}, opts.dtype(at::kBFloat16));
    at::Tensor c = at::empty({m, m}, opts.dtype(at::kBFloat16));
    double ms = median_ms(10, [&] { at::mm_out(c, a, b); });
    *gemm_tflops = 2.0 * static_cast<double>(m) * m * m / (ms * 1e-3) / 1e12;
  }
}

// -- device kernels per launch (CUPTI) ----------------------------------------

namespace {

// Waits for the device after each launch and takes the kernels that ran
// since the last: slow, and only for the counted forward, never the timed.
class DeviceKernelProbe : public LaunchProbe {
 public:
  void open() override {
    for (const DeviceKernel& k : device_trace_collect(&why_)) between_.push_back("between launches: " + k.name);
  }
  void close(LaunchRecord& r) override {
    r.probed = true;
    for (const DeviceKernel& k : device_trace_collect(&why_)) r.device_kernels.push_back(k.name);
  }
  std::vector<std::string> between() const override { return between_; }
  std::string incomplete() const override { return why_; }
  ~DeviceKernelProbe() override { device_trace_stop(); }

 private:
  std::vector<std::string> between_;
  std::string why_;
};

}  // namespace

std::unique_ptr<LaunchProbe> make_device_kernel_probe(std::string* why) {
  c10::cuda::device_synchronize();
  std::string err = device_trace_start();
  if (!err.empty()) {
    if (why) *why = err;
    return nullptr;
  }
  auto p = std::make_unique<DeviceKernelProbe>();
  device_trace_collect();  // what ran before the forward is not its work
  return p;
}

std::string cuda_device_name() {
  cudaDeviceProp p{};
  int dev = 0;
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&p, dev);
  return p.name;
}

namespace {

// "13.0" from CUDA's 1000 * major + 10 * minor encoding.
std::string cuda_encoded_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// A library LibTorch loaded, asked through its own exported function, so
// that the version is the one this process runs (the toolkit's headers may
// be of another release): `call` gets the symbol, "not loaded" without it.
template <typename Fn>
std::string loaded_version(const char* symbol, const std::function<std::string(Fn)>& call) {
  void* f = dlsym(RTLD_DEFAULT, symbol);
  return f ? call(reinterpret_cast<Fn>(f)) : std::string("not loaded");
}

}  // namespace

std::vector<std::pair<std::string, std::string>> cuda_versions() {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  using GetProperty = int (*)(int, int*);  // cublasGetProperty(libraryPropertyType, int*)
  const std::string cublas = loaded_version<GetProperty>("cublasGetProperty", [](GetProperty get) {
    int major = 0, minor = 0, patch = 0;
    get(0, &major);  // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
    get(1, &minor);
    get(2, &patch);
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  });
  using SizeVersion = size_t (*)();
  const std::string cudnn = loaded_version<SizeVersion>(
      "cudnnGetVersion", [](SizeVersion get) { return std::to_string(get()); });
  using IntVersion = int (*)(int*);
  const std::string nccl = loaded_version<IntVersion>("ncclGetVersion", [](IntVersion get) {
    int v = 0;
    get(&v);
    return std::to_string(v);
  });
  // the kernel driver's own version where the system says it ("580.159.04"),
  // beside the CUDA version it serves
  std::string driver_text = "CUDA " + cuda_encoded_version(driver);
  std::ifstream proc("/proc/driver/nvidia/version");
  std::string line;
  if (std::getline(proc, line)) {
    // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...":
    // the first word of digits and dots
    std::istringstream words(line);
    for (std::string w; words >> w;)
      if (std::isdigit(static_cast<unsigned char>(w[0])) && w.find('.') != std::string::npos &&
          w.find_first_not_of("0123456789.") == std::string::npos) {
        driver_text = w + " (" + driver_text + ")";
        break;
      }
  }
  return {{"driver", driver_text},
          {"cuda_runtime", cuda_encoded_version(runtime)},
          {"cublas", cublas},
          {"cublaslt", std::to_string(lt_version())},
          {"cudnn", cudnn},
          {"nccl", nccl},
          {"nvrtc", nvrtc_version()}};
}


// -- linear layers through cuBLASLt -------------------------------------------

namespace {

LtType lt_type(at::ScalarType t) {
  if (t == at::kBFloat16) return LtType::BF16;
  if (t == at::kHalf) return LtType::F16;
  FG_CHECK(t == at::kFloat, "cuBLASLt GEMMs take bf16, f16 or f32 (linear_batch routes the rest to ATen)");
  return LtType::F32;
}

// Weights of batched siblings, stacked once per set of weight tensors and
// their versions (an in-place update bumps the version and restacks). An
// entry holds its weights, so their memory cannot be reused by other tensors
// while the entry lives.
at::Tensor stacked_weights(const std::vector<at::Tensor>& ws) {
  struct Entry {
    std::vector<at::Tensor> weights;
    at::Tensor stacked;
  };
  static auto* cache = new std::map<std::vector<int64_t>, Entry>();  // kept until exit
  std::vector<int64_t> key;
  for (const auto& w : ws) {
    key.push_back(reinterpret_cast<int64_t>(w.data_ptr()));
    key.push_back(static_cast<int64_t>(w._version()));
    key.push_back(w.get_device());
  }
  auto it = cache->find(key);
  if (it != cache->end()) return it->second.stacked;
  if (cache->size() >= 4096) cache->clear();  // a model's batched groups fit many times over
  Entry& e = (*cache)[key];
  e.weights = ws;
  e.stacked = at::stack(ws).contiguous();
  return e.stacked;
}

at::Tensor& lt_workspace() {
  static auto* spaces = new std::map<int, at::Tensor>();  // per device, kept until exit
  int dev = c10::cuda::current_device();
  at::Tensor& t = (*spaces)[dev];
  if (!t.defined())
    t = at::empty({static_cast<int64_t>(kLtWorkspaceBytes)}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, dev));
  return t;
}

}  // namespace

at::Tensor cuda_linear(const at::Tensor& a, const std::vector<at::Tensor>& ws, const at::Tensor& bias,
                       const at::Tensor& addend, float beta, bool gelu_tanh) {
  const int64_t K = a.size(-1), N = ws[0].size(0), B = static_cast<int64_t>(ws.size());
  const LtType t = lt_type(a.scalar_type());
  at::Tensor a2 = a.reshape({-1, K}).contiguous();
  const int64_t M = a2.size(0);
  at::Tensor w = B > 1 ? stacked_weights(ws) : ws[0].contiguous();
  at::Tensor out = at::empty({B, M, N}, a.options());
  at::Tensor c = addend.defined() ? addend.reshape({M, N}).contiguous() : at::Tensor();
  at::Tensor bz = bias.defined() ? bias.contiguous() : at::Tensor();
  LtGemm g;
  g.m = M; g.n = N; g.k = K; g.batch = B; g.type = t;
  g.bias = bz.defined();
  g.gelu_tanh = gelu_tanh;
  g.addend = c.defined();
  at::Tensor& space = lt_workspace();
  std::string err = lt_gemm(g, a2.data_ptr(), w.data_ptr(), g.bias ? bz.data_ptr() : nullptr,
                            g.addend ? c.data_ptr() : nullptr, beta, out.data_ptr(), space.data_ptr(),
                            static_cast<size_t>(space.numel()), at::cuda::getCurrentCUDAStream());
  if (!err.empty()) internal_error("cuBLASLt GEMM [" + std::to_string(M) + "x" + std::to_string(K) + "] x [" +
                                   std::to_string(N) + "x" + std::to_string(K) + "]^T: " + err);
  return out;
}

}  // namespace fg
