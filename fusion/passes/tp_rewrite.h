// tp_rewrite: moves a replicated residual add in front of the all-reduce
// that precedes it, onto rank 0's row-parallel GEMM:
//
//   %g = linear(%a, %w)            %g' = linear_add_rank0(%a, %w, %r)
//   %s = all_reduce(%g)      ->    %s' = all_reduce(%g')
//   %y = add(%r, %s)               (uses of %y read %s')
//
// sum over ranks of (a_k w_k^T + [k == 0] r) = r + sum of a_k w_k^T, so the
// result is the same sum, provided %r holds the same value on every rank.
// The pass proves that before it rewrites: %r must be replicated by
// construction (a replicated graph input, a full, the result of an
// all-reduce or all-gather, a fast path whose contract makes its result
// replicated given replicated inputs (allreduce_residual_rmsnorm: its
// residual and weight), or views / pointwise ops / reductions of such
// values); results of library GEMMs, attention or anything reading a
// sharded input are not. Rounding differs from the unfused order: the
// all-reduce now carries r, so each of its hops rounds at r's magnitude.
// On tp_block_llama (bf16, 2x/4x H200) RMSE against fp64 went from 0.00436
// to 0.00551 at world size 2 and 0.00462 to 0.00650 at 4 (eager: 0.00510,
// 0.00536): within the accuracy check, and the reason this runs only in
// max-autotune.
//
// The add then costs no kernel: the GEMM adds its C operand (cuBLASLt,
// beta = 1 on rank 0, 0 elsewhere). Every rank compiles the same graph; only
// beta depends on the rank.
//
// Before: a verified, decomposed graph. After: a verified graph; node ids
// change, outputs are kept in order. Each candidate (a sum all-reduce of a
// single-use bias-free linear, read only by an add of a same-typed value) is
// reported as a ledger entry: fused (tp_residual_hoisted) or rejected with
// the reason.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/passes/schedule.h"

namespace fg {

// Which nodes hold the same value on every rank, given the names of the
// graph inputs that do.
std::vector<bool> replicated_nodes(const Graph& g, const std::set<std::string>& replicated_inputs);

// `apart`: sites (residual_site) to leave as they are, each a ledger entry
// rejected with tp_residual_apart. Whether a hoist pays depends on the
// sizes: the GEMM reads its C operand in its epilogue, after the main loop,
// while the add after the all-reduce joins the next kernel's pass over the
// same rows (measured on the H100, tp_block_llama at hidden 2048: the
// output projection with C 16.9 us against 13.7-15.2 alone, its next norm
// 3.5-3.7 against 4.0-4.1 with the add; at seq 2048 the hoist won by 2.4
// us). The worker times both where it can (harness/run/placement.h).
Graph hoist_replicated_residuals(const Graph& g, const std::set<std::string>& replicated_inputs,
                                 std::vector<LedgerEntry>* ledger, const std::set<std::string>& apart = {});

// A hoist site's name, as the ledger shows it: "%30(linear) + %32(add)".
std::string residual_site(const LedgerEntry& e);

}  // namespace fg
