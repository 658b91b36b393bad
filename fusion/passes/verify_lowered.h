// Verifiers between the passes after lower, as verify(Graph) is for graph
// passes: they check what the next pass relies on and name the pass that
// broke it. compile() runs them when verification is on (debug builds, the
// tests, FUSEGATE_VERIFY=1); a failure is an internal_error.
//
// verify_lowered: node ids are positions; every buffer id is in range; every
// buffer a node reads is a graph input or written by an earlier node (nodes
// are in execution order); every dependency is an earlier node; every graph
// output is produced; extern and collective nodes carry an op and their
// argument views.
//
// verify_schedule: every scheduler node is in exactly one group; groups run
// in an order where each kernel's inputs are available (its nodes' reads
// are inputs or written earlier, its dependencies ran earlier); an extern or
// collective group holds extern or collective nodes only; and the ledger
// agrees with the groups: both sides of every fused entry end in one group.
#pragma once
#include "fusion/passes/lower.h"
#include "fusion/passes/schedule.h"

namespace fg {

// Verification on: a debug build, or FUSEGATE_VERIFY set to anything but 0.
bool verify_passes_enabled();

void verify_lowered(const LoweredGraph& g, const char* after_pass);
void verify_schedule(const LoweredGraph& g, const Schedule& s, const char* after_pass);

}  // namespace fg
