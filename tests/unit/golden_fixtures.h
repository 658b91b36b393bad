// Fixtures of the golden-file tests: a valid golden (as bless writes it),
// a fresh folder per test, and whole-file reads and writes.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "harness/record/files.h"
#include "harness/record/golden.h"
#include "tests/unit/record_fixtures.h"

namespace fg::testing_golden {
namespace fs = std::filesystem;

using nlohmann::json;

inline nlohmann::json rank_record(int r) {
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
inline nlohmann::json valid_record() {
  return golden_json(nlohmann::json{{"repro", "x"},        {"mode", "C"},
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

inline void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace fg::testing_golden
