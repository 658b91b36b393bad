// The .fg text format. It prints and parses; print(parse(t)) == t for text in
// the printer's form, and parse(print(g)) reproduces g (ids, names, attrs and
// types). Grammar:
//
//   file   := graph+                    ('#' starts a comment to end of line)
//   graph  := 'graph' IDENT '(' [arg (',' arg)*] ')' '{' body* 'return' [out (',' out)*] '}'
//   arg    := ref ':' type [attrs]
//   out    := ref [attrs]
//   attrs  := '{' attr (',' attr)* '}'
//   body   := stmt | ifstmt | 'disabled' STRING '{' stmt* '}' | 'expect' 'break' STRING
//   ifstmt := ref '=' 'if' '(' ref ')' ':' type arm 'else' arm
//   arm    := '{' stmt* 'yield' ref '}'
//   stmt   := ref '=' IDENT '(' [ref (',' ref)*] ')' ['{' attr (',' attr)* '}'] ':' type
//   attr   := IDENT '=' (INT | FLOAT | STRING | '[' [INT (',' INT)*] ']')
//   type   := DTYPE '[' [INT (',' INT)*] ']'
//   ref    := '%' (IDENT | INT)
//
// Each statement's declared type must equal the type the op infers. Errors
// name the file, line and column.
//
// An if branches on a one-element value (Python's `if x.sum() > 0:`): run
// as a repro, the host reads the value, a graph break as Dynamo makes it,
// and only the taken arm runs; an arm's values are seen outside it only
// through its yield. A disabled region runs its statements eagerly, outside
// any graph (torch.compiler.disable: a break at the region's line), and its
// values are seen after it. In the IR the statements of a block carry "@"
// attributes (no text can spell them), and the if node follows its arms.
//
// `expect break "REASON"` declares a graph break the program is written to
// have in mode C (a print, an if, a disabled region), by the start of its
// reason; a repro without one must compile to one graph (the printer puts
// them first in the body).
//
// An input's attributes say how a repro lays it out across ranks and fills
// it; an output's how it is laid out (check_annotations lists the keys).
// Types are full shapes, the program at world size 1; at world size N a rank
// holds 1/N of a sharded input along `shard` (block by block with `blocks`),
// and the program's shape attributes must hold at every size (reshape with
// -1, slice by blocks/index: fusion/ir/ops.h).
#pragma once
#include <string>
#include <vector>

#include "fusion/ir/graph.h"

namespace fg {

std::string print_graph(const Graph& g);
// Parses every graph in `text`; `file` names it in errors and in the nodes'
// source locations (file:line of the statement).
std::vector<Graph> parse_graphs(const std::string& text, const std::string& file = "<input>");
Graph parse_graph(const std::string& text, const std::string& file = "<input>");
std::vector<Graph> parse_graph_file(const std::string& path);
// Shortest text that reads back as the same double ("1e-06", "0.5", "2").
std::string format_double(double v);
// What is wrong with the layout / init attributes of an input (or, with
// `output`, of an output) of type `t`; empty when nothing is.
//   shard = D            split over ranks along dim D (default: replicated)
//   blocks = [a, b, c]   full block sizes along D (fused q|k|v), cut block by block
//   init = "normal" (mean, std) | "uniform" (low, high) | "ones" | "zeros" |
//          "arange" (start, step) | "fan_in" (normal(0, 1/sqrt(last dim)))
//   dim_order = [1, 0]   the input's dims from outermost in memory to
//                        innermost (torch's dim_order): a transposed input
// Parameters imply their init; outputs take shard and blocks only.
std::string check_annotations(const Attrs& a, const TensorType& t, bool output);

}  // namespace fg
