#include "harness/record/quarantine.h"

#include <cstdio>
#include <ctime>
#include <set>

#include "fusion/errors.h"
#include "harness/record/files.h"
#include "harness/record/json_read.h"

namespace fg {

using nlohmann::json;

std::string parse_date(const std::string& text) {
  int y = 0, m = 0, d = 0;
  char tail = 0;
  if (text.size() != 10 || std::sscanf(text.c_str(), "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3) return "";
  if (text[4] != '-' || text[7] != '-' || y < 1970 || m < 1 || m > 12 || d < 1) return "";
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (d > days[m - 1] + (m == 2 && leap ? 1 : 0)) return "";
  return text;
}

namespace {
// Days since 1970-01-01 of a date parse_date() accepted (the civil calendar).
long days_of(const std::string& date) {
  int y = 0, m = 0, d = 0;
  std::sscanf(date.c_str(), "%4d-%2d-%2d", &y, &m, &d);
  y -= m <= 2;
  const long era = (y >= 0 ? y : y - 399) / 400;
  const long yoe = y - era * 400;
  const long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}
}  // namespace

void check_quarantine_horizon(const std::vector<QuarantineEntry>& q, const std::string& path,
                              const std::string& today) {
  for (const auto& e : q) {
    const long ahead = days_of(e.expires) - days_of(today);
    if (ahead > kQuarantineMaxDays)
      user_error(path + ": error: quarantine of '" + e.id + "' expires on " + e.expires + ", " +
                 std::to_string(ahead) + " days after today (" + today + "); a quarantine may run at most " +
                 std::to_string(kQuarantineMaxDays) + " days: fix the check, or set an earlier date and renew it");
  }
}

std::string today_utc() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[11];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::vector<QuarantineEntry> load_quarantine(const std::string& path) {
  const std::string hint = "fix the file (see harness/record/quarantine.h for its format)";
  std::optional<json> j = read_json_file(path, "quarantine file", hint);
  std::vector<QuarantineEntry> out;
  if (!j) return out;
  auto bad = [&](const std::string& what) { user_error(path + ": error: " + what + "; " + hint); };
  if (!j->is_object()) bad("the quarantine file must be a JSON object");
  const json* fv = field(*j, "format_version");
  if (!fv || !fv->is_number_integer() || fv->get<int>() != 1) bad("format_version must be 1");
  const json* checks = field(*j, "checks");
  if (!checks || !checks->is_array()) bad("'checks' must be a list");
  std::set<std::string> seen;
  for (size_t i = 0; i < checks->size(); ++i) {
    const json& e = (*checks)[i];
    const std::string where = "checks[" + std::to_string(i) + "]";
    if (!e.is_object()) bad(where + " must be an object");
    QuarantineEntry q;
    for (auto [key, slot] : {std::pair<const char*, std::string*>{"id", &q.id}, {"reason", &q.reason},
                             {"link", &q.link}, {"expires", &q.expires}}) {
      const json* v = field(e, key);
      if (!v || !v->is_string() || v->get<std::string>().empty())
        bad(where + "." + key + " must be a non-empty string (every quarantine has an id, a reason, a tracking "
                               "link and an expiry date)");
      *slot = v->get<std::string>();
    }
    if (parse_date(q.expires).empty()) bad(where + ".expires '" + q.expires + "' is not a date YYYY-MM-DD");
    if (!seen.insert(q.id).second) bad(where + ".id '" + q.id + "' is quarantined twice");
    out.push_back(q);
  }
  return out;
}

void apply_quarantine(const std::vector<QuarantineEntry>& q, const std::string& as_of, Verdict* v) {
  for (const QuarantineEntry& e : q) {
    if (e.id != v->check_id) continue;
    const std::string what = "quarantined: " + e.reason + " (" + e.link + ")";
    if (as_of >= e.expires) {
      // an expired quarantine fails the check until it is renewed or removed
      v->findings.push_back({VerdictKind::Fail, "quarantine expired on " + e.expires + " (" + e.reason + ", " +
                                                    e.link + "): fix the check or renew its entry in "
                                                    "golden/quarantine.json"});
      v->kind = VerdictKind::Fail;
    } else if (v->kind == VerdictKind::Fail || v->kind == VerdictKind::CannotTest) {
      v->findings.insert(v->findings.begin(), {VerdictKind::Flaky, what + ", until " + e.expires});
      v->kind = VerdictKind::Flaky;
    } else {
      v->findings.push_back({VerdictKind::Pass, what + ", until " + e.expires +
                                                    "; it passed this time (remove it once it holds)"});
    }
    return;
  }
}

}  // namespace fg
