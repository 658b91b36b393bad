// The catalog: each fast path's name, priority, contract, pattern and
// flags, in priority order (fusion/fastpaths/catalog.h).
#include "fusion/fastpaths/catalog.h"

#include <algorithm>

#include "fusion/fastpaths/patterns.h"

namespace fg {

namespace {

using namespace patterns;

std::vector<FastPathSpec> make_catalog() {
  std::vector<FastPathSpec> c;
  c.push_back({"qkv_rmsnorm_tp", 20,
               "head-sharding aware, distributed norm: each rank sums the squares of the q and k columns it holds, "
               "one all-reduce adds those partial sums over the ranks, then q and k are normalized by the full "
               "projected dimension",
               "q and k slices of one projection (widths a multiple of 8), each through an RMSNorm whose sum of "
               "squares is all-reduced",
               false, match_qkv_tp, {}});
  c.push_back({"qkv_rmsnorm_local", 10,
               "assumes the full normalized dim: normalizes q and k over the columns this rank holds, in one "
               "kernel; right only where a rank holds the whole dimension (world size 1, or a per-shard norm)",
               "q and k slices of one projection (widths a multiple of 8), each through an RMSNorm (all-reduced or "
               "not)",
               true,
               match_qkv_local, {}});
  c.push_back({"allreduce_residual_rmsnorm", 10,
               "replicated output: one-shot all-reduce over the ranks' buffers (shared memory on cpu, CUDA IPC on "
               "cuda; ranks on one host), summed in rank order so every rank holds the same bits, fused with the "
               "residual add and the RMSNorm",
               "all_reduce(g) + r, then an RMSNorm over the whole last dim of the sum (a multiple of 8)", false,
               match_allreduce_norm,
               // every rank sums the same partials in the same order: the
               // result is replicated when the residual and the weight are
               {1, 2}});
  c.back().one_host = true;
  c.back().exchange_only_gain = true;
  // The block's last all-reduce and the residual add after it, where no
  // norm reads the sum: the add done as each chunk's sum is stored, so that
  // the GEMM before the all-reduce stays the plain one on every rank. The
  // residual hoist (passes/tp_rewrite) would put the add into rank 0's GEMM
  // as its C operand instead: on two H100 at tp_block_llama_h4096 that GEMM
  // took 84.1 us where the plain one takes 79.1, and every rank's exchange
  // waits for it (bench/RESULTS.md, "Issue 17, fourteenth step"). Below
  // allreduce_residual_rmsnorm (10), above allreduce_sum (4), which it
  // contains.
  c.push_back({"allreduce_residual", 6,
               "replicated output when the residual is: one-shot all-reduce over the ranks' buffers (shared memory "
               "on cpu, CUDA IPC on cuda; ranks on one host), summed in rank order in f32 and rounded once, then the "
               "residual added and rounded once, so every rank holds the same bits",
               "all_reduce(g) + r, summed, of bf16 whose last dim is a multiple of 8, the sum read by nothing else",
               false, match_allreduce_residual,
               // every rank sums the same partials in the same order: the
               // result is replicated when the residual is
               {1}});
  c.back().one_host = true;
  c.back().exchange_alone = true;
  c.back().max_autotune_only = true;
  c.back().cuda_measured_slower =
      "tp_block_llama_h4096 at world size 2, H100: no faster than allreduce_sum with the residual as the down "
      "projection's C on rank 0 (exchange + GEMM 118.6-123.3 us against 117.9-120.2, forward within noise)";
  // The exchange alone, where no norm follows the all-reduce (the block's
  // last one): allreduce_residual_rmsnorm (10) takes every all-reduce that
  // a norm reads, allreduce_residual (6) one that a residual add reads.
  c.push_back({"allreduce_sum", 4,
               "replicated output: one-shot all-reduce over the ranks' buffers (shared memory on cpu, CUDA IPC on "
               "cuda; ranks on one host), summed in rank order in f32 and rounded once, so every rank holds the "
               "same bits",
               "all_reduce(g), summed, of bf16 whose last dim is a multiple of 8", false, match_allreduce_sum,
               // the partials differ by rank; the sum is the same on
               // every rank by construction
               {}});
  c.back().replicated_always = true;
  c.back().one_host = true;
  c.back().exchange_alone = true;
  // a win over the collective Inductor calls: max-autotune's, as every
  // fast path since (the default policy stays faithful to Inductor)
  c.back().max_autotune_only = true;
  // The MLP's two fast paths. Where the norm before the MLP also ends an
  // all-reduce + residual (world size 2 and up), allreduce_residual_rmsnorm
  // (10) takes the norm: its exchange saves more than the normalized copy
  // the fold saves, and gate_up_swiglu runs after it. Elsewhere the fold
  // (8) outranks the plain kernel (5) where it is eligible; on cuda the cost
  // model refuses the fold, as measured (bench/RESULTS.md, "Issue 17, fifth
  // step"): its producer warps' row sums re-read every x tile from shared
  // memory, which the wgmma and TMA traffic already nearly fill, and the
  // kernel took 100.2-102.3 us at tp_block_llama_h2048 where gate_up_swiglu
  // took 93.0 us and the norm kernel it saves 3.6-3.9 us.
  c.push_back({"rmsnorm_gate_up_swiglu", 8,
               "column-parallel, no exchange: as gate_up_swiglu, with the RMSNorm before it folded in; the norm is "
               "over the whole last dim of x, which every rank holds (a norm whose sum of squares is all-reduced "
               "is not matched), so each rank computes the same row scales as the generic path's norm",
               "silu(linear(n, Wg)) * linear(n, Wu), n = rms_norm(x) * gamma over x's last dim (its sum of squares "
               "not all-reduced) and read by nothing else; gamma, Wg and Wu graph inputs, Wg and Wu [N, K] with N a "
               "multiple of 128 and K of 8",
               false, match_rmsnorm_gate_up_swiglu,
               // a function of its inputs alone, computed the same way on
               // every rank of one GPU model
               {0, 1, 2, 3}});
  c.back().max_autotune_only = true;
  c.back().cuda_gain_only = true;
  c.back().cuda_measured_slower =
      "tp_block_llama_h2048, H100 and H200: its kernel 100.2-102.3 us against gate_up_swiglu's 93.0 us and the "
      "3.6-3.9 us norm kernel it saves";
  c.back().cuda_arch = "sm_90a";
  c.back().source = "gate_up_swiglu";
  c.push_back({"gate_up_swiglu", 5,
               "column-parallel, no exchange: the gate and up weights are sharded alike along their output dim, so "
               "output column j pairs gate column j with up column j on the rank that holds both; each rank "
               "computes its own columns from the whole h, as the generic path does",
               "silu(linear(h, Wg)) * linear(h, Wu): both linears without bias over one bf16 h, Wg and Wu two "
               "graph inputs [N, K] with N a multiple of 128 and K of 8",
               false, match_gate_up_swiglu,
               // a function of its inputs alone, computed the same way on
               // every rank of one GPU model
               {0, 1, 2}});
  c.back().max_autotune_only = true;
  c.back().cuda_gain_only = true;
  c.back().cuda_arch = "sm_90a";
  c.push_back({"causal_attention", 5,
               "head-parallel, no exchange: each rank holds whole heads of q, k and v (the column-parallel qkv "
               "projection shards by head) and attention mixes no heads, so each rank computes its own heads from "
               "its own q, k and v, as the generic path does",
               "scaled_dot_product_attention, causal, over bf16 q [B, H, S, 128] and k, v [B, Hk, S, 128] of one "
               "sequence length, H a multiple of Hk",
               false, match_causal_attention,
               // a function of its inputs alone, computed the same way on
               // every rank of one GPU model
               {0, 1, 2}});
  c.back().max_autotune_only = true;
  c.back().cuda_gain_only = true;
  c.back().cuda_arch = "sm_90a";
  c.back().strided_inputs = true;
  return c;
}

}  // namespace

const std::vector<FastPathSpec>& fast_path_catalog() {
  static const std::vector<FastPathSpec> c = make_catalog();
  return c;
}

const FastPathSpec* find_fast_path(const std::string& name) {
  for (const auto& s : fast_path_catalog())
    if (s.name == name) return &s;
  return nullptr;
}

std::string fast_path_names() {
  std::vector<std::string> n;
  for (const auto& s : fast_path_catalog()) n.push_back(s.name);
  std::sort(n.begin(), n.end());
  std::string r;
  for (const auto& s : n) r += (r.empty() ? "" : ", ") + s;
  return r;
}

}  // namespace fg
