// Tolerant reads of the JSON files that are not records (proofs, the GEMM
// caches, fuzz's per-rank results, profiles; a record or a golden is read
// into its types: harness/record/record.h): every accessor accepts a
// missing or mistyped key (nullptr, "", an empty array, NaN) instead of
// throwing, and the caller decides what an absence means. And the small
// text helpers the reports share.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace fg {

const nlohmann::json* field(const nlohmann::json& o, const char* key);
// A string as it is; anything else as its JSON text; "" when absent.
std::string text_of(const nlohmann::json* v);
std::string text_of(const nlohmann::json& o, const char* key);
// The array at `key`, or an empty one.
const nlohmann::json& array_of(const nlohmann::json& o, const char* key);
// A number, or NaN (JSON cannot hold NaN or Inf: a writer stores null).
double number(const nlohmann::json* v);
std::string fmt(double x);  // %.9g
std::string join(const std::vector<std::string>& v, const std::string& sep);
// Joined with ", ", the first `cap` and "and N more".
std::string join_capped(const std::vector<std::string>& v, size_t cap = 8);

}  // namespace fg
