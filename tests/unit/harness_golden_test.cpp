// Golden files: naming, canonical text, loading with useful errors, atomic
// writes and the diff that a bless shows.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fusion/errors.h"
#include "tests/unit/record_fixtures.h"
#include "harness/record/golden.h"
#include "harness/record/files.h"
#include "harness/record/diff.h"
#include "harness/record/golden_env.h"

namespace fg {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace testing_golden;

json rank_record(int r) {
  return {{"rank", r},
          {"graph_count", 1},
          {"graph_break_count", 0},
          {"breaks", json::array()},
          {"recompile_count", 0},
          {"kernel_count", 12},
          {"kernels", json::array({{{"name", "cpu_poi_fused_add_0"}, {"kind", "poi"}}})},
          {"fast_paths", json::array()},
          {"ledger", json::array()},
          {"kernel_count_by_kind", {{"poi", 1}}},
          {"hashes", {{"graphs", "g0"}, {"decisions", "d0"}, {"collectives", "c0"}}},
          {"outputs", json::array({{{"name", "out"},
                                    {"exact", "0123456789abcdef"},
                                    {"fingerprint", {{"dtype", "bf16"}, {"shape", {2, 4}}, {"numel", 8}}}}})}};
}

// A golden as bless writes it (format 2: its environments, each output's
// exact digest keyed by them; harness/record/golden_env.h).
json valid_record() {
  return golden_json({{"repro", "x"},        {"mode", "C"},
                    {"world_size", 2},     {"backend", "cpu"},
                    {"fusion", "default"}, {"fast_paths", "proven"},
                    {"env", {{"backend", "cpu"}, {"compiler", "g++ 12"}}},
                    {"ranks", json::array({rank_record(0), rank_record(1)})}});
}

// A fresh folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("fusegate_golden_" + std::to_string(::getpid()) + "_" + info->name());
    remove_tree(path_.string());
    fs::create_directories(path_);
  }
  ~TempDir() { remove_tree(path_.string()); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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

TEST(WriteAtomic, CreatesFoldersReplacesContentLeavesNoTempFiles) {
  TempDir dir;
  fs::path p = dir.path() / "cpu/x/C_w2.json";
  write_atomic(p.string(), "old\n");
  EXPECT_EQ(read_file(p), "old\n");
  write_atomic(p.string(), "new text\n");
  EXPECT_EQ(read_file(p), "new text\n");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(p.parent_path())) {
    ++entries;
    EXPECT_EQ(e.path().filename(), "C_w2.json");
  }
  EXPECT_EQ(entries, 1);
}

TEST(WriteAtomic, UnwritableTargetIsAUserErrorAndKeepsNothing) {
  TempDir dir;
  write_file(dir.path() / "blocker", "a file where a folder should be\n");
  EXPECT_THROW(write_atomic((dir.path() / "blocker/x/C_w2.json").string(), "{}\n"), UserError);
  EXPECT_EQ(read_file(dir.path() / "blocker"), "a file where a folder should be\n");
}

std::string numbered(int n, int changed = -1, int changed2 = -1) {
  std::string s;
  for (int i = 1; i <= n; ++i)
    s += (i == changed || i == changed2 ? "LINE" : "line") + std::to_string(i) + "\n";
  return s;
}

// A path that is no regular file is written through, never replaced by
// one (an audit's `--out /dev/full`, as root, replaced the device and
// exited 0); a symlink keeps its link and its file takes the text.
TEST(WriteAtomic, FollowsLinksAndWritesThroughWhatIsNoRegularFile) {
  TempDir dir;
  const fs::path file = dir.path() / "real.json", link = dir.path() / "link.json";
  write_file(file, "old\n");
  fs::create_symlink(file, link);
  write_atomic(link.string(), "new\n");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_file(file), "new\n");
  // a FIFO with a reader: the text goes down it, and it stays a FIFO
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(rd, 0);
  write_atomic(fifo.string(), "down the pipe\n");
  char buf[64] = {};
  const ssize_t n = ::read(rd, buf, sizeof buf - 1);
  ::close(rd);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "down the pipe\n");
  EXPECT_EQ(fs::status(fifo).type(), fs::file_type::fifo);
  // a device that refuses the write: bad input named, the device kept.
  // Not as root: there a regression of this very rule would replace the
  // machine's /dev/full (the FIFO above covers the write-through).
  if (::geteuid() != 0 && fs::exists("/dev/full")) {
    std::string msg;
    try {
      write_atomic("/dev/full", "x");
    } catch (const UserError& e) {
      msg = e.what();
    }
    EXPECT_NE(msg.find("/dev/full: error: cannot write it"), std::string::npos) << msg;
    EXPECT_EQ(fs::status("/dev/full").type(), fs::file_type::character);
  }
  // this process's own descriptor: written down it as it is open
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  write_atomic("/dev/fd/" + std::to_string(fds[1]), "through fd\n");
  ::close(fds[1]);
  char got[64] = {};
  const ssize_t m = ::read(fds[0], got, sizeof got - 1);
  ::close(fds[0]);
  EXPECT_EQ(std::string(got, m > 0 ? static_cast<size_t>(m) : 0), "through fd\n");
  // a FIFO with no reader: bad input at once, not a wait for ever
  const fs::path lonely = dir.path() / "lonely";
  ASSERT_EQ(::mkfifo(lonely.c_str(), 0600), 0);
  try {
    write_atomic(lonely.string(), "x");
    ADD_FAILURE() << "a FIFO with no reader was written";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("a FIFO with no reader"), std::string::npos) << e.what();
  }
  // a link to a folder is refused, the link kept
  const fs::path dlink = dir.path() / "dlink";
  fs::create_directory_symlink(dir.path(), dlink);
  EXPECT_THROW(write_atomic(dlink.string(), "x"), UserError);
  EXPECT_TRUE(fs::is_symlink(dlink));
}

// What belongs in a folder is never written through a link that leaves it
// (a golden folder comes from a pull request): the file's own link, a
// folder's link, a dangling link; a link that stays inside is followed.
TEST(WriteInside, RefusesALinkThatLeavesTheFolderAndWritesNothing) {
  TempDir dir;
  const fs::path golden = dir.path() / "golden", outside = dir.path() / "elsewhere";
  write_file(outside / "target.json", "theirs\n");
  write_file(golden / "cpu/x/real.json", "old\n");
  auto refused = [&](const fs::path& p) {
    try {
      write_inside(golden.string(), p.string(), "mine\n");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("(written)");
  };
  fs::create_symlink(outside / "target.json", golden / "cpu/x/C_w1.json");
  std::string msg = refused(golden / "cpu/x/C_w1.json");
  EXPECT_NE(msg.find("is a link that leaves " + golden.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find((outside / "target.json").string()), std::string::npos) << msg;
  EXPECT_EQ(read_file(outside / "target.json"), "theirs\n");
  // dangling: where the file would be created
  fs::create_symlink(outside / "new.json", golden / "cpu/x/C_w2.json");
  EXPECT_NE(refused(golden / "cpu/x/C_w2.json").find("leaves"), std::string::npos);
  EXPECT_FALSE(fs::exists(outside / "new.json"));
  // a repro's folder that is a link out of the golden folder
  fs::create_directory_symlink(outside, golden / "cpu/y");
  EXPECT_NE(refused(golden / "cpu/y/C_w1.json").find("leaves"), std::string::npos);
  EXPECT_FALSE(fs::exists(outside / "C_w1.json"));
  // a link inside the folder is followed, as write_atomic does
  fs::create_symlink(golden / "cpu/x/real.json", golden / "cpu/x/C_w4.json");
  EXPECT_EQ(refused(golden / "cpu/x/C_w4.json"), "(written)");
  EXPECT_EQ(read_file(golden / "cpu/x/real.json"), "mine\n");
  // a golden folder that is itself a link is the folder it names
  fs::create_directory_symlink(golden, dir.path() / "g2");
  write_inside((dir.path() / "g2").string(), (dir.path() / "g2/cpu/x/new.json").string(), "ok\n");
  EXPECT_EQ(read_file(golden / "cpu/x/new.json"), "ok\n");
}

// How bless writes over a golden: a new golden, the same state in a new
// environment (its digests added, nothing else touched), the same state
// again (nothing written), and a new state (the golden replaced, the other
// environments' digests dropped, with what moved).
TEST(PlanBless, AddsAnEnvironmentOnlyWhereEverythingElseAgrees) {
  json a = valid_record();
  const json rec = [] {
    json r = {{"repro", "x"}, {"mode", "C"}, {"world_size", 2}, {"backend", "cpu"}, {"fusion", "default"},
              {"fast_paths", "proven"}, {"env", {{"backend", "cpu"}, {"compiler", "g++ 12"}}},
              {"ranks", json::array({rank_record(0), rank_record(1)})}};
    for (auto& k : r["ranks"]) k["outputs"][0]["fingerprint"] = {{"dtype", "bf16"}, {"shape", {2, 4}}, {"numel", 8},
                                                                 {"sum", 1.0}, {"sumsq", 2.0}, {"max_abs", 1.0},
                                                                 {"nan", 0}, {"inf", 0}};
    return r;
  }();
  JsonBlessPlan p = plan_bless_json(nullptr, golden_json(rec));
  EXPECT_EQ(p.kind, BlessPlan::Created);
  const json first = p.golden;
  EXPECT_EQ(plan_bless_json(&first, golden_json(rec)).kind, BlessPlan::Unchanged);
  // another environment, its own digests, rounding noise in a fingerprint
  json other = rec;
  other["env"]["compiler"] = "g++ 13";
  for (auto& k : other["ranks"]) {
    k["outputs"][0]["exact"] = "fedcba9876543210";
    k["outputs"][0]["fingerprint"]["sum"] = 1.0001;
  }
  p = plan_bless_json(&first, golden_json(other));
  ASSERT_EQ(p.kind, BlessPlan::Added);
  EXPECT_EQ(p.golden["environments"].size(), 2u);
  // nothing else changed: the first environment's fingerprints are kept
  EXPECT_EQ(p.golden["ranks"][0]["outputs"][0]["fingerprint"]["sum"], 1.0);
  EXPECT_TRUE(same_state(record::from_json(p.golden), record::from_json(first)));
  const std::string fp = environment_fingerprint(other["env"].get<record::Environment>());
  EXPECT_EQ(p.golden["ranks"][1]["outputs"][0]["exact"][fp], "fedcba9876543210");
  const json both = p.golden;
  // a new state: replaced, the other environment dropped, what moved said
  json more = rec;
  for (auto& k : more["ranks"]) k["kernel_count"] = 13;
  p = plan_bless_json(&both, golden_json(more));
  EXPECT_EQ(p.kind, BlessPlan::Replaced);
  EXPECT_EQ(p.dropped, 1);
  EXPECT_EQ(p.golden["environments"].size(), 1u);
  EXPECT_NE(p.why.find("/ranks/0/kernel_count 12 -> 13"), std::string::npos) << p.why;
  // the same environment with other digests: the others are stale
  json moved = rec;
  moved["ranks"][0]["outputs"][0]["exact"] = "1111111111111111";
  p = plan_bless_json(&both, golden_json(moved));
  EXPECT_EQ(p.kind, BlessPlan::Replaced);
  EXPECT_EQ(p.dropped, 1);
  EXPECT_NE(p.why.find("this environment's exact digests changed"), std::string::npos) << p.why;
  // a new environment whose output drifted past tolerance: a new state
  json far = other;
  far["env"]["compiler"] = "g++ 14";
  far["ranks"][0]["outputs"][0]["fingerprint"]["sum"] = 5.0;
  p = plan_bless_json(&both, golden_json(far));
  EXPECT_EQ(p.kind, BlessPlan::Replaced);
  EXPECT_NE(p.why.find("rank 0 output out: fingerprint outside tolerance"), std::string::npos) << p.why;
  // environments recorded under another key (an older fusegate's fields)
  // can never be matched again: dropped where the state is kept, and said
  json legacy = first;
  legacy["environments"]["0123456789abcdef"] = {{"backend", "cpu"}, {"isa", "x86_64+avx2"}};
  for (auto& k : legacy["ranks"]) k["outputs"][0]["exact"]["0123456789abcdef"] = "aaaaaaaaaaaaaaaa";
  p = plan_bless_json(&legacy, golden_json(rec));
  EXPECT_EQ(p.kind, BlessPlan::Pruned);
  EXPECT_EQ(p.unmatchable, 1);
  EXPECT_EQ(p.golden, first);
  p = plan_bless_json(&legacy, golden_json(other));
  EXPECT_EQ(p.kind, BlessPlan::Added);
  EXPECT_EQ(p.unmatchable, 1);
  EXPECT_EQ(p.golden, both);
  // a library's kernel names inside a launch and how a GEMM algorithm was
  // timed belong to the environment: another cuBLAS with the same counts
  // and algorithms is the same state; another algorithm is not
  json cuda = rec;
  for (auto& k : cuda["ranks"]) {
    k["kernels"][0]["device_kernels"] = {"nvjet_sm90_tst_128x256"};
    k["gemm_algos"] = {{{"shape", "bf16 m128"}, {"algo", "a1"}, {"source", "measured"}, {"us", 3.5}}};
  }
  const json cuda_first = golden_json(cuda);
  json lib = cuda;
  lib["env"]["compiler"] = "g++ 13";
  for (auto& k : lib["ranks"]) {
    k["kernels"][0]["device_kernels"] = {"nvjet_sm90_tst_256x128"};
    k["gemm_algos"][0]["source"] = "golden";
    k["gemm_algos"][0]["us"] = 3.1;
  }
  EXPECT_EQ(plan_bless_json(&cuda_first, golden_json(lib)).kind, BlessPlan::Added);
  for (auto& k : lib["ranks"]) k["gemm_algos"][0]["algo"] = "a2";
  EXPECT_EQ(plan_bless_json(&cuda_first, golden_json(lib)).kind, BlessPlan::Replaced);
  for (auto& k : lib["ranks"]) {
    k["gemm_algos"][0]["algo"] = "a1";
    k["kernels"][0]["device_kernels"] = {"nvjet_a", "nvjet_b"};
  }
  EXPECT_EQ(plan_bless_json(&cuda_first, golden_json(lib)).kind, BlessPlan::Replaced);
  (void)a;
}

TEST(UnifiedDiff, EqualTextsGiveEmptyDiff) {
  EXPECT_EQ(unified_diff(numbered(5), numbered(5), "a", "b"), "");
}

TEST(UnifiedDiff, ChangedLineShowsHunkWithThreeLinesOfContext) {
  std::string d = unified_diff(numbered(10), numbered(10, 5), "golden/C_w2.json", "run");
  EXPECT_EQ(d,
            "--- golden/C_w2.json\n+++ run\n@@ -2,7 +2,7 @@\n line2\n line3\n line4\n"
            "-line5\n+LINE5\n line6\n line7\n line8\n");
}

TEST(UnifiedDiff, DistantChangesMakeTwoHunksNearOnesOne) {
  std::string far = unified_diff(numbered(30), numbered(30, 3, 25), "a", "b");
  EXPECT_NE(far.find("@@ -1,6 +1,6 @@"), std::string::npos) << far;
  EXPECT_NE(far.find("@@ -22,7 +22,7 @@"), std::string::npos) << far;
  std::string near = unified_diff(numbered(30), numbered(30, 3, 10), "a", "b");
  EXPECT_EQ(std::count(near.begin(), near.end(), '@'), 4) << near;
}

TEST(UnifiedDiff, MissingFinalNewlineIsMarked) {
  std::string d = unified_diff("a\nb", "a\nb\nc\n", "a", "b");
  EXPECT_NE(d.find("-b\n\\ No newline at end of file\n+b\n+c\n"), std::string::npos) << d;
}

TEST(UnifiedDiff, InsertIntoEmptyFile) {
  EXPECT_EQ(unified_diff("", "x\n", "a", "b"), "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+x\n");
}

// Applies a diff produced above; the strongest check that hunks, ranges and
// context are right is that the diff rebuilds the new text.
std::string apply_diff(const std::string& old_text, const std::string& diff) {
  std::vector<std::string> old_lines;
  std::stringstream os(old_text);
  for (std::string l; std::getline(os, l);) old_lines.push_back(l);
  std::vector<std::string> out;
  size_t next_old = 0;
  std::stringstream ds(diff);
  std::string l;
  std::getline(ds, l);
  std::getline(ds, l);
  while (std::getline(ds, l)) {
    if (l.rfind("@@ -", 0) == 0) {
      size_t start = std::stoul(l.substr(4));
      size_t count = std::stoul(l.substr(l.find(',') + 1));
      size_t first = count == 0 ? start : start - 1;
      while (next_old < first) out.push_back(old_lines[next_old++]);
    } else if (l[0] == ' ') {
      EXPECT_EQ(old_lines.at(next_old), l.substr(1));
      out.push_back(old_lines[next_old++]);
    } else if (l[0] == '-') {
      EXPECT_EQ(old_lines.at(next_old), l.substr(1));
      ++next_old;
    } else if (l[0] == '+') {
      out.push_back(l.substr(1));
    }
  }
  while (next_old < old_lines.size()) out.push_back(old_lines[next_old++]);
  std::string s;
  for (const auto& x : out) s += x + "\n";
  return s;
}

TEST(UnifiedDiff, DiffRebuildsTheNewText) {
  unsigned seed = 12345;
  auto rnd = [&]() { return (seed = seed * 1103515245u + 12345u) >> 16; };
  for (int round = 0; round < 50; ++round) {
    std::string a, b;
    int n = 5 + rnd() % 60;
    for (int i = 0; i < n; ++i) {
      std::string line = "v" + std::to_string(rnd() % 7) + "\n";
      a += line;
      switch (rnd() % 6) {
        case 0: break;                                         // dropped
        case 1: b += "new" + std::to_string(i) + "\n"; break;  // replaced
        case 2: b += line + "ins\n"; break;                    // added after
        default: b += line;
      }
    }
    std::string d = unified_diff(a, b, "a", "b");
    if (a == b) {
      EXPECT_EQ(d, "");
      continue;
    }
    EXPECT_EQ(apply_diff(a, d), b) << d;
  }
}

}  // namespace
}  // namespace fg
