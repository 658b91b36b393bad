// The record's types (harness/record/record.h): they read and write every
// field of every committed golden, they are what record.schema.json says,
// and a value of another type is named by its path.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "harness/record/record.h"

namespace fg {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

json read_file(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// Every golden, read into the types and written back, is the same JSON: no
// field of a golden lies outside the types (a field the types lacked would
// be dropped here, and compared by nobody).
TEST(RecordTypes, EveryCommittedGoldenRoundTrips) {
  int n = 0;
  for (const char* backend : {"cpu", "cuda"}) {
    const fs::path root = fs::path(FUSEGATE_SOURCE_DIR) / "golden" / backend;
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (e.path().extension() != ".json") continue;
      const json j = read_file(e.path());
      const json back = record::to_json(record::from_json(j));
      EXPECT_EQ(back, j) << e.path() << ": first difference "
                         << json::diff(j, back).dump().substr(0, 300);
      ++n;
    }
  }
  EXPECT_GT(n, 100) << "the committed goldens were not found";
}

// The schema's node for `node`: $ref resolved, allOf merged.
json resolve(const json& node, const json& root) {
  if (node.contains("$ref")) {
    const std::string ref = node["$ref"];  // "#/definitions/x"
    return resolve(root.at(json::json_pointer(ref.substr(1))), root);
  }
  if (node.contains("allOf")) {
    json out = json::object();
    for (const json& part : node["allOf"]) out.update(resolve(part, root), true);
    return out;
  }
  return node;
}

// The JSON types a schema node allows.
std::set<std::string> allowed(const json& s) {
  std::set<std::string> out;
  if (s.contains("type")) {
    if (s["type"].is_array())
      for (const json& t : s["type"]) out.insert(t);
    else
      out.insert(s["type"].get<std::string>());
  }
  for (const char* k : {"enum", "const"}) {
    if (!s.contains(k)) continue;
    for (const json& v : s[k].is_array() ? s[k] : json::array({s[k]}))
      out.insert(v.is_number_integer() ? "integer" : v.is_string() ? "string" : v.type_name());
  }
  return out;
}

// `type` (record::type_shape) against the schema's node `s`: the same
// properties, the same required ones, the same scalar types, all the way
// down. Failures name the path.
void same_shape(const json& type, json s, const json& root, const std::string& at) {
  s = resolve(s, root);
  std::set<std::string> types;
  if (type["type"].is_array())
    for (const json& t : type["type"]) types.insert(t);
  else
    types.insert(type["type"].get<std::string>());
  std::set<std::string> schema_types = allowed(s);
  schema_types.erase("null");  // NaN as null: the types read it as a number
  if (schema_types == std::set<std::string>{"number"} && types == std::set<std::string>{"number"}) return;
  ASSERT_EQ(schema_types, types) << at;
  if (type.contains("items")) {
    ASSERT_TRUE(s.contains("items")) << at << ": the schema says nothing of its elements";
    same_shape(type["items"], s["items"], root, at + "[]");
  }
  if (type.contains("additionalProperties")) {
    ASSERT_TRUE(s.contains("additionalProperties")) << at << ": the schema says nothing of its values";
    same_shape(type["additionalProperties"], s["additionalProperties"], root, at + ".*");
  }
  if (type.contains("properties")) {
    ASSERT_TRUE(s.contains("properties")) << at << ": the schema lists no properties";
    std::set<std::string> a, b;
    for (auto it = type["properties"].begin(); it != type["properties"].end(); ++it) a.insert(it.key());
    for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) b.insert(it.key());
    EXPECT_EQ(a, b) << at << ": the types' properties (left) against the schema's (right)";
    std::set<std::string> ra, rb;
    for (const json& k : type["required"]) ra.insert(k);
    if (s.contains("required"))
      for (const json& k : s["required"]) rb.insert(k);
    EXPECT_EQ(ra, rb) << at << ": required by the types (left) against the schema (right)";
    for (auto it = type["properties"].begin(); it != type["properties"].end(); ++it)
      if (s["properties"].contains(it.key()))
        same_shape(*it, s["properties"][it.key()], root, at.empty() ? it.key() : at + "." + it.key());
  }
}

TEST(RecordTypes, AreWhatTheSchemaSays) {
  const json schema = read_file(fs::path(FUSEGATE_SOURCE_DIR) / "harness" / "record" / "record.schema.json");
  // the top level: a golden's keys (then) and a run's (else) beside the common ones
  json top = schema;
  for (const char* branch : {"then", "else"})
    for (auto it = schema[branch]["properties"].begin(); it != schema[branch]["properties"].end(); ++it)
      if (!top["properties"].contains(it.key())) top["properties"][it.key()] = *it;
  same_shape(record::type_shape(), top, schema, "");
}

// A misspelt key is no field of the types: it is left alone, and the field
// it meant stays unset (the comparison then says what it lacks).
TEST(RecordTypes, AValueOfAnotherTypeIsNamedByItsPath) {
  const json j = {{"repro", "x"}, {"ranks", {{{"rank", 0}, {"kernels", {{{"name", "k"}, {"kind", 3}}}}}}}};
  try {
    record::from_json(j);
    FAIL() << "a kernel kind of 3 was read";
  } catch (const record::RecordError& e) {
    EXPECT_EQ(e.path, "ranks[0].kernels[0].kind");
    EXPECT_EQ(e.problem, "an integer, expected a string");
  }
  const record::RunRecord r = record::from_json({{"ranks", {{{"rank", 0}, {"kernel_cuont", 3}}}}});
  ASSERT_EQ(r.ranks.size(), 1u);
  EXPECT_FALSE(r.ranks[0].kernel_count.has_value());
}

// A run's exact digest is a string, a golden's an object by environment;
// anything else is neither.
TEST(RecordTypes, ExactIsADigestOrDigestsByEnvironment) {
  const json run = {
      {"ranks", {{{"breaks", json::array()}, {"kernels", json::array()}, {"outputs", {{{"name", "out"}, {"exact", "ab"}}}}}}}};
  const json golden = {{"ranks",
                        {{{"breaks", json::array()},
                          {"kernels", json::array()},
                          {"outputs", {{{"name", "out"}, {"exact", {{"e1", "ab"}}}}}}}}}};
  const record::RunRecord a = record::from_json(run), b = record::from_json(golden);
  EXPECT_EQ(a.ranks[0].outputs[0].exact.value_or(""), "ab");
  EXPECT_FALSE(a.ranks[0].outputs[0].exact_by_environment);
  EXPECT_FALSE(b.ranks[0].outputs[0].exact);
  EXPECT_EQ(b.ranks[0].outputs[0].exact_by_environment->at("e1"), "ab");
  EXPECT_EQ(record::to_json(a), run);
  EXPECT_EQ(record::to_json(b), golden);
  EXPECT_THROW(record::from_json({{"ranks", {{{"outputs", {{{"name", "out"}, {"exact", 7}}}}}}}}),
               record::RecordError);
}

// NaN is stored as null, and read back as NaN.
TEST(RecordTypes, NullFiguresAreNaN) {
  const json j = {{"ranks",
                    {{{"breaks", json::array()},
                      {"kernels", json::array()},
                      {"outputs", {{{"name", "out"}, {"fingerprint", {{"sum", nullptr}}}}}}}}}};
  const record::RunRecord r = record::from_json(j);
  ASSERT_TRUE(r.ranks[0].outputs[0].fingerprint->sum.has_value());
  EXPECT_TRUE(std::isnan(*r.ranks[0].outputs[0].fingerprint->sum));
  EXPECT_EQ(record::to_json(r).dump(), j.dump());  // NaN is written as null
}

}  // namespace
}  // namespace fg
