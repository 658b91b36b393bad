// Reports and exit codes of `check`.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "harness/cli/report.h"

namespace fg {
namespace {

Verdict verdict(const std::string& id, VerdictKind kind, std::vector<Finding> findings = {},
                const std::string& bless = "") {
  Verdict v;
  v.check_id = id;
  v.kind = kind;
  v.findings = std::move(findings);
  v.bless_command = bless;
  return v;
}

// One verdict of each kind, as `check` over five configurations would give.
std::vector<Verdict> one_of_each() {
  using K = VerdictKind;
  return {
      verdict("llama/C_w1", K::Pass),
      verdict("llama/C_w2", K::Fail,
              {{K::Fail,
                "rank 0: kernel_count 12 -> 13 (more kernels than the golden: fusion got worse)"},
               {K::Pass,
                "rank 0: fusion decisions changed:\n  buf3+buf4: fused -> rejected (memory deps "
                "did not match)"}},
              "fusegate bless llama --mode C --world-size 2"),
      verdict("wan/C_w2", K::Improved,
              {{K::Improved, "rank 0: kernel_count 12 -> 11 (fewer kernels than the golden)"}},
              "fusegate bless wan --mode C --world-size 2"),
      verdict("wan/B_w2", K::Missing, {{K::Missing, "no golden file golden/cpu/wan/B_w2.json"}},
              "fusegate bless wan --mode B --world-size 2"),
      verdict("wan/C_w4", K::CannotTest, {{K::CannotTest, "run record has no ranks"}}),
  };
}

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

TEST(ExitCode, Matrix) {
  using K = VerdictKind;
  auto code = [](std::vector<K> kinds, bool strict) {
    std::vector<Verdict> vs;
    for (K k : kinds) vs.push_back(verdict("c", k));
    return exit_code(vs, strict);
  };
  for (bool strict : {false, true}) {
    EXPECT_EQ(code({}, strict), 0);
    EXPECT_EQ(code({K::Pass}, strict), 0);
    EXPECT_EQ(code({K::Pass, K::Fail}, strict), 1);
    EXPECT_EQ(code({K::CannotTest}, strict), 125);
    EXPECT_EQ(code({K::CannotTest, K::Fail}, strict), 1);
  }
  // under --strict an IMPROVED fails like a FAIL, which outranks CANNOT_TEST
  EXPECT_EQ(code({K::Improved, K::CannotTest}, false), 125);
  EXPECT_EQ(code({K::Improved, K::CannotTest}, true), 1);
  EXPECT_EQ(code({K::Missing, K::CannotTest}, true), 1);
  EXPECT_EQ(code({K::Improved}, false), 0);
  EXPECT_EQ(code({K::Improved}, true), 1);
  EXPECT_EQ(code({K::Missing, K::Pass}, false), 0);
  EXPECT_EQ(code({K::Missing, K::Pass}, true), 1);
}

TEST(VerdictTable, RowsDetailsAndSummary) {
  std::string t = verdict_table(one_of_each());
  EXPECT_NE(t.find("5 checks: 1 passed, 1 failed, 1 improved, 1 missing, 1 cannot test\n"),
            std::string::npos)
      << t;
  std::istringstream in(t);
  std::string header, row;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("CHECK", 0), 0u) << t;
  EXPECT_NE(header.find("VERDICT"), std::string::npos) << t;
  bool saw_fail_row = false;
  while (std::getline(in, row) && !row.empty())
    if (row.rfind("llama/C_w2 ", 0) == 0) {
      saw_fail_row = true;
      EXPECT_NE(row.find("FAIL"), std::string::npos) << row;
      EXPECT_NE(row.find("kernel_count 12 -> 13"), std::string::npos) << row;
    }
  EXPECT_TRUE(saw_fail_row) << t;
  // Bless commands for the improved and the missing check, not for the failure.
  EXPECT_NE(t.find("bless with: fusegate bless wan --mode C --world-size 2"), std::string::npos)
      << t;
  EXPECT_NE(t.find("bless with: fusegate bless wan --mode B --world-size 2"), std::string::npos)
      << t;
  EXPECT_EQ(t.find("bless with: fusegate bless llama"), std::string::npos) << t;
  // The decision lines behind the failure stay readable below the table.
  EXPECT_NE(t.find("buf3+buf4: fused -> rejected (memory deps did not match)"), std::string::npos)
      << t;
}

TEST(VerdictTable, LongFindingTruncatedInRowButFullBelow) {
  std::string longmsg = "rank 0: " + std::string(300, 'x') + " END";
  std::string t = verdict_table({verdict("c", VerdictKind::Fail, {{VerdictKind::Fail, longmsg}})});
  std::istringstream in(t);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_LE(row.size(), 130u) << row;
  EXPECT_NE(row.find("..."), std::string::npos) << row;
  EXPECT_NE(t.find(longmsg), std::string::npos);
}

// A finding of many lines (546 lines of decision diff for one graph break)
// shows its first lines and says how many more; --verbose shows them all.
TEST(VerdictTable, ManyLinedFindingShowsItsFirstLines) {
  std::string diff = "rank 0: fusion decisions changed (30: 30 fused -> rejected):";
  for (int i = 0; i < 30; ++i) diff += "\n  buf" + std::to_string(i) + "+buf" + std::to_string(i + 1) + ": fused -> rejected";
  const std::vector<Verdict> vs = {verdict("c", VerdictKind::Pass, {{VerdictKind::Pass, diff}})};
  const std::string cut = verdict_table(vs);
  EXPECT_NE(cut.find("buf10+buf11"), std::string::npos) << cut;
  EXPECT_EQ(cut.find("buf11+buf12"), std::string::npos) << cut;
  EXPECT_NE(cut.find("... 19 more line(s) (--verbose shows them all)"), std::string::npos) << cut;
  const std::string all = verdict_table(vs, true);
  EXPECT_NE(all.find("buf29+buf30"), std::string::npos) << all;
  EXPECT_EQ(all.find("more line(s)"), std::string::npos) << all;
  // short text is left as it is
  EXPECT_EQ(first_lines("a\nb\n", 2), "a\nb\n");
  EXPECT_EQ(first_lines("a\nb\nc", 2), "a\nb\n... 1 more line(s) (--verbose shows them all)");
}

// JUnit says what the exit code says: without --strict only FAIL fails
// (exit 1 here because of it), IMPROVED passes with its bless command,
// MISSING is skipped, CANNOT_TEST is an error.
TEST(JunitXml, CountsAndElementsAgreeWithTheExitCode) {
  std::string x = junit_xml(one_of_each(), "fusegate check", false);
  EXPECT_EQ(x.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 0), 0u);
  EXPECT_NE(x.find("<testsuite name=\"fusegate check\" tests=\"5\" failures=\"1\" errors=\"1\" "
                   "skipped=\"1\">"),
            std::string::npos)
      << x;
  EXPECT_EQ(count(x, "<testcase "), 5u) << x;
  EXPECT_EQ(count(x, "<failure "), 1u) << x;
  EXPECT_EQ(count(x, "<error "), 1u) << x;
  EXPECT_EQ(count(x, "<skipped "), 1u) << x;
  EXPECT_NE(x.find("<error type=\"CANNOT_TEST\""), std::string::npos) << x;
  EXPECT_EQ(x.find("type=\"IMPROVED\""), std::string::npos) << x;  // passed, not failed
  EXPECT_NE(x.find("<system-out>IMPROVED: rank 0: kernel_count 12 -&gt; 11"), std::string::npos) << x;
  EXPECT_NE(x.find("fusegate bless wan --mode C --world-size 2"), std::string::npos) << x;
  EXPECT_NE(x.find("</testsuite>\n"), std::string::npos) << x;
}

TEST(JunitXml, StrictFailsImprovedAndMissing) {
  std::string x = junit_xml(one_of_each(), "fusegate check", true);
  EXPECT_NE(x.find("tests=\"5\" failures=\"3\" errors=\"1\" skipped=\"0\">"), std::string::npos) << x;
  EXPECT_NE(x.find("<failure type=\"IMPROVED\""), std::string::npos) << x;
  EXPECT_NE(x.find("<failure type=\"MISSING\""), std::string::npos) << x;
  EXPECT_NE(x.find("(fails under --strict)"), std::string::npos) << x;
  EXPECT_EQ(count(x, "<skipped "), 0u) << x;
}

TEST(JunitXml, EscapesMarkupQuotesAndControlCharacters) {
  std::string x = junit_xml(
      {verdict("a<b>&\"c'", VerdictKind::Fail, {{VerdictKind::Fail, "bad \"x\" <y> & z\x01"}})},
      "s&s", false);
  EXPECT_NE(x.find("name=\"a&lt;b&gt;&amp;&quot;c&apos;\""), std::string::npos) << x;
  EXPECT_NE(x.find("message=\"bad &quot;x&quot; &lt;y&gt; &amp; z\xEF\xBF\xBD\""),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("name=\"s&amp;s\""), std::string::npos) << x;
  EXPECT_EQ(x.find("<b>"), std::string::npos) << x;
  EXPECT_EQ(x.find('\x01'), std::string::npos) << x;
}

TEST(MarkdownSummary, FirstLineIsTheExitCode) {
  using K = VerdictKind;
  std::vector<Verdict> improved = {verdict("a", K::Pass), verdict("b", K::Improved, {{K::Improved, "fewer"}})};
  EXPECT_EQ(markdown_summary(improved, false).rfind("**gate: passed (exit 0)**", 0), 0u);
  EXPECT_EQ(markdown_summary(improved, true).rfind("**gate: failed (exit 1, --strict: IMPROVED and MISSING fail)**", 0),
            0u);
  EXPECT_EQ(markdown_summary({verdict("c", K::CannotTest)}, false).rfind("**gate: cannot test (exit 125)**", 0), 0u);
}

TEST(MarkdownSummary, TableEscapesPipesAndListsDetails) {
  std::vector<Verdict> vs = one_of_each();
  vs.push_back(verdict("x|y", VerdictKind::Fail, {{VerdictKind::Fail, "a|b"}}));
  std::string md = markdown_summary(vs, false);
  EXPECT_EQ(md.rfind("**gate: failed (exit 1)**\n\n| check | verdict | detail |\n|---|---|---|\n", 0), 0u) << md;
  EXPECT_NE(md.find("| x\\|y | **FAIL** | a\\|b |"), std::string::npos) << md;
  EXPECT_NE(md.find("6 checks: 1 passed, 2 failed, 1 improved, 1 missing, 1 cannot test"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("### Details"), std::string::npos) << md;
  EXPECT_NE(md.find("`fusegate bless wan --mode B --world-size 2`"), std::string::npos) << md;
  EXPECT_EQ(md.find("llama/C_w1 (**PASS**)"), std::string::npos) << md;
}

}  // namespace
}  // namespace fg
