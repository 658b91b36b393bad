// The CUDA C++ dialect of the kernel printer, for NVRTC (sm_90). Pointwise
// kernels run one element per thread over a grid-stride loop; reduction
// kernels run one row (x) per block, the block's threads striding over r and
// combining their partial results with warp shuffles and shared memory.
// Storage stays bf16/f16 where the graph says so; math is in f32.
#pragma once
#include "fusion/codegen/cpp_printer.h"

namespace fg {

class CudaPrinter : public CStylePrinter {
 public:
  using CStylePrinter::CStylePrinter;
  std::string outer_loop(int64_t numel, bool reduction) const override;
  std::string inner_loop(int64_t rnumel) const override;
  std::string combine_partials(const std::string& acc, Op reduce_op) const override;
  std::string row_store_guard() const override { return "if (threadIdx.x == 0)"; }
  std::string loop_barrier() const override { return "__syncthreads();"; }
  std::string arg_ref(size_t i) const override { return "args.p[" + std::to_string(i) + "]"; }
  bool supports_templates() const override { return false; }
  int64_t row_registers(int64_t rnumel) const override;
  std::string inner_loop_prologue(int64_t rnumel) const override;
  std::string stage_row(const std::string& name, DType type, const std::string& ptr, const std::string& base,
                        int64_t elems) const override;
  std::string op_text(Op op, DType t, const std::vector<std::string>& a, const Attrs& attrs) const override;

 protected:
  std::string backend() const override { return "cuda"; }
  std::string prelude() const override;
  std::string signature(const std::string& name) const override;
};

KernelProgram generate_cuda(const LoweredGraph& g, const Schedule& s);

// Threads per block and blocks for a generated kernel over (numel, rnumel).
struct LaunchShape {
  int64_t blocks = 1;
  int threads = 1;
};
LaunchShape cuda_launch_shape(int64_t numel, int64_t rnumel, int sm_count);
// Threads a row kernel runs per row: about 8 elements a thread, in whole
// warps, at most 1024. The printer and the launcher both use it.
int cuda_row_threads(int64_t rnumel);

}  // namespace fg
