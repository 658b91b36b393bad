// What `check` prints and leaves behind: a text table for the terminal,
// JUnit XML for CI test views, a Markdown summary for pull requests, and the
// exit code (DESIGN.md "Harness outputs").
#pragma once
#include <string>
#include <vector>

#include "harness/record/compare.h"

namespace fg {

// One row per verdict (check, verdict, first failing or improved finding),
// then every such finding with the bless command where one is needed, then
// "N checks: P passed, F failed, I improved, M missing, C cannot test". A
// finding of many lines (a diff of decisions) shows its first
// kFindingLinesShown and how many more, all of them with `verbose`.
constexpr size_t kFindingLinesShown = 12;
std::string verdict_table(const std::vector<Verdict>& verdicts, bool verbose = false);
// `text` cut to its first `n` lines and a line saying how many more there
// are and that `--verbose` shows them, ending in a newline where `text`
// does (text of n lines or fewer: as it is).
std::string first_lines(const std::string& text, size_t n, const std::string& indent = "");

// One testsuite, one testcase per verdict, saying what exit_code() says:
// FAIL is a failure; IMPROVED passes (the note and the bless command in its
// system-out) and MISSING is skipped, except with `strict`, where both are
// failures; CANNOT_TEST is an error. A consumer that fails on failures and
// errors agrees with the exit code.
std::string junit_xml(const std::vector<Verdict>& verdicts, const std::string& suite, bool strict);

// A Markdown table plus the findings, for a pull-request comment or a CI
// job summary; its first line is the gate's answer and exit code.
std::string markdown_summary(const std::vector<Verdict>& verdicts, bool strict);

// 1 if any FAIL, or with `strict` any IMPROVED or MISSING (the ratchet);
// else 125 if any CANNOT_TEST (git bisect's "skip"); else 0.
int exit_code(const std::vector<Verdict>& verdicts, bool strict);

}  // namespace fg
