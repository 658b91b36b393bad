// The attributes a .fg input or output may carry: how it is laid out
// across ranks and how it is filled (fusion/ir/text.h: check_annotations).
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

namespace {

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (s == n) return true;
  return false;
}

}  // namespace

std::string check_annotations(const Attrs& a, const TensorType& t, bool output) {
  // names and kinds: the op reference's input entry; an output takes its
  // layout only
  for (const auto& [k, v] : a)
    if (output && !one_of(k, {"shard", "blocks"})) return "unknown attribute '" + k + "' (an output takes shard, blocks)";
  AttrProblem bad;
  if (!check_attrs(Op::Input, a, &bad)) return bad.message;
  if (a.count("shard")) {
    const int64_t r = static_cast<int64_t>(t.shape.size());
    int64_t d = std::get<int64_t>(a.at("shard"));
    if (d < -r || d >= r) return "shard dim " + std::to_string(d) + " is out of range for " + t.str();
    if (d < 0) d += r;
    if (a.count("blocks")) {
      const auto& b = std::get<std::vector<int64_t>>(a.at("blocks"));
      int64_t total = 0;
      for (int64_t x : b) {
        if (x < 1) return "every block needs a size of at least 1, got " + shape_str(b);
        total += x;
      }
      if (b.empty() || total != t.shape[static_cast<size_t>(d)])
        return "blocks " + shape_str(b) + " must add up to dim " + std::to_string(d) + " of " + t.str();
    }
  } else if (a.count("blocks")) {
    return "blocks need a shard dim";
  }
  if (output) return "";
  if (a.count("dim_order")) {
    // a permutation of the dims, outermost in memory first (torch's dim_order)
    std::vector<int64_t> o = std::get<std::vector<int64_t>>(a.at("dim_order"));
    std::vector<int64_t> sorted = o;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i)
      if (sorted[i] != static_cast<int64_t>(i) || sorted.size() != t.shape.size())
        return "dim_order " + shape_str(o) + " must order every dim of " + t.str() + " once";
  }
  // which initialisation the parameters name, and that they agree
  std::string init = a.count("init") ? std::get<std::string>(a.at("init")) : "";
  auto implied = [&](std::initializer_list<const char*> keys, const char* kind) -> std::string {
    for (const char* k : keys)
      if (a.count(k)) {
        if (init.empty()) init = kind;
        if (init != kind) return std::string("attribute '") + k + "' belongs to init \"" + kind + "\", not \"" + init + "\"";
      }
    return "";
  };
  for (const auto& e : {implied({"mean", "std"}, "normal"), implied({"low", "high"}, "uniform"),
                        implied({"start", "step"}, "arange")})
    if (!e.empty()) return e;
  if ((init == "normal" || init == "fan_in") && !is_floating(t.dtype))
    return "init \"" + init + "\" needs a floating input, not " + t.str();
  if (init == "fan_in" && t.shape.empty()) return "init \"fan_in\" needs a dim to take the fan-in from";
  if (a.count("std") && attr_float_or(a, "std", 1.0) < 0) return "std must not be negative";
  if (init == "uniform" && !(attr_float_or(a, "low", 0.0) < attr_float_or(a, "high", 1.0)))
    return "uniform needs low < high";
  return "";
}

}  // namespace fg
