// Golden files: naming, canonical text and loading with useful errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "fusion/errors.h"
#include "harness/record/golden.h"
#include "harness/record/golden_env.h"
#include "tests/unit/golden_fixtures.h"

namespace fg {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace testing_golden;

std::string load_error(const fs::path& p) {
  try {
    load_golden(p.string());
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

// The loader's error for a valid golden changed by `edit`, written at `p`.
std::string load_error_after(const fs::path& p, const std::function<void(json&)>& edit) {
  json j = valid_record();
  edit(j);
  write_file(p, dump_record(j));
  return load_error(p);
}

int line_of_nth(const std::string& text, const std::string& needle, int n) {
  size_t pos = std::string::npos;
  for (int i = 0; i <= n; ++i) pos = text.find(needle, pos == std::string::npos ? 0 : pos + 1);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + pos, '\n'));
}

TEST(GoldenPath, DefaultFusionHasNoSuffix) {
  EXPECT_EQ(golden_path("golden", "cpu", "tp_block_llama", "C", 2, "default"),
            "golden/cpu/tp_block_llama/C_w2.json");
}

TEST(GoldenPath, OtherFusionPolicyIsASuffix) {
  EXPECT_EQ(golden_path("golden", "cuda", "tp_block_wan", "B", 4, "max-autotune"),
            "golden/cuda/tp_block_wan/B_w4.max-autotune.json");
}

TEST(GoldenPath, EagerModeIgnoresFusionPolicy) {
  EXPECT_EQ(golden_path("golden/", "cpu", "r", "A", 1, "none"), "golden/cpu/r/A_w1.json");
}

TEST(BlessCommand, NamesOnlyNonDefaultBackendAndFusion) {
  EXPECT_EQ(bless_command("x", "C", 2, "cpu", "default"),
            "fusegate bless x --mode C --world-size 2");
  EXPECT_EQ(bless_command("x", "B", 4, "cuda", "none"),
            "fusegate bless x --mode B --world-size 4 --backend cuda --fusion none");
}

TEST(DumpRecord, SortedKeysOneFigurePerLineTrailingNewline) {
  json j = {{"zeta", 1}, {"alpha", {{"shape", {2, 64, 256}}}}};
  std::string text = dump_record(j);
  EXPECT_LT(text.find("\"alpha\""), text.find("\"zeta\""));
  EXPECT_NE(text.find("\n      2,\n      64,\n      256\n    ]"), std::string::npos) << text;
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(json::parse(text), j);
  EXPECT_EQ(dump_record(json::parse(text)), text);
}

TEST(LoadGolden, MissingFileIsNullopt) {
  TempDir dir;
  EXPECT_FALSE(load_golden((dir.path() / "cpu/x/C_w2.json").string()).has_value());
}

TEST(LoadGolden, ValidFileRoundTrips) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  write_file(p, dump_record(valid_record()));
  auto j = load_golden(p.string());
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(record::to_json(*j), valid_record());
}

TEST(LoadGolden, SyntaxErrorNamesFileLineColumnAndBlessCommand) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  write_file(
      p,
      "{\n  \"repro\": \"x\",\n  \"mode\": \"C\",\n  \"world_size\": 2 3,\n  \"ranks\": []\n}\n");
  std::string msg = load_error(p);
  EXPECT_NE(msg.find(p.string() + ":4:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("corrupted golden file"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fusegate bless x --mode C --world-size 2"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("[json.exception"), std::string::npos) << msg;
}

// A file nested far deeper than a record is refused by one linear scan,
// before the parser and the error locator (whose cost grew with the depth:
// 200000 levels took over a minute and 10 GB).
TEST(LoadGolden, DeeplyNestedFileIsRefusedQuickly) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  const int n = 200000;
  write_file(p, "{\n  \"repro\": \"x\",\n  \"ranks\": " + std::string(n, '[') + std::string(n, ']') + "\n}\n");
  std::string msg = load_error(p);  // without the bound this runs past the test's timeout
  EXPECT_NE(msg.find(p.string() + ":3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nests deeper than 64 levels"), std::string::npos) << msg;
}

// Brackets inside strings do not count as nesting.
// A number beyond a double is bad input named by file, line and column,
// not an escaping exception (found by the fuzz target proof_loader:
// tests/fuzz/found/proof_loader/).
TEST(LoadGolden, NumberOutOfRangeNamesItsLine) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  write_file(p, "{\n  \"repro\": \"x\",\n  \"ranks\": [1e400]\n}\n");
  std::string msg = load_error(p);
  EXPECT_NE(msg.find(p.string() + ":3:13: error: corrupted golden file (the number 1e400 is out of range)"),
            std::string::npos)
      << msg;
}

TEST(LoadGolden, BracketsInStringsAreNotNesting) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  nlohmann::json j = valid_record();
  j["repro"] = std::string(200, '[') + "\\\"" + std::string(200, '{');
  write_file(p, dump_record(j));
  auto loaded = load_golden(p.string());
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->repro, j["repro"].get<std::string>());
}

TEST(LoadGolden, TruncatedFileNamesItsLastLine) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.max-autotune.json";
  std::string text = dump_record(valid_record());
  write_file(p, text.substr(0, text.size() / 2));
  std::string msg = load_error(p);
  int last = 1 + static_cast<int>(std::count(text.begin(), text.begin() + text.size() / 2, '\n'));
  EXPECT_NE(msg.find(":" + std::to_string(last) + ":"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--fusion max-autotune"), std::string::npos) << msg;
}

TEST(LoadGolden, MistypedKeyNamesKeyPathAndItsLine) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  json j = valid_record();
  j["ranks"][1]["kernel_count"] = "13";
  std::string text = dump_record(j);
  write_file(p, text);
  std::string msg = load_error(p);
  EXPECT_NE(msg.find("ranks[1].kernel_count"), std::string::npos) << msg;
  int line = line_of_nth(text, "\"kernel_count\"", 1);
  EXPECT_NE(msg.find(p.string() + ":" + std::to_string(line) + ":"), std::string::npos) << msg;
}

// Element types too: "kernels": [1, 2] was accepted once.
TEST(LoadGolden, MistypedElementsAreNamedByPath) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  auto error_with = [&](const std::function<void(json&)>& edit) { return load_error_after(p, edit); };
  EXPECT_NE(error_with([](json& j) { j["ranks"][0]["kernels"] = {1, 2}; })
                .find("has ranks[0].kernels[0] as integer, expected an object"),
            std::string::npos);
  EXPECT_NE(error_with([](json& j) { j["ranks"][1]["kernels"][0]["name"] = 7; })
                .find("has ranks[1].kernels[0].name as integer, expected a string"),
            std::string::npos);
  EXPECT_NE(error_with([](json& j) { j["ranks"][0]["hashes"] = {{"graphs", 1}}; })
                .find("has ranks[0].hashes.graphs as integer, expected a string"),
            std::string::npos);
  EXPECT_NE(error_with([](json& j) {
              j["ranks"][0]["ledger"] = json::array({{{"nodes", {"buf1", 2}}, {"outcome", "fused"}}});
            }).find("has ranks[0].ledger[0].nodes[1] as integer, expected a string"),
            std::string::npos);
  EXPECT_NE(error_with([](json& j) { j["world_size"] = "2"; }).find("has world_size as string, expected an integer"),
            std::string::npos);
  EXPECT_NE(error_with([](json& j) { j["ranks"][0]["outputs"][0].erase("name"); })
                .find("lacks ranks[0].outputs[0].name"),
            std::string::npos);
  // the residual placement: each entry a site and "gemm" or "apart"
  EXPECT_NE(error_with([](json& j) {
              j["ranks"][0]["residual_placement"] = json::array({{{"site", "%30(linear) + %32(add)"}}});
            }).find("lacks ranks[0].residual_placement[0].placement"),
            std::string::npos);
  EXPECT_NE(error_with([](json& j) {
              j["ranks"][0]["residual_placement"] =
                  json::array({{{"site", "%30(linear) + %32(add)"}, {"placement", "later"}}});
            }).find("has ranks[0].residual_placement[0].placement \"later\", expected \"gemm\" or \"apart\""),
            std::string::npos);
  EXPECT_NE(error_with([](json& j) {
              j["ranks"][0]["residual_placement"] = json::array({{{"site", ""}, {"placement", "apart"}}});
            }).find("has ranks[0].residual_placement[0].site empty"),
            std::string::npos);
  EXPECT_EQ(error_with([](json& j) {
              j["ranks"][0]["residual_placement"] =
                  json::array({{{"site", "%30(linear) + %32(add)"}, {"placement", "apart"}}});
            }),
            "(no error)");
}

// A golden of another format is refused, naming its line and what to do;
// one without the key predates it (format 1: one environment) and is
// refused too, saying to re-bless it.
TEST(LoadGolden, OtherFormatVersionIsRefused) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  json j = valid_record();
  j["format_version"] = kRecordFormatVersion + 1;
  std::string text = dump_record(j);
  write_file(p, text);
  std::string msg = load_error(p);
  EXPECT_NE(msg.find(p.string() + ":" + std::to_string(line_of_nth(text, "\"format_version\"", 0)) + ":"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("format_version " + std::to_string(kRecordFormatVersion + 1) + ", and this fusegate reads " +
                     std::to_string(kRecordFormatVersion) + " only"),
            std::string::npos)
      << msg;
  j["format_version"] = kRecordFormatVersion;
  write_file(p, dump_record(j));
  EXPECT_NO_THROW(load_golden(p.string()));
  j.erase("format_version");
  write_file(p, dump_record(j));
  msg = load_error(p);
  EXPECT_NE(msg.find("is format_version 1, and this fusegate reads " + std::to_string(kRecordFormatVersion) + " only"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("re-bless it"), std::string::npos) << msg;
}

// The environments and the digests filed under them hold together: an
// environment edited by hand (its key no longer its hash), a digest of no
// environment, an environment an output has no digest of.
TEST(LoadGolden, EnvironmentsAndTheirDigestsHoldTogether) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  auto error_with = [&](const std::function<void(json&)>& edit) { return load_error_after(p, edit); };
  const std::string fp = valid_record()["environments"].begin().key();
  EXPECT_EQ(error_with([](json&) {}), "(no error)");
  EXPECT_NE(error_with([&](json& j) { j["environments"][fp]["compiler"] = "g++ 13"; })
                .find("has an environment filed under " + fp + " whose contents hash to"),
            std::string::npos);
  EXPECT_NE(error_with([&](json& j) { j["ranks"][1]["outputs"][0]["exact"]["00000000deadbeef"] = "x"; })
                .find("has ranks[1].outputs[0].exact.00000000deadbeef, a digest of no environment"),
            std::string::npos);
  EXPECT_NE(error_with([&](json& j) { j["ranks"][0]["outputs"][0]["exact"].erase(fp); })
                .find("lacks ranks[0].outputs[0].exact." + fp),
            std::string::npos);
  EXPECT_NE(error_with([](json& j) { j["environments"] = json::object(); }).find("holds no environment"),
            std::string::npos);
  EXPECT_NE(error_with([&](json& j) { j["ranks"][0]["outputs"][0]["exact"] = "0123456789abcdef"; })
                .find("has ranks[0].outputs[0].exact as string, expected an object"),
            std::string::npos);
}

// Every golden in the repository passes the loader's checks (cpu and cuda).
TEST(LoadGolden, EveryCommittedGoldenLoads) {
  int n = 0;
  for (const char* backend : {"cpu", "cuda"}) {
    const fs::path root = fs::path(FUSEGATE_SOURCE_DIR) / "golden" / backend;
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (e.path().extension() != ".json") continue;
      EXPECT_NO_THROW(load_golden(e.path().string())) << load_error(e.path());
      ++n;
    }
  }
  EXPECT_GT(n, 100) << "found too few goldens: the test would vouch for nothing";
}

TEST(LoadGolden, MissingKeyNamesKeyPathAndEnclosingLine) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  json j = valid_record();
  j["ranks"][0].erase("outputs");
  std::string text = dump_record(j);
  write_file(p, text);
  std::string msg = load_error(p);
  EXPECT_NE(msg.find("lacks ranks[0].outputs"), std::string::npos) << msg;
  // The first rank object opens on the line after "ranks": [
  int line = line_of_nth(text, "\"ranks\"", 0) + 1;
  EXPECT_NE(msg.find(p.string() + ":" + std::to_string(line) + ":"), std::string::npos) << msg;
}

// Every key `check` compares is required: a golden without one would have
// that comparison skipped with nothing said (found by an audit: a golden
// with its outputs' exact digests, its hashes or its header keys deleted
// passed `check --strict`).
TEST(LoadGolden, AKeyThatCheckComparesIsRequired) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  write_file(p, dump_record(valid_record()));
  EXPECT_NO_THROW(load_golden(p.string())) << load_error(p);
  const std::vector<std::vector<std::string>> keys = {
      {"repro"}, {"mode"}, {"world_size"}, {"backend"}, {"fusion"}, {"fast_paths"}, {"environments"},
      {"ranks", "0", "rank"}, {"ranks", "1", "recompile_count"}, {"ranks", "0", "fast_paths"},
      {"ranks", "0", "hashes"}, {"ranks", "1", "hashes", "collectives"}, {"ranks", "0", "hashes", "graphs"},
      {"ranks", "0", "ledger"}, {"ranks", "1", "kernel_count_by_kind"},
      {"ranks", "0", "outputs", "0", "exact"}, {"ranks", "1", "outputs", "0", "fingerprint"}};
  for (const auto& path : keys) {
    json j = valid_record();
    json* o = &j;
    std::string name;
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      const std::string& k = path[i];
      const bool index = !k.empty() && k[0] >= '0' && k[0] <= '9';
      o = index ? &(*o)[static_cast<size_t>(std::stoi(k))] : &(*o)[k];
      name += index ? "[" + k + "]" : (name.empty() ? k : "." + k);
    }
    o->erase(path.back());
    name += name.empty() ? path.back() : "." + path.back();
    write_file(p, dump_record(j));
    const std::string msg = load_error(p);
    EXPECT_NE(msg.find("golden file lacks " + name + " ("), std::string::npos) << name << ": " << msg;
  }
}

// One rank record a rank, in order, and counts that are counts (an audit:
// two ranks at world size 1, and a kernel_count of -5, were taken).
TEST(LoadGolden, RanksMatchTheWorldSizeAndCountsAreCounts) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  json j = valid_record();
  j["world_size"] = 1;
  write_file(p, dump_record(j));
  EXPECT_NE(load_error(p).find("holds 2 rank record(s) for world_size 1"), std::string::npos) << load_error(p);
  j = valid_record();
  j["ranks"][1]["rank"] = 0;
  write_file(p, dump_record(j));
  EXPECT_NE(load_error(p).find("has ranks[1].rank 0, expected 1"), std::string::npos) << load_error(p);
  j = valid_record();
  j["ranks"][0]["kernel_count"] = -5;
  write_file(p, dump_record(j));
  EXPECT_NE(load_error(p).find("has ranks[0].kernel_count -5, expected a count"), std::string::npos) << load_error(p);
}

TEST(LoadGolden, RecordWithoutRanksIsAnError) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  json j = valid_record();
  j.erase("ranks");
  write_file(p, dump_record(j));
  EXPECT_NE(load_error(p).find(p.string() + ":1: error: golden file lacks ranks"),
            std::string::npos)
      << load_error(p);
  write_file(p, "[1, 2]\n");
  EXPECT_NE(load_error(p).find("expected an object"), std::string::npos) << load_error(p);
}

}  // namespace
}  // namespace fg
