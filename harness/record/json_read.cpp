#include "harness/record/json_read.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace fg {
using nlohmann::json;

const json* field(const json& o, const char* key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

std::string text_of(const json* v) {
  if (!v) return "";
  if (v->is_string()) return v->get<std::string>();
  return v->dump();
}

std::string text_of(const json& o, const char* key) { return text_of(field(o, key)); }

const json& array_of(const json& o, const char* key) {
  static const json empty = json::array();
  const json* v = field(o, key);
  return v && v->is_array() ? *v : empty;
}

// JSON cannot hold NaN or Inf: a writer that meets one stores null.
double number(const json* v) {
  if (v && v->is_number()) return v->get<double>();
  return std::numeric_limits<double>::quiet_NaN();
}

std::string fmt(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// Long name lists would drown the message that matters.
std::string join_capped(const std::vector<std::string>& v, size_t cap) {
  if (v.size() <= cap) return join(v, ", ");
  std::vector<std::string> head(v.begin(), v.begin() + cap);
  return join(head, ", ") + " and " + std::to_string(v.size() - cap) + " more";
}

}  // namespace fg
