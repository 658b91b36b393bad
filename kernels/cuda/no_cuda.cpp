// Stand-ins for the cuda runtime when LibTorch has no CUDA: the cpu backend
// works and --backend cuda says why it cannot.
#include "fusion/errors.h"
#include "kernels/cpu/aten_ops.h"
#include "kernels/cpu/runtime.h"
#include "kernels/cuda/gemm_tuning.h"
#include "kernels/fastpaths/runtime.h"

namespace fg {

bool cuda_backend_built() { return false; }
void gemm_tuning_start() {}
std::string gemm_tuning_choose(const std::string&) { return "[]"; }
std::string gemm_tuning_adopt(const std::string&) { return ""; }
std::vector<std::string> gemm_tuning_unchecked(bool) { return {}; }
std::string gemm_tuning_try(const std::string&, bool) { return "no cuda runtime in this build"; }
std::string gemm_tuning_settle(const std::string&, bool, double, double, int, int, const std::string&, bool) {
  return "no cuda runtime in this build";
}
std::string gemm_tuning_table() { return "[]"; }
std::string gemm_tuning_record() { return "[]"; }
std::string gemm_tuning_library() { return ""; }
at::Tensor cuda_linear(const at::Tensor&, const std::vector<at::Tensor>&, const at::Tensor&, const at::Tensor&, float,
                       bool) {
  user_error("this fusegate was built without the cuda runtime: use --backend cpu");
}
int cuda_select_device(int) { user_error("this fusegate was built without the cuda runtime: use --backend cpu"); }
std::unique_ptr<KernelModule> load_cuda_module(const KernelProgram&) {
  user_error("this fusegate was built without the cuda runtime: use --backend cpu");
}
void cuda_synchronize() {}
std::string cuda_device_name() { return ""; }
std::vector<std::pair<std::string, std::string>> cuda_versions() { return {}; }
std::vector<double> cuda_time(int, const std::function<void()>&, bool, std::string*, std::vector<DeviceKernel>*, int, int,
                              EnergyWindow*) {
  user_error("this fusegate was built without the cuda runtime: use --backend cpu");
}
double cuda_replay_pace_ms(int, const std::function<void()>&) {
  user_error("this fusegate was built without the cuda runtime: use --backend cpu");
}
void cuda_peaks(double*, double*) { user_error("this fusegate was built without the cuda runtime: use --backend cpu"); }
std::unique_ptr<LaunchProbe> make_device_kernel_probe(std::string* why) {
  if (why) *why = "this fusegate was built without the cuda runtime";
  return nullptr;
}

std::unique_ptr<DeviceFastPaths> make_cuda_fast_paths(Collectives*, int, int) {
  user_error("this fusegate was built without the cuda runtime: use --backend cpu");
}

}  // namespace fg
