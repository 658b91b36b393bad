// The fusegate process: main(), the rank spawner's own entry
// (harness/run/spawner.h), and every error a command throws turned into its
// message and its documented exit code (0 pass, 1 regression, 2 bad usage or
// bad input, 125 cannot test).
//
// Built twice. `fusegate-full` is the whole of it, LibTorch linked.
// `fusegate`, the command users and scripts run, is the front
// (FUSEGATE_FRONT): the commands that compile and run nothing (explain, ops,
// list) run there, without LibTorch, whose shared libraries and static
// initialisers cost a process about half a second of CPU on the CI machine
// (2.6 s under ASan: the lit suite's 154 explain lines took 409 s there);
// every other command line is handed to fusegate-full beside it, unparsed,
// by exec (the same process: its pid, signals and exit code are the
// command's).
#ifndef FUSEGATE_FRONT
#include <c10/util/Exception.h>
#endif

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "fusion/errors.h"
#include "harness/cli/process.h"
#ifndef FUSEGATE_FRONT
#include "harness/run/spawner.h"
#endif

namespace fg::cli {

// One command line as a process of its own would run it: its exit code,
// every error as the message and the code documented for it.
int guarded_main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const fg::UserError& e) {
    std::cerr << "fusegate: error: " << e.what() << "\n";
    return 2;
  } catch (const fg::RanksDisagree& e) {
    std::cerr << "fusegate: ranks disagree: " << e.what() << "\n";
    return 1;
  } catch (const fg::InternalError& e) {
    std::cerr << "fusegate: " << e.what() << "\n";
    return 125;
#ifndef FUSEGATE_FRONT
  } catch (const c10::Error& e) {
    // LibTorch's own error (a bad attribute value an op passes on, an index
    // out of range, memory): its message, without the backtrace that what()
    // appends, whose last frames were all a rank's log showed (an audit,
    // 2026-11-27)
    std::string msg = e.what_without_backtrace();
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    std::cerr << "fusegate: cannot test: LibTorch: " << msg << "\n";
    return 125;
#endif
  } catch (const std::exception& e) {  // CannotTest and what else the libraries throw
    std::cerr << "fusegate: cannot test: " << e.what() << "\n";
    return 125;
  }
}

}  // namespace fg::cli

namespace {

// A command's process leaves without static destructors. LibTorch's
// deregister every operator it registered, writing to each dispatch table;
// in a rank forked from the spawner (harness/run/spawner.h) every such page
// is one it shares with the spawner, copied for the write: that teardown was
// half of the CPU time of `run sp_gather_scatter --world-size 4` (4.0 s of
// CPU in all its processes, 2.0 s without it; 2 cores, 2026-12-05).
// Nothing of fusegate's waits for one: files are written and closed before
// their command returns (write_atomic), scratch folders are removed by the
// scopes that made them, and the spawner is reaped here.
[[noreturn]] void leave(int rc) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
#ifndef FUSEGATE_FRONT
  fg::reap_spawner();
#endif
  _exit(rc);
}

int fusegate_main(int argc, char** argv) {
  fg::cli::install_fatal_signal_handlers();
  leave(fg::cli::guarded_main(argc, argv));
}

}  // namespace

#ifdef FUSEGATE_FRONT
namespace {

// The commands the front runs itself (main.cpp's run_main, built without
// the rest). A command line that starts otherwise (a flag, another command,
// none) goes to fusegate-full whole, so that its parse, help and errors are
// fusegate-full's own.
bool runs_in_front(const char* cmd) {
  for (const char* c : {"explain", "ops", "list"})
    if (std::strcmp(cmd, c) == 0) return true;
  return false;
}

[[noreturn]] void hand_over(char** argv) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string full = (ec ? std::filesystem::path(argv[0]) : self).parent_path() / "fusegate-full";
  execv(full.c_str(), argv);
  std::cerr << "fusegate: cannot test: cannot start " << full << ": " << std::strerror(errno)
            << " (the build puts fusegate-full beside fusegate; run `bash ci/setup.sh`)\n";
  _exit(125);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !runs_in_front(argv[1])) hand_over(argv);
  fusegate_main(argc, argv);
}
#else
int main(int argc, char** argv) {
  // the rank spawner: a process of its own, before any command line is read
  if (argc > 1 && std::strcmp(argv[1], fg::kSpawnerCommand) == 0) return fg::spawner_main(argc, argv, &fusegate_main);
  fusegate_main(argc, argv);
}
#endif
