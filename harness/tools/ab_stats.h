// The figures of `fusegate ab` for one output on one rank (LibTorch side):
// the generic path's and the fast path's outputs against each other and
// against the fp64 reference. The verdict over them is harness/tools/ab.h's.
#pragma once
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <string>

namespace fg {

// {"name", "replicated", "dtype", "numel", "exact_generic", "exact_fast",
//  "identical", "differing", "max_abs_fast_vs_generic", "max_abs_generic",
//  "max_abs_fast", "rel_l2_generic", "rel_l2_fast", "nonfinite_fast",
//  "ulps_fast_vs_generic": {bin: count}, "ulps_fast_vs_fp64": {...},
//  "ulps_generic_vs_fp64": {...}, "worst": [{"index", "at", "fast", "generic", "fp64"}]}
// Ulps are those of the output dtype at the reference value's magnitude.
nlohmann::json ab_compare(const std::string& name, bool replicated, const at::Tensor& generic, const at::Tensor& fast,
                          const at::Tensor& fp64);

}  // namespace fg
