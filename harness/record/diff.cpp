#include "harness/record/diff.h"

#include <algorithm>
#include <string>
#include <vector>

namespace fg {

// ---------------------------------------------------------------------------
// Unified diff. Lines keep their '\n' so that a missing final newline counts
// as a change, as in diff(1). The common head and tail are cut first (a bless
// usually touches a few figures), then Hirschberg's linear-space LCS aligns
// the middle: golden files of many ranks with ledgers reach thousands of
// lines, where a full LCS table would cost hundreds of megabytes.
// ---------------------------------------------------------------------------
namespace {

enum class Op { Equal, Del, Ins };

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) {
      out.push_back(s.substr(start));
      break;
    }
    out.push_back(s.substr(start, nl - start + 1));
    start = nl + 1;
  }
  return out;
}

using Lines = std::vector<std::string>;

// LCS lengths of a[a0,a1) against every prefix (forward) or suffix (reverse)
// of b[b0,b1), in one row of memory.
std::vector<int> lcs_row(const Lines& a, size_t a0, size_t a1, const Lines& b, size_t b0, size_t b1,
                         bool reverse) {
  size_t m = b1 - b0;
  std::vector<int> prev(m + 1, 0), cur(m + 1, 0);
  for (size_t k = 0; k < a1 - a0; ++k) {
    const std::string& x = reverse ? a[a1 - 1 - k] : a[a0 + k];
    for (size_t j = 1; j <= m; ++j) {
      const std::string& y = reverse ? b[b1 - j] : b[b0 + j - 1];
      cur[j] = x == y ? prev[j - 1] + 1 : std::max(prev[j], cur[j - 1]);
    }
    std::swap(prev, cur);
  }
  return prev;
}

void align(const Lines& a, size_t a0, size_t a1, const Lines& b, size_t b0, size_t b1,
           std::vector<Op>* ops) {
  if (a0 == a1) {
    ops->insert(ops->end(), b1 - b0, Op::Ins);
    return;
  }
  if (b0 == b1) {
    ops->insert(ops->end(), a1 - a0, Op::Del);
    return;
  }
  if (a1 - a0 == 1) {
    for (size_t j = b0; j < b1; ++j) {
      if (a[a0] == b[j]) {
        ops->insert(ops->end(), j - b0, Op::Ins);
        ops->push_back(Op::Equal);
        ops->insert(ops->end(), b1 - j - 1, Op::Ins);
        return;
      }
    }
    ops->push_back(Op::Del);
    ops->insert(ops->end(), b1 - b0, Op::Ins);
    return;
  }
  size_t mid = a0 + (a1 - a0) / 2;
  std::vector<int> fwd = lcs_row(a, a0, mid, b, b0, b1, false);
  std::vector<int> bwd = lcs_row(a, mid, a1, b, b0, b1, true);
  size_t m = b1 - b0, best = 0;
  int best_len = -1;
  for (size_t k = 0; k <= m; ++k) {
    int len = fwd[k] + bwd[m - k];
    if (len > best_len) {
      best_len = len;
      best = k;
    }
  }
  align(a, a0, mid, b, b0, b0 + best, ops);
  align(a, mid, a1, b, b0 + best, b1, ops);
}

struct Entry {
  Op op;
  size_t old_line;  // 0-based position in the old text before this entry
  size_t new_line;
};

void put_line(std::string* out, char tag, const std::string& line) {
  out->push_back(tag);
  *out += line;
  if (line.empty() || line.back() != '\n') *out += "\n\\ No newline at end of file\n";
}

// Old files or insertions of zero lines name the line before, as diff(1).
std::string range(size_t start, size_t count) {
  return std::to_string(count == 0 ? start : start + 1) + "," + std::to_string(count);
}

}  // namespace

std::string unified_diff(const std::string& old_text, const std::string& new_text,
                         const std::string& old_name, const std::string& new_name) {
  if (old_text == new_text) return "";
  Lines a = split_lines(old_text), b = split_lines(new_text);
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;

  std::vector<Op> ops(head, Op::Equal);
  std::vector<Op> middle;
  align(a, head, a.size() - tail, b, head, b.size() - tail, &middle);
  // Within one run of changes print removals before additions, as readers
  // of diffs expect; the alignment may interleave them.
  for (size_t i = 0; i < middle.size();) {
    if (middle[i] == Op::Equal) {
      ops.push_back(Op::Equal);
      ++i;
      continue;
    }
    size_t j = i, dels = 0, ins = 0;
    for (; j < middle.size() && middle[j] != Op::Equal; ++j) (middle[j] == Op::Del ? dels : ins)++;
    ops.insert(ops.end(), dels, Op::Del);
    ops.insert(ops.end(), ins, Op::Ins);
    i = j;
  }
  ops.insert(ops.end(), tail, Op::Equal);

  std::vector<Entry> entries;
  size_t oi = 0, ni = 0;
  for (Op op : ops) {
    entries.push_back({op, oi, ni});
    if (op != Op::Ins) ++oi;
    if (op != Op::Del) ++ni;
  }
  std::vector<size_t> changes;
  for (size_t k = 0; k < entries.size(); ++k)
    if (entries[k].op != Op::Equal) changes.push_back(k);

  const size_t context = 3;
  std::string out = "--- " + old_name + "\n+++ " + new_name + "\n";
  for (size_t c = 0; c < changes.size();) {
    size_t first = changes[c], last = changes[c];
    size_t d = c + 1;
    while (d < changes.size() && changes[d] - last - 1 <= 2 * context) last = changes[d++];
    size_t begin = first >= context ? first - context : 0;
    size_t end = std::min(entries.size(), last + 1 + context);
    size_t old_count = 0, new_count = 0;
    for (size_t k = begin; k < end; ++k) {
      if (entries[k].op != Op::Ins) ++old_count;
      if (entries[k].op != Op::Del) ++new_count;
    }
    out += "@@ -" + range(entries[begin].old_line, old_count) + " +" +
           range(entries[begin].new_line, new_count) + " @@\n";
    for (size_t k = begin; k < end; ++k) {
      const Entry& e = entries[k];
      if (e.op == Op::Ins)
        put_line(&out, '+', b[e.new_line]);
      else
        put_line(&out, e.op == Op::Del ? '-' : ' ', a[e.old_line]);
    }
    c = d;
  }
  return out;
}

}  // namespace fg
