// Run-time compilation of generated CUDA C++ with NVRTC, to a cubin for one
// architecture (sm_90 by default). Needs the CUDA toolkit, not a GPU: CI
// uses it to check that the CUDA printer's output compiles.
#pragma once
#include <string>

namespace fg {

struct NvrtcResult {
  std::string cubin;  // empty on failure
  std::string log;    // NVRTC's messages
};

NvrtcResult nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch = "sm_90");
std::string nvrtc_version();

}  // namespace fg
