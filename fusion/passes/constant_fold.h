// constant_fold: Inductor's uniform-value constant folding, on cuda (its
// joint-graph pass constant_fold_uniform_value, on by default and run for
// inference graphs too), before anything is matched, lowered or scheduled.
//
// A value is uniform when every element is the same number: a `full`, a
// view of a uniform value (reshape, permute, transpose, slice, expand), or
// a pointwise op (ATen's pointwise tag: arithmetic, math functions,
// comparisons, where, clamp, cast, contiguous's clone) whose inputs are all
// uniform. Its number is what the op gives on one element of each input,
// rounded to the result's dtype. A uniform value some node that is not
// uniform reads (or the graph returns) is kept; one whose every user is
// uniform is not. A kept value that is not a view laid out non-contiguously
// (an expand, a permute), is not u8, and shares its storage with no other
// kept value (a view and its base both kept) becomes one `full` of its
// shape and number. Then the arithmetic no-ops Inductor removes after it
// (remove_no_ops): x + 0, 0 + x, x - 0, x * 1, 1 * x and x / 1, where the 0
// or 1 is such a new `full` and x has the result's shape (a cast where only
// the dtype differs), are x.
//
// Each folded value and each removed no-op is a ledger entry
// (`constant_folded`, `noop_arithmetic_removed`). The values that only
// fed a folded one are left for dead code (passes/dead_code.h).
//
// Before: a verified graph. After: a verified graph; node ids change,
// outputs are kept in order.
#pragma once
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/passes/fusion_ledger.h"

namespace fg {
Graph fold_uniform_constants(const Graph& g, std::vector<LedgerEntry>* ledger);

// A cast of a cast between floating types (f16, bf16, f32, f64), the inner
// one read by nothing else and not returned, is one cast from the first
// value (none where that value has the last dtype already): Inductor's
// joint-graph pattern pointless_convert, which drops the rounding in the
// middle (AMP makes such chains; so do decompositions that compute in f32
// and round back, one after another; not a cast decompose marks
// @lowering_cast, which Inductor makes inside a lowering, mean's and var's,
// where no pattern sees it). After decompose, on cuda. Each
// collapse is a ledger entry (`cast_chain_collapsed`).
Graph collapse_cast_chains(const Graph& g, std::vector<LedgerEntry>* ledger);
}
