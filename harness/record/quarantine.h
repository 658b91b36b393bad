// Quarantine with expiry (golden/quarantine.json): checks known to be flaky,
// each with its reason, a tracking link and an expiry date. Until it
// expires, a quarantined check that fails or cannot test reports FLAKY and
// does not fail the gate; from its expiry date on, the check fails saying
// the quarantine expired, whatever its verdict. An entry may end at most
// kQuarantineMaxDays after the day it is read. `bless` never reads or
// writes the file.
//
//   {"format_version": 1,
//    "checks": [{"id": "tp_block_llama/C/w2/cpu", "reason": "...",
//                "link": "https://...", "expires": "2026-12-31"}]}
#pragma once
#include <string>
#include <vector>

#include "harness/record/compare.h"

namespace fg {

struct QuarantineEntry {
  std::string id, reason, link, expires;  // expires: YYYY-MM-DD
};

// Reads `path` (absent: no quarantine). Bad input (exit 2, named with
// file:line:col or the entry): malformed JSON, another format_version, a
// missing or empty field, a date that is not YYYY-MM-DD, an id given twice.
std::vector<QuarantineEntry> load_quarantine(const std::string& path);

// A YYYY-MM-DD date, or "" if `text` is not one (a real calendar date).
std::string parse_date(const std::string& text);
// Today in UTC, YYYY-MM-DD.
std::string today_utc();

// The most days a quarantine may run past the day it is read (today, not
// --as-of): one that ends later (an audit's "9999-12-31" excused any
// failure for ever) is bad input.
constexpr int kQuarantineMaxDays = 90;
// Bad input (exit 2, the entry named) for an entry expiring more than
// kQuarantineMaxDays after `today`.
void check_quarantine_horizon(const std::vector<QuarantineEntry>& q, const std::string& path,
                              const std::string& today);

// Applies the quarantine to one verdict, as of `as_of` (YYYY-MM-DD).
void apply_quarantine(const std::vector<QuarantineEntry>& q, const std::string& as_of, Verdict* v);

}  // namespace fg
