#include "kernels/cuda/nvrtc.h"

#include <nvrtc.h>

#include <vector>

#include "fusion/errors.h"

namespace fg {

namespace {
void check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) internal_error(std::string("NVRTC ") + what + ": " + nvrtcGetErrorString(r));
}
}  // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check(nvrtcVersion(&major, &minor), "version");
  return std::to_string(major) + "." + std::to_string(minor);
}

NvrtcResult nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch) {
  nvrtcProgram prog;
  check(nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr), "create");
  std::string arch_opt = "--gpu-architecture=" + arch;
  // fast math stays off: results must match the eager reference's rounding
  std::vector<const char*> opts = {arch_opt.c_str(), "--std=c++17", "-default-device"};
  nvrtcResult rc = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  NvrtcResult out;
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  out.log.resize(log_size);
  if (log_size) nvrtcGetProgramLog(prog, out.log.data());
  if (rc == NVRTC_SUCCESS) {
    size_t n = 0;
    check(nvrtcGetCUBINSize(prog, &n), "cubin size");
    out.cubin.resize(n);
    check(nvrtcGetCUBIN(prog, out.cubin.data()), "cubin");
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

}  // namespace fg
