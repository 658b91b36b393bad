#include "harness/cli/report.h"

#include <algorithm>
#include <cstdio>

namespace fg {
namespace {

bool gating(VerdictKind k) { return k == VerdictKind::Fail || k == VerdictKind::Improved; }

bool needs_bless(VerdictKind k) { return k == VerdictKind::Improved || k == VerdictKind::Missing; }

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// Cuts at a byte budget without splitting a UTF-8 sequence.
std::string truncate(const std::string& s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t cut = max_bytes - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

// The finding that explains the verdict: the first one of the verdict's own
// kind, else the first gating one.
const Finding* headline(const Verdict& v) {
  for (const Finding& f : v.findings)
    if (f.kind == v.kind && f.kind != VerdictKind::Pass) return &f;
  for (const Finding& f : v.findings)
    if (gating(f.kind)) return &f;
  return nullptr;
}

struct Tally {
  size_t pass = 0, fail = 0, improved = 0, missing = 0, cannot = 0, flaky = 0;
  explicit Tally(const std::vector<Verdict>& vs) {
    for (const Verdict& v : vs) {
      switch (v.kind) {
        case VerdictKind::Pass: ++pass; break;
        case VerdictKind::Fail: ++fail; break;
        case VerdictKind::Improved: ++improved; break;
        case VerdictKind::Missing: ++missing; break;
        case VerdictKind::CannotTest: ++cannot; break;
        case VerdictKind::Flaky: ++flaky; break;
      }
    }
  }
  std::string line(size_t total) const {
    return std::to_string(total) + " checks: " + std::to_string(pass) + " passed, " +
           std::to_string(fail) + " failed, " + std::to_string(improved) + " improved, " +
           std::to_string(missing) + " missing, " + std::to_string(cannot) + " cannot test" +
           (flaky ? ", " + std::to_string(flaky) + " flaky (quarantined)" : "");
  }
};

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// Continuation lines of a multi-line finding (a ledger diff) stay under it.
std::string indent_rest(const std::string& s, const std::string& indent) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out += indent;
  }
  return out;
}

}  // namespace

std::string first_lines(const std::string& text, size_t n, const std::string& indent) {
  size_t at = 0, lines = 0;
  while (lines < n && at != std::string::npos) {
    at = text.find('\n', at);
    if (at != std::string::npos) ++at, ++lines;
  }
  if (at == std::string::npos || at >= text.size()) return text;
  const size_t rest = static_cast<size_t>(std::count(text.begin() + static_cast<long>(at), text.end(), '\n')) +
                      (text.back() == '\n' ? 0 : 1);
  // a cut text ends as it began: with a newline when it had one
  return text.substr(0, at) + indent + "... " + std::to_string(rest) + " more line(s) (--verbose shows them all)" +
         (text.back() == '\n' ? "\n" : "");
}

std::string verdict_table(const std::vector<Verdict>& verdicts, bool verbose) {
  size_t w = 5;
  for (const Verdict& v : verdicts) w = std::max(w, v.check_id.size());
  const size_t vw = 11;  // "CANNOT_TEST"
  std::string out = pad("CHECK", w) + "  " + pad("VERDICT", vw) + "  DETAIL\n";
  for (const Verdict& v : verdicts) {
    const Finding* h = headline(v);
    std::string detail = h ? truncate(first_line(h->message), 100) : "";
    std::string row = pad(v.check_id, w) + "  " + pad(verdict_name(v.kind), vw) + "  " + detail;
    while (!row.empty() && row.back() == ' ') row.pop_back();
    out += row + "\n";
  }
  for (const Verdict& v : verdicts) {
    // every finding is listed, notes too: a changed fusion decision with an
    // unchanged kernel count still shows as a readable diff of decisions
    if (v.findings.empty() && !needs_bless(v.kind) && v.kind != VerdictKind::CannotTest) continue;
    out += "\n" + v.check_id + " (" + verdict_name(v.kind) + ")\n";
    for (const Finding& f : v.findings) {
      std::string tag = f.kind == VerdictKind::Pass ? "note" : verdict_name(f.kind);
      const std::string m = verbose ? f.message : first_lines(f.message, kFindingLinesShown, "  ");
      out += "  " + pad(tag, vw) + " " + indent_rest(m, "  ") + "\n";
    }
    if (needs_bless(v.kind) && !v.bless_command.empty())
      out += "  bless with: " + v.bless_command + "\n";
  }
  out += "\n" + Tally(verdicts).line(verdicts.size()) + "\n";
  return out;
}

namespace {

// XML 1.0 forbids most control characters even as references; they become
// U+FFFD. Newlines in attributes are kept as references so that they survive
// attribute-value normalisation.
std::string xml_escape(const std::string& s, bool attribute) {
  std::string out;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += attribute ? "&quot;" : "\""; break;
      case '\'': out += attribute ? "&apos;" : "'"; break;
      case '\n': out += attribute ? "&#10;" : "\n"; break;
      case '\t': out += attribute ? "&#9;" : "\t"; break;
      case '\r': out += "&#13;"; break;
      default:
        if (c < 0x20 || c == 0x7F)
          out += "\xEF\xBF\xBD";
        else
          out += ch;
    }
  }
  return out;
}

std::string findings_text(const Verdict& v, bool gating_only) {
  std::string out;
  for (const Finding& f : v.findings) {
    if (gating_only != (f.kind != VerdictKind::Pass)) continue;
    out += std::string(verdict_name(f.kind)) + ": " + f.message + "\n";
  }
  return out;
}

}  // namespace

namespace {

// A verdict as JUnit says it, agreeing with exit_code(): FAIL fails;
// IMPROVED passes (its note and bless command in system-out) and MISSING is
// skipped, except under --strict, where both fail; CANNOT_TEST is an error.
enum class JunitAs { Passed, Failure, Skipped, Error };
JunitAs junit_as(VerdictKind k, bool strict) {
  switch (k) {
    case VerdictKind::Fail: return JunitAs::Failure;
    case VerdictKind::Improved: return strict ? JunitAs::Failure : JunitAs::Passed;
    case VerdictKind::Missing: return strict ? JunitAs::Failure : JunitAs::Skipped;
    case VerdictKind::CannotTest: return JunitAs::Error;
    case VerdictKind::Flaky: return JunitAs::Skipped;  // with the quarantine's reason
    default: return JunitAs::Passed;
  }
}

}  // namespace

std::string junit_xml(const std::vector<Verdict>& verdicts, const std::string& suite, bool strict) {
  size_t failures = 0, errors = 0, skipped = 0;
  for (const Verdict& v : verdicts) {
    JunitAs a = junit_as(v.kind, strict);
    failures += a == JunitAs::Failure;
    errors += a == JunitAs::Error;
    skipped += a == JunitAs::Skipped;
  }
  std::string s = xml_escape(suite, true);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuite name=\"" + s + "\" tests=\"" + std::to_string(verdicts.size()) +
         "\" failures=\"" + std::to_string(failures) + "\" errors=\"" + std::to_string(errors) + "\" skipped=\"" +
         std::to_string(skipped) + "\">\n";
  for (const Verdict& v : verdicts) {
    out += "  <testcase classname=\"" + s + "\" name=\"" + xml_escape(v.check_id, true) + "\"";
    std::string notes = findings_text(v, false);
    if (v.kind == VerdictKind::Pass && notes.empty()) {
      out += "/>\n";
      continue;
    }
    out += ">\n";
    const Finding* h = headline(v);
    std::string message = h ? first_line(h->message) : verdict_name(v.kind);
    std::string body = findings_text(v, true);
    if (needs_bless(v.kind) && !v.bless_command.empty())
      body += "bless with: " + v.bless_command + "\n";
    const JunitAs as = junit_as(v.kind, strict);
    if (as == JunitAs::Failure || as == JunitAs::Error) {
      if (strict && (v.kind == VerdictKind::Improved || v.kind == VerdictKind::Missing))
        message += " (fails under --strict)";
      const char* tag = as == JunitAs::Failure ? "failure" : "error";
      out += "    <" + std::string(tag) + " type=\"" + verdict_name(v.kind) + "\" message=\"" +
             xml_escape(message, true) + "\">" + xml_escape(body, false) + "</" + tag + ">\n";
    } else if (as == JunitAs::Skipped) {
      out += "    <skipped message=\"" + xml_escape(message, true) + "\"/>\n";
      if (!body.empty()) out += "    <system-err>" + xml_escape(body, false) + "</system-err>\n";
    } else if (v.kind != VerdictKind::Pass) {
      // passed, with what a reader should act on (IMPROVED: bless it)
      notes = std::string(verdict_name(v.kind)) + ": " + message + "\n" + body + notes;
    }
    if (!notes.empty()) out += "    <system-out>" + xml_escape(notes, false) + "</system-out>\n";
    out += "  </testcase>\n";
  }
  out += "</testsuite>\n";
  return out;
}

namespace {

// Markdown passes HTML through: a '<' in a kernel or op name must not open a
// tag, and a '|' must not end a table cell. '>' is left alone so that the
// "12 -> 13" arrows stay readable in the raw text.
std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '<')
      out += "&lt;";
    else if (c == '\n')
      out += "<br>";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string markdown_summary(const std::vector<Verdict>& verdicts, bool strict) {
  // the gate's answer first, as its exit code gives it
  const int rc = exit_code(verdicts, strict);
  std::string out = std::string("**gate: ") +
                    (rc == 0 ? "passed" : rc == 1 ? "failed" : "cannot test") + " (exit " + std::to_string(rc) +
                    (strict ? ", --strict: IMPROVED and MISSING fail" : "") + ")**\n\n";
  out += "| check | verdict | detail |\n|---|---|---|\n";
  for (const Verdict& v : verdicts) {
    const Finding* h = headline(v);
    std::string detail = h ? truncate(first_line(h->message), 100) : "";
    out += "| " + md_escape(v.check_id) + " | **" + verdict_name(v.kind) + "** | " +
           md_escape(detail) + " |\n";
  }
  out += "\n**" + Tally(verdicts).line(verdicts.size()) + "**\n";
  bool header = false;
  for (const Verdict& v : verdicts) {
    if (v.kind == VerdictKind::Pass) continue;
    if (!header) {
      out += "\n### Details\n";
      header = true;
    }
    out += "\n- " + md_escape(v.check_id) + " (**" + verdict_name(v.kind) + "**)\n";
    for (const Finding& f : v.findings) {
      std::string tag = f.kind == VerdictKind::Pass ? "note" : verdict_name(f.kind);
      out += "  - " + tag + ": " + md_escape(f.message) + "\n";
    }
    if (needs_bless(v.kind) && !v.bless_command.empty())
      out += "  - bless with: `" + v.bless_command + "`\n";
  }
  return out;
}

int exit_code(const std::vector<Verdict>& verdicts, bool strict) {
  auto any = [&](VerdictKind k) {
    return std::any_of(verdicts.begin(), verdicts.end(),
                       [&](const Verdict& v) { return v.kind == k; });
  };
  // under --strict an IMPROVED or MISSING fails like a FAIL: a found
  // failure outranks the checks that could not test
  if (any(VerdictKind::Fail)) return 1;
  if (strict && (any(VerdictKind::Improved) || any(VerdictKind::Missing))) return 1;
  if (any(VerdictKind::CannotTest)) return 125;
  return 0;
}

}  // namespace fg
