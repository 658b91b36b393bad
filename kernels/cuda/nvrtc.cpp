#include "kernels/cuda/nvrtc.h"

#include <nvrtc.h>

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <sstream>
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

NvrtcResult nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch,
                          bool ptxas_info) {
  // ptxas writes its report only when it runs, and NVRTC (13.0.88) takes a
  // cubin it made before from the CUDA compute cache (CUDA_CACHE_PATH)
  // without running it: the log then holds no report. A module asked for
  // its report carries a kernel of its own that no earlier compile had, so
  // the cache never holds it.
  std::string text = source;
  if (ptxas_info) {
    static std::atomic<unsigned long long> count{0};
    const auto now = std::chrono::system_clock::now().time_since_epoch().count();
    text += "\nextern \"C\" __global__ void fg_ptxas_report_" + std::to_string(::getpid()) + "_" +
            std::to_string(now) + "_" + std::to_string(count++) + "() {}\n";
  }
  nvrtcProgram prog;
  check(nvrtcCreateProgram(&prog, text.c_str(), name.c_str(), 0, nullptr, nullptr), "create");
  std::string arch_opt = "--gpu-architecture=" + arch;
  // fast math stays off: results must match the eager reference's rounding
  std::vector<const char*> opts = {arch_opt.c_str(), "--std=c++17", "-default-device"};
  if (ptxas_info) opts.push_back("--ptxas-options=-v");
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

// ptxas -v writes, for each kernel:
//   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 32 registers, used 1 barriers, 128 bytes smem
std::map<std::string, PtxasUsage> ptxas_usage(const std::string& log) {
  std::map<std::string, PtxasUsage> out;
  std::istringstream in(log);
  std::string line, current;
  auto number_before = [](const std::string& l, const std::string& word) {
    size_t at = l.find(word);
    if (at == std::string::npos || at == 0) return -1;
    size_t end = at;
    while (end > 0 && l[end - 1] == ' ') --end;
    size_t begin = end;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(l[begin - 1]))) --begin;
    return begin < end ? std::stoi(l.substr(begin, end - begin)) : -1;
  };
  while (std::getline(in, line)) {
    const std::string entry = "Compiling entry function '";
    size_t at = line.find(entry);
    if (at != std::string::npos) {
      size_t b = at + entry.size(), e = line.find('\'', b);
      current = e == std::string::npos ? "" : line.substr(b, e - b);
      if (!current.empty()) out[current];
      continue;
    }
    // a device function's own block (not inlined) is not the kernel's
    const std::string props = "Function properties for ";
    at = line.find(props);
    if (at != std::string::npos) {
      std::string fn = line.substr(at + props.size());
      while (!fn.empty() && (fn.back() == ' ' || fn.back() == '\r')) fn.pop_back();
      current = out.count(fn) ? fn : "";
      continue;
    }
    if (current.empty()) continue;
    PtxasUsage& u = out[current];
    if (line.find("spill stores") != std::string::npos) {
      u.stack_frame_bytes = number_before(line, "bytes stack frame");
      u.spill_store_bytes = number_before(line, "bytes spill stores");
      u.spill_load_bytes = number_before(line, "bytes spill loads");
    }
    if (line.find(" registers") != std::string::npos && line.find("Used ") != std::string::npos)
      u.registers = number_before(line, "registers");
  }
  return out;
}

}  // namespace fg
