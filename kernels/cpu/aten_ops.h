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
  at::Device device = at::kCPU;  // where new tensors (full) are made
  bool upcast_fp64 = false;  // the fp64 reference: every floating type becomes f64
  int launches = 0;          // ATen kernels launched by the calls so far (views count 0)
};

// Runs `n` on `in`; returns its value.
at::Tensor aten_op(const Node& n, const std::vector<at::Tensor>& in, EagerContext& ctx);

}  // namespace fg
