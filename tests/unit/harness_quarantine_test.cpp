// Quarantine with expiry (harness/record/quarantine.h): the file's checks, and how
// a quarantine changes a verdict before and after its expiry date.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fusion/errors.h"
#include "harness/record/quarantine.h"
#include "harness/cli/report.h"

namespace fg {
namespace {
namespace fs = std::filesystem;

std::string write_temp(const std::string& text) {
  static int n = 0;
  fs::path p = fs::temp_directory_path() /
               ("fusegate_quarantine_" + std::to_string(::getpid()) + "_" + std::to_string(n++) + ".json");
  std::ofstream(p) << text;
  return p.string();
}

std::string error_of(const std::string& text) {
  const std::string p = write_temp(text);
  try {
    load_quarantine(p);
  } catch (const UserError& e) {
    fs::remove(p);
    return e.what();
  }
  fs::remove(p);
  return "";
}

const char* kOne = R"({"format_version": 1, "checks": [
  {"id": "tp_block_llama/C/w2/cpu", "reason": "gloo timeout on busy hosts", "link": "https://x/1",
   "expires": "2026-12-31"}]})";

TEST(Quarantine, LoadsAndRefusesMalformedFiles) {
  const std::string p = write_temp(kOne);
  auto q = load_quarantine(p);
  fs::remove(p);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].id, "tp_block_llama/C/w2/cpu");
  EXPECT_EQ(q[0].expires, "2026-12-31");
  EXPECT_TRUE(load_quarantine("/nonexistent/quarantine.json").empty());
  EXPECT_NE(error_of(R"({"format_version": 2, "checks": []})").find("format_version must be 1"), std::string::npos);
  EXPECT_NE(error_of(R"({"format_version": 1, "checks": [{"id": "a/C/w1/cpu", "reason": "r", "expires": "2026-01-01"}]})")
                .find("checks[0].link must be a non-empty string"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format_version": 1, "checks": [{"id": "a", "reason": "r", "link": "l", "expires": "2026-02-30"}]})")
                .find("checks[0].expires '2026-02-30' is not a date"),
            std::string::npos);
  std::string twice = R"({"format_version": 1, "checks": [
    {"id": "a", "reason": "r", "link": "l", "expires": "2026-01-01"},
    {"id": "a", "reason": "r", "link": "l", "expires": "2026-01-02"}]})";
  EXPECT_NE(error_of(twice).find("checks[1].id 'a' is quarantined twice"), std::string::npos);
  EXPECT_NE(error_of("{\"format_version\": 1, \"checks\": [").find(":1:"), std::string::npos);  // file:line:col
}

TEST(Quarantine, DatesAreCalendarDates) {
  EXPECT_EQ(parse_date("2028-02-29"), "2028-02-29");
  EXPECT_EQ(parse_date("2027-02-29"), "");
  EXPECT_EQ(parse_date("2026-13-01"), "");
  EXPECT_EQ(parse_date("2026-1-01"), "");
  EXPECT_EQ(parse_date("tomorrow"), "");
  EXPECT_EQ(today_utc().size(), 10u);
}

Verdict failing(const std::string& id) {
  Verdict v;
  v.check_id = id;
  v.kind = VerdictKind::Fail;
  v.findings.push_back({VerdictKind::Fail, "rank 0: kernel_count 11 -> 12"});
  return v;
}

TEST(Quarantine, FailingCheckIsFlakyUntilItExpires) {
  std::vector<QuarantineEntry> q = {{"a/C/w2/cpu", "gloo timeout", "https://x/1", "2026-12-31"}};
  Verdict v = failing("a/C/w2/cpu");
  apply_quarantine(q, "2026-12-30", &v);
  EXPECT_EQ(v.kind, VerdictKind::Flaky);
  EXPECT_EQ(exit_code({v}, true), 0);
  std::string x = junit_xml({v}, "s", true);
  EXPECT_NE(x.find("<skipped message=\"quarantined: gloo timeout (https://x/1), until 2026-12-31\""),
            std::string::npos)
      << x;
  EXPECT_NE(verdict_table({v}).find("1 flaky (quarantined)"), std::string::npos);
  // on its expiry date it fails, saying why
  Verdict e = failing("a/C/w2/cpu");
  apply_quarantine(q, "2026-12-31", &e);
  EXPECT_EQ(e.kind, VerdictKind::Fail);
  EXPECT_EQ(exit_code({e}, false), 1);
  EXPECT_NE(e.findings.back().message.find("quarantine expired on 2026-12-31"), std::string::npos);
  // an expired quarantine fails a passing check too: renew or remove it
  Verdict p;
  p.check_id = "a/C/w2/cpu";
  apply_quarantine(q, "2027-01-05", &p);
  EXPECT_EQ(p.kind, VerdictKind::Fail);
  // another check is untouched
  Verdict o = failing("b/C/w2/cpu");
  apply_quarantine(q, "2026-12-30", &o);
  EXPECT_EQ(o.kind, VerdictKind::Fail);
}

}  // namespace
}  // namespace fg
