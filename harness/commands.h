// The fusegate subcommands that drive runs: check, bless, explain.
#pragma once
#include <string>
#include <vector>

#include "harness/run.h"

namespace fg {

struct Selection {
  std::vector<std::string> repros;  // empty: all
  std::vector<Mode> modes;          // empty: A, B, C
  std::vector<int> worlds;          // empty: 1, 2, 4
  Backend backend = Backend::Cpu;
  FusionPolicy fusion = FusionPolicy::Default;
  std::vector<std::string> fg_dirs;
  std::string golden_dir;
  int timeout_s = 120;
};

struct CheckOptions {
  bool strict = false;
  std::string junit, markdown, records_dir;
};

int cmd_check(const Selection& sel, const CheckOptions& opts);
int cmd_bless(const Selection& sel, const std::string& why);
int cmd_explain(const std::string& graph_file, FusionPolicy fusion, const std::string& dot_dir, bool svg,
                Backend backend = Backend::Cpu);
struct Repro;
int cmd_explain_repro(const Repro& r, Mode mode, int world, FusionPolicy fusion, const std::string& dot_dir, bool svg,
                      Backend backend = Backend::Cpu);

}  // namespace fg
