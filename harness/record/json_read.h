// Tolerant reads of RunRecords and golden files: records come from other
// processes and golden files from people, so every accessor accepts a
// missing or mistyped key (nullptr, "", an empty array, NaN) instead of
// throwing; the comparisons decide what an absence means.
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
// Ranks keyed by their "rank" field (the list's order is not a promise).
std::map<long long, const nlohmann::json*> ranks_by_id(const nlohmann::json& rec);
std::map<std::string, const nlohmann::json*> outputs_by_name(const nlohmann::json& rank);

}  // namespace fg
