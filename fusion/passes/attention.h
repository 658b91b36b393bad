// attention: which kernel runs a scaled dot-product attention on cuda, and
// what the graph is then. PyTorch picks the first fused kernel whose
// constraints the call meets (cuDNN, then flash, then memory-efficient, on
// sm90 with a recent cuDNN) and otherwise composes the attention of ATen ops
// (its "math" form); Inductor compiles what PyTorch chose, so the kernels it
// generates differ by that choice:
//   - a fused kernel: the sdpa node stays, one library call;
//   - flash with a head dim that is not a multiple of 8: q, k and v padded
//     with zeros to the next multiple (three copy kernels), the call with
//     the scale of the head dim given, its result sliced back (a view);
//   - the math form: q and k^T each scaled by sqrt(scale) (in f32 for bf16
//     and f16), one batched GEMM, the causal mask added, a softmax whose
//     fully masked rows are zeros, the GEMM with v (in f32), the result
//     cast back: generated kernels around two library GEMMs.
// The constraints are the ones of PyTorch's sdp_utils for an H100/H200
// (dense, contiguous inputs, no dropout, no mask but the causal one):
//   cuDNN: bf16/f16, head dims of q/k and v multiples of 8 and at most 256,
//          more than one key;
//   flash: bf16/f16, one head dim for q, k and v, at most 256; causal only
//          with as many queries as keys;
//   memory-efficient: bf16/f16/f32, both head dims multiples of 8 (bf16,
//          f16) or 4 (f32).
// Grouped-query attention is taken by all three; the math form repeats each
// k/v head for its group.
//
// Runs for the cuda backend before decompose. Before: a verified graph.
// After: a verified graph; node ids change, outputs are kept in order. Each
// attention not left to a fused kernel as it is is a ledger entry
// (attention_math_form, attention_head_dim_padded).
#pragma once
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/passes/schedule.h"

namespace fg {

enum class AttentionKernel { CuDnn, Flash, MemEfficient, Math };
const char* attention_kernel_name(AttentionKernel k);  // "cudnn", "flash", ...

// The kernel PyTorch picks for an sdpa node of `g` on an H100/H200.
AttentionKernel choose_attention_kernel(const Graph& g, const Node& sdpa);

Graph lower_attention_choices(const Graph& g, std::vector<LedgerEntry>* ledger);

}  // namespace fg
