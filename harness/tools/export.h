// fusegate export: a repro as a .fg text graph, so that a C++ repro can be
// read, edited, minified and handed on without the source it was written
// in. The text is mode C's graph, written as a .fg is written: at world
// size 1, with each input's layout, init and `seed` (its values are the
// repro's), and shape attributes that mean the same at every world size
// (reshape with -1, slice by blocks/index), found by capturing the repro
// at a second world size and seeing which of them scale. The export is
// checked before it is written: captured at every world size the repro
// runs at (1, 2, 4, 8), it gives the repro's own graph, node by node.
#pragma once
#include <string>
#include <vector>

#include "fusion/capture/session.h"
#include "fusion/ir/graph.h"

namespace fg {

struct Repro;

// The repro's graphs at `world` (rank 0) in `mode` (B or C), captured
// without running anything (values are types); `breaks`, when given, gets
// each graph break's reason.
std::vector<Graph> capture_types(const Repro& r, int world, Mode mode = Mode::Compiled,
                                 std::vector<std::string>* breaks = nullptr);

// The exported graph (named `name`); a UserError where a repro cannot be
// written as one .fg graph (a graph break in mode C, an attribute that
// changes with the world size in a way the text cannot say).
Graph export_graph(const Repro& r, const std::string& name);
// Its text, with a header saying where it came from.
std::string export_text(const Repro& r, const std::string& name);

// `fusegate export REPRO [--out FILE]`: the text to FILE (atomically) or
// stdout. 0 written, 2 bad input.
int cmd_export(const Repro& r, const std::string& out);

}  // namespace fg
