// vector_gemm: a GEMM with one row or one column (M or N of 1) as the
// product of its operands summed over K, the program Inductor runs for it
// on a GPU under max-autotune, whose coordinate-descent tuning turns on its
// mm and bmm decompositions: mm(a, b) -> (a[:, :, None] * b[None]).sum(1),
// bmm alike over a batch, computed in f32 for bf16 and f16 (opmath) and
// rounded once. The sum is then an ordinary reduction (a pointwise value
// below 8 terms) that fuses with what makes its operands and what reads it.
//
// Which GEMM Inductor's decompositions see is ATen's: `linear` is addmm for
// a 2-D input with a bias and for a contiguous one (flattened), else
// matmul of the weight's transpose plus the bias; matmul folds a >= 3-D
// left operand into an mm when its leading dims collapse without a copy,
// else it is a bmm over the broadcast batch (M the operand's second-to-last
// dim). An addmm is not decomposed on a GPU, unless Inductor's post-grad
// pass takes its bias add apart (unfuse_bias_add_to_pointwise: an f32 or
// f64 bias and every reader pointwise, through views; not a graph output),
// leaving an mm that is.
//
// Used by decompose (the cuda backend in max-autotune) before anything is
// matched, as the decompositions run when Inductor traces the graph.
#pragma once
#include <vector>

#include "fusion/ir/graph.h"

namespace fg {

// The strides ATen gives each value of `g` as a user's program makes it
// (inputs contiguous; transposes, permutes, expands and slices views; a
// reshape a view where its strides allow, else a copy; a pointwise result
// laid out as its first full-size operand when that one is dense but
// permuted; everything else contiguous).
std::vector<Shape> aten_strides(const Graph& g);

// Inductor's is_pointwise_use for every reader of node `id`: each a
// pointwise op as ATen tags them, or a view all of whose readers are; a
// graph output is neither. `live_users[i]`: the readers of node i kept.
bool only_pointwise_readers(const Graph& g, int id, const std::vector<std::vector<int>>& live_users,
                            const std::vector<bool>& is_output);

// What Inductor decomposes `n` into, if anything: a linear or matmul node of
// `g` whose GEMM has M or N of 1. `live[i]`: node i is read by something
// that is kept (dead readers do not count as readers).
enum class VectorGemm { None, Mm, Bmm };
VectorGemm vector_gemm(const Graph& g, const Node& n, const std::vector<Shape>& strides,
                       const std::vector<std::vector<int>>& live_users, const std::vector<bool>& is_output);

// Emits the decomposition of `n` (vector_gemm gave `kind`) into `out`, its
// inputs `in`; returns the id of the value that replaces it.
int emit_vector_gemm(const Node& n, VectorGemm kind, const std::vector<int>& in, Graph& out);

}  // namespace fg
