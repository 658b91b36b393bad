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

// The inverse, for every backend and policy, before anything is matched: a
// linear that a graph gives with {epilogue = "gelu_tanh"} (a .fg written
// after this pass, a fuzz graph) becomes the linear and a GELU (tanh) of its
// own, the program a user writes and Inductor runs (the GELU a kernel);
// fuse_gemm_epilogues folds it back where it applies. Each split is a ledger
// entry (gemm_epilogue_split).
Graph split_gemm_epilogues(const Graph& g, std::vector<LedgerEntry>* ledger);

// A bias added to a 2-D GEMM's result becomes the GEMM's own (linear with a
// bias: addmm), as Inductor's post-grad pattern folds add(mm, inp) on a GPU
// unless every reader of the sum is pointwise (then the add fuses with them
// instead): the GEMM read by the add alone, a bias of N elements ([N] or
// [1, N]) of the GEMM's dtype. For the cuda backend, after dead code is out
// (readers are live ones). Each fold is a ledger entry (gemm_bias_folded).
Graph fold_gemm_bias_adds(const Graph& g, std::vector<LedgerEntry>* ledger);

}  // namespace fg
