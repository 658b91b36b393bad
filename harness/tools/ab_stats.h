// The figures of `fusegate ab` for one output on one rank (LibTorch side):
// the generic path's and the fast path's outputs against each other and
// against the fp64 reference. The verdict over them is harness/tools/ab.h's.
#pragma once
#include <ATen/core/Tensor.h>

#include <string>

#include "harness/record/record.h"

namespace fg {

// Every figure of record::AbOutput: digests of both paths, elements that
// differ, the largest differences, relative L2 distances to fp64, ulp
// histograms and the five elements farthest from fp64. Ulps are those of
// the output dtype at the reference value's magnitude.
record::AbOutput ab_compare(const std::string& name, bool replicated, const at::Tensor& generic, const at::Tensor& fast,
                            const at::Tensor& fp64);

}  // namespace fg
