// fusegate minify: a failing repro shrunk to the smallest .fg that still
// fails the same way (the same verdict class under the same policy; for a
// mismatch, the output that failed), as PyTorch's accuracy minifier does
// for a compiled model. A C++ repro is exported first (export.h); a .fg
// is read as written. Every input keeps its repro's values (`seed`), so
// the result replays under any file name. The judging and the shrinking
// are the fuzzer's (fuzz.h: fuzz_check, minimize), one graph at one world
// size, in this process at world size 1 and in one job's rank processes
// above it.
#pragma once
#include <string>
#include <vector>

#include "fusion/capture/session.h"
#include "fusion/options.h"

namespace fg {

struct MinifySpec {
  std::string repro;       // a repro's name, or
  std::string graph_file;  // an .fg file
  std::vector<std::string> fg_dirs;
  int world = 1;
  Mode mode = Mode::Compiled;  // B or C: where graphs break (disabled regions, host ops)
  FusionPolicy fusion = FusionPolicy::Default;
  Backend backend = Backend::Cpu;
  std::string fast_paths = "proven";
  std::string golden_dir;
  int timeout_s = 120;
  std::string out;  // the .fg written; default <name>.min.fg here
  // Where set, nothing runs: each smaller graph is written to a file and
  // judged by `predicate FILE` (exit 0: it still shows what is sought; 1:
  // not; anything else, or past timeout_s: it cannot be judged, which
  // counts as not for a smaller graph and is exit 125 for the graph given).
  std::string predicate;
};

// 0 the repro passes (with a predicate: the graph given does not show it;
// nothing to minify), 1 minified (the file written), 2 bad input, 125
// cannot test.
int cmd_minify(const MinifySpec& m);

}  // namespace fg
