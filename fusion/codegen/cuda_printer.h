// The CUDA C++ dialect of the kernel printer, for NVRTC (sm_90).
//
// Pointwise kernels: a grid-stride loop over chunks of 8 consecutive
// elements (when numel is a multiple of 8), one chunk a thread per step.
// Reduction kernels: one row (x) per block; each thread holds chunks of 8
// consecutive elements of r, about 16 elements in all, in registers across
// the loops over r, and the threads combine their partial results with warp
// shuffles and shared memory.
//
// In a chunk, an access that is contiguous over the 8 lanes and starts on a
// 16-byte boundary is one 16-byte load or store (two for 4-byte types); the
// rest stay scalar. Rows kept across loops stay in their chunks as loaded
// (bf16: two elements a register), and stores convert pairs of values in one
// instruction. Storage stays bf16/f16 where the graph says so; math is in f32.
//
// Measured on an H200, 8192 x 4096 bf16, against the copy bandwidth: RMSNorm
// 37% with scalar 2-byte accesses, 60% with chunks, 79% once rows stayed
// packed and conversions used cvt.rn.bf16(x2).f32 (the kernel had become
// bound by instruction issue); the pointwise chain 68% -> 90%.
#pragma once
#include "fusion/codegen/cstyle_printer.h"

namespace fg {

// Whether a kernel over (numel, rnumel) runs in chunks of
// CStylePrinter::kChunkLanes (the printer and the launcher both use it).
bool cuda_chunked(int64_t numel, int64_t rnumel);

class CudaPrinter : public CStylePrinter {
 public:
  using CStylePrinter::CStylePrinter;
  std::string outer_loop(int64_t numel, bool reduction) const override;
  std::string inner_loop(int64_t rnumel) const override;
  std::string combine_partials(const std::string& acc, Op reduce_op) const override;
  std::string row_store_guard() const override { return "if (threadIdx.x == 0)"; }
  std::string loop_barrier() const override { return "__syncthreads();"; }
  std::string arg_ref(size_t i) const override { return "args.p[" + std::to_string(i) + "]"; }
  int64_t row_registers(int64_t rnumel) const override;
  std::string inner_loop_prologue(int64_t rnumel) const override;
  bool can_chunk(int64_t numel, int64_t rnumel) const override { return cuda_chunked(numel, rnumel); }
  std::string chunk_loop(int64_t numel, int64_t rnumel) const override;
  std::string chunk_prologue(int64_t numel, int64_t rnumel) const override;
  std::string lane_loop() const override;
  std::string lane_prologue(int64_t numel, int64_t rnumel) const override;
  std::string chunk_load(const std::string& st, const std::string& name, const std::string& ptr_at) const override;
  std::string chunk_assign(const std::string& name, const std::string& ptr_at) const override;
  std::string chunk_decl(const std::string& st, const std::string& name) const override;
  std::string out_chunk_decl(const std::string& name) const override;
  std::string chunk_store(DType t, const std::string& name, const std::string& ptr_at) const override;
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
// `chunked`: the kernel was written in chunks (Kernel::chunked).
LaunchShape cuda_launch_shape(int64_t numel, int64_t rnumel, int sm_count, bool chunked);
// Threads a row kernel runs per row: about 16 elements a thread (two chunks
// of 8), in whole warps, at most 1024. The printer and the launcher both use
// it.
int cuda_row_threads(int64_t rnumel);
// Whether a row kernel over rnumel whose rows hold row_words 32-bit
// registers a thread (-1: none held) is compiled for 2048 threads an SM
// (the FG_FULL_OCCUPANCY bound: rows of 64 to 256 threads holding at most
// 16 registers; why: cuda_printer.cpp).
bool cuda_full_occupancy(int64_t rnumel, int64_t row_words);

// The helpers every CUDA kernel source starts with (bf16/f16 conversions,
// rounding, fg_block_reduce): the fast paths' CUDA kernels
// (kernels/fastpaths/cuda/) are compiled with them too.
const std::string& cuda_kernel_prelude();
// What generated CUDA kernels add after it (not in the fast paths' sources).
const std::string& cuda_generated_extras();

}  // namespace fg
