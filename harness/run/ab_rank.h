// `fusegate ab`, one rank (harness/run/ab_rank.cpp).
#pragma once
#include <ATen/core/Tensor.h>

#include <map>
#include <set>
#include <string>

#include "harness/run/run.h"
#include "kernels/collectives/collectives.h"
#include "repros/registry.h"

namespace fg {

// `fusegate ab`, one rank: the generic path, the fast path (forced) and the
// fp64 reference on the same inputs; the comparison goes into the record.
int ab_rank(const RunSpec& spec, const Repro& r, Collectives& coll, int rank,
            const std::map<std::string, at::Tensor>& inputs, const std::set<std::string>& replicated,
            const std::string& out_path);

}  // namespace fg
