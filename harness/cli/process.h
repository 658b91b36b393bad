// One fusegate process: the command line run as a process would run it, the
// report a fatal signal leaves, and `explain --batch` and `run --batch`,
// which run many command lines in one process.
#pragma once
#include <string>

namespace fg::cli {

// The command line parsed and run (harness/cli/main.cpp); errors thrown.
int run_main(int argc, char** argv);

// The command line's exit code, every error turned into its message and
// documented code (harness/cli/entry.cpp).
int guarded_main(int argc, char** argv);

// Makes a memory or arithmetic fault say where, on stderr, before the
// process dies of the same signal (harness/cli/fatal_signal.cpp).
void install_fatal_signal_handlers();

// `COMMAND --batch FILE` (harness/cli/batch.cpp; explain and run): each
// line a case of COMMAND run through guarded_main, its output framed.
int command_batch(const std::string& command, const std::string& file);
// > 0 while command_batch runs a case: no batch inside one.
extern int batch_depth;

}  // namespace fg::cli
