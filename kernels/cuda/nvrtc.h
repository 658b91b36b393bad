// Run-time compilation of generated CUDA C++ with NVRTC, to a cubin for one
// architecture (sm_90 by default). Needs the CUDA toolkit, not a GPU: CI
// uses it to check that the CUDA printer's output compiles.
#pragma once
#include <map>
#include <string>

namespace fg {

struct NvrtcResult {
  std::string cubin;  // empty on failure
  std::string log;    // NVRTC's messages
};

// `ptxas_info`: the log also holds ptxas's resource lines for each kernel
// (registers, spills), which ptxas_usage reads; the module then carries one
// empty kernel more (`fg_ptxas_report_...`), so that ptxas runs even where
// the CUDA compute cache holds the module's cubin.
NvrtcResult nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch = "sm_90",
                          bool ptxas_info = false);
std::string nvrtc_version();

// A kernel's resources as ptxas reported them in a ptxas_info log.
struct PtxasUsage {
  int registers = -1;
  int stack_frame_bytes = -1;  // local memory, spills or not
  int spill_store_bytes = -1;
  int spill_load_bytes = -1;
};
// kernel name -> its resources; a kernel the log does not name is absent
std::map<std::string, PtxasUsage> ptxas_usage(const std::string& log);

}  // namespace fg
