// fusegate fuzz and minify: a finding made small and written as a .fg with
// the commands that replay and bisect it (harness/tools/fuzz_parts.h).
#include <chrono>
#include <filesystem>
#include <iostream>

#include "fusion/fault.h"
#include "fusion/ir/text.h"
#include "harness/record/files.h"
#include "harness/tools/fuzz.h"
#include "harness/tools/fuzz_parts.h"

namespace fg {

namespace {

std::string one_line(const std::string& s) {
  std::string r;
  for (char c : s) r += c == '\n' ? ' ' : c;
  return r;
}

}  // namespace

std::string replay_flags(const FuzzOptions& o, const FusionPolicy* policy, int world) {
  return std::string(" --mode ") + mode_letter(o.mode) +
         (!policy || *policy == FusionPolicy::Default ? "" : std::string(" --fusion ") + policy_name(*policy)) +
         (o.backend == Backend::Cpu ? "" : std::string(" --backend ") + backend_name(o.backend)) +
         (world > 1 ? " --world-size " + std::to_string(world) : "") +
         (o.fast_paths == "proven" ? "" : " --fast-paths " + o.fast_paths);
}

nlohmann::json write_finding(const FuzzOptions& o, FuzzRank& fr, const Graph& g, const FuzzFinding& f, int64_t index,
                             uint64_t seed, const std::string& who) {
  namespace fs = std::filesystem;
  const bool minify = !o.minify_out.empty();
  const bool speak = fr.rank == 0;
  const std::string at_world = fr.world > 1 ? " at world size " + std::to_string(fr.world) : "";
  if (speak) {
    if (minify)
      std::cerr << who << o.graph_name << at_world << ": " << f.kind << " under --fusion " << policy_name(f.policy)
                << ": " << f.detail << "\n"
                << who << "minimizing (" << op_nodes(g) << " nodes) ...\n";
    else
      std::cerr << "\n" << who << "graph " << index << " (seed " << seed
                << (fr.world > 1 ? ", world size " + std::to_string(fr.world) : "") << "): " << f.kind
                << " under --fusion " << policy_name(f.policy) << ": " << f.detail << "\n"
                << who << "minimizing (" << op_nodes(g) << " nodes) ...\n";
  }
  int checks = 0;
  const auto m0 = std::chrono::steady_clock::now();
  Graph small = minimize(g, f, o, fr, &checks);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - m0).count();
  // the file replays as its own repro, named by its file (a minified
  // repro's inputs draw their repro's values, whatever the name: `seed`)
  const std::string path = minify ? o.minify_out : o.findings_dir + "/" + fuzz_name(small) + ".fg";
  const std::string sname = fs::path(path).stem().string();
  if (minify) small.name = sname;
  std::optional<FuzzFinding> again = fuzz_check(small, sname, o, fr);
  const std::string flags = replay_flags(o, &f.policy, fr.world);
  const std::string cmd = replay_env() + "fusegate run --graph " + path + flags;
  const bool replays = again && *again == f;
  if (speak) {
    const std::string what = f.kind + " under --fusion " + policy_name(f.policy) + at_world;
    const std::string from =
        minify ? "# from fusegate minify of " + o.graph_name + " ("
               : o.graph_text.empty() ? "# from graph " + std::to_string(index) + " of fusegate fuzz --seed " +
                                            std::to_string(o.seed) + " (seed " + std::to_string(seed) + ", "
                                      : "# from fusegate fuzz --graph " + o.graph_name + ".fg (";
    const std::string text =
        (minify ? "# fusegate minify: " : "# fusegate fuzz finding: ") + what + "\n# " +
        one_line(again && !again->kind.empty() ? again->detail : f.detail) + "\n" + from +
        std::to_string(op_nodes(g)) + " nodes; " + std::to_string(op_nodes(small)) + " after " +
        std::to_string(checks) + " checks)\n" + "# replay: " + cmd + "\n# bisect: " + replay_env(false) +
        "fusegate bisect --graph " + path + flags + "\n" + print_graph(small) + "\n";
    if (!minify) fs::create_directories(o.findings_dir);
    write_atomic(path, text);
    std::cerr << who << op_nodes(g) << " -> " << op_nodes(small) << " nodes in " << checks << " checks ("
              << static_cast<int>(secs) << " s); wrote " << path
              << (replays ? ""
                          : minify ? " (the minimized graph no longer shows it as it is written: see its detail)"
                                   : " (the minimized graph no longer shows it under its own name: replay the seed)")
              << "\n  replay: " << cmd << "\n";
  }
  return {{"kind", f.kind},
          {"fusion", policy_name(f.policy)},
          {"detail", f.detail},
          {"seed", seed},
          {"world_size", fr.world},
          {"nodes", op_nodes(g)},
          {"minimized_nodes", op_nodes(small)},
          {"checks", checks},
          {"seconds", secs},
          {"file", path},
          {"replays", replays}};
}

}  // namespace fg
