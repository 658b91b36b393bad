#include "harness/cli/flags.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fusion/errors.h"
#include "fusion/ir/text.h"
#include "fusion/options.h"
#include "harness/record/files.h"

namespace fg::cli {

void require_writable_dir(const std::string& flag, const std::string& dir, const std::string& shown) {
  namespace fs = std::filesystem;
  const std::string what = flag + " " + (shown.empty() ? dir : shown);
  fs::path p = fs::absolute(dir);
  if (fs::exists(p) && !fs::is_directory(p)) user_error(what + ": " + p.string() + " is not a folder");
  // the nearest existing ancestor decides whether the folder can be made
  fs::path probe = p;
  while (!fs::exists(probe) && probe != probe.parent_path()) probe = probe.parent_path();
  if (!fs::is_directory(probe) || ::access(probe.c_str(), W_OK) != 0)
    user_error(what + ": cannot be written (" + probe.string() + " is not a writable folder); choose another path");
}

void require_writable_file(const std::string& flag, const std::string& file) {
  namespace fs = std::filesystem;
  if (fs::is_directory(file)) user_error(flag + " " + file + ": is a folder; give a file name");
  // this process's own stream, or a FIFO or device already there: written
  // through (write_atomic), whose errors are bad input; its folder (/dev)
  // need not be writable
  std::error_code ec;
  if (std_stream_fd(file) >= 0 || (fs::exists(file, ec) && !fs::is_regular_file(file, ec))) return;
  require_writable_dir(flag, fs::absolute(file).parent_path().string(), file);
}

void settle_fuzz_options(FuzzOptions& o, const FuzzFlags& f) {
  if (f.fusion == "all") o.policies = {FusionPolicy::Default, FusionPolicy::MaxAutotune, FusionPolicy::None};
  else o.policies = {parse_fusion(f.fusion)};
  // --graphs alone: as many graphs as asked, however long they take
  if (f.graphs_given && !f.seconds_given) o.seconds = 0;
  if (!std::isfinite(o.seconds) || o.seconds < 0)
    user_error("--seconds " + (f.seconds_text.empty() ? std::to_string(o.seconds) : f.seconds_text) + ": a number of seconds, 0 or more");
  {
    // no sign, no wrap: 0..2^64-1 as written
    const char* b = f.seed.data();
    const auto r = std::from_chars(b, b + f.seed.size(), o.seed);
    if (f.seed.empty() || r.ec != std::errc() || r.ptr != b + f.seed.size())
      user_error("--seed " + f.seed + ": a whole number from 0 to 18446744073709551615");
  }
  if (o.graphs < 0) user_error("--graphs " + std::to_string(o.graphs) + ": a number of graphs, 0 or more");
  if (o.seconds <= 0 && o.graphs <= 0) user_error("fuzz needs --seconds N or --graphs N above 0");
  o.worlds.clear();
  {
    std::istringstream in(f.worlds);
    for (std::string w; std::getline(in, w, ',');) {
      int v = 0;
      try {
        size_t used = 0;
        v = std::stoi(w, &used);
        if (used != w.size()) v = 0;
      } catch (const std::exception&) {
      }
      if (v < 1 || v > 8) user_error("--world-size " + f.worlds + ": each world size must be 1..8");
      if (std::find(o.worlds.begin(), o.worlds.end(), v) == o.worlds.end()) o.worlds.push_back(v);
    }
  }
  if (o.worlds.empty()) user_error("--world-size " + f.worlds + ": give 1, 2, ... or a list such as 1,2");
  if (!o.emit_dir.empty()) {
    if (!f.graph.empty()) user_error("--emit writes generated graphs: it takes no --graph");
    if (!f.graphs_given || o.graphs <= 0) user_error("--emit " + o.emit_dir + " needs --graphs N (how many to write)");
    if (o.worlds.size() != 1) user_error("--emit writes graphs of one world size, not " + f.worlds);
    require_writable_dir("--emit", o.emit_dir);
  }
  if (!f.jobs_given) o.jobs = static_cast<int>(o.worlds.size());
  if (o.jobs < static_cast<int>(o.worlds.size()) || o.jobs > 64)
    user_error("--jobs " + std::to_string(o.jobs) + ": at least one job a world size (" +
               std::to_string(o.worlds.size()) + ") and at most 64");
  if (!f.graph.empty()) {
    // one graph, judged once at each world size (its parse errors are the
    // user's, at their line)
    namespace fs = std::filesystem;
    if (fs::path(f.graph).extension() != ".fg" || !fs::is_regular_file(f.graph))
      user_error("--graph " + f.graph + ": not an .fg file");
    std::ifstream in(f.graph, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in && !in.eof()) user_error("--graph " + f.graph + ": cannot be read");
    o.graph_text = text.str();
    o.graph_name = fs::path(f.graph).stem().string();
    parse_graph(o.graph_text, f.graph);
    o.jobs = static_cast<int>(o.worlds.size());
    o.graphs = o.jobs;
    if (!f.seconds_given) o.seconds = 0;
  }
  if (o.timeout_s < 1) user_error("--timeout must be at least 1");
  parse_fast_paths(f.fast_paths);  // a bad value says so here
  o.fast_paths = f.fast_paths;
  if (o.max_ops < 1 || o.max_ops > 64) user_error("--max-ops must be 1..64");
  if (o.max_findings < 1) user_error("--max-findings must be at least 1");
  if (!o.json_out.empty()) require_writable_file("--json", o.json_out);
  require_writable_dir("--findings", o.findings_dir);
  if (o.seconds <= 0) o.seconds = 1e12;
}

}  // namespace fg::cli
