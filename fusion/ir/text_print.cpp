// A graph as .fg text (fusion/ir/text.h: print_graph, format_double).
#include "fusion/ir/text.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "fusion/errors.h"

namespace fg {

std::string format_double(double v) {
  // NaN's sign carries no meaning here, so print one spelling for all NaNs.
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  // An integral double must not read back as an int64 attribute.
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

namespace {

std::string quote(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    switch (c) {
      case '"': r += "\\\""; break;
      case '\\': r += "\\\\"; break;
      // Escaped so that a statement always stays on one line.
      case '\n': r += "\\n"; break;
      case '\t': r += "\\t"; break;
      default: r += c;
    }
  }
  return r + "\"";
}

std::string attr_text(const Attr& a) {
  if (auto* i = std::get_if<int64_t>(&a)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&a)) return format_double(*d);
  if (auto* s = std::get_if<std::string>(&a)) return quote(*s);
  const auto& v = std::get<std::vector<int64_t>>(a);
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
  return r + "]";
}

// " {k = v, ...}", or nothing for no attributes; the format's own ("@if",
// "@disabled": the blocks a statement is in) are the blocks' syntax instead.
std::string attrs_text(const Attrs& attrs) {
  std::string r;
  for (const auto& [k, v] : attrs) {
    if (!k.empty() && k[0] == '@') continue;
    r += (r.empty() ? " {" : ", ") + k + " = " + attr_text(v);
  }
  return r.empty() ? r : r + "}";
}

int64_t tag_of(const Node& n, const char* key) {
  auto it = n.attrs.find(key);
  return it == n.attrs.end() ? -1 : std::get<int64_t>(it->second);
}

std::string stmt_text(const Graph& g, const Node& n, const std::string& indent) {
  std::string r = indent + g.ref(n.id) + " = " + op_name(n.op) + "(";
  for (size_t i = 0; i < n.inputs.size(); ++i) r += (i ? ", " : "") + g.ref(n.inputs[i]);
  return r + ")" + attrs_text(n.attrs) + " : " + n.type.str() + "\n";
}

}  // namespace

std::string print_graph(const Graph& g) {
  std::string r = "graph " + g.name + "(";
  bool first = true;
  for (const Node& n : g.nodes) {
    if (n.op != Op::Input) continue;
    r += (first ? "" : ", ") + g.ref(n.id) + ": " + n.type.str() + attrs_text(n.attrs);
    first = false;
  }
  r += ") {\n";
  for (const std::string& reason : g.expected_breaks) r += "  expect break " + quote(reason) + "\n";
  std::set<int64_t> ifs_done;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op == Op::Input) continue;
    const int64_t k = tag_of(n, "@if");
    if (k >= 0) {
      // the whole if, its arms and their yields, where its first node is
      if (!ifs_done.insert(k).second) continue;
      const Node* head = nullptr;
      for (const Node& m : g.nodes)
        if (m.op == Op::If && tag_of(m, "@if") == k) head = &m;
      if (!head) continue;  // arms without their if: not from the parser
      r += "  " + g.ref(head->id) + " = if(" + g.ref(head->inputs[0]) + ") : " + head->type.str() + " {\n";
      for (int64_t arm : {1, 0}) {
        for (const Node& m : g.nodes)
          if (m.op != Op::If && tag_of(m, "@if") == k && tag_of(m, "@arm") == arm) r += stmt_text(g, m, "    ");
        r += "    yield " + g.ref(head->inputs[arm ? 1 : 2]) + "\n" + (arm ? "  } else {\n" : "  }\n");
      }
      continue;
    }
    const int64_t d = tag_of(n, "@disabled");
    if (d >= 0) {
      r += "  disabled " + quote(std::get<std::string>(n.attrs.at("@disabled_name"))) + " {\n";
      for (; i < g.nodes.size() && tag_of(g.nodes[i], "@disabled") == d; ++i) r += stmt_text(g, g.nodes[i], "    ");
      --i;
      r += "  }\n";
      continue;
    }
    r += stmt_text(g, n, "  ");
  }
  r += "  return";
  for (size_t i = 0; i < g.outputs.size(); ++i)
    r += (i ? ", " : " ") + g.ref(g.outputs[i]) + (i < g.output_attrs.size() ? attrs_text(g.output_attrs[i]) : "");
  return r + "\n}\n";
}

}  // namespace fg
