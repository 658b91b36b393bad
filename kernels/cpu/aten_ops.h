// One op of the IR run through LibTorch (ATen): mode A, the fp64 reference,
// host ops, and the extern kernels of compiled graphs (GEMM, attention).
#pragma once
#include <ATen/core/Tensor.h>

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

// Linear layers: [B, M, N] with out[b] = a W[b]^T (+ bias) (then GELU-tanh)
// (+ beta * addend), for weights W[b] of one shape, a [..., K] read as
// [M, K]. bf16/f16/f32 CUDA tensors go through one cuBLASLt call (weights of
// several entries stacked once and cached per weight version); the rest
// through ATen. An undefined bias/addend is absent.
at::Tensor linear_batch(const at::Tensor& a, const std::vector<at::Tensor>& ws, const at::Tensor& bias,
                        const at::Tensor& addend, float beta, bool gelu_tanh = false);
// linear_batch's cuBLASLt path, for inputs of one of those types. Defined by
// the cuda runtime; without it, an error.
at::Tensor cuda_linear(const at::Tensor& a, const std::vector<at::Tensor>& ws, const at::Tensor& bias,
                       const at::Tensor& addend, float beta, bool gelu_tanh);

// Which attention this LibTorch runs: "fused" (LibTorch >= 2, its
// scaled_dot_product_attention) or "composite" (matmul, mask, softmax,
// matmul: LibTorch 1.x, or FUSEGATE_FAULT=attention_fallback).
const char* attention_kernel();

// Runs `n` on `in`; returns its value.
at::Tensor aten_op(const Node& n, const std::vector<at::Tensor>& in, EagerContext& ctx);

}  // namespace fg
