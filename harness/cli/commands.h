// The fusegate subcommands that drive runs: check, bless, explain.
#pragma once
#include <string>
#include <vector>

#include "harness/run/run.h"

namespace fg {

struct Selection {
  std::vector<std::string> repros;  // empty: all
  std::vector<Mode> modes;          // empty: A, B, C
  std::vector<int> worlds;          // empty: 1, 2, 4
  Backend backend = Backend::Cpu;
  FusionPolicy fusion = FusionPolicy::Default;
  std::vector<std::string> fg_dirs;
  // the shipped .fg folder, and whether --repro-dir (or --graph) took its
  // place in fg_dirs: then its repros' goldens are left out, and said so
  std::string shipped_fg_dir;
  bool fg_dirs_given = false;
  std::string golden_dir;
  int timeout_s = 120;
  FastPathSelection fast_paths;
  std::vector<std::string> require_fast_paths;  // each must run ("used"), else the check fails
  // the flags the user gave that a bless of the same checks must repeat
  // (--repro-dir, --golden-dir, --timeout), shell-quoted, each after a space
  std::string repeat_flags;
  // across nodes (--nnodes K): every node runs the same command, node 0
  // compares and writes (harness/run/nodes.h)
  NodeSpec nodes;
};

struct CheckOptions {
  bool strict = false;
  // exact digests must be compared: a golden without this environment's
  // fails (harness/record/golden_env.h)
  bool exact = false;
  std::string junit, markdown, records_dir;
  std::string as_of;  // YYYY-MM-DD: the date quarantine expiry is judged at (empty: today, UTC)
  bool verbose = false;  // every line of every finding (a long diff of decisions)
};

int cmd_check(const Selection& sel, const CheckOptions& opts);
// Each golden written shows its diff: a new file its size, a long diff its
// first lines (`verbose`: all).
int cmd_bless(const Selection& sel, const std::string& why, bool missing_only = false, bool verbose = false);
int cmd_explain(const std::string& graph_file, FusionPolicy fusion, const std::string& dot_dir, bool svg,
                Backend backend = Backend::Cpu, const FastPathSelection& fast = {},
                const std::string& golden_dir = "");
struct Repro;
int cmd_explain_repro(const Repro& r, Mode mode, int world, FusionPolicy fusion, const std::string& dot_dir, bool svg,
                      Backend backend = Backend::Cpu, const FastPathSelection& fast = {},
                      const std::string& golden_dir = "");
// The shape classes of the sites where fast path `name` applies to repro `r`
// in mode C at `world` (compiler only, no ranks); empty: it does not match.
std::vector<std::string> dry_fast_path_sites(const Repro& r, int world, Backend backend, const std::string& name);

// fusegate ab / prove (harness/tools/ab.cpp). `ab` runs spec.repro with
// spec.ab_fast_path forced against the generic path.
int cmd_ab(const RunSpec& spec, const std::string& json_out);
int cmd_prove(const std::string& fast_path, const std::vector<int>& worlds, const Selection& sel);
// fusegate proofs (harness/tools/ab.cpp): each fast path's proof files and whether
// this tree would take them; backend cpu, cuda or all.
int cmd_proofs(const std::string& golden_dir, const std::string& backend, bool strict);

// fusegate bisect (harness/tools/bisect.cpp): 0 nothing to bisect, 1 culprit found
// (or bad with every subsystem off, or a regression against the golden),
// 2 bad input, 125 cannot test.
struct BisectOptions {
  std::string json_out;          // --json
  std::string predicate = "auto";  // --predicate: auto, accuracy, crash, hang, ranks, kernels, graphs
};
int cmd_bisect(const RunSpec& spec, const BisectOptions& opts);

}  // namespace fg
