// Output digests: `exact` (xxh64 over dtype, shape and bytes) and
// `fingerprint` (numel, sum, sum of squares, max |x|, NaN/Inf counts and a
// few sampled values), and the accuracy judgement against an fp64 run.
#pragma once
#include <ATen/core/Tensor.h>

#include "harness/record/record.h"

namespace fg {

std::string exact_digest(const at::Tensor& t);
record::Fingerprint fingerprint(const at::Tensor& t);
// Candidate and eager outputs judged against the fp64 run: passes when
// RMSE(candidate, fp64) <= m * RMSE(eager, fp64) + rtol/10 (m = 3 for
// bf16/f16, else 2), or when candidate and eager are allclose.
record::AccuracyOutput judge_accuracy(const std::string& name, const at::Tensor& cand, const at::Tensor& eager,
                                      const at::Tensor& fp64);

}  // namespace fg
