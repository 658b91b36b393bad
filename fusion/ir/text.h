// The .fg text format. It prints and parses; print(parse(t)) == t for text in
// the printer's form, and parse(print(g)) reproduces g (ids, names, attrs and
// types). Grammar:
//
//   file   := graph+                    ('#' starts a comment to end of line)
//   graph  := 'graph' IDENT '(' [arg (',' arg)*] ')' '{' stmt* 'return' [ref (',' ref)*] '}'
//   arg    := ref ':' type
//   stmt   := ref '=' IDENT '(' [ref (',' ref)*] ')' ['{' attr (',' attr)* '}'] ':' type
//   attr   := IDENT '=' (INT | FLOAT | STRING | '[' [INT (',' INT)*] ']')
//   type   := DTYPE '[' [INT (',' INT)*] ']'
//   ref    := '%' (IDENT | INT)
//
// Each statement's declared type must equal the type the op infers. Errors
// name the file, line and column.
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

}  // namespace fg
