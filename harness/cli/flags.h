// Flags checked before anything runs: paths a command will write, and the
// fuzz command's options. Bad input is a UserError (exit 2) naming the flag.
#pragma once
#include <string>

#include "harness/tools/fuzz.h"

namespace fg::cli {

// `dir` is a folder that exists or can be made, and is writable; messages
// name `shown`, the path as the user gave it.
void require_writable_dir(const std::string& flag, const std::string& dir, const std::string& shown = "");
// `file` can be written: a file in such a folder, this process's own
// stream, or a FIFO or device already there.
void require_writable_file(const std::string& flag, const std::string& file);

// fuzz's flags as given, before they are settled into FuzzOptions.
struct FuzzFlags {
  std::string fusion = "default";  // or all
  std::string worlds = "1";        // 1, 2 or a list 1,2
  std::string seed = "1";          // 0..2^64-1, as written
  std::string seconds_text;        // --seconds as written (messages)
  std::string fast_paths = "proven";
  std::string graph;               // --graph FILE: judge this one graph
  bool seconds_given = false, graphs_given = false, jobs_given = false;
};
// Settles `o` (whose plain options CLI11 already filled) from `f`: the
// policies, seed, world sizes and jobs, and every bound; a duration that is
// no number of seconds, a seed with a sign or past 2^64-1, a world size
// outside 1..8 are bad input.
void settle_fuzz_options(FuzzOptions& o, const FuzzFlags& f);

}  // namespace fg::cli
