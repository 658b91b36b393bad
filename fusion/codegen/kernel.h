// Kernel IR: what codegen produces for a scheduled graph, and what the
// runtimes launch.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "fusion/passes/schedule.h"

namespace fg {

struct Kernel {
  std::string name;              // cpu_per_fused__to_copy_add_mean_0
  std::string kind;              // poi, red, per, tem (generated); extern; collective; fast_path
  std::vector<std::string> ops;  // sorted ATen names of the fused nodes
  std::vector<int> args;         // buffer ids, in argument order (generated kernels)
  std::vector<int> nodes;        // scheduler nodes it runs
  std::string source;            // the function text (generated kernels)
  int64_t numel = 0, rnumel = 1; // iteration space (generated kernels): launch shape
  bool chunked = false;          // written in chunks of 8 (CStylePrinter::chunked): a codegen variant
  bool vectorized = false;       // its loop marked `omp simd` (host pointwise kernels): a codegen variant
  std::string held_back_variant; // the first variant a FUSEGATE_BISECT limit held back: "chunked" or "simd"
  bool generated() const { return kind == "poi" || kind == "red" || kind == "per" || kind == "tem"; }
};

struct KernelProgram {
  std::vector<Kernel> kernels;      // launch order: generated, extern and collective steps
  std::string module_source;        // one translation unit with every generated kernel
  std::set<int> removed_buffers;    // buffers every reader of which was fused: never stored
};

// Kernel name in Inductor's scheme: <backend>_<kind>_fused_<ops>_<index>.
std::string kernel_name(const std::string& backend, const std::string& kind, const std::vector<std::string>& ops,
                        int index);
// Sorted, de-duplicated ATen names of the nodes (what `ops` holds).
std::vector<std::string> kernel_ops(const LoweredGraph& g, const std::vector<int>& nodes);

}  // namespace fg
