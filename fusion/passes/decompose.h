// decompose: rewrites composite ops (rms_norm, layer_norm, softmax,
// log_softmax, mean, var) into primitive pointwise ops and sum/amax
// reductions, so that the
// scheduler sees what it can fuse. Silu, gelu and sigmoid stay primitive:
// the code printers know them.
//
// Before: a verified graph without host ops. After: a verified graph whose
// reductions are only sum, amax and amin; node ids change, outputs are kept in
// order; new nodes carry the source location of the node they replace and,
// in `origin`, its ATen name where that names kernels better.
//
// Each rewrite is one application of the stage `decompositions`
// (fusion/bisect.h): FUSEGATE_BISECT=decompositions:K makes the first K of
// the graph and leaves the rest whole (lower runs them as library calls);
// `applied`, when given, gets one entry per rewrite made.
#pragma once
#include <vector>

#include "fusion/bisect.h"
#include "fusion/ir/graph.h"

namespace fg {
// Whether decompose rewrites `op` (else it passes through unchanged).
bool decomposes(Op op);
// `gpu` (the cuda backend), as Inductor decomposes for Triton: a softmax's
// and a log-softmax's row sum takes exp(x - max) of its own and the result
// another (its post-grad pattern prepare_softmax_online: the max and the sum
// one reduction, the result a pointwise node that shares nothing with the
// sum; without it the result reads the sum's exp(x - max), as ATen's
// decomposition writes it and Inductor's C++ backend keeps it); and a
// variance of one row shorter than 8 elements stays a reduction (Inductor's
// Welford reduction, never unrolled) where other short rows unroll.
Graph decompose(const Graph& g, std::vector<StageApplication>* applied = nullptr, bool gpu = false,
                bool vector_gemms = false);
}
