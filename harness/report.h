// What `check` prints and leaves behind: a text table for the terminal,
// JUnit XML for CI test views, a Markdown summary for pull requests, and the
// exit code (DESIGN.md "Harness outputs").
#pragma once
#include <string>
#include <vector>

#include "harness/compare.h"

namespace fg {

// One row per verdict (check, verdict, first failing or improved finding),
// then every such finding in full with the bless command where one is
// needed, then "N checks: P passed, F failed, I improved, M missing, C cannot
// test".
std::string verdict_table(const std::vector<Verdict>& verdicts);

// One testsuite, one testcase per verdict. FAIL and IMPROVED are failures
// (an improvement still needs a bless before the gate goes green); MISSING
// and CANNOT_TEST are skipped.
std::string junit_xml(const std::vector<Verdict>& verdicts, const std::string& suite);

// A Markdown table plus the findings, for a pull-request comment or a CI
// job summary.
std::string markdown_summary(const std::vector<Verdict>& verdicts);

// 1 if any FAIL; else 125 if any CANNOT_TEST (git bisect's "skip"); else, with
// `strict`, 1 if any IMPROVED or MISSING (the ratchet); else 0.
int exit_code(const std::vector<Verdict>& verdicts, bool strict);

}  // namespace fg
