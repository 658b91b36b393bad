// One op of the IR run through LibTorch (ATen): mode A, the fp64 reference,
// host ops, and the extern kernels of compiled graphs (GEMM, attention).
#pragma once
#include <ATen/ATen.h>

#include <vector>

#include "fusion/ir/graph.h"

namespace fg {

class Collectives;

at::ScalarType to_aten(DType t);
DType from_aten(at::ScalarType t);

struct EagerContext {
  Collectives* collectives = nullptr;
  int rank = 0;                  // linear_add_rank0 adds its addend on rank 0 only
  at::Device device = at::kCPU;  // where new tensors (full) are made
  bool upcast_fp64 = false;  // the fp64 reference: every floating type becomes f64
  int launches = 0;          // ATen kernels launched by the calls so far (views count 0)
};

// Linear layers on CUDA tensors: [B, M, N] with out[b] = a W[b]^T (+ bias)
// (then GELU-tanh) (+ beta * addend), a [..., K] read as [M, K]; one cuBLASLt call (weights
// of several entries are stacked once and cached per weight version). An
// undefined bias/addend is absent. Types other than bf16/f16/f32 go through
// ATen. Defined by the cuda runtime; without it, an error.
at::Tensor cuda_linear(const at::Tensor& a, const std::vector<at::Tensor>& ws, const at::Tensor& bias,
                       const at::Tensor& addend, float beta, bool gelu_tanh = false);

// Runs `n` on `in`; returns its value.
at::Tensor aten_op(const Node& n, const std::vector<at::Tensor>& in, EagerContext& ctx);

}  // namespace fg
