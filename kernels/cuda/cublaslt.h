// GEMMs through cuBLASLt, on raw device pointers and a stream: what the cuda
// backend runs for linear layers. Needs only the CUDA toolkit to build (CI
// compiles it); running it needs a GPU.
//
// Row-major D[b] = A · W[b]^T (+ bias) (then GELU) (+ beta · C) for b < batch, with
// A [m, k], W[b] [n, k], D[b] and C [m, n]; bf16, f16 or f32 storage and f32
// accumulation. W and D advance by n*k and m*n elements per batch entry; A
// and C are shared. One cuBLASLt call, one kernel (cuBLASLt may pick an
// algorithm that adds a split-K reduction; the caller counts one launch).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

namespace fg {

enum class LtType { BF16, F16, F32 };

struct LtGemm {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  LtType type = LtType::BF16;
  bool bias = false;    // a [n] vector added to every row (cuBLASLt's bias epilogue)
  bool gelu_tanh = false;  // GELU (tanh approximation) on the f32 result, after the bias
  bool addend = false;  // beta · C added (C [m, n], read as D's type)
};

// Runs the GEMM on `stream`; "" on success, else what failed. Plans
// (descriptors and the chosen algorithm) are cached per shape and device.
std::string lt_gemm(const LtGemm& g, const void* a, const void* w, const void* bias, const void* c, float beta,
                    void* d, void* workspace, size_t workspace_bytes, cudaStream_t stream);

// The workspace lt_gemm's plans may use.
constexpr size_t kLtWorkspaceBytes = 32u << 20;

}  // namespace fg
