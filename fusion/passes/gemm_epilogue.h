// gemm_epilogue: a GELU (tanh) that is the only reader of a linear layer's
// result becomes the GEMM's epilogue, {epilogue = "gelu_tanh"} on the
// linear: cuBLASLt applies it to the f32 result (with the bias, if any)
// before the one rounding to the storage type, so the pointwise kernel that
// would read and write the whole activation is gone. (Unfused, the GEMM's
// result is rounded once before the GELU and once after.)
//
// Runs for the cuda backend in max-autotune, where GEMMs are cuBLASLt calls;
// the cpu backend has its own GEMM templates with epilogues. Before: a
// verified, decomposed graph. After: a verified graph; node ids change,
// outputs are kept in order. Each fusion is a ledger entry
// (gemm_epilogue).
#pragma once
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/passes/schedule.h"

namespace fg {

Graph fuse_gemm_epilogues(const Graph& g, std::vector<LedgerEntry>* ledger);

}  // namespace fg
