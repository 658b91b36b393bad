// dead_code: removes nodes whose values nothing reads, before anything is
// matched, lowered or scheduled, as Inductor's graph is cleaned of dead code
// first (torch.fx's eliminate_dead_code, which keeps impure nodes).
//
// Removed: pure values (pointwise, reductions, views, library kernels,
// indirect stores, constants) read by no output and no live node. Kept: the
// graph's inputs, mutations (copy_), fast paths, and collectives. A
// collective whose result is unused still runs, as under torch.compile:
// PyTorch registers the functional collectives' wait_tensor as
// side-effectful, so Dynamo's graph keeps the call and Inductor its kernel.
// Every removal and every unused collective kept is a ledger entry.
//
// Before: a verified graph. After: a verified graph; node ids change,
// outputs are kept in order.
#pragma once
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/passes/fusion_ledger.h"

namespace fg {
Graph eliminate_dead_code(const Graph& g, std::vector<LedgerEntry>* ledger);
// live[i]: node i is kept (read by an output or a kept node, or kept for
// itself), as eliminate_dead_code decides.
std::vector<bool> live_nodes(const Graph& g);
}
