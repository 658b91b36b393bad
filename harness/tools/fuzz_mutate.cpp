#include "harness/tools/fuzz_mutate.h"

#include <sstream>

#include "fusion/ir/ops.h"
#include "fusion/ir/text.h"

namespace fg {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// The 0-based line of `id`'s definition in `lines` (-1: none).
int line_of(const Graph& g, const std::vector<std::string>& lines, int id) {
  const std::string head = "  " + g.ref(id) + " = ";
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind(head, 0) == 0) return static_cast<int>(i);
  return -1;
}

bool binary_pointwise(Op op) {
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow: case Op::Maximum: case Op::Minimum:
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
      return true;
    default:
      return false;
  }
}

// The attribute of `n` of one of `kinds`, its spec, picked by `seed`.
const AttrSpec* attr_of(const Node& n, std::initializer_list<AttrKind> kinds, bool present, uint64_t seed) {
  std::vector<const AttrSpec*> got;
  for (const AttrSpec& a : op_spec(n.op).attrs) {
    bool kind_ok = false;
    for (AttrKind k : kinds) kind_ok = kind_ok || a.kind == k;
    if (kind_ok && (!present || n.attrs.count(a.name))) got.push_back(&a);
  }
  return got.empty() ? nullptr : got[seed % got.size()];
}

}  // namespace

const std::vector<std::string>& mutation_kinds() {
  static const std::vector<std::string> kinds{
      "unknown_attribute", "choice_not_allowed", "attribute_of_wrong_kind", "undefined_value",  "unknown_op",
      "unknown_dtype",     "declared_type",      "operand_missing",         "name_defined_twice", "missing_paren"};
  return kinds;
}

std::optional<Mutant> mutate(const Graph& g, const std::string& kind, uint64_t seed) {
  // the nodes that can take the mistake, then one of them
  std::vector<int> able;
  for (const Node& n : g.nodes) {
    if (n.op == Op::Input || op_spec(n.op).internal || op_spec(n.op).open) continue;
    bool ok = true;
    if (kind == "choice_not_allowed") ok = attr_of(n, {AttrKind::Choice}, false, 0) != nullptr;
    else if (kind == "attribute_of_wrong_kind") ok = attr_of(n, {AttrKind::Int, AttrKind::Ints}, true, 0) != nullptr;
    else if (kind == "undefined_value" || kind == "missing_paren") ok = !n.inputs.empty();
    else if (kind == "operand_missing") ok = binary_pointwise(n.op);
    else if (kind == "name_defined_twice") ok = n.id > 0;
    else if (kind == "declared_type") ok = n.op != Op::Full;  // full's type is its declaration
    if (ok) able.push_back(n.id);
  }
  if (able.empty()) return std::nullopt;
  const Node& n = g.node(able[seed % able.size()]);
  const uint64_t pick = seed / able.size();

  Graph m = g;
  Node& mn = m.nodes[static_cast<size_t>(n.id)];
  Mutant out;
  out.kind = kind;
  std::string op = op_name(n.op);
  if (kind == "unknown_attribute") {
    mn.attrs["fuzz_mutant"] = int64_t{1};
    out.expect = "unknown attribute 'fuzz_mutant'";
  } else if (kind == "choice_not_allowed") {
    const AttrSpec* a = attr_of(n, {AttrKind::Choice}, false, pick);
    mn.attrs[a->name] = std::string("not_a_choice");
    out.expect = "attribute '" + a->name + "' must be one of";
  } else if (kind == "attribute_of_wrong_kind") {
    const AttrSpec* a = attr_of(n, {AttrKind::Int, AttrKind::Ints}, true, pick);
    mn.attrs[a->name] = std::string("text");
    out.expect = "attribute '" + a->name + "' must be";
  }
  std::vector<std::string> lines = lines_of(print_graph(m));
  const int at = line_of(m, lines, n.id);
  if (at < 0) return std::nullopt;
  std::string& l = lines[static_cast<size_t>(at)];
  const size_t eq = l.find(" = ");
  const size_t open = l.find('(', eq);
  const size_t colon = l.rfind(" : ");
  if (eq == std::string::npos || open == std::string::npos || colon == std::string::npos) return std::nullopt;
  const size_t close = l.rfind(')', colon);
  if (kind == "undefined_value") {
    // the first operand's reference becomes a name nothing defines
    const size_t end = l.find_first_of(",)", open);
    l = l.substr(0, open + 1) + "%fuzz_undefined" + l.substr(end);
    out.expect = "use of undefined value %fuzz_undefined";
  } else if (kind == "unknown_op") {
    l.insert(open, "q");
    out.expect = "unknown op '" + op + "q'";
  } else if (kind == "unknown_dtype") {
    const size_t br = l.find('[', colon);
    if (br == std::string::npos) return std::nullopt;
    l = l.substr(0, colon + 3) + "q32" + l.substr(br);
    out.expect = "unknown dtype 'q32'";
  } else if (kind == "declared_type") {
    // the declared shape with one more leading dim than the op gives
    const size_t br = l.find('[', colon);
    if (br == std::string::npos) return std::nullopt;
    l.insert(br + 1, l[br + 1] == ']' ? "3" : "3,");
    out.expect = "declared type";
  } else if (kind == "operand_missing") {
    const size_t comma = l.find(", ", open);
    if (comma == std::string::npos || close == std::string::npos) return std::nullopt;
    l.erase(comma, close - comma);
    out.expect = op + ": takes 2 inputs, got 1";
  } else if (kind == "name_defined_twice") {
    // defines the name of a value defined before it (an input's or a node's)
    const std::string other = g.ref(static_cast<int>(pick % static_cast<uint64_t>(n.id)));
    l = "  " + other + l.substr(eq);
    out.expect = "redefinition of value " + other;
  } else if (kind == "missing_paren") {
    if (close == std::string::npos) return std::nullopt;
    l.erase(close, 1);
    out.expect = "expected";
  } else if (out.expect.empty()) {
    return std::nullopt;  // not a kind
  }
  out.text = joined(lines);
  out.line = at + 1;
  return out;
}

}  // namespace fg
