// The graph IR: a list of single-output nodes in topological order. A node
// refers to its inputs by id (its index in `nodes`). Inputs are `input`
// nodes; outputs are listed in `outputs`.
#pragma once
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fusion/ir/ops.h"
#include "fusion/ir/types.h"

namespace fg {

struct Node {
  int id = -1;
  Op op = Op::Input;
  std::vector<int> inputs;
  Attrs attrs;
  TensorType type;
  std::string name;  // text name without '%': an input's name, or empty (printed as its id)
  SourceLoc loc;     // where the repro created it; not printed in .fg text
  std::string origin;  // ATen name of the op this node was decomposed from (kernel names); empty: its own
};

struct Graph {
  std::string name = "g";
  std::vector<Node> nodes;
  std::vector<int> outputs;
  // Per output, how a .fg repro says it is laid out across ranks ({shard =
  // d, blocks = [...]}); empty, or as long as `outputs`. Input nodes carry
  // theirs (layout, init) in their attrs. Passes keep both; no pass reads them.
  std::vector<Attrs> output_attrs;
  // A .fg repro's `expect break "REASON"` statements: the graph breaks it
  // is written to have when compiled (a harness invariant; no pass reads
  // them).
  std::vector<std::string> expected_breaks;

  // Appends a node, inferring its type (input/full take `type` as given).
  int add(Op op, std::vector<int> inputs, Attrs attrs = {}, const TensorType* type = nullptr,
          std::string name = {}, SourceLoc loc = {});
  int add_input(const std::string& name, const TensorType& type, SourceLoc loc = {});
  const Node& node(int id) const { return nodes.at(static_cast<size_t>(id)); }
  std::vector<int> input_ids() const;
  // users[i] = ids of nodes reading node i (an output counts as no user).
  std::vector<std::vector<int>> users() const;
  // The name a node prints as: "%x" or "%12".
  std::string ref(int id) const;
  // Does a node carry this name? (An index of the names `add` gave, kept up
  // with `nodes` as it grows: looking through every node for each one added
  // made building a graph quadratic in its size.)
  bool has_name(const std::string& name) const;

  // has_name's index: names of nodes [0, named_upto_).
  mutable std::unordered_map<std::string, int> name_ids_;
  mutable size_t named_upto_ = 0;
};

// Builds a graph from `g` node by node, in order, as passes do: `emit` gets
// each node, the ids its inputs have in the new graph, the new ids of the
// nodes before it (`map`), and the new graph; it returns the node's id there
// (an existing id where the node folds into another). Outputs follow.
using EmitFn = std::function<int(const Node& n, const std::vector<int>& in, const std::vector<int>& map, Graph& out)>;
Graph rebuild(const Graph& g, const EmitFn& emit);
// `n` as it is, with inputs `in` (name, attributes, location and origin kept).
int copy_node(Graph& out, const Node& n, const std::vector<int>& in);

// Checks ids, topological order, arities, attributes and inferred types, and
// that outputs exist. Throws InternalError (a pass broke the IR) or, with
// `as_user`, UserError (a hand-written .fg is wrong), naming the node.
void verify(const Graph& g, bool as_user = false);

// Structural hash of the printed graph; used for compile caches and to check
// that every rank compiled the same graphs.
std::string graph_hash(const Graph& g);

}  // namespace fg
