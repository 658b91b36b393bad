#include "harness/tools/bisect_culprit.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "fusion/ir/text.h"
#include "harness/record/compare.h"
#include "harness/record/json_read.h"

namespace fg {

using nlohmann::json;

long long Application::graph() const {
  const std::optional<long long>& g = entry ? entry->graph : variant ? variant->graph : stage->graph;
  return g.value_or(0);
}
std::vector<std::string> Application::nodes() const {
  return entry ? entry->nodes : variant ? variant->nodes : std::vector<std::string>{stage->node};
}
std::vector<std::string> Application::source() const {
  const auto& s = entry ? entry->source : variant ? variant->source : stage->source;
  return s ? *s : std::vector<std::string>{};
}
json Application::to_json() const {
  return entry ? record::part_to_json(*entry) : variant ? record::part_to_json(*variant) : record::part_to_json(*stage);
}

namespace {

// Whether a ledger entry is one application of a ledger-counted subsystem
// (made, or with `bisect_limit`, held back).
bool of_subsystem(const record::LedgerEntry& e, const std::string& subsystem) {
  const std::string reason = e.reason.value_or("");
  const std::string first = e.nodes.empty() ? "" : e.nodes[0];
  const std::string second = e.nodes.size() > 1 ? e.nodes[1] : "";
  if (reason == "bisect_limit") {
    if (subsystem == "fast_paths") return first.rfind("fast_path ", 0) == 0;
    if (subsystem == "gemm_epilogue") return second.size() > 6 && second.substr(second.size() - 6) == "(gelu)";
    if (subsystem == "tp_rewrite") return second.size() > 5 && second.substr(second.size() - 5) == "(add)";
    if (subsystem == "decisions") return first.rfind("buf", 0) == 0 || first.rfind("op", 0) == 0;
    return false;
  }
  if (e.outcome != "fused") return false;
  if (subsystem == "fast_paths") return reason == "fast_path_used";
  if (subsystem == "gemm_epilogue") return reason == "gemm_epilogue";
  if (subsystem == "tp_rewrite") return reason == "tp_residual_hoisted";
  if (subsystem == "decisions") return reason.empty();
  return false;
}

// Every application of `subsystem` the first rank's record lists, made or
// held back, in order.
std::vector<std::pair<Application, bool>> listed(const record::RunRecord& rec, const std::string& subsystem) {
  std::vector<std::pair<Application, bool>> out;  // the application, held back
  auto ranks = record::ranks_by_id(rec);
  if (ranks.empty()) return out;
  const record::RankRecord& r = *ranks.begin()->second;
  if (subsystem == "codegen_variants") {
    if (r.codegen_variants)
      for (const record::CodegenVariant& v : *r.codegen_variants) out.push_back({{nullptr, &v}, v.held_back.value_or(false)});
  } else if (subsystem == "decompositions" || subsystem == "lowerings") {
    if (r.stage_applications)
      for (const record::StageApplication& a : *r.stage_applications)
        if (a.stage == subsystem) out.push_back({{nullptr, nullptr, &a}, a.held_back.value_or(false)});
  } else if (r.ledger) {
    for (const record::LedgerEntry& e : *r.ledger)
      if (of_subsystem(e, subsystem)) out.push_back({{&e}, e.reason.value_or("") == "bisect_limit"});
  }
  return out;
}

std::string nodes_text(const Application& a) { return join(a.nodes(), "+"); }
std::string number_text(const std::optional<long long>& n) { return n ? std::to_string(*n) : ""; }

}  // namespace

std::vector<Application> applications(const record::RunRecord& rec, const std::string& subsystem, long long graph) {
  std::vector<Application> out;
  for (const auto& [a, held] : listed(rec, subsystem))
    if (!held && (graph < 0 || a.graph() == graph)) out.push_back(a);
  return out;
}

std::optional<Application> held_back(const record::RunRecord& rec, const std::string& subsystem, long long graph) {
  for (const auto& [a, held] : listed(rec, subsystem))
    if (held && (graph < 0 || a.graph() == graph)) return a;
  return std::nullopt;
}

std::string describe(const Application& a) {
  record::LedgerEntry at_of;
  at_of.source = a.source();
  const std::string at = ledger_source_text(at_of);
  if (a.stage)
    return (a.stage->stage == "decompositions" ? "the decomposition of " + a.stage->rule + " at "
                                               : "the " + a.stage->rule + " lowered into generated code at ") +
           a.stage->node + " (graph " + number_text(a.stage->graph) + ")" + (at.empty() ? "" : "\n  repro source: " + at);
  if (a.variant)
    return "kernel " + a.variant->kernel + " (nodes " + nodes_text(a) + ", graph " + number_text(a.variant->graph) +
           ") written " + (a.variant->variant == "chunked" ? "in chunks of 8 (16-byte vector loads and stores)"
                           : a.variant->variant == "simd" ? "with its loop marked for vectorization (omp simd)"
                                                          : a.variant->variant) +
           (at.empty() ? "" : "\n  repro source: " + at);
  const record::LedgerEntry& e = *a.entry;
  return ledger_entry_text(e, false) + " (graph " + number_text(e.graph) + ", round " + number_text(e.round) +
         (e.reason.value_or("").empty() || *e.reason == "bisect_limit" ? "" : ", " + *e.reason) + ")" + (at.empty() ? "" : "\n  repro source: " + at);
}

std::string rule_of(const Application& a, const std::string& subsystem) {
  if (a.stage) return a.stage->rule;
  if (a.variant) return a.variant->variant == "simd" ? "vectorized loops (omp simd)" : "kernels written in chunks of 8";
  if (subsystem == "fast_paths")
    for (const std::string& n : a.nodes())
      if (n.rfind("fast_path ", 0) == 0) return "fast path " + n.substr(10);
  if (subsystem == "gemm_epilogue") return "GELU folded into its GEMM";
  if (subsystem == "tp_rewrite") return "residual add hoisted onto rank 0's GEMM";
  return "fusion decision";
}

// The text of the culprit's repro lines, read where the record's paths lead:
// as written (absolute, or relative to here), else beside the golden
// directory (C++ repros are named from the project root: "repros/x.cpp").
std::string source_excerpt(const Application& a, const std::string& golden_dir, const std::vector<std::string>& fg_dirs) {
  std::string out;
  int shown = 0;
  for (const std::string& x : a.source()) {
    SourceLoc l;
    if (shown == 8 || !SourceLoc::parse(x, &l)) continue;
    const std::string& file = l.file;
    const long want = l.line;
    std::filesystem::path path = file;
    if (!std::filesystem::exists(path)) path = std::filesystem::path(golden_dir).parent_path() / file;
    // a .fg repro of a --repro-dir is named "<folder>/x.fg"
    // (or, for `--graph FILE.fg`, the file itself: its folder's parent)
    for (const auto& d : fg_dirs) {
      const std::filesystem::path dir =
          std::filesystem::path(d).extension() == ".fg" ? std::filesystem::path(d).parent_path() : std::filesystem::path(d);
      if (!std::filesystem::exists(path)) path = dir.parent_path() / file;
      if (!std::filesystem::exists(path)) path = dir / file;  // named by its file alone ("x.fg:12")
    }
    std::ifstream in(path);
    std::string text;
    for (long n = 1; in && std::getline(in, text); ++n)
      if (n == want) {
        out += "    " + file + ":" + std::to_string(want) + " | " + text.substr(text.find_first_not_of(' ') == std::string::npos ? 0 : text.find_first_not_of(' ')) + "\n";
        ++shown;
        break;
      }
  }
  return out;
}

// The kernel that holds the culprit's nodes and its source, from `explain`
// run under the bad limits.
std::string culprit_kernel(const RunSpec& spec, const std::string& env, const Application& entry) {
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string cmd = "FUSEGATE_BISECT='" + env + "' '" + self + "' explain " + spec.repro + " --mode " +
                    mode_letter(spec.mode) + " --world-size " + std::to_string(spec.world) + " --backend " +
                    backend_name(spec.backend) + " --fusion " + policy_name(spec.fusion) + " --fast-paths " +
                    spec.fast_paths.text() + " --golden-dir '" + spec.golden_dir + "'";
  for (const auto& d : spec.fg_dirs) cmd += " --repro-dir '" + d + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen((cmd + " 2>/dev/null").c_str(), "r"), pclose);
  if (!p) return "";
  std::string text;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p.get())) text += buf.data();
  // the culprit's nodes as the ledger names them: scheduler groups
  // ("buf2+buf4") for fusion decisions, "fast_path NAME" for a fast path
  std::set<std::string> names;
  std::string fast;
  for (const std::string& t : entry.nodes()) {
    if (t.rfind("fast_path ", 0) == 0) fast = "fastpath_" + t.substr(10);
    std::stringstream ss(t);
    std::string part;
    while (std::getline(ss, part, '+'))
      if (part.rfind("buf", 0) == 0 || part.rfind("op", 0) == 0) names.insert(part);
  }
  std::istringstream in(text);
  std::string line, kernel;
  while (std::getline(in, line)) {
    const size_t at = line.find("nodes:");
    if (at == std::string::npos) continue;
    const std::string head = line.substr(line.find_first_not_of(' '));
    std::set<std::string> in_kernel;
    std::stringstream ss(line.substr(at + 6));
    std::string nm;
    while (ss >> nm) in_kernel.insert(nm);
    bool all = !names.empty();
    for (const auto& x : names) all = all && in_kernel.count(x);
    if (all || (!fast.empty() && head.rfind(fast, 0) == 0)) {
      kernel = line;
      break;
    }
  }
  if (kernel.empty()) return "";
  std::string name = kernel.substr(kernel.find_first_not_of(' '));
  name = name.substr(0, name.find(' '));
  std::string out = "  kernel: " + kernel.substr(kernel.find_first_not_of(' ')) + "\n";
  const size_t at = text.find("// " + name + ":");
  if (at != std::string::npos) {
    size_t end = text.find("\n\n", at);
    out += "  its source:\n" + text.substr(at, end == std::string::npos ? std::string::npos : end - at) + "\n";
  }
  return out;
}

}  // namespace fg
