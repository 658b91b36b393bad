// Runs fast_path nodes (fusion/fastpaths/catalog.h): compiles each fast
// path's source once per process (host: the JIT of generated kernels, so
// flags and rounding match; cuda: NVRTC) and launches it on the executor's
// buffers. The one-shot all-reduce of allreduce_residual_rmsnorm maps every
// rank's buffers into each rank (host: POSIX shared memory, names exchanged
// through the c10d store; all ranks on one host).
#pragma once
#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/options.h"

namespace fg {

class Collectives;
class JitModule;

// The fast paths' CUDA side (kernels/fastpaths/cuda_runtime.cpp): NVRTC
// cubins of their sources, launches on LibTorch's current stream, and the
// IPC buffers of the one-shot all-reduce. Without the cuda runtime,
// make_cuda_fast_paths says so.
class DeviceFastPaths {
 public:
  virtual ~DeviceFastPaths() = default;
  virtual void run(const Node& n, const std::vector<at::Tensor>& in, at::Tensor& out) = 0;
};
std::unique_ptr<DeviceFastPaths> make_cuda_fast_paths(Collectives* coll, int rank, int world);
// The cubin of `source` for the current device, or for `arch` when given
// ("sm_90a"), disk-cached (cuda_module.cpp).
std::string cuda_cubin(const std::string& source, const std::string& arch = "");

class FastPathRunner {
 public:
  FastPathRunner(Backend backend, Collectives* coll, int rank, int world);
  ~FastPathRunner();
  FastPathRunner(const FastPathRunner&) = delete;
  FastPathRunner& operator=(const FastPathRunner&) = delete;
  // Runs one fast_path node on its inputs into `out` (contiguous, allocated
  // by the executor in the layout the compiler planned).
  void run(const Node& n, const std::vector<at::Tensor>& in, at::Tensor& out);

 private:
  void run_kernel(const Node& n, const std::vector<at::Tensor>& in, at::Tensor& out);
  struct Shared;  // the ranks' shared buffers of one size
  void* host_function(const std::string& name, const std::string& fn);
  Shared& shared(int64_t bytes);
  // A one-shot all-reduce's call (world size 2 and up): every rank's region
  // for `partial`'s size appended to the kernel's pointers `p`, the exchange
  // recorded; returns the call's epoch.
  int64_t exchange(const at::Tensor& partial, std::vector<void*>* p);
  Backend backend_;
  Collectives* coll_;
  int rank_, world_;
  std::map<std::string, std::shared_ptr<JitModule>> host_;
  std::map<int64_t, std::unique_ptr<Shared>> shared_;
  std::unique_ptr<DeviceFastPaths> cuda_;
};

}  // namespace fg
